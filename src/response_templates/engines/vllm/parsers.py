"""The vLLM classes of the plugin (imported by vLLM when a flag names ``response_templates``).

* :class:`ResponseTemplatesParser`: vLLM's unified ``vllm.parser.Parser``, one per request. It reads the
  generated token ids (a control token matches only as its own id) after the prompt's ids (the prefix), so
  a reasoning block the prompt opened, a prefill, thinking switched off by ``chat_template_kwargs`` are
  all read from the prompt itself. :func:`compose` builds it when either flag names ours.
* :class:`ResponseTemplatesReasoningParser`: the name ``--reasoning-parser`` selects; standalone, it is what
  vLLM's structured-output manager asks where the reasoning ends (``is_reasoning_end``,
  ``is_reasoning_end_streaming``, ``extract_content_ids``), and what the unified parser asks whether the
  prompt closed the reasoning.
* :class:`ResponseTemplatesToolParser`: the name ``--tool-call-parser`` selects; standalone (handed the
  text after the reasoning, as vLLM's ``DelegatingParser`` does) it parses the text.

The template is chosen once per tokenizer (:func:`serving_for`), logged once at start-up.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping, Sequence
from importlib import import_module
from typing import Any

from ...errors import ResponseTemplateError
from ..common import PLUGIN_NAME as NAME
from ..common import Delta, EngineSetupError, Serving, ServingCache, Session, merge_deltas, tool_dicts

_protocol: Any = import_module("vllm.entrypoints.generate.base.protocol")
_chat_protocol: Any = import_module("vllm.entrypoints.openai.chat_completion.protocol")
_abstract: Any = import_module("vllm.parser.abstract_parser")
_reasoning: Any = import_module("vllm.reasoning.abs_reasoning_parsers")
_tools: Any = import_module("vllm.tool_parsers.abstract_tool_parser")
_ids: Any = import_module("vllm.renderers.chat_utils")
_sampling: Any = import_module("vllm.sampling_params")
_exceptions: Any = import_module("vllm.exceptions")

DeltaMessage: Any = _protocol.DeltaMessage
DeltaToolCall: Any = _protocol.DeltaToolCall
DeltaFunctionCall: Any = _protocol.DeltaFunctionCall
FunctionCall: Any = _protocol.FunctionCall
ToolCall: Any = _protocol.ToolCall
ExtractedToolCallInformation: Any = _protocol.ExtractedToolCallInformation
NamedToolChoice: Any = _chat_protocol.ChatCompletionNamedToolChoiceParam
VLLMValidationError: Any = _exceptions.VLLMValidationError

logger = logging.getLogger("response_templates.engines.vllm")

__all__ = [
    "ResponseTemplatesParser",
    "ResponseTemplatesReasoningParser",
    "ResponseTemplatesToolParser",
    "compose",
    "serving_for",
]

# ------------------------------------------------------------------------------------ the template


_servings = ServingCache(logger, ids=True)


def serving_for(tokenizer: Any, model_config: Any = None) -> Serving:
    """The :class:`~response_templates.engines.common.Serving` of ``tokenizer`` (one per tokenizer, built
    and logged once). The served model id is the first served name, else the model path, else the
    tokenizer's path (the structured-output manager builds the reasoning parser with the tokenizer only).
    Raises :class:`~response_templates.engines.common.EngineSetupError`."""
    return _servings.get(
        tokenizer,
        lambda: (
            getattr(model_config, "served_model_name", None),
            getattr(model_config, "model", None),
            getattr(tokenizer, "name_or_path", None),
        ),
    )


def _thinking(chat_template_kwargs: Mapping[str, Any] | None) -> bool | None:
    kwargs = chat_template_kwargs or {}
    for key in ("enable_thinking", "thinking"):
        value = kwargs.get(key)
        if isinstance(value, bool):
            return value
    return None


def _decode(tokenizer: Any, ids: Sequence[int]) -> str:
    try:
        return str(
            tokenizer.decode(
                list(ids),
                skip_special_tokens=False,
                clean_up_tokenization_spaces=False,
                spaces_between_special_tokens=False,
            )
        )
    except TypeError:
        return str(tokenizer.decode(list(ids), skip_special_tokens=False))


def _reasoning_closers(serving: Serving) -> list[str]:
    spec = serving.template.by_name.get(serving.reasoning_field)
    close = spec.close if spec is not None else None
    return [lit for lit in (close.literals or ()) if lit] if close is not None else []


def _named_choice(request: Any) -> str | None:
    choice = getattr(request, "tool_choice", None)
    if isinstance(choice, NamedToolChoice):
        return str(choice.function.name)
    name = getattr(choice, "name", None)  # the Responses API's function tool choice
    return name if isinstance(name, str) and not isinstance(choice, str) else None


def _strict(tool: Mapping[str, Any]) -> bool:
    function = tool.get("function")
    return bool(tool.get("strict") or (isinstance(function, Mapping) and function.get("strict")))


# ------------------------------------------------------------------------------------ composition


def compose(original: Any, manager: Any, **kwargs: Any) -> Any:
    """``ParserManager._compose_parser`` when a flag names ours: the unified parser class for the pair.

    gpt-oss (``is_harmony``): vLLM renders Harmony prompts itself and accepts only its own Harmony parser
    classes, so the plugin defers to vLLM's ``openai_gptoss`` / ``openai`` parsers and says so.
    """
    tool_name = kwargs.get("tool_parser_name")
    reasoning_name = kwargs.get("reasoning_parser_name")
    if kwargs.get("is_harmony"):
        logger.warning(
            "response_templates: gpt-oss (Harmony) is parsed by vLLM's own Harmony parser; "
            "--tool-call-parser/--reasoning-parser %s defer to vLLM's openai / openai_gptoss parsers",
            NAME,
        )
        if tool_name == NAME:
            kwargs["tool_parser_name"] = "openai"
        if reasoning_name == NAME:
            kwargs["reasoning_parser_name"] = "openai_gptoss"
        return original(manager, **kwargs)
    for name in (tool_name, reasoning_name):
        if name and name != NAME:
            raise TypeError(
                f"--tool-call-parser {tool_name} and --reasoning-parser {reasoning_name} cannot be combined: "
                f"{NAME} parses reasoning and tool calls together; name it for both (or leave one out)"
            )
    reasoning_cls = manager.get_reasoning_parser(reasoning_name) if reasoning_name else None
    tool_cls = manager.get_tool_parser(
        tool_name, kwargs.get("enable_auto_tools", False), kwargs.get("model_name")
    )
    if reasoning_cls is None and tool_cls is None:
        return None
    level = kwargs.get("tool_strict_level")
    strict_level = None
    if level is not None:
        strict_level = import_module("vllm.tool_parsers.tool_strict_level").ToolStrictLevel.from_name(level)
    tokenizer = kwargs.get("tokenizer")
    if tokenizer is not None:
        try:
            serving_for(tokenizer, _NameOnly(kwargs.get("model_name")))
        except EngineSetupError as exc:
            raise TypeError(f"--tool-call-parser/--reasoning-parser {NAME}: {exc}") from exc
    return type(
        "ResponseTemplatesParser",
        (ResponseTemplatesParser,),
        {
            "reasoning_parser_cls": reasoning_cls,
            "tool_parser_cls": tool_cls,
            "tool_strict_level": strict_level,
            "_enable_auto_tools": bool(kwargs.get("enable_auto_tools", False)),
        },
    )


class _NameOnly:
    """A model config that knows only the model's name (what ``get_parser`` is given)."""

    def __init__(self, model: str | None) -> None:
        self.model = model


