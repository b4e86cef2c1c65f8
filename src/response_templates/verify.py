"""Round-trip verification: does a response template invert a chat template?

:func:`round_trip` renders assistant messages (reasoning, text, parallel tool calls with every kind of
argument value) through a real Jinja chat template, takes the text the assistant turn adds after the
generation prompt, parses it back with the response template (the rendered prompt as the prefix) and
reports every field that does not come back equal. It is the check to run before publishing a response
template next to a chat template.

>>> import response_templates as rt
>>> chat_template = (
...     "{% for m in messages %}<|im_start|>{{ m.role }}\\n{{ m.content }}"
...     "{% if m.tool_calls %}{% for c in m.tool_calls %}<tool_call>\\n{{ c.function | tojson }}\\n</tool_call>"
...     "{% endfor %}{% endif %}<|im_end|>\\n{% endfor %}"
...     "{% if add_generation_prompt %}<|im_start|>assistant\\n{% endif %}"
... )
>>> report = rt.verify.round_trip(chat_template, rt.templates.get("hermes"))
>>> report.ok, len(report.cases)
(True, 5)
>>> print(report.summary())
5 cases: 5 passed, 0 failed, 1 skipped (reasoning: the chat template does not render reasoning)

Rendering uses ``jinja2``'s sandbox with the globals Hugging Face chat templates expect
(``raise_exception``, ``strftime_now``, a ``tojson`` filter with HF's options, the ``generation`` block
tag, ``bos_token``/``eos_token``, ``tools``, ``add_generation_prompt`` and any template keyword argument
such as ``enable_thinking``). Install the ``verify`` extra (``pip install response-templates[verify]``).
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from .errors import ResponseTemplateError
from .language import ResponseTemplate, load_template
from .policy import anchor_not_found
from .whole import parse_response

if TYPE_CHECKING:  # jinja2 is an optional dependency, imported when a chat template is rendered
    from jinja2 import Template
    from jinja2.sandbox import SandboxedEnvironment

__all__ = [
    "DEFAULT_CASES",
    "Case",
    "CaseResult",
    "Difference",
    "RoundTripReport",
    "default_cases",
    "render_chat_template",
    "round_trip",
]

# ------------------------------------------------------------------------------------------- the cases

_CODE = 'def greet(name: str) -> str:\n    """Say hello."""\n    return f"Hello, {name}!"\n'


@dataclass(frozen=True)
class Case:
    """One assistant message to render and parse back.

    ``message`` is the assistant message in chat-API shape (``reasoning_content``, ``content``,
    ``tool_calls`` with ``{"type": "function", "function": {"name", "arguments": dict}}``).
    """

    name: str
    message: Mapping[str, Any]

    @property
    def has_reasoning(self) -> bool:
        return bool(self.message.get("reasoning_content"))

    @property
    def n_calls(self) -> int:
        return len(self.message.get("tool_calls") or ())


def _call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "arguments": arguments}}


#: The built-in cases: text, reasoning, 1-3 parallel tool calls whose arguments cover strings, integers,
#: floats, booleans, null, nested objects, arrays, non-ASCII text and multi-line code.
DEFAULT_CASES: tuple[Case, ...] = (
    Case("text", {"role": "assistant", "content": "Hello! How can I help you today?"}),
    Case(
        "reasoning",
        {
            "role": "assistant",
            "reasoning_content": "The user greets me.\nI should greet back.",
            "content": "Hi there. Nice to meet you!",
        },
    ),
    Case(
        "one-call",
        {
            "role": "assistant",
            "tool_calls": [
                _call("get_weather", {"city": "Paris", "days": 3, "threshold": 21.5, "metric": True}),
            ],
        },
    ),
    Case(
        "two-calls",
        {
            "role": "assistant",
            "reasoning_content": "Two lookups are needed.",
            "content": "Let me check both.",
            "tool_calls": [
                _call("search", {"query": "Zürich → 東京 ✈", "filters": {"max": 5, "lang": ["de", "ja"]}}),
                _call("set_note", {"note": None, "tags": ["a", "b"], "urgent": False}),
            ],
        },
    ),
    Case(
        "three-calls",
        {
            "role": "assistant",
            "tool_calls": [
                _call("run_code", {"language": "python", "code": _CODE}),
                _call("get_weather", {"city": "Kyoto", "days": 1, "threshold": -3.25, "metric": False}),
                _call("search", {"query": 'quotes "inside" and back\\slash', "filters": {}}),
            ],
        },
    ),
)


def default_cases(*, reasoning: bool = True, tool_calls: bool = True, max_parallel: int = 3) -> list[Case]:
    """The built-in cases a family can express: without reasoning or tool calls, or fewer parallel calls."""
    out = []
    for case in DEFAULT_CASES:
        if case.n_calls and (not tool_calls or case.n_calls > max_parallel):
            continue
        if case.has_reasoning and not reasoning:
            message = {k: v for k, v in case.message.items() if k != "reasoning_content"}
            case = Case(case.name + "-no-reasoning", message)
        out.append(case)
    return out


def json_type(value: Any) -> str:
    """The JSON-schema type name of a JSON value (``"integer"`` for ``3``, ``"object"`` for a dict).

    >>> [json_type(v) for v in (True, 3, 1.5, "x", None, [], {})]
    ['boolean', 'integer', 'number', 'string', 'null', 'array', 'object']
    """
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if value is None:
        return "null"
    if isinstance(value, list):
        return "array"
    return "object"


def _schema(value: Any) -> dict[str, Any]:
    kind = json_type(value)
    if kind == "null":
        # "nullable" rather than a type list: several published templates recurse forever on type lists.
        return {"type": "string", "nullable": True, "description": "A nullable value."}
    schema: dict[str, Any] = {"type": kind, "description": f"A{'n' if kind[0] in 'aeiou' else ''} {kind}."}
    if kind == "array":
        schema["items"] = _schema(value[0]) if value else {"type": "string"}
    elif kind == "object":
        first = next(iter(value.values()), "")
        schema["additionalProperties"] = {"type": json_type(first)}
    return schema


def tools_for(cases: Sequence[Case]) -> list[dict[str, Any]]:
    """JSON-schema tools for the calls in ``cases``: each parameter typed like its value (null as a nullable
    string), with descriptions and array item types, as chat templates that print schemas expect."""
    tools: dict[str, dict[str, Any]] = {}
    for case in cases:
        for call in case.message.get("tool_calls") or ():
            fn = call["function"]
            props = tools.setdefault(fn["name"], {})
            for key, value in fn["arguments"].items():
                props[key] = _schema(value)
    return [
        {
            "type": "function",
            "function": {
                "name": name,
                "description": f"The {name} tool.",
                "parameters": {"type": "object", "properties": props, "required": sorted(props)},
            },
        }
        for name, props in tools.items()
    ]


# ------------------------------------------------------------------------------------------ rendering


def _jsonable(value: Any) -> Any:
    """``value`` with iterators (e.g. the generator of Jinja's ``map`` filter) turned into lists."""
    if isinstance(value, Mapping):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, (str, bytes, int, float, bool)) or value is None:
        return value
    if hasattr(value, "__iter__"):
        return [_jsonable(v) for v in value]
    return value


