"""The SGLang classes of the plugin (imported once SGLang imports its parser registries).

SGLang runs two detectors per request and hands each only text: the reasoning detector first, then the
tool-call detector on the text the first passes on. Neither is given the prompt, the request (the tool
detector gets the request's tools on each call) or the other detector. So that the client still gets one
parse of the whole output, as :func:`response_templates.parse_response` reads it:

* :class:`ResponseTemplatesReasoningDetector` (``--reasoning-parser``) parses the whole output. When our
  tool detector runs after it (tool parsing is active for the request), it sends the reasoning and passes
  *all* the text on, untouched; otherwise it sends the reasoning and the content itself (tool-call text is
  then content, as written).
* :class:`ResponseTemplatesDetector` (``--tool-call-parser``) parses the same whole text with the same
  template and prompt, and sends the content and the tool calls. It learns that our reasoning detector
  read this output (and whether the prompt opened the reasoning) from a context variable that detector
  sets when it first parses: both run in the request's task. Without it (no ``--reasoning-parser``
  of ours, or ``separate_reasoning=false``), reasoning text is content, as written.

The prompt is the family's generation prompt (:class:`_Prompts`): the one that leaves the reasoning open
when SGLang says the reasoning is forced (``force_reasoning``: the chat template opens it, or the request
turns thinking on) and the output does not open it itself; else the plain one.
"""

from __future__ import annotations

import contextvars
import logging
from collections.abc import Mapping, Sequence
from importlib import import_module
from typing import Any

from ...errors import ResponseTemplateError
from ..common import PLUGIN_NAME as NAME
from ..common import Delta, EngineSetupError, Serving, ServingCache, Session, merge_deltas, tool_dicts

_tool_base: Any = import_module("sglang.srt.function_call.base_format_detector")
_core: Any = import_module("sglang.srt.function_call.core_types")
_reasoning: Any = import_module("sglang.srt.parser.reasoning_parser")

ToolCallItem: Any = _core.ToolCallItem
ToolParseResult: Any = _core.StreamingParseResult
ReasoningParseResult: Any = _reasoning.StreamingParseResult

logger = logging.getLogger("response_templates.engines.sglang")

__all__ = [
    "ResponseTemplatesDetector",
    "ResponseTemplatesReasoningDetector",
    "install",
    "patch_serving_chat",
    "serving_for",
]

# ------------------------------------------------------------------------------------ the template

_servings = ServingCache(logger, ids=False)


def _config(name: str) -> Any:
    """A value of SGLang's published server configuration (``None`` where there is none)."""
    try:
        runtime: Any = import_module("sglang.srt.runtime_context")
        return getattr(runtime.get_serving(), name, None)
    except Exception:  # no configuration published in this process (tests, tools)
        return None


def serving_for(tokenizer: Any) -> Serving:
    """The :class:`~response_templates.engines.common.Serving` of ``tokenizer`` (one per tokenizer, chosen
    and logged once). SGLang hands detectors decoded text with special tokens spelled out, so the serving
    reads text (the tokenizer only helps choose the template)."""
    return _servings.get(
        tokenizer,
        lambda: (
            _config("served_model_name"),
            _config("model_path"),
            getattr(tokenizer, "name_or_path", None),
        ),
    )


def _serving_or_fail(tokenizer: Any) -> Serving:
    try:
        return serving_for(tokenizer)
    except EngineSetupError as exc:
        # Not a ValueError: SGLang logs that one and serves on without the parser.
        raise RuntimeError(f"--tool-call-parser/--reasoning-parser {NAME}: {exc}") from exc


def _literals(serving: Serving, which: str) -> list[str]:
    spec = serving.template.by_name.get(serving.reasoning_field)
    delimiter = getattr(spec, which, None) if spec is not None else None
    return [lit for lit in (delimiter.literals or ()) if lit] if delimiter is not None else []