# ------------------------------------------------------------------------------------ ids and deltas


class _CallIds:
    """vLLM's tool-call ids for one generation: the model's own when it wrote one (Kimi's
    ``functions.NAME:0``), else ``make_tool_call_id`` of the server's id type (``kimi_k2`` numbers calls
    after those of the history)."""

    def __init__(self, parser: Any) -> None:
        self.parser = parser
        self.by_index: dict[int, str] = {}

    def resolve(self, index: int, raw: str | None, name: str | None) -> str:
        known = self.by_index.get(index)
        if known is not None:
            return known
        state = self.parser._stream_state
        if raw:
            value = raw
        else:
            value = _ids.make_tool_call_id(
                id_type=state.tool_call_id_type, func_name=name, idx=state.history_tool_call_cnt
            )
        state.history_tool_call_cnt += 1
        self.by_index[index] = value
        return value


def _new_session(serving: Serving, **kwargs: Any) -> Session:
    # vLLM names the calls (see _CallIds); a model-written id passes through.
    return serving.session(model_ids_only=True, **kwargs)


def _delta_message(delta: Delta, ids: _CallIds, *, include_reasoning: bool = True) -> Any:
    fields: dict[str, Any] = {}
    if delta.reasoning and include_reasoning:
        fields["reasoning"] = delta.reasoning
    if delta.content:
        fields["content"] = delta.content
    calls = []
    for call in delta.tool_calls:
        head = call.id is not None or call.name is not None
        calls.append(
            DeltaToolCall(
                index=call.index,
                id=ids.resolve(call.index, call.id, call.name) if head else None,
                type="function" if head else None,
                function=DeltaFunctionCall(name=call.name, arguments=call.arguments),
            )
        )
    if calls:
        fields["tool_calls"] = calls
    return DeltaMessage(**fields) if fields else None