def _tojson(
    value: Any,
    ensure_ascii: bool = False,
    indent: int | None = None,
    separators: Any = None,
    sort_keys: bool = False,
) -> str:
    # The options Hugging Face's chat-template renderer gives its ``tojson`` filter.
    return json.dumps(
        _jsonable(value), ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys
    )


def _raise_exception(message: str) -> None:
    from jinja2.exceptions import TemplateError as JinjaTemplateError

    raise JinjaTemplateError(message)


def _strftime_now(fmt: str) -> str:
    return datetime.now().strftime(fmt)


_ENV_CACHE: dict[str, SandboxedEnvironment] = {}


def _environment() -> SandboxedEnvironment:
    env = _ENV_CACHE.get("env")
    if env is not None:
        return env
    try:
        import jinja2
        from jinja2 import nodes
        from jinja2.ext import Extension, loopcontrols
        from jinja2.sandbox import SandboxedEnvironment
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ResponseTemplateError(
            "round-trip verification renders chat templates with jinja2; install it with "
            "pip install 'response-templates[verify]'"
        ) from exc

    class _Generation(Extension):
        """The ``{% generation %}...{% endgeneration %}`` block of HF templates, rendered as its body."""

        tags = {"generation"}  # noqa: RUF012 -- jinja2 declares `tags` as a plain set attribute

        def parse(self, parser: Any) -> Any:
            lineno = next(parser.stream).lineno
            body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
            return nodes.Scope(body, lineno=lineno)

    # A sandbox like Hugging Face's, but one that lets a template append to its own lists: several
    # published templates (Kimi-K2's, for one) do, and llama.cpp's renderer allows it.
    env = SandboxedEnvironment(
        trim_blocks=True,
        lstrip_blocks=True,
        extensions=[_Generation, loopcontrols],
        undefined=jinja2.Undefined,
    )
    env.filters["tojson"] = _tojson
    env.globals["raise_exception"] = _raise_exception
    env.globals["strftime_now"] = _strftime_now
    _ENV_CACHE["env"] = env
    return env