class _Prompts:
    """The family's generation prompts the detectors parse after (SGLang does not give the prompt)."""

    def __init__(self, serving: Serving) -> None:
        from ...grammar.derive import reasoning_state

        fam = serving.choice.family
        self.plain = fam.generation_prompt if fam is not None else ""
        self.opened: str | None = None
        states = {}
        for variant in fam.variants if fam is not None else ():
            try:
                states[variant.generation_prompt] = reasoning_state(
                    serving.template, variant.generation_prompt
                )
            except ResponseTemplateError:
                continue
        plain = [p for p, s in states.items() if s == "none"]
        if plain:
            self.plain = plain[0]
        self.opened = next((p for p, s in states.items() if s == "open"), None)
        self.openers = _literals(serving, "open")

    def choose(self, head: str, force: bool, final: bool) -> str | None:
        """The prompt for an output that starts with ``head``; ``None`` while ``head`` may still become
        the reasoning opener (only when the reasoning is forced)."""
        if not force or self.opened is None:
            return self.plain
        start = head.lstrip()
        if any(start.startswith(o) for o in self.openers):
            return self.plain  # the output opens the reasoning itself
        if not final and any(o.startswith(start) for o in self.openers):
            return None
        return self.opened


_prompts: dict[int, _Prompts] = {}


def _prompts_for(serving: Serving) -> _Prompts:
    hit = _prompts.get(id(serving))
    if hit is None:
        hit = _prompts[id(serving)] = _Prompts(serving)
    return hit


#: Set by our reasoning detector when it first parses, in the request's task: whether the prompt opened the
#: reasoning, and the assistant message the output continues (``continue_final_message``). Our tool
#: detector reads it to parse the same way (and to leave the reasoning out).
_handoff: contextvars.ContextVar[tuple[bool, str] | None] = contextvars.ContextVar(
    "response_templates_sglang", default=None
)


class _Reader:
    """One output's parse: a session started once the prompt is known (:meth:`_Prompts.choose`)."""

    def __init__(
        self,
        serving: Serving,
        *,
        force: bool,
        prefill: str = "",
        tools: Sequence[Mapping[str, Any]] | None,
        parse_reasoning: bool,
        parse_tools: bool,
    ) -> None:
        self.serving = serving
        self.prompts = _prompts_for(serving)
        self.force = force
        self.prefill = prefill
        self.kwargs: dict[str, Any] = {
            "tools": tools,
            "parse_reasoning": parse_reasoning,
            "parse_tools": parse_tools,
        }
        self.session: Session | None = None
        self._head = ""

    def _start(self, final: bool) -> bool:
        prompt = self.prompts.choose(self.prefill + self._head, self.force, final)
        if prompt is None:
            return False
        self.session = self.serving.session(prompt_text=prompt + self.prefill, **self.kwargs)
        return True

    def feed(self, text: str) -> Delta:
        if self.session is None:
            self._head += text
            if not self._start(final=False):
                return Delta()
            text, self._head = self._head, ""
        assert self.session is not None
        return self.session.feed_text(text) if text else Delta()

    def finish(self) -> Delta:
        delta = Delta()
        if self.session is None:
            self._start(final=True)
            delta = self.feed("")
        assert self.session is not None
        delta = merge_deltas(delta, self.session.finish())
        errors = self.session.errors
        if errors:
            logger.warning(
                "response_templates: output kept as written where it did not parse: %s", "; ".join(errors)
            )
        return delta

    def whole(self, text: str) -> Delta:
        return merge_deltas(self.feed(text), self.finish())


# ------------------------------------------------------------------------------------ reasoning