def _log_errors(session: Session) -> None:
    errors = session.errors
    if errors:
        logger.warning(
            "response_templates: output kept as written where it did not parse: %s", "; ".join(errors)
        )


# ------------------------------------------------------------------------------------ reasoning


class ResponseTemplatesReasoningParser(_reasoning.ReasoningParser):  # type: ignore[misc]
    """``--reasoning-parser response_templates``: where reasoning ends, for vLLM's structured outputs."""

    def __init__(self, tokenizer: Any, *args: Any, **kwargs: Any) -> None:
        super().__init__(tokenizer, *args, **kwargs)
        self.serving = serving_for(tokenizer, kwargs.get("model_config"))
        self.thinking = _thinking(kwargs.get("chat_template_kwargs"))
        self._closers = _reasoning_closers(self.serving)
        self._closer_ids = _single_ids(self.serving, tuple(self._closers))
        self._stream: Session | None = None
        self._stream_ids = _CallIds(self)
        self._stream_state = _abstract.StreamState()

    @property
    def reasoning_start_str(self) -> str | None:
        spec = self.serving.template.by_name.get(self.serving.reasoning_field)
        opener = spec.open if spec is not None else None
        literals = [lit for lit in (opener.literals or ()) if lit] if opener is not None else []
        return literals[0] if literals else None

    @property
    def reasoning_end_str(self) -> str | None:
        return self._closers[0] if self._closers else None

    def prompt_state(self, input_ids: Sequence[int]) -> str:
        """``"open"``, ``"closed"`` or ``"none"``: what the prompt did with the reasoning block."""
        from ...grammar.derive import reasoning_state

        try:
            return reasoning_state(self.serving.template, _decode(self.model_tokenizer, input_ids))
        except ResponseTemplateError:
            return "none"

    def is_reasoning_end(self, input_ids: Sequence[int]) -> bool:
        """Whether the reasoning is over at the end of ``input_ids`` (a prompt, or a prompt and output):
        its block was closed, or the template has no reasoning."""
        if not self.serving.has_reasoning:
            return True
        return self.prompt_state(input_ids) == "closed" or (
            self.thinking is False and self.prompt_state(input_ids) != "open"
        )

    def is_reasoning_end_streaming(self, input_ids: Sequence[int], delta_ids: Iterable[int]) -> bool:
        """Whether the reasoning closes within ``delta_ids`` (the last ids of ``input_ids``)."""
        delta = list(delta_ids)
        if not self._closers or not delta:
            return False
        if self._closer_ids and any(i in self._closer_ids for i in delta):
            return True
        longest = max(len(c) for c in self._closers)
        ids = list(input_ids)
        window = ids[max(0, len(ids) - len(delta) - longest) :]
        before = _decode(self.model_tokenizer, window[: len(window) - len(delta)])
        text = _decode(self.model_tokenizer, window)
        return any(c in text and text.rfind(c) + len(c) > len(before) for c in self._closers)

    def extract_content_ids(self, input_ids: list[int]) -> list[int]:
        """The ids after the last reasoning closer (all of them when no closer is a single id)."""
        for position in range(len(input_ids) - 1, -1, -1):
            if input_ids[position] in self._closer_ids:
                return input_ids[position + 1 :]
        return input_ids if not self._closer_ids else []

    def count_reasoning_tokens(self, token_ids: Sequence[int]) -> int:
        return _count_reasoning(self.serving, None, token_ids, self.thinking)

    # Standalone text parsing (vLLM's DelegatingParser; ours composes the unified parser instead).

    def _text_session(self) -> Session:
        return _new_session(self.serving, thinking=self.thinking, parse_tools=False)

    def extract_reasoning(self, model_output: str, request: Any) -> tuple[str | None, str | None]:
        session = self._text_session()
        session.feed_text(model_output)
        result = session.result()
        _log_errors(session)
        return result.reasoning or None, result.content or None

    def extract_reasoning_streaming(
        self,
        previous_text: str,
        current_text: str,
        delta_text: str,
        previous_token_ids: Sequence[int],
        current_token_ids: Sequence[int],
        delta_token_ids: Sequence[int],
    ) -> Any:
        if self._stream is None:
            self._stream = self._text_session()
        return _delta_message(self._stream.feed_text(delta_text), self._stream_ids)

    def get_streaming_fallback_content(self, previous_text: str, request: Any) -> str | None:
        """What the stream held back when it ended (vLLM calls this at the end of a stream)."""
        if self._stream is None:
            return None
        delta = self._stream.finish()
        return (delta.reasoning + delta.content) or None


