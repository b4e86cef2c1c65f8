"""Whole-text parsing: :func:`parse_response` reads one finished generation (or a batch of them) with a
:class:`~response_templates.parser.ResponseParser` in a single final pass, where nothing is held back."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .controls import ControlTokens, tokenizer_integration
from .errors import ParseError, ResponseTemplateError
from .language import ResponseTemplate, load_template
from .matching import RegexBudget
from .parser import ResponseParser
from .policy import (
    MISSING,
    AnchorPolicy,
    ErrorPolicy,
    ParsedMessage,
    ToolParams,
    Tools,
    check_policy,
    missing_prefix_error,
    tool_params,
)

__all__ = ["parse_pieces", "parse_response"]


def parse_response(
    text: str | bytes | Sequence[str],
    template: Mapping[str, Any] | ResponseTemplate | str,
    *,
    prefix: str | Sequence[str] = MISSING,
    tools: Tools | None = None,
    errors: ErrorPolicy = "raise",
    missing_anchor: AnchorPolicy = "raise",
    regex_budget: RegexBudget | None = None,
    tokenizer: Any = None,
) -> ParsedMessage | list[ParsedMessage]:
    """Parse one complete generation (or a batch) into a message dict (a :class:`ParsedMessage`).

    ``text`` is a string (or UTF-8 bytes), or a list of strings for a batch, which returns a list of
    messages; ``prefix``
    is then one prompt for all items or a list with one per item. ``prefix`` is required (``""`` opts
    out); a non-empty prefix without the start anchor raises
    :class:`~response_templates.errors.AnchorNotFoundError` unless ``missing_anchor="parse"``.

    With ``errors="raise"`` (the default), an output that does not fit the template raises
    :class:`~response_templates.ParseError`. With ``errors="keep"`` nothing raises it: what did not parse
    is kept as text in the message, and ``message.errors`` says what failed (docs/errors.md).
    ``regex_budget`` (a :class:`~response_templates.RegexBudget`) bounds the regex time of each item.

    ``template`` is template data (a dict or JSON text), a compiled template, or the name of a family of
    the built-in library or a model id (``"qwen3"``, ``"Qwen/Qwen3-8B"``), as
    :func:`~response_templates.load_template` reads it.

    ``tokenizer`` (a Hugging Face tokenizer, transformers 5.25's call shape): ``text`` and ``prefix`` may
    then be token ids, parsed as ids, where a control token matches a delimiter only where the model
    generated it (:func:`response_templates.hf.parse_response`, docs/tokenizers.md).

    >>> import response_templates as rt
    >>> t = {"start_anchor": "<|im_start|>assistant\\n",
    ...      "fields": {"tool_calls": {"open": "<tool_call>", "close": "</tool_call>", "repeats": True,
    ...                                "content": "json"},
    ...                 "content": {}}}
    >>> rt.parse_response('Sure.<tool_call>{"name": "f"}</tool_call>', t, prefix="")
    {'content': 'Sure.', 'tool_calls': [{'name': 'f'}]}
    >>> kept = rt.parse_response('Sure.<tool_call>{oops}</tool_call>', t, prefix="", errors="keep")
    >>> kept, [e.field for e in kept.errors]
    ({'content': 'Sure.<tool_call>{oops}</tool_call>'}, ['tool_calls'])
    >>> rt.parse_response("<think>Easy.</think>Hi!", "Qwen/Qwen3-8B", prefix="<|im_start|>assistant\\n")
    {'role': 'assistant', 'reasoning_content': 'Easy.', 'content': 'Hi!'}
    """
    if prefix is MISSING or prefix is None:
        raise missing_prefix_error()
    check_policy("errors", errors, ("raise", "keep"))
    check_policy("missing_anchor", missing_anchor, ("raise", "parse"))
    compiled = load_template(template)
    if tokenizer is not None:
        if not isinstance(text, (str, bytes, bytearray)) and hasattr(text, "__len__") and len(text) == 0:
            # no ids at all: one empty generation (as the reference's function reads it), not a batch of none
            empty = ResponseParser(
                compiled,
                prefix,
                tools=tools,
                errors=errors,
                missing_anchor=missing_anchor,
                tokenizer=tokenizer,
            )
            return empty.finalize()[0]
        return tokenizer_integration().parse(  # type: ignore[no-any-return]
            tokenizer,
            text,
            prefix=prefix,
            tools=tools,
            template=compiled,
            errors=errors,
            missing_anchor=missing_anchor,
        )
    if isinstance(text, (bytes, bytearray)) and errors == "keep":
        if not isinstance(prefix, str):
            raise ResponseTemplateError(
                f"a single text needs a single string prefix, got {type(prefix).__name__}"
            )
        parser = ResponseParser(
            compiled,
            prefix,
            tools=tools,
            errors=errors,
            missing_anchor=missing_anchor,
            regex_budget=regex_budget,
        )
        parser.feed(bytes(text))
        return parser.finalize()[0]
    if isinstance(text, (bytes, bytearray)):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ParseError(f"invalid UTF-8 at byte {exc.start} ({exc.reason})") from None
    if isinstance(text, str):
        if not isinstance(prefix, str):
            raise ResponseTemplateError(
                f"a single text needs a single string prefix, got {type(prefix).__name__}"
            )
        return _parse_one(text, compiled, prefix, tools, errors, missing_anchor, regex_budget)
    if not isinstance(text, Sequence):
        raise ResponseTemplateError(f"text must be a string or a list of strings, got {type(text).__name__}")
    if isinstance(prefix, str):
        prefixes: Sequence[str] = [prefix] * len(text)
    else:
        prefixes = list(prefix)
        if len(prefixes) != len(text):
            raise ResponseTemplateError(
                f"batch of {len(text)} texts but {len(prefixes)} prefixes: pass one prefix for all, or one per text"
            )
    params = tool_params(tools)
    results = []
    for index, (item, item_prefix) in enumerate(zip(text, prefixes, strict=True)):
        try:
            results.append(
                _parse_one(item, compiled, item_prefix, params, errors, missing_anchor, regex_budget)
            )
        except ResponseTemplateError as exc:
            exc.index = index
            if hasattr(exc, "add_note"):
                exc.add_note(f"(in batch item {index})")
            raise
    return results


def _parse_one(
    text: Any,
    template: ResponseTemplate,
    prefix: str,
    tools: Tools | ToolParams | None,
    errors: ErrorPolicy,
    missing_anchor: AnchorPolicy,
    regex_budget: RegexBudget | None = None,
) -> ParsedMessage:
    if not isinstance(text, str):
        raise ResponseTemplateError(f"each text must be a string, got {type(text).__name__}")
    tool_arg: Any = tools  # a batch's ToolParams: ResponseParser takes them as they are

    def read(quiet: bool) -> ParsedMessage:
        parser = ResponseParser(
            template,
            prefix,
            tools=tool_arg,
            errors=errors,
            missing_anchor=missing_anchor,
            regex_budget=regex_budget,
        )
        # The whole text is known: read it in finalize's single pass over complete text (no hold-back to
        # decide, every search remembered), which gives what feeding it and then finalizing gives.
        parser._quiet = quiet  # only the message is wanted: no events are built
        if text:
            parser._incoming.append(text)
            parser._incoming_len = len(text)
        return parser.finalize()[0]

    try:
        return read(True)
    except ParseError:
        # A failure carries the events of the call that found it: read the text again, building them.
        return read(False)


def parse_pieces(
    pieces: Sequence[tuple[str, bool]],
    template: Mapping[str, Any] | ResponseTemplate | str,
    *,
    prefix: str | Sequence[tuple[str, bool]],
    control_tokens: ControlTokens,
    tools: Tools | ToolParams | None = None,
    errors: ErrorPolicy = "raise",
    missing_anchor: AnchorPolicy = "raise",
    regex_budget: RegexBudget | None = None,
) -> ParsedMessage:
    """Parse one complete generation given as pieces ``(text, is_control)`` (what token ids decode to:
    see :mod:`response_templates.controls`), in one final pass like :func:`parse_response`.

    >>> import response_templates as rt
    >>> from response_templates.controls import ControlTokens
    >>> t = {"start_anchor": "<|im_start|>assistant\\n", "fields": {"content": {"close": "<|im_end|>"}}}
    >>> pieces = [("Type <|im_end|> to stop.", False), ("<|im_end|>", True)]
    >>> parse_pieces(pieces, t, prefix="", control_tokens=ControlTokens(["<|im_end|>"]))
    {'content': 'Type <|im_end|> to stop.'}
    """
    compiled = load_template(template)
    check_policy("errors", errors, ("raise", "keep"))
    check_policy("missing_anchor", missing_anchor, ("raise", "parse"))
    tool_arg: Any = tools

    def read(quiet: bool) -> ParsedMessage:
        parser = ResponseParser(
            compiled,
            prefix,
            tools=tool_arg,
            errors=errors,
            missing_anchor=missing_anchor,
            regex_budget=regex_budget,
            control_tokens=control_tokens,
        )
        parser._quiet = quiet
        for text, control in pieces:
            parser._append(text, control)
        return parser.finalize()[0]

    try:
        return read(True)
    except ParseError:
        return read(False)