@lru_cache(maxsize=64)
def _compile_chat_template(chat_template: str) -> Template:
    return _environment().from_string(chat_template)


def render_chat_template(
    chat_template: str,
    messages: Sequence[Mapping[str, Any]],
    *,
    add_generation_prompt: bool = False,
    tools: Sequence[Mapping[str, Any]] | None = None,
    bos_token: str = "",
    eos_token: str = "",
    **kwargs: Any,
) -> str:
    """Render a Jinja chat template the way Hugging Face tokenizers do (sandboxed)."""
    template = _compile_chat_template(chat_template)
    return template.render(
        messages=copy.deepcopy(list(messages)),
        tools=copy.deepcopy(list(tools)) if tools else None,
        add_generation_prompt=add_generation_prompt,
        bos_token=bos_token,
        eos_token=eos_token,
        **kwargs,
    )


# -------------------------------------------------------------------------------------------- results


@dataclass(frozen=True)
class Difference:
    """One field that did not come back equal."""

    field: str
    expected: Any
    got: Any

    def __str__(self) -> str:
        return f"{self.field}: expected {self.expected!r}, got {self.got!r}"


@dataclass
class CaseResult:
    """What happened to one case: ``status`` is ``"pass"``, ``"fail"`` or ``"error"``."""

    case: str
    status: str
    differences: list[Difference] = field(default_factory=list)
    #: Why the case failed or could not run (prefix mismatch, render error, parse error), if it did.
    problem: str = ""
    #: Fields left out of the comparison, with the reason.
    skipped: dict[str, str] = field(default_factory=dict)
    prefix: str = ""
    text: str = ""
    parsed: dict[str, Any] | None = None

    @property
    def ok(self) -> bool:
        return self.status == "pass"


@dataclass
class RoundTripReport:
    """The result of :func:`round_trip`: one :class:`CaseResult` per case."""

    cases: list[CaseResult]

    @property
    def ok(self) -> bool:
        """Whether every case passed."""
        return all(c.ok for c in self.cases)

    @property
    def skipped(self) -> dict[str, str]:
        """Fields left out of some comparison, with the reason (merged over the cases)."""
        out: dict[str, str] = {}
        for case in self.cases:
            out.update(case.skipped)
        return out

    def failures(self) -> list[CaseResult]:
        return [c for c in self.cases if not c.ok]

    def summary(self) -> str:
        """One line: counts, skipped fields with reasons."""
        n_fail = len(self.failures())
        line = f"{len(self.cases)} cases: {len(self.cases) - n_fail} passed, {n_fail} failed"
        skipped = self.skipped
        if skipped:
            line += f", {len(skipped)} skipped (" + "; ".join(f"{k}: {v}" for k, v in skipped.items()) + ")"
        return line

    def details(self) -> str:
        """A readable account of every failure."""
        lines = [self.summary()]
        for case in self.failures():
            lines.append(f"- {case.case}: {case.status}" + (f" -- {case.problem}" if case.problem else ""))
            lines.extend(f"    {d}" for d in case.differences)
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "summary": self.summary(),
            "cases": [
                {
                    "case": c.case,
                    "status": c.status,
                    "problem": c.problem,
                    "skipped": c.skipped,
                    "differences": [
                        {"field": d.field, "expected": d.expected, "got": d.got} for d in c.differences
                    ],
                }
                for c in self.cases
            ],
        }