_single: dict[tuple[int, tuple[str, ...]], frozenset[int]] = {}


def _single_ids(serving: Serving, texts: tuple[str, ...]) -> frozenset[int]:
    """The ids of those ``texts`` that are one token of the serving's tokenizer (cached per tokenizer)."""
    key = (id(serving), texts)
    hit = _single.get(key)
    if hit is None:
        tok = serving.tokenizer
        ids = set()
        for text in texts:
            try:
                found = tok.convert_tokens_to_ids(text)
                if isinstance(found, int) and tok.convert_ids_to_tokens(found) == text:
                    ids.add(found)
            except Exception:  # a tokenizer without these methods: no single-token closer known
                continue
        hit = _single[key] = frozenset(ids)
    return hit


def _count_reasoning(
    serving: Serving, prompt_ids: Sequence[int] | None, token_ids: Sequence[int], thinking: bool | None
) -> int:
    """How many of ``token_ids`` lie in the reasoning: from the first id that writes reasoning to the last
    (text a possible closer held back counts with the id that releases it)."""
    if not serving.has_reasoning or not token_ids or serving.tokenizer is None:
        return 0
    session = serving.session(prompt_ids=prompt_ids, thinking=thinking, parse_tools=False)
    first = last = -1
    for index, token in enumerate(token_ids):
        try:
            delta = session.feed_ids([token])
        except ResponseTemplateError:
            break
        if delta.reasoning:
            first = index if first < 0 else first
            last = index
    return 0 if first < 0 else last - first + 1


# ------------------------------------------------------------------------------------ tool calls


