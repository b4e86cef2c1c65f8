"""What the engine plugins share: which template a server uses, and one parse per request.

No engine is imported here. A plugin builds one :class:`Serving` per tokenizer (at start-up) from
:func:`choose_template`, and one :class:`Session` per request, which it feeds the generated token ids (or
text) and ends with :meth:`Session.finish`. Each call returns a :class:`Delta`: the reasoning, content and
tool-call pieces to send to the client. Tool names are announced as soon as they are written and arguments
are streamed as prefixes of the final JSON (typed by the request's tools). A model output that does not
parse never raises: the text of a region that fails is kept as content and the failure is recorded in
:attr:`Session.errors`.

>>> from tokenizers import Tokenizer, models
>>> from response_templates.engines.common import Serving, choose_template
>>> tokenizer = Tokenizer(models.WordLevel({"<unk>": 0}, unk_token="<unk>"))
>>> choice = choose_template(tokenizer, model_id="Qwen/Qwen3-8B")
>>> choice.describe()
"library family 'qwen3', chosen by the served model id 'Qwen/Qwen3-8B'"
>>> session = Serving(tokenizer, choice).session(prompt_text="<|im_start|>assistant\\n", tools=None, thinking=True)
>>> delta = session.feed_text("<think>Sunny.</think>\\n\\nIt is sunny.")
>>> delta.reasoning, delta.content
('Sunny.', 'It is sunny.')
>>> result = session.result() if session.finish() is not None else None
>>> result.content, result.tool_calls
('It is sunny.', [])
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from .. import library
from ..errors import ResponseTemplateError
from ..events import ParserEvent
from ..language import ResponseTemplate, load_template
from ..parser import ResponseParser
from ..wire import ChatCompletionsAdapter

__all__ = [
    "ENGINE_REQUIREMENTS",
    "PLUGIN_NAME",
    "TEMPLATE_ENV",
    "Call",
    "CallDelta",
    "Delta",
    "EngineSetupError",
    "Result",
    "Serving",
    "ServingCache",
    "Session",
    "TemplateChoice",
    "choose_template",
    "merge_deltas",
    "tool_dicts",
]

#: The environment variable that overrides the template choice (engines pass parsers no arguments): a
#: library family name or model id, or the path of a JSON file that holds a response template or a
#: tokenizer configuration with a ``response_template``.
TEMPLATE_ENV = "RESPONSE_TEMPLATES_TEMPLATE"

#: The name both plugins register their parsers under (``--tool-call-parser response_templates``).
PLUGIN_NAME = "response_templates"
#: The engine releases each plugin is written against (the extras pin the same ranges): their serving
#: code changes between releases, so a plugin checks the installed engine when it registers.
ENGINE_REQUIREMENTS = {"vllm": "vllm>=0.34,<0.35", "sglang": "sglang>=0.5.23,<0.5.24"}

Source = Literal["override", "tokenizer", "model id", "chat template", "derived"]


class EngineSetupError(ResponseTemplateError):
    """No template could be chosen for a server, or the one chosen cannot serve (raised at start-up)."""


@dataclass(frozen=True)
class TemplateChoice:
    """The template a server parses with, and why it was taken."""

    template: ResponseTemplate
    source: Source
    #: What the source named: the override's value, the model id, or ``""``.
    detail: str = ""
    #: The library family, when the template is one of the library's.
    family: library.Family | None = None

    def describe(self) -> str:
        """One line for the start-up log."""
        what = f"library family {self.family.name!r}" if self.family is not None else "the template"
        if self.source == "override":
            return f"{what} from {TEMPLATE_ENV}={self.detail}"
        if self.source == "tokenizer":
            return f"{what} from the tokenizer's response_template"
        if self.source == "model id":
            return f"{what}, chosen by the served model id {self.detail!r}"
        if self.source == "derived":
            return f"{what} derived from the chat template (confidence {self.detail}; docs/derive.md)"
        return f"{what}, detected from the chat template"


def _family_of(template: ResponseTemplate) -> library.Family | None:
    """The library family whose template ``template`` is (same data), if any."""
    data = template.to_dict()
    for fam in library.families():
        if fam.has_template and fam.template().to_dict() == data:
            return fam
    return None


def _override(value: str) -> TemplateChoice:
    path = Path(value)
    if value.endswith(".json") or path.is_file():
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise EngineSetupError(f"{TEMPLATE_ENV}={value}: cannot read the JSON file: {exc}") from None
        if isinstance(data, dict) and "response_template" in data:
            data = data["response_template"]
        try:
            template = load_template(data)
        except ResponseTemplateError as exc:
            raise EngineSetupError(f"{TEMPLATE_ENV}={value}: not a valid response template: {exc}") from None
        return TemplateChoice(template, "override", value, _family_of(template))
    try:
        fam = library.family_or_model(value)
        return TemplateChoice(fam.template(), "override", value, fam)
    except ResponseTemplateError as exc:
        raise EngineSetupError(
            f"{TEMPLATE_ENV}={value}: neither a JSON file nor a library family or model id: {exc}"
        ) from None


def _tokenizer_template(tokenizer: Any) -> Any:
    value = getattr(tokenizer, "response_template", None)
    if value is None:
        init_kwargs = getattr(tokenizer, "init_kwargs", None)
        if isinstance(init_kwargs, Mapping):
            value = init_kwargs.get("response_template")
    return value


def choose_template(
    tokenizer: Any,
    *,
    model_id: str | None,
    chat_template: str | None = None,
    environ: Mapping[str, str] = os.environ,
) -> TemplateChoice:
    """The template a server uses, in this order: the override (:data:`TEMPLATE_ENV`), the tokenizer's
    ``response_template``, the library by the served model id, the library by the chat template
    (``chat_template``, else the tokenizer's). Raises :class:`EngineSetupError` saying what was tried.
    """
    tried: list[str] = []
    value = environ.get(TEMPLATE_ENV, "").strip()
    if value:
        return _override(value)
    tried.append(f"{TEMPLATE_ENV} is not set")
    data = _tokenizer_template(tokenizer)
    if data is not None:
        try:
            template = load_template(data)
        except ResponseTemplateError as exc:
            raise EngineSetupError(f"the tokenizer's response_template is not valid: {exc}") from None
        return TemplateChoice(template, "tokenizer", "", _family_of(template))
    tried.append("the tokenizer has no response_template")
    if model_id:
        for candidate in (model_id, *_path_ids(model_id)):
            try:
                fam = library.family_for_model(candidate)
            except ResponseTemplateError:
                continue
            if fam.has_template:
                return TemplateChoice(fam.template(), "model id", candidate, fam)
        tried.append(f"no library family for the model id {model_id!r}")
    source: Any = chat_template if chat_template is not None else tokenizer
    try:
        fam = library.detect_family(source)
        if fam.has_template:
            return TemplateChoice(fam.template(), "chat template", "", fam)
        tried.append(f"the chat template is of family {fam.name!r}, which has no template")
    except ResponseTemplateError as exc:
        tried.append(f"the chat template: {exc}")
    # No library family: derive one from the chat template (a DerivedTemplateWarning; describe() names it).
    from ..derivation.fallback import derive_for

    try:
        template, derivation = derive_for(source, context=f"the model {model_id or '(unnamed)'}")
    except ResponseTemplateError as exc:
        tried.append(f"deriving from the chat template: {exc}")
    else:
        return TemplateChoice(template, "derived", f"{derivation.confidence:.2f}")
    raise EngineSetupError(
        "no response template for this model: "
        + "; ".join(tried)
        + f". Set {TEMPLATE_ENV} to a library family name (response-templates list) or a template file."
    )


def _path_ids(model_id: str) -> list[str]:
    """Model ids a local path may stand for: ``/models/Qwen/Qwen3-8B`` -> ``Qwen/Qwen3-8B``, ``Qwen3-8B``."""
    parts = [p for p in model_id.replace("\\", "/").split("/") if p]
    out = []
    if len(parts) >= 2:
        out.append("/".join(parts[-2:]))
    if parts:
        out.append(parts[-1])
    return [o for o in out if o != model_id]


@dataclass
class CallDelta:
    """A piece of one tool call: its announcement (``id`` and ``name``) and/or more of its arguments."""

    index: int
    id: str | None = None
    name: str | None = None
    arguments: str = ""


@dataclass
class Delta:
    """What one piece of output adds to the message (empty strings for nothing)."""

    reasoning: str = ""
    content: str = ""
    tool_calls: list[CallDelta] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.reasoning or self.content or self.tool_calls)


@dataclass(frozen=True)
class Call:
    """A finished tool call: its id, name and arguments (JSON text)."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class Result:
    """The whole message of a finished session."""

    reasoning: str | None
    content: str | None
    tool_calls: list[Call]
    errors: list[str]


def _without(template: ResponseTemplate, field_name: str) -> ResponseTemplate | None:
    """``template`` without the field ``field_name`` and the fields that feed into it, or ``None`` when it
    does not have the field or the rest is no template."""
    data = template.to_dict()
    fields = data.get("fields", {})
    if field_name not in fields:
        return None
    gone = {field_name}
    changed = True
    while changed:
        changed = False
        for name, spec in fields.items():
            if name not in gone and isinstance(spec, dict) and spec.get("into") in gone:
                gone.add(name)
                changed = True
    data["fields"] = {k: v for k, v in fields.items() if k not in gone}
    if not data["fields"]:
        return None
    try:
        return load_template(data)
    except ResponseTemplateError:
        return None


class Serving:
    """One server's template and tokenizer, with what every request shares (control tokens, the
    template variants without reasoning or tool parsing).

    Args:
        tokenizer: the engine's tokenizer (a transformers tokenizer or a ``tokenizers.Tokenizer``), or
            ``None`` when the engine gives the plugin text only.
        choice: the template (:func:`choose_template`).
        reasoning_field / tool_field: the template's fields of the reasoning and the tool calls.
    """

    def __init__(
        self,
        tokenizer: Any,
        choice: TemplateChoice,
        *,
        reasoning_field: str = "reasoning_content",
        tool_field: str = "tool_calls",
    ) -> None:
        self.tokenizer = tokenizer
        self.choice = choice
        self.template = choice.template
        self.reasoning_field = reasoning_field
        self.tool_field = tool_field
        self.controls: tuple[str, ...] = ()
        if tokenizer is not None:
            from ..hf.control_tokens import control_tokens_for

            self.controls = tuple(sorted(set(control_tokens_for(tokenizer, "auto").values())))
        self._variants: dict[tuple[bool, bool], ResponseTemplate | None] = {}

    @property
    def has_reasoning(self) -> bool:
        return self.reasoning_field in self.template.by_name

    @property
    def has_tool_calls(self) -> bool:
        return self.tool_field in self.template.by_name

    def template_for(self, *, parse_reasoning: bool, parse_tools: bool) -> ResponseTemplate:
        """The template, without the reasoning field (its text is then content, as written) or the tool
        fields (tool-call text is then content) when those are not parsed."""
        key = (parse_reasoning, parse_tools)
        if key not in self._variants:
            template: ResponseTemplate | None = self.template
            if not parse_reasoning and template is not None:
                template = _without(template, self.reasoning_field) or template
            if not parse_tools and template is not None:
                template = _without(template, self.tool_field) or template
            self._variants[key] = template
        return self._variants[key] or self.template

    def generation_prompt(self, *, thinking: bool | None, opens_reasoning: bool = False) -> str:
        """The end of a prompt as the family's chat template renders it, for engines that do not give the
        prompt: the variant that pre-opens the reasoning (``opens_reasoning``), the one that closes it
        (``thinking=False``), else the plain one. ``""`` when the template is not the library's."""
        fam = self.choice.family
        if fam is None:
            return ""
        variants = list(fam.variants)
        if opens_reasoning:
            for v in variants:
                if v.pre_opens_reasoning:
                    return v.generation_prompt
        if thinking is False:
            closers = _closers(self.template, self.reasoning_field)
            for v in variants:
                rest = v.generation_prompt[len(fam.generation_prompt) :]
                if v.generation_prompt.startswith(fam.generation_prompt) and any(c in rest for c in closers):
                    return v.generation_prompt
        return variants[0].generation_prompt if variants else fam.generation_prompt

    def session(
        self,
        *,
        prompt_ids: Sequence[int] | None = None,
        prompt_text: str | None = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
        thinking: bool | None = None,
        opens_reasoning: bool = False,
        parse_reasoning: bool = True,
        parse_tools: bool = True,
        model_ids_only: bool = False,
    ) -> Session:
        """A parse of one generation. The prompt is ``prompt_ids`` (exact), else ``prompt_text``, else the
        family's generation prompt (:meth:`generation_prompt`). With ``model_ids_only``, a tool call's id
        is the one the model wrote, else ``None`` (the engine names it in its own id format)."""
        template = self.template_for(parse_reasoning=parse_reasoning, parse_tools=parse_tools)
        prefix: Any
        if prompt_ids is not None and self.tokenizer is not None:
            prefix = list(prompt_ids)
        elif prompt_text is not None:
            prefix = prompt_text
        else:
            prefix = self.generation_prompt(thinking=thinking, opens_reasoning=opens_reasoning)
        return Session(self, template, prefix, tools, model_ids_only=model_ids_only)


def _closers(template: ResponseTemplate, name: str) -> list[str]:
    """The literal closers of the field ``name`` (``[]`` when it has none or is not literal)."""
    spec = template.by_name.get(name)
    close = spec.close if spec is not None else None
    return [lit for lit in (close.literals or ()) if lit] if close is not None else []


class _NoIds:
    """The adapter's id source when the engine names the calls: no id (the model's own ids still pass)."""

    def make(self, prefix: str, length: int = 24) -> str:
        return ""


class Session:
    """The parse of one generation (from :meth:`Serving.session`): feed ids or text, then :meth:`finish`."""

    def __init__(
        self,
        serving: Serving,
        template: ResponseTemplate,
        prefix: Any,
        tools: Sequence[Mapping[str, Any]] | None,
        *,
        model_ids_only: bool = False,
    ) -> None:
        self.serving = serving
        self.template = template
        tokenizer = serving.tokenizer
        kwargs: dict[str, Any] = {"tools": list(tools) if tools else None, "errors": "keep"}
        self._ids = tokenizer is not None
        if self._ids:
            kwargs["tokenizer"] = tokenizer
            kwargs["control_tokens"] = serving.controls
        try:
            self.parser = ResponseParser(template, prefix, missing_anchor="parse", **kwargs)
        except ResponseTemplateError:
            # A prompt that is not this template's (another chat template): read the output from its start.
            self.parser = ResponseParser(template, "" if isinstance(prefix, str) else [], **kwargs)
        self.adapter = ChatCompletionsAdapter(template, tools=kwargs["tools"], created=0)
        if model_ids_only:
            self.adapter._ids = _NoIds()  # type: ignore[assignment]
        self._errors: list[str] = []
        self._finished = False
        self._pending = self._delta(self.adapter.feed(self.parser.initial_events))

    @property
    def errors(self) -> list[str]:
        """What did not parse so far (the text of a failed region is kept as content)."""
        return [*self._errors, *(str(e) for e in self.parser.errors), *self.adapter.errors]

    def _take(self, delta: Delta) -> Delta:
        if self._pending:
            pending, self._pending = self._pending, Delta()
            pending.reasoning += delta.reasoning
            pending.content += delta.content
            pending.tool_calls.extend(delta.tool_calls)
            return pending
        return delta

    def _step(self, piece: Any) -> Delta:
        if self._finished:
            raise ResponseTemplateError("the session is finished: one session follows one generation")
        try:
            chunks = self.adapter.step(self.parser, piece)
        except ResponseTemplateError as exc:
            self._errors.append(str(exc))
            chunks = self.adapter.feed(getattr(exc, "events", None) or [])
        return self._take(self._delta(chunks))

    def feed_ids(self, ids: Sequence[int]) -> Delta:
        """Feed generated token ids (a control token matches only as its own id)."""
        if not self._ids:
            raise ResponseTemplateError("this session has no tokenizer: feed text")
        return self._step(list(ids))

    def feed_text(self, text: str) -> Delta:
        """Feed generated text (decoded by the engine). With a tokenizer, the text is read as decoded from
        ordinary tokens (a control token spelled in it does not match); without one, as written."""
        return self._step(text)

    def finish(self, finish_reason: str = "stop") -> Delta:
        """End the generation: flush what was held back (a possible delimiter), close what is open."""
        if self._finished:
            return Delta()
        events: list[ParserEvent] = []
        try:
            _, events = self.parser.finalize()
        except ResponseTemplateError as exc:
            self._errors.append(str(exc))
            events = list(getattr(exc, "events", None) or [])
        reason = finish_reason if finish_reason in ("stop", "length") else "stop"
        chunks = self.adapter.finish(events, finish_reason=reason)
        self._finished = True
        return self._take(self._delta(chunks))

    def result(self) -> Result:
        """The whole message (after :meth:`finish`)."""
        if not self._finished:
            self.finish()
        message = self.adapter.final()["choices"][0]["message"]
        calls = [
            Call(c.get("id", ""), c["function"]["name"], c["function"]["arguments"])
            for c in message.get("tool_calls") or []
        ]
        return Result(message.get("reasoning_content"), message.get("content"), calls, self.errors)

    @staticmethod
    def _delta(chunks: Iterable[Mapping[str, Any]]) -> Delta:
        out = Delta()
        for chunk in chunks:
            for choice in chunk.get("choices") or ():
                delta = choice.get("delta") or {}
                out.reasoning += delta.get("reasoning_content") or ""
                out.content += delta.get("content") or ""
                for call in delta.get("tool_calls") or ():
                    function = call.get("function") or {}
                    out.tool_calls.append(
                        CallDelta(
                            index=call["index"],
                            id=call.get("id") or None,
                            name=function.get("name"),
                            arguments=function.get("arguments") or "",
                        )
                    )
        return out


def merge_deltas(first: Delta, second: Delta) -> Delta:
    """One delta holding ``first`` then ``second`` (a step's pieces and what :meth:`Session.finish` flushed)."""
    return Delta(
        first.reasoning + second.reasoning,
        first.content + second.content,
        [*first.tool_calls, *second.tool_calls],
    )


def tool_dicts(tools: Iterable[Any] | None) -> list[dict[str, Any]]:
    """An engine's request tools as plain dicts (pydantic models dumped without their unset fields)."""
    out = []
    for tool in tools or ():
        if hasattr(tool, "model_dump"):
            tool = tool.model_dump(exclude_none=True)
        if isinstance(tool, dict):
            out.append(tool)
    return out


def _first_name(values: Iterable[Any]) -> str | None:
    """The first non-empty string of ``values`` (a list or tuple stands for its first item)."""
    for value in values:
        if isinstance(value, (list, tuple)):
            value = value[0] if value else None
        if isinstance(value, str) and value:
            return value
    return None


class ServingCache:
    """One :class:`Serving` per engine tokenizer: engines build parsers per request, the template is chosen
    (and logged, at INFO on ``logger``) once. ``ids``: the plugin feeds token ids (the serving keeps the
    tokenizer), else decoded text (the tokenizer only helps choose the template)."""

    def __init__(self, logger: logging.Logger, *, ids: bool) -> None:
        self._logger = logger
        self._ids = ids
        self._servings: dict[int, tuple[Any, Serving]] = {}
        self._lock = threading.Lock()

    def get(self, tokenizer: Any, model_ids: Callable[[], Iterable[Any]]) -> Serving:
        """The serving of ``tokenizer``; on first use the template is chosen with the first name
        ``model_ids()`` gives as the served model id. Raises :class:`EngineSetupError`."""
        key = id(tokenizer)
        with self._lock:
            hit = self._servings.get(key)
            if hit is not None and hit[0] is tokenizer:
                return hit[1]
            choice = choose_template(tokenizer, model_id=_first_name(model_ids()))
            serving = Serving(tokenizer if self._ids else None, choice)
            self._servings[key] = (tokenizer, serving)
        self._logger.info("response_templates: parsing with %s", choice.describe())
        return serving