# --------------------------------------------------------------------------------------------- checks

_REASONING_KEYS = ("reasoning_content", "reasoning", "thinking")


def _reasoning_keys(chat_template: str) -> list[str]:
    """The message keys a chat template reads reasoning from (``reasoning_content`` if it names none)."""
    found = [
        key
        for key in _REASONING_KEYS
        if re.search(r"""(?:\.|\[['"])""" + key + r"""(?![\w])""", chat_template)
    ]
    return found or ["reasoning_content"]


def _assistant_message(case: Case, chat_template: str, id_style: str, arguments: str) -> dict[str, Any]:
    """The assistant message of a case as the chat template receives it."""
    message: dict[str, Any] = {"role": "assistant", "content": case.message.get("content") or ""}
    reasoning = case.message.get("reasoning_content")
    if reasoning:
        for key in _reasoning_keys(chat_template):
            message[key] = reasoning
    calls = []
    for index, call in enumerate(case.message.get("tool_calls") or ()):
        call = copy.deepcopy(dict(call))
        call.setdefault("id", id_style.format(name=call["function"]["name"], index=index, n=index + 1))
        if arguments == "json-string":
            call["function"]["arguments"] = json.dumps(call["function"]["arguments"], ensure_ascii=False)
        calls.append(call)
    if calls:
        message["tool_calls"] = calls
    return message


def _strip(value: Any) -> Any:
    if isinstance(value, str):
        return value.strip() or None
    return value or None


def _compare(expected: Mapping[str, Any], got: Mapping[str, Any], compare_ids: bool) -> list[Difference]:
    diffs = []
    for key in ("reasoning_content", "content"):
        if key in expected and _strip(expected.get(key)) != _strip(got.get(key)):
            diffs.append(Difference(key, _strip(expected.get(key)), _strip(got.get(key))))
    if "tool_calls" not in expected:
        return diffs
    exp_calls = list(expected["tool_calls"] or [])
    out_calls = list(got.get("tool_calls") or [])
    if len(exp_calls) != len(out_calls):
        diffs.append(Difference("tool_calls", exp_calls, out_calls))
        return diffs
    for index, (exp, out) in enumerate(zip(exp_calls, out_calls, strict=True)):
        where = f"tool_calls[{index}]"
        if not isinstance(out, Mapping):
            diffs.append(Difference(where, exp, out))
            continue
        exp_fn = exp.get("function", {})
        out_function = out.get("function")
        out_fn = out_function if isinstance(out_function, Mapping) else {}
        if exp_fn.get("name") != out_fn.get("name"):
            diffs.append(Difference(where + ".function.name", exp_fn.get("name"), out_fn.get("name")))
        exp_args, out_args = exp_fn.get("arguments"), out_fn.get("arguments")
        if isinstance(exp_args, Mapping) and isinstance(out_args, Mapping):
            for key in [*exp_args, *(k for k in out_args if k not in exp_args)]:
                if key not in out_args or key not in exp_args or out_args[key] != exp_args[key]:
                    diffs.append(
                        Difference(f"{where}.function.arguments.{key}", exp_args.get(key), out_args.get(key))
                    )
        elif exp_args != out_args:
            diffs.append(Difference(where + ".function.arguments", exp_args, out_args))
        if out.get("type") != "function":
            diffs.append(Difference(where + ".type", "function", out.get("type")))
        if compare_ids and "id" in out and out["id"] != exp.get("id"):
            diffs.append(Difference(where + ".id", exp.get("id"), out["id"]))
    return diffs


_BOUNDARY = frozenset(">\n]}")


def _overlap(tail: str, turn: str) -> int:
    """The length of the longest suffix of ``tail`` that is a prefix of ``turn`` (0 unless it holds more
    than whitespace: a shared newline says nothing about where the turn starts)."""
    for k in range(min(len(tail), len(turn)), 0, -1):
        if tail.endswith(turn[:k]):
            return k if turn[:k].strip() else 0
    return 0