class ResponseTemplatesReasoningDetector(_reasoning.BaseReasoningFormatDetector):  # type: ignore[misc]
    """``--reasoning-parser response_templates``."""

    def __init__(
        self,
        tokenizer: Any = None,
        force_reasoning: bool = False,
        stream_reasoning: bool = True,
        tool_call_parser_active: bool = False,
        **kwargs: Any,
    ) -> None:
        self.serving = _serving_or_fail(tokenizer)
        openers = _literals(self.serving, "open")
        closers = _literals(self.serving, "close")
        super().__init__(
            think_start_token=openers[0] if openers else "",
            think_end_token=closers[0] if closers else "",
            force_reasoning=bool(force_reasoning),
            stream_reasoning=stream_reasoning,
            # SGLang's fallback when the chat template says nothing: thinking only when asked for.
            reasoning_default="explicit_enable_thinking",
        )
        tool_parser = _config("tool_call_parser")
        # Pass the whole text on to our tool detector (and only to ours).
        self.passthrough = bool(tool_call_parser_active) and tool_parser in (None, NAME)
        # The assistant message the output continues (SGLang appends it to the prompt).
        previous = kwargs.get("previous_content") if kwargs.get("continue_final_message") else None
        self.prefill = previous if isinstance(previous, str) else ""
        self._reader: _Reader | None = None
        self._held = ""  # reasoning held back when it is not streamed

    def _new_reader(self) -> _Reader:
        _handoff.set((bool(self.force_reasoning), self.prefill))
        return _Reader(
            self.serving,
            force=bool(self.force_reasoning),
            prefill=self.prefill,
            tools=None,
            parse_reasoning=True,
            parse_tools=self.passthrough,
        )

    def _result(self, text: str, delta: Delta, *, final: bool) -> Any:
        normal = text if self.passthrough else delta.content
        reasoning = delta.reasoning
        if not self.stream_reasoning:
            self._held += reasoning
            done = final or bool(delta.content or delta.tool_calls)
            reasoning, self._held = (self._held, "") if done else ("", self._held)
        return ReasoningParseResult(normal_text=normal, reasoning_text=reasoning)

    def detect_and_parse(self, text: str) -> Any:
        try:
            delta = self._new_reader().whole(text)
        except Exception:
            logger.exception("response_templates: reasoning not parsed; the output is content as written")
            return ReasoningParseResult(normal_text=text)
        return self._result(text, delta, final=True)

    def parse_streaming_increment(self, new_text: str) -> Any:
        try:
            if self._reader is None:
                self._reader = self._new_reader()
            delta = self._reader.feed(new_text)
        except Exception:
            logger.exception("response_templates: reasoning not parsed; the output is content as written")
            return ReasoningParseResult(normal_text=new_text)
        return self._result(new_text, delta, final=False)

    def finish(self) -> Any:
        if self._reader is None:
            return ReasoningParseResult()
        try:
            delta = self._reader.finish()
        except Exception:
            logger.exception("response_templates: reasoning not parsed at the end of the stream")
            delta = Delta()
        return self._result("", delta, final=True)


# ------------------------------------------------------------------------------------ tool calls


class _Tag(dict):  # type: ignore[type-arg]
    """A structural tag as SGLang's constraint code takes it (it calls ``model_dump``)."""

    def model_dump(self, **_: Any) -> dict[str, Any]:
        return dict(self)