class ResponseTemplatesToolParser(_tools.ToolParser):  # type: ignore[misc]
    """``--tool-call-parser response_templates``. Composed by :func:`compose` into the unified parser;
    standalone, it reads the text after the reasoning (without the prompt)."""

    def __init__(self, tokenizer: Any, tools: list[Any] | None = None) -> None:
        super().__init__(tokenizer, tools)
        self.serving = serving_for(tokenizer)
        self._tools = tool_dicts(tools)
        self._stream: Session | None = None
        self._stream_state = _abstract.StreamState()
        self._stream_ids = _CallIds(self)

    def _text_session(self, request: Any) -> Session:
        tools = tool_dicts(getattr(request, "tools", None)) or self._tools
        return _new_session(self.serving, prompt_text="", tools=tools, thinking=False, parse_reasoning=False)

    def extract_tool_calls(self, model_output: str, request: Any) -> Any:
        session = self._text_session(request)
        session.feed_text(model_output)
        result = session.result()
        _log_errors(session)
        ids = _CallIds(self)
        calls = [
            ToolCall(
                id=ids.resolve(i, c.id, c.name), function=FunctionCall(name=c.name, arguments=c.arguments)
            )
            for i, c in enumerate(result.tool_calls)
        ]
        return ExtractedToolCallInformation(
            tools_called=bool(calls), tool_calls=calls, content=result.content
        )

    def extract_tool_calls_streaming(
        self,
        previous_text: str,
        current_text: str,
        delta_text: str,
        previous_token_ids: Sequence[int],
        current_token_ids: Sequence[int],
        delta_token_ids: Sequence[int],
        request: Any,
    ) -> Any:
        if self._stream is None:
            self._stream = self._text_session(request)
        return _delta_message(self._stream.feed_text(delta_text), self._stream_ids)


# ------------------------------------------------------------------------------------ the unified parser