def round_trip(
    chat_template: str,
    response_template: Mapping[str, Any] | ResponseTemplate | str,
    messages: Sequence[Mapping[str, Any]] | None = None,
    *,
    template_kwargs: Mapping[str, Any] | None = None,
    reasoning_kwargs: Mapping[str, Any] | None = None,
    plain_kwargs: Mapping[str, Any] | None = None,
    tools: Sequence[Mapping[str, Any]] | None = None,
    system: str | None = None,
    bos_token: str = "",
    eos_token: str = "",
    stop: Sequence[str] = (),
    tool_call_id: str = "call{n:04d}x",
    arguments: str = "object",
    max_parallel: int = 3,
) -> RoundTripReport:
    """Render assistant messages through ``chat_template`` and parse them back with ``response_template``.

    Args:
        chat_template: the Jinja chat template (the text of a ``.jinja`` file or of
            ``tokenizer_config.json``'s ``chat_template``).
        response_template: the response template to check.
        messages: assistant messages to use instead of the built-in cases (:data:`DEFAULT_CASES`).
        template_kwargs: extra chat-template variables for every case, e.g. ``{"enable_thinking": True}``.
        reasoning_kwargs, plain_kwargs: variables added for the cases with reasoning and for those
            without (e.g. ``{"enable_thinking": True}`` / ``{"enable_thinking": False}``), so that each
            case is rendered with a prompt that can lead to it.
        tools: tool schemas given to the chat template and to the parser (default: schemas typed after the
            case arguments, so raw-text argument values are cast back to their types).
        system: a system message to put first (none by default: some templates reject one).
        bos_token, eos_token: the tokenizer's special tokens as the chat template sees them.
        stop: the model's stop strings; the assistant turn is cut after the first one (a chat template may
            render more after the turn, e.g. the start of the next one).
        tool_call_id: format of the call ids given to the chat template (``{name}``, ``{index}``, ``{n}``);
            some templates insist on a shape (Mistral: 9 alphanumerics).
        arguments: ``"object"`` (default) or ``"json-string"``: how tool-call arguments are given to the
            chat template (some templates expect OpenAI's JSON string).
        max_parallel: the most parallel calls a built-in case may have.

    Each case renders the conversation without the assistant message (``add_generation_prompt=True``: the
    prompt) and with it. The assistant turn is the second rendering after the prompt. When the prompt ends
    with text the turn does not start with (a pre-opened ``<think>``, an empty thinking block), the part
    of the prompt's tail that the turn repeats is taken as written by the prompt; if the turn repeats
    none of it, the case fails with that as its problem (the chat template renders history differently
    from the generation prompt). Text is compared stripped; a field whose text the chat template does not
    render (reasoning dropped from history, tool calls not rendered, call ids replaced) is reported as
    skipped with the reason instead of compared.

    Raises :class:`~response_templates.ResponseTemplateError` at once when jinja2 is not installed
    (the ``verify`` extra), and :class:`~response_templates.TemplateError` for an invalid template.
    """
    compiled = load_template(response_template)
    _environment()  # without jinja2 nothing can be rendered: say so once, not once per case
    fields = {f.name for f in compiled.fields}
    if messages is None:
        cases = default_cases(
            reasoning="reasoning_content" in fields,
            tool_calls="tool_calls" in fields,
            max_parallel=max_parallel,
        )
    else:
        cases = [Case(f"message-{i}", dict(m)) for i, m in enumerate(messages)]
    if tools is None:
        tools = tools_for(cases)
    options = _Options(
        chat_template=chat_template,
        template=compiled,
        fields=frozenset(fields),
        tools=list(tools),
        system=system,
        bos_token=bos_token,
        eos_token=eos_token,
        stop=tuple(stop),
        id_style=tool_call_id,
        arguments=arguments,
    )
    results = []
    for case in cases:
        kwargs = dict(template_kwargs or {})
        kwargs.update((reasoning_kwargs if case.has_reasoning else plain_kwargs) or {})
        results.append(_run_case(case, options, kwargs))
    return RoundTripReport(results)


@dataclass(frozen=True)
class _Options:
    chat_template: str
    template: ResponseTemplate
    fields: frozenset[str]
    tools: list[Any]
    system: str | None
    bos_token: str
    eos_token: str
    stop: tuple[str, ...]
    id_style: str
    arguments: str