class ResponseTemplatesDetector(_tool_base.BaseFormatDetector):  # type: ignore[misc]
    """``--tool-call-parser response_templates``."""

    def __init__(self, tokenizer: Any = None) -> None:
        super().__init__()
        self.serving = _serving_or_fail(tokenizer)
        self._reader: _Reader | None = None
        self._whole: tuple[str, Delta] | None = None
        self._grammar_ok: bool | None = None
        self._refusal: str | None = None

    @classmethod
    def parses_without_tools(cls) -> bool:
        # As our own parse: calls are read whether or not the request declared tools.
        return True

    def _new_reader(self, tools: Any) -> _Reader:
        handoff = _handoff.get()
        force, prefill = handoff if handoff is not None else (False, "")
        return _Reader(
            self.serving,
            force=force,
            prefill=prefill,
            tools=tool_dicts(tools) or None,
            parse_reasoning=handoff is not None,
            parse_tools=True,
        )

    def _parse_whole(self, text: str, tools: Any) -> Delta:
        if self._whole is None or self._whole[0] != text:
            self._whole = (text, self._new_reader(tools).whole(text))
        return self._whole[1]

    def has_tool_call(self, text: str) -> bool:
        """Whether our parse of ``text`` differs from the text as it is: SGLang then takes the parse."""
        try:
            delta = self._parse_whole(text, None)
        except Exception:
            logger.exception("response_templates: tool calls not parsed; the output is content as written")
            return False
        return bool(delta.tool_calls) or delta.content != text

    def detect_and_parse(self, text: str, tools: Any) -> Any:
        try:
            self._whole = None
            delta = self._parse_whole(text, tools)
        except Exception:
            logger.exception("response_templates: tool calls not parsed; the output is content as written")
            return ToolParseResult(normal_text=text)
        return self._items(delta, whole=True)

    @staticmethod
    def _items(delta: Delta, *, whole: bool) -> Any:
        if whole:
            calls: dict[int, list[Any]] = {}
            for piece in delta.tool_calls:
                slot = calls.setdefault(piece.index, [None, ""])
                slot[0] = piece.name or slot[0]
                slot[1] += piece.arguments
            items = [ToolCallItem(tool_index=i, name=n, parameters=a) for i, (n, a) in sorted(calls.items())]
        else:
            items = [
                ToolCallItem(tool_index=p.index, name=p.name, parameters=p.arguments)
                for p in delta.tool_calls
            ]
        return ToolParseResult(normal_text=delta.content, calls=items)

    def parse_streaming_increment(self, new_text: str, tools: Any) -> Any:
        try:
            if self._reader is None:
                self._reader = self._new_reader(tools)
            delta = self._reader.feed(new_text)
        except Exception:
            logger.exception("response_templates: tool calls not parsed; the output is content as written")
            return ToolParseResult(normal_text=new_text)
        return self._items(delta, whole=False)

    def finish(self, tools: Any) -> Any:
        if self._reader is None:
            return ToolParseResult()
        try:
            delta = self._reader.finish()
        except Exception:
            logger.exception("response_templates: tool calls not parsed at the end of the stream")
            return ToolParseResult()
        return self._items(delta, whole=False)

    # Forced tool use. SGLang builds the constraint of a request with tools from the detector: for
    # tool_choice=required/named and strict tools it asks get_structural_tag (for automatic choice,
    # get_auto_tool_call_structural_tag), inside a try that turns every error into "no constraint". Then,
    # outside it, it asks parses_required_natively: where our grammar failed, that refuses the request
    # (SGLang answers 400) rather than let SGLang force a bare JSON array this template does not write.

    def supports_structural_tag(self) -> bool:
        """Whether the template's tool-call syntax has a grammar."""
        if self._grammar_ok is None:
            from ...grammar import COVERAGE_TOOLS, build

            try:
                build(self.serving.template, tools=COVERAGE_TOOLS[:1], tool_choice="required")
                self._grammar_ok = True
            except ResponseTemplateError:
                self._grammar_ok = False
        return self._grammar_ok

    def parses_required_natively(self) -> bool:
        """``False`` (SGLang then keeps our structural tag); raises the refusal of the request whose
        constraint our grammar could not give (a ``ValueError``: SGLang's 400)."""
        if self._refusal is not None:  # asked twice: inside SGLang's try, then outside it
            raise ValueError(self._refusal)
        return False

    def structure_info(self) -> Any:
        raise NotImplementedError(f"{NAME} gives SGLang whole structural tags (get_structural_tag)")

    def get_structural_tag(
        self,
        tools: Any = None,
        tool_choice: Any = "auto",
        thinking_mode: bool = False,
        parallel_tool_calls: bool = True,
        **_: Any,
    ) -> Any:
        """Our grammar of the whole output for the request (``None`` when the template has none)."""
        from ...grammar import build

        name = getattr(getattr(tool_choice, "function", None), "name", None)
        choice = name if isinstance(name, str) else tool_choice
        # thinking_mode=False with a reasoning parser: SGLang's reasoner backend lets the reasoning through
        # unconstrained and starts the grammar after it.
        reasoning = "allowed" if thinking_mode or not _config("reasoning_parser") else "forbidden"
        try:
            grammar = build(
                self.serving.template,
                tools=tool_dicts(tools),
                tool_choice=choice,
                parallel_tool_calls=parallel_tool_calls is not False,
                reasoning=reasoning,
                prefix=_prompts_for(self.serving).plain,
            )
        except ResponseTemplateError as exc:
            family = self.serving.choice.family
            where = f"the {family.name} format" if family is not None else "this template"
            what = (
                f"tool_choice={choice!r}"
                if choice != "auto"
                else "parallel_tool_calls=false"
                if parallel_tool_calls is False
                else "strict tools"
            )
            self._refusal = (
                f"{NAME} cannot enforce {what} for {where}: its tool-call syntax has no grammar ({exc})"
            )
            return None
        return _Tag(grammar.structural_tag)

    def get_auto_tool_call_structural_tag(
        self, tools: Any = None, thinking_mode: bool = False, parallel_tool_calls: bool = True
    ) -> Any:
        """``parallel_tool_calls=false`` with automatic tool choice: our grammar allows one call at most."""
        if parallel_tool_calls is not False or not tools:
            return None
        return self.get_structural_tag(tools, "auto", thinking_mode, parallel_tool_calls=False)


