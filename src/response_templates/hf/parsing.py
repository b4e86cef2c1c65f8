"""Parsing with a tokenizer: token ids in, messages out (docs/spec.md, section 2, tokenizer integration)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from ..errors import ParseError, ParserStateError, ResponseTemplateError
from ..events import ParserEvent
from ..language import ResponseTemplate
from ..parser import ResponseParser
from ..policy import MISSING, AnchorPolicy, ErrorPolicy, ParsedMessage, tool_params
from ..whole import parse_pieces as _parse_pieces
from ..whole import parse_response as _parse_text
from .config import resolve_template
from .control_tokens import PieceDecoder, control_tokens_for, spellings_of, whole_pieces
from .decoding import decode_text
from .inputs import Inputs, Item, normalize, pad_info

__all__ = ["TokenResponseParser", "get_response_parser", "parse_response"]

Template = Mapping[str, Any] | ResponseTemplate | str
Tools = Sequence[Mapping[str, Any] | Callable[..., Any]] | None
#: Which token texts are control tokens: "auto" (the tokenizer's), or the texts (``()``: the text reading).
Controls = Iterable[str] | str
Pieces = list[tuple[str, bool]]


def _prefix_required() -> ResponseTemplateError:
    return ResponseTemplateError(
        "prefix is required: pass the prompt the model continued, as token ids (the input_ids given to "
        "generate()) or as text, because chat templates often write the start of the assistant message "
        'themselves (an opening <think>, a prefill) and the parser must see it. Pass prefix="" (or []) to '
        "opt out explicitly."
    )


def _prefixes(tokenizer: Any, prefix: Any) -> Inputs:
    if prefix is MISSING or prefix is None:
        raise _prefix_required()
    pad_id, keep_one = pad_info(tokenizer)
    inputs = normalize(prefix, pad_id=pad_id, keep_one=keep_one, what="prefix")
    if not inputs.items:  # [] or an empty array: the explicit opt-out
        return Inputs([""], False)
    return inputs


def _single_prefix(inputs: Inputs, what: str) -> Item:
    if inputs.batched and len(inputs.items) != 1:
        raise ResponseTemplateError(
            f"{what} follows one generation, but prefix is a batch of {len(inputs.items)}: pass one prompt"
        )
    return inputs.items[0]


def _prefix_text(tokenizer: Any, prefix: Item) -> str:
    return prefix if isinstance(prefix, str) else decode_text(tokenizer, prefix)


def _prefix_pieces(tokenizer: Any, prefix: Item, controls: Mapping[int, str]) -> str | Pieces:
    """The prompt for a parser that reads ids: text as it is (every spelling counts, as the chat template
    wrote it), ids as pieces (a control token the user spelled out in a message stays text)."""
    if isinstance(prefix, str):
        return prefix
    return whole_pieces(tokenizer, prefix, controls)


def _output_pieces(tokenizer: Any, output: list[int], prefix: Item, controls: Mapping[int, str]) -> Pieces:
    return whole_pieces(tokenizer, output, controls, prompt_ids=None if isinstance(prefix, str) else prefix)


def _parse_item(
    tokenizer: Any,
    compiled: ResponseTemplate,
    output: Item,
    prefix: Item,
    controls: Mapping[int, str],
    tools: Tools,
    errors: ErrorPolicy,
    missing_anchor: AnchorPolicy,
    shared_prefix: str | Pieces | None = None,
) -> ParsedMessage:
    """One output: text is parsed as text; ids as ids (control tokens match only as generated)."""
    if isinstance(output, str):
        prefix_text = _prefix_text(tokenizer, prefix)
        result = _parse_text(
            output, compiled, prefix=prefix_text, tools=tools, errors=errors, missing_anchor=missing_anchor
        )
        assert isinstance(result, ParsedMessage)
        return result
    pieces = _output_pieces(tokenizer, output, prefix, controls)
    spellings = spellings_of(controls)
    prefix_in = shared_prefix if shared_prefix is not None else _prefix_pieces(tokenizer, prefix, controls)
    return _parse_pieces(
        pieces,
        compiled,
        prefix=prefix_in,
        control_tokens=spellings,
        tools=tools,
        errors=errors,
        missing_anchor=missing_anchor,
    )


def parse_response(
    tokenizer: Any,
    output: Any,
    *,
    prefix: Any = MISSING,
    tools: Tools = None,
    template: Template | None = None,
    errors: ErrorPolicy = "raise",
    missing_anchor: AnchorPolicy = "raise",
    control_tokens: Controls = "auto",
) -> ParsedMessage | list[ParsedMessage]:
    """Parse a finished generation given as token ids (or text), using the tokenizer's template.

    Args:
        tokenizer: a transformers tokenizer (any version) or a ``tokenizers.Tokenizer``.
        output: what the model generated, without the prompt: a string, token ids (list of ints, 1-D
            numpy array or torch tensor), or a batch (list of strings, list of id lists, 2-D array or
            tensor, or a mapping with ``input_ids`` and ``attention_mask``).
        prefix: the prompt, required (``""`` or ``[]`` opts out): text or ids in the same forms, one for
            the whole batch or one per item. Given as ids, it also gives the first generated tokens
            their decoding context.
        tools: the request's tools (JSON schemas or typed callables) for tool-argument typing.
        template: the response template (data, a compiled template, a library family name such as
            ``"qwen3"`` or a model id); default: the tokenizer's ``response_template``.
        errors: ``"raise"`` (default) or ``"keep"``, as for :func:`response_templates.parse_response`:
            with ``"keep"`` an output that does not fit keeps its text in the message and
            ``message.errors`` says what failed, instead of raising.
        missing_anchor: ``"raise"`` (default): a non-empty prompt without the template's start anchor
            raises :class:`~response_templates.AnchorNotFoundError`; ``"parse"`` reads it all.
        control_tokens: which tokens are control tokens (docs/tokenizers.md): ``"auto"`` (default: the
            special tokens and the added tokens the chat template writes, as transformers 5.25 decides),
            or the token texts; ``()`` is the text reading, where every spelling of a delimiter counts.

    Ids are parsed as ids: a delimiter that is a control token matches only where the model generated
    that token, and the same characters spelled with ordinary tokens stay text. Ids are decoded with
    special tokens kept; padding is removed first: see :mod:`response_templates.hf.inputs`. A text
    output is parsed as text (every spelling counts). Returns a message dict
    (:class:`~response_templates.ParsedMessage`), or a list of them for a batch.

    Raises :class:`~response_templates.hf.MissingTemplateError` when there is no template,
    :class:`~response_templates.ParseError` (with ``index`` set for a batch) when an output does not fit
    and ``errors="raise"``.
    """
    compiled = resolve_template(tokenizer, template)
    prefixes = _prefixes(tokenizer, prefix)
    pad_id, keep_one = pad_info(tokenizer)
    outputs = normalize(output, pad_id=pad_id, keep_one=keep_one, what="output")
    controls = control_tokens_for(tokenizer, control_tokens)
    if not outputs.batched:
        one = _single_prefix(prefixes, "a single output")
        return _parse_item(
            tokenizer, compiled, outputs.items[0], one, controls, tools, errors, missing_anchor
        )
    n = len(outputs.items)
    if prefixes.batched and len(prefixes.items) != n:
        raise ResponseTemplateError(
            f"batch of {n} outputs but {len(prefixes.items)} prefixes: pass one prefix for all, or one per output"
        )
    items = prefixes.items if prefixes.batched else prefixes.items * n
    shared = None if prefixes.batched or not items else _prefix_pieces(tokenizer, items[0], controls)
    params = tool_params(tools)
    results: list[ParsedMessage] = []
    for index, (item, item_prefix) in enumerate(zip(outputs.items, items, strict=True)):
        try:
            results.append(
                _parse_item(
                    tokenizer,
                    compiled,
                    item,
                    item_prefix,
                    controls,
                    params,  # type: ignore[arg-type]
                    errors,
                    missing_anchor,
                    shared if not isinstance(item, str) else None,
                )
            )
        except ResponseTemplateError as exc:
            exc.index = index
            if hasattr(exc, "add_note"):
                exc.add_note(f"(in batch item {index})")
            raise
    return results


class TokenResponseParser:
    """A streaming parser that takes token ids: :class:`~response_templates.ResponseParser` plus an
    exact incremental decoder (:class:`~response_templates.hf.TokenDecoder`).

    Args:
        tokenizer: a transformers tokenizer (any version) or a ``tokenizers.Tokenizer``.
        template: the response template (data, a compiled template, a library family name such as
            ``"qwen3"`` or a model id); default: the tokenizer's ``response_template``.
        prefix: the prompt (required; ``""`` or ``[]`` opts out), as text or ids. Ids also prime the
            decoder, so that the first generated token decodes exactly as it would after the prompt.
        tools: the request's tools, for tool-argument typing.
        errors, missing_anchor: as for :class:`~response_templates.ResponseParser` (``"keep"``: a region
            that does not parse is kept as text and recorded, never raised).

        control_tokens: which tokens are control tokens: ``"auto"`` (default), the token texts, or
            ``()`` for the text reading (see :func:`parse_response`).

    :meth:`feed_tokens` takes ids (one int, a list, a 1-D array or tensor, or a ``[1, n]`` one) and
    returns events; :meth:`feed` takes text (after all ids fed so far); :meth:`finalize` ends the
    stream. A delimiter that is a control token matches only where the model generated its id. The
    events and the message are exactly those of :func:`parse_response` of the whole output, however
    the ids are split.
    """

    __slots__ = ("decoder", "parser")

    def __init__(
        self,
        tokenizer: Any,
        template: Template | None = None,
        *,
        prefix: Any = MISSING,
        tools: Tools = None,
        errors: ErrorPolicy = "raise",
        missing_anchor: AnchorPolicy = "raise",
        control_tokens: Controls = "auto",
    ) -> None:
        compiled = resolve_template(tokenizer, template)
        one = _single_prefix(_prefixes(tokenizer, prefix), "a streaming parser")
        controls = control_tokens_for(tokenizer, control_tokens)
        #: The incremental decoder (ids -> exact text, control tokens as pieces of their own).
        self.decoder = PieceDecoder(tokenizer, controls, prompt_ids=None if isinstance(one, str) else one)
        #: The parser the decoded text goes to.
        self.parser = ResponseParser(
            compiled,
            _prefix_pieces(tokenizer, one, controls),
            tools=tools,
            errors=errors,
            missing_anchor=missing_anchor,
            control_tokens=self.decoder.spellings,
        )

    @property
    def initial_events(self) -> list[ParserEvent]:
        """Events produced by reading the prompt (e.g. a ``<think>`` the chat template opened)."""
        return self.parser.initial_events

    @property
    def errors(self) -> list[ResponseTemplateError]:
        """The errors raised so far (the parser keeps working after a ``ParseError``)."""
        return self.parser.errors

    @property
    def template(self) -> ResponseTemplate:
        return self.parser.template

    @property
    def prefix_length(self) -> int:
        return self.parser.prefix_length

    @property
    def anchor_found(self) -> bool:
        return self.parser.anchor_found

    @property
    def finalized(self) -> bool:
        return self.parser.finalized

    def feed_tokens(self, ids: Any) -> list[ParserEvent]:
        """Add generated token ids; return the events they produced (often none: see the decoder)."""
        if self.parser.finalized:
            raise ParserStateError("feed_tokens() after finalize(): one parser follows one generation")
        decoder = self.decoder
        if type(ids) is int and ids not in decoder._controls and 0 <= ids < 1 << 32:
            # The common case, one ordinary token: straight through the text decoder to the parser.
            text = decoder._ordinary_one(ids)
            return self.parser.feed(text) if text else []
        pieces = decoder.step(_one_row(ids))
        if not pieces:
            return []
        return self._feed_pieces(pieces)

    def _feed_pieces(self, pieces: Pieces) -> list[ParserEvent]:
        if len(pieces) == 1:
            text, control = pieces[0]
            return self.parser.feed_control(text) if control else self.parser.feed(text)
        return self.parser._feed_pieces(pieces)  # all read, then the first error with every event

    def feed(self, text: str | bytes) -> list[ParserEvent]:
        """Add text (``str`` or UTF-8 ``bytes``) that follows everything fed so far. It is read as text:
        every spelling of a delimiter in it counts (only ids tell a control token from its spelling)."""
        if self.decoder.pending:
            raise ResponseTemplateError(
                f"feed() got text while {self.decoder.pending} token id(s) are still being decoded (part of "
                "a character or a run of byte tokens): feed the remaining ids with feed_tokens() first"
            )
        held = self.decoder.release()
        if not held:
            return self.parser.feed_control(text)
        events = self.parser.feed(held)
        return events + self.parser.feed_control(text)

    def finalize(self) -> tuple[ParsedMessage, list[ParserEvent]]:
        """End the stream: decode what the decoder still holds, then finalize the parser.

        Returns ``(message, final_events)``. A ``ParseError`` raised while reading the decoder's last
        text is raised after the parser is finalized, with all of this call's events and the message
        (``error.partial_message``), so that nothing is lost. The parser is finished either way.
        """
        if self.parser.finalized:
            return self.parser.finalize()  # raises ParserStateError
        tail = self.decoder.flush()
        events: list[ParserEvent] = []
        failed: ParseError | None = None
        if tail:
            try:
                events = self._feed_pieces(tail)
            except ParseError as exc:
                failed = exc
                events = list(exc.events or [])
        try:
            message, final_events = self.parser.finalize()
        except ResponseTemplateError as exc:
            exc.events = events + list(exc.events or [])
            raise
        events += final_events
        if failed is not None:
            failed.events = events
            failed.partial_message = message
            raise failed
        return message, events


def _one_row(ids: Any) -> Any:
    """Accept ``[1, n]`` shaped ids (what generate() hands a streamer) as one sequence."""
    shape = getattr(ids, "shape", None)
    if shape is not None and len(shape) == 2:
        if shape[0] != 1:
            raise ResponseTemplateError(
                f"a streaming parser follows one sequence, got ids of shape {tuple(shape)}"
            )
        return ids[0]
    if isinstance(ids, (list, tuple)) and len(ids) == 1 and isinstance(ids[0], (list, tuple)):
        return ids[0]
    return ids


def get_response_parser(
    tokenizer: Any,
    *,
    prefix: Any = MISSING,
    tools: Tools = None,
    template: Template | None = None,
    errors: ErrorPolicy = "raise",
    missing_anchor: AnchorPolicy = "raise",
    control_tokens: Controls = "auto",
) -> TokenResponseParser:
    """A streaming parser for one generation: feed it token ids (or text) as they come.

    ``prefix`` (required; ``""`` or ``[]`` opts out) is the prompt as text or ids (one sequence; a
    ``[1, n]`` array is fine); ``template`` defaults to the tokenizer's ``response_template``;
    ``errors`` and ``missing_anchor`` are those of :class:`~response_templates.ResponseParser`. See
    :class:`TokenResponseParser`.
    """
    return TokenResponseParser(
        tokenizer,
        template,
        prefix=prefix,
        tools=tools,
        errors=errors,
        missing_anchor=missing_anchor,
        control_tokens=control_tokens,
    )