def _shared_prefix(prompt: str, full: str) -> int:
    """How much of ``prompt`` the rendered conversation ``full`` repeats, cut back to a token boundary."""
    shared = 0
    for a, b in zip(prompt, full, strict=False):
        if a != b:
            break
        shared += 1
    # Back off to a token boundary, so that "<think>" vs "</think>" is not split after their common "<".
    while shared and prompt[shared - 1] not in _BOUNDARY:
        shared -= 1
    return shared


def _run_case(case: Case, o: _Options, kwargs: Mapping[str, Any]) -> CaseResult:
    history: list[dict[str, Any]] = [{"role": "system", "content": o.system}] if o.system else []
    history.append({"role": "user", "content": "Please help me with a few things."})
    message = _assistant_message(case, o.chat_template, o.id_style, o.arguments)
    render: Callable[..., str] = render_chat_template
    common = {"tools": o.tools, "bos_token": o.bos_token, "eos_token": o.eos_token, **kwargs}
    result = CaseResult(case.name, "error")
    try:
        prompt = render(o.chat_template, history, add_generation_prompt=True, **common)
        full = render(o.chat_template, [*history, message], add_generation_prompt=False, **common)
    except Exception as exc:  # the chat template refuses this conversation
        result.problem = f"the chat template failed to render: {type(exc).__name__}: {exc}"
        return result
    result.prefix = prompt
    if not o.template.cut_prefix(prompt)[1]:
        # A misspelled anchor, or one the chat template never writes: parsing would read the whole prompt.
        result.status = "fail"
        result.problem = f"the generation prompt has no start anchor: {anchor_not_found(o.template, prompt)}"
        return result
    shared = _shared_prefix(prompt, full)
    tail, turn = prompt[shared:], full[shared:]
    if tail:
        overlap = _overlap(tail, turn)
        if not overlap:
            result.status = "fail"
            result.problem = (
                f"the chat template renders this turn differently from its generation prompt: the prompt "
                f"ends with {tail[:40]!r} but the rendered turn starts {turn[:40]!r}"
            )
            return result
        turn = turn[overlap:]
    for token in o.stop:
        at = turn.find(token)
        if at >= 0:
            turn = turn[: at + len(token)]
    result.text = turn
    # Every field is compared (absent ones must come back absent) unless the chat template never writes it.
    expected: dict[str, Any] = {"reasoning_content": None, "content": None, "tool_calls": []}
    if "reasoning_content" not in o.fields:
        expected.pop("reasoning_content")
    reasoning = case.message.get("reasoning_content")
    written = prompt[shared:] + turn  # what the prompt's tail and the model wrote
    if reasoning:
        if "reasoning_content" not in o.fields:
            result.skipped["reasoning"] = "the response template has no reasoning field"
        elif reasoning.split("\n")[0] not in written:
            result.skipped["reasoning"] = "the chat template does not render reasoning"
            expected.pop("reasoning_content")
        else:
            expected["reasoning_content"] = reasoning
    content = case.message.get("content")
    if content:
        if content not in written:
            result.skipped["content"] = "the chat template does not render content next to tool calls"
            expected.pop("content")
        else:
            expected["content"] = content
    calls = message.get("tool_calls") or []
    compare_ids = True
    if calls:
        if any(call["function"]["name"] not in written for call in calls):
            result.skipped["tool_calls"] = "the chat template does not render (all) tool calls"
            expected.pop("tool_calls")
        else:
            expected["tool_calls"] = [
                {**original, "id": given["id"]}
                for original, given in zip(case.message["tool_calls"], calls, strict=True)
            ]
            compare_ids = all(call["id"] in written for call in calls)
    try:
        parsed = parse_response(turn, o.template, prefix=prompt, tools=o.tools)
    except ResponseTemplateError as exc:
        result.status = "fail"
        result.problem = f"parse error: {exc}"
        return result
    assert isinstance(parsed, dict)
    result.parsed = parsed
    if not compare_ids and any(isinstance(c, Mapping) and "id" in c for c in parsed.get("tool_calls") or ()):
        result.skipped["tool call ids"] = "the chat template writes its own call ids"
    result.differences = _compare(expected, parsed, compare_ids)
    result.status = "fail" if result.differences else "pass"
    return result