# ------------------------------------------------------------------------------------ the request

_MARK = "_response_templates_original"


def patch_serving_chat(cls: Any) -> None:
    """Keep special tokens in the text SGLang detokenizes, without spaces around them, when a flag
    names ours.

    SGLang keeps them (``skip_special_tokens=False``) for requests with tools, and for a few of its own
    reasoning parsers by name; a request without tools would lose delimiters such as ``◁think▷`` or
    ``<|channel|>``. Wraps ``OpenAIServingChat._patch_reasoning_skip_special_tokens``, which SGLang calls
    for every chat request before it renders the prompt (once per process).
    """
    current = cls.__dict__.get("_patch_reasoning_skip_special_tokens")
    if current is None or getattr(current, _MARK, None) is not None:
        return

    def _patch_reasoning_skip_special_tokens(self: Any, request: Any) -> None:
        current(self, request)
        if NAME in (getattr(self, "reasoning_parser", None), getattr(self, "tool_call_parser", None)):
            request.skip_special_tokens = False
            # SGLang reads this detokenization option from chat_template_kwargs (the template ignores it).
            kwargs = dict(getattr(request, "chat_template_kwargs", None) or {})
            kwargs.setdefault("spaces_between_special_tokens", False)
            request.chat_template_kwargs = kwargs

    setattr(_patch_reasoning_skip_special_tokens, _MARK, current)
    _patch_reasoning_skip_special_tokens.__doc__ = current.__doc__
    cls._patch_reasoning_skip_special_tokens = _patch_reasoning_skip_special_tokens


def install() -> None:
    """Register both detectors in SGLang's registries, and wrap its chat serving, for those of the modules
    that are imported (idempotent; ``register`` calls this as each is imported)."""
    import sys

    from . import REASONING_REGISTRY, SERVING_CHAT, TOOL_REGISTRY

    tools = sys.modules.get(TOOL_REGISTRY)
    if tools is not None:
        tools.FunctionCallParser.ToolCallParserEnum[NAME] = ResponseTemplatesDetector
    reasoning = sys.modules.get(REASONING_REGISTRY)
    if reasoning is not None:
        reasoning.ReasoningParser.DetectorMap[NAME] = ResponseTemplatesReasoningDetector
    serving = sys.modules.get(SERVING_CHAT)
    if serving is not None and hasattr(serving, "OpenAIServingChat"):
        patch_serving_chat(serving.OpenAIServingChat)


READY = True
install()