class ResponseTemplatesParser(_abstract.Parser):  # type: ignore[misc]
    """The unified parser vLLM holds per request (built by :func:`compose`).

    ``parse`` reads a whole output and ``parse_delta`` a stream, both from the generated token ids after
    the prompt's ids; ``parse_delta(finished=True)`` flushes what was held back. A region that does not
    parse is kept as content as written (and logged): bad model output is never a server error.
    """

    always_adjust_request = True
    _enable_auto_tools = False

    def __init__(self, tokenizer: Any, tools: list[Any] | None = None, *args: Any, **kwargs: Any) -> None:
        super().__init__(tokenizer, tools, *args, **kwargs)
        self.serving = serving_for(tokenizer, kwargs.get("model_config"))
        self.thinking = _thinking(kwargs.get("chat_template_kwargs"))
        self._tools = tool_dicts(tools)
        self._prompt_ids: list[int] | None = None
        self._stream: Session | None = None
        self._call_ids = _CallIds(self)
        # Ids fed to the stream, and the span [first, last) of the deltas that wrote reasoning.
        self._fed = 0
        self._reasoning_span = (-1, -1)

    # What the request asks for.

    def _parse_tools(self, request: Any, enable_auto_tools: bool) -> bool:
        if self._tool_parser is None:
            return False
        choice = getattr(request, "tool_choice", None)
        if choice == "none":
            return False
        if choice == "required" or _named_choice(request) is not None:
            return True
        return enable_auto_tools and choice in (None, "auto")

    def _session(self, request: Any, enable_auto_tools: bool) -> Session:
        tools = tool_dicts(getattr(request, "tools", None)) or self._tools
        return _new_session(
            self.serving,
            prompt_ids=self._prompt_ids,
            tools=tools,
            thinking=self.thinking,
            parse_reasoning=self._reasoning_parser is not None,
            parse_tools=self._parse_tools(request, enable_auto_tools),
        )

    def set_prompt_token_ids(self, prompt_token_ids: Sequence[int]) -> None:
        ids = list(prompt_token_ids)
        if ids != self._prompt_ids:
            self._prompt_ids = ids
            self._stream = None
            self._fed, self._reasoning_span = 0, (-1, -1)

    def is_reasoning_end(self, input_ids: list[int]) -> bool:
        return self._reasoning_parser is None or bool(self._reasoning_parser.is_reasoning_end(input_ids))

    def count_reasoning_tokens(self, token_ids: Sequence[int]) -> int:
        """The generated tokens that wrote reasoning. During a stream (vLLM asks after every step with
        continuous usage), counted as the stream was read: from the first delta that wrote reasoning to
        the last, in whole deltas; otherwise by reading ``token_ids`` once more, one id at a time."""
        if self._reasoning_parser is None:
            return 0
        if self._stream is not None and len(token_ids) == self._fed:
            first, last = self._reasoning_span
            return 0 if first < 0 else last - first
        return _count_reasoning(self.serving, self._prompt_ids, token_ids, self.thinking)

    # The request.

    def adjust_request(self, request: Any) -> Any:
        """Keep special tokens in the text (vLLM drops them by default: ``[TOOL_CALLS]``,
        ``<|tool_call_begin|>`` ...), and for forced tool use hand vLLM's structured outputs our grammar."""
        request.skip_special_tokens = False
        if hasattr(request, "spaces_between_special_tokens"):
            request.spaces_between_special_tokens = False
        return self._constrain(request)

    def _constrain(self, request: Any) -> Any:
        tools = tool_dicts(getattr(request, "tools", None))
        choice = getattr(request, "tool_choice", None)
        if self._tool_parser is None or not tools or choice == "none":
            return request
        named = _named_choice(request)
        single = getattr(request, "parallel_tool_calls", True) is False
        strict = any(_strict(t) for t in tools)
        forced = choice == "required" or named is not None
        if not (forced or single or strict):
            return request
        if not forced and request.extract_structured_outputs() is not None:
            # Auto with a response format of its own: that format applies, as with vLLM's parsers.
            return request
        from ...grammar import build

        what, parameter = (
            ("tool_choice=required", "tool_choice")
            if choice == "required"
            else (f"tool_choice={named!r}", "tool_choice")
            if named is not None
            else ("parallel_tool_calls=false", "parallel_tool_calls")
            if single
            else ("strict tools", "tools")
        )
        prefix = _decode(self.model_tokenizer, self._prompt_ids) if self._prompt_ids is not None else None
        try:
            grammar = build(
                self.serving.template,
                tools=tools,
                tool_choice=named if named is not None else ("required" if forced else "auto"),
                parallel_tool_calls=not single,
                prefix=prefix,
            )
        except ResponseTemplateError as exc:
            family = self.serving.choice.family
            where = f"the {family.name} format" if family is not None else "this template"
            raise VLLMValidationError(
                f"{NAME} cannot enforce {what} for {where}: its tool-call syntax has no grammar ({exc})",
                parameter=parameter,
            ) from exc
        request.structured_outputs = _sampling.StructuredOutputsParams(
            structural_tag=json.dumps(grammar.structural_tag)
        )
        if hasattr(request, "response_format"):
            request.response_format = None
        if hasattr(request, "text"):  # the Responses API's format
            request.text = None
        # The grammar covers the reasoning too: constrain from the first generated token.
        request._grammar_from_parser = True
        return request

    # The output.

    def parse(
        self,
        model_output: str,
        request: Any,
        enable_auto_tools: bool = False,
        model_output_token_ids: Sequence[int] = (),
    ) -> tuple[str | None, str | None, list[Any] | None]:
        self._initialize_history_tool_call_cnt(request)
        ids = _CallIds(self)
        session = self._session(request, enable_auto_tools or self._enable_auto_tools)
        if model_output_token_ids:
            session.feed_ids(list(model_output_token_ids))
        else:
            session.feed_text(model_output)
        result = session.result()
        _log_errors(session)
        calls = [
            FunctionCall(id=ids.resolve(i, c.id, c.name), name=c.name, arguments=c.arguments)
            for i, c in enumerate(result.tool_calls)
        ]
        return result.reasoning or None, result.content or None, calls or None

    def parse_delta(
        self,
        delta_text: str,
        delta_token_ids: list[int],
        request: Any,
        prompt_token_ids: list[int] | None = None,
        *,
        finished: bool,
    ) -> Any:
        self._initialize_history_tool_call_cnt(request)
        if self._prompt_ids is None and prompt_token_ids is not None:
            self.set_prompt_token_ids(prompt_token_ids)
        if self._stream is None:
            self._stream = self._session(request, self._enable_auto_tools)
        session = self._stream
        if delta_token_ids:
            delta = session.feed_ids(delta_token_ids)
            start, self._fed = self._fed, self._fed + len(delta_token_ids)
            if delta.reasoning:
                first = self._reasoning_span[0]
                self._reasoning_span = (start if first < 0 else first, self._fed)
        elif delta_text:
            delta = session.feed_text(delta_text)
        else:
            delta = Delta()
        if finished:
            delta = merge_deltas(delta, session.finish())
            _log_errors(session)
        return _delta_message(
            delta, self._call_ids, include_reasoning=bool(getattr(request, "include_reasoning", True))
        )
