"""vLLM's own template grammar, driven as its ``beam`` parser drives it, for the side-by-side proofs.

Not a test module: ``test_grammar_forms.py`` and ``benchmarks/bench_grammar.py --against vllm`` import
it. Needs vLLM 0.34 (the engines' venv, ``.venv-vllm``).

vLLM 0.34 derives a structural tag from a response template in
``vllm/parser/response_template_grammar.py`` (``tool_call_structural_tag``); its ``beam`` parser
(``vllm/parser/beam.py``) calls it for forced and strict tool choice. Here:

* :func:`exported` exports a library family in vLLM's vocabulary (``rt.templates.export(...,
  target="vllm")``) and loads it with vLLM's own loader;
* :func:`beam_tag` calls ``tool_call_structural_tag`` with the arguments ``beam`` passes (functions
  from the tools, the content field as the answer unless the choice forces a call, the reasoning field,
  the message-start anchors when the prompt ends at the start anchor, arguments strict and also sorted),
  with ``requires_reasoning=False`` (the request's ``enable_thinking=False``; ``beam``'s default would
  make every output open with reasoning), and says why when it derives no tag (:func:`why_no_tag`,
  read from the same derivation's steps);
* :meth:`BeamTag.constrained_text` is the part of an output the tag constrains: when the prompt leaves
  the reasoning open, ``beam`` applies the grammar from the reasoning's end (its reasoning gate), so the
  text after the first closer the template reads.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from importlib import metadata
from typing import Any

from vllm.parser import response_template_grammar as rtg
from vllm.parser.beam import _open_field, _starts_message
from vllm.parser.chat_parsing.response_templates import ResponseTemplate, load_response_template

import response_templates as rt
from response_templates.export.literal import literal_candidates

VLLM_VERSION = metadata.version("vllm")
XGRAMMAR_VERSION = metadata.version("xgrammar")
THINKING, CONTENT, TOOLS = "thinking", "content", "tool_calls"


@dataclass
class Exported:
    """A family exported for vLLM: the template data, vLLM's loaded template, or why there is none."""

    family: str
    data: dict[str, Any] | None
    template: ResponseTemplate | None
    error: str | None


def short(text: str, limit: int = 110) -> str:
    """One line of at most ``limit`` characters."""
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def load(family: str, data: Mapping[str, Any]) -> Exported:
    try:
        return Exported(family, dict(data), load_response_template(dict(data)), None)
    except Exception as exc:
        return Exported(family, dict(data), None, f"vLLM refuses the template: {type(exc).__name__}: {exc}")


@cache
def exported(family: str, literal: bool = True) -> Exported:
    """The family's template exported for vLLM 0.34 and loaded by vLLM (cached); ``literal=False``: with
    the lenient delimiter spellings even for the families ``export.literal.FOR_VLLM`` spells literally."""
    try:
        result = rt.templates.export(family, target="vllm", literal=literal)
    except Exception as exc:
        return Exported(family, None, None, f"export: {type(exc).__name__}: {exc}")
    return load(family, result.template)


@dataclass
class BeamTag:
    """What ``tool_call_structural_tag`` derives for one request."""

    tag: dict[str, Any] | None
    #: Why there is no tag (empty when there is one).
    reason: str = ""
    #: The prompt leaves the reasoning open: the tag applies from the reasoning's end.
    gated: bool = False
    #: The prompt leaves the answer open: ``beam`` derives no tool-call tag there.
    answer_open: bool = False
    template: ResponseTemplate | None = field(default=None, repr=False)

    def constrained_text(self, raw: str) -> str | None:
        """The part of ``raw`` the tag constrains; ``None`` when the tag never applies (the reasoning
        the prompt opened is never closed)."""
        if not self.gated:
            return raw
        assert self.template is not None
        thinking = self.template.fields[THINKING]
        if thinking.close_re is None:
            return None
        m = thinking.close_re.search(raw)
        return None if m is None else raw[m.end() :]

    def reasoning_closer(self) -> str:
        """A closer of the open reasoning (written before a walk through a gated tag)."""
        assert self.template is not None
        closers = rtg._closers(self.template.fields[THINKING]) or []
        return closers[0] if closers else ""


def _functions(tools: Sequence[Mapping[str, Any]] | None) -> list[dict[str, Any]]:
    return [dict(t.get("function", t)) for t in tools or ()]


def beam_tag(
    ex: Exported,
    tools: Sequence[Mapping[str, Any]] | None,
    tool_choice: Any = "auto",
    *,
    prefix: str = "",
    parallel_tool_calls: bool = True,
    requires_reasoning: bool = False,
) -> BeamTag:
    """vLLM's tag for a request (``tool_choice``: ``"auto"``, ``"required"`` or a tool name), called as
    ``beam`` calls it."""
    vt = ex.template
    if vt is None:
        return BeamTag(None, ex.error or "no template")
    fields = vt.fields
    open_field = _open_field(vt, prefix)
    if open_field == CONTENT:
        return BeamTag(None, "the prompt leaves the answer open", answer_open=True, template=vt)
    message_start = _starts_message(vt, prefix)
    named = tool_choice not in ("auto", "required", "none")
    functions = _functions(tools)
    if named:
        functions = [f for f in functions if f.get("name") == tool_choice]
    forced = named or tool_choice == "required"
    kwargs: dict[str, Any] = {
        "parallel_tool_calls": parallel_tool_calls and not named,
        "thinking": fields.get(THINKING),
        "answer": None if forced else fields.get(CONTENT),
        "message_start": rtg.message_start_anchors(vt) if message_start else None,
        "requires_reasoning": requires_reasoning,
        "sorted_arguments": True,
        "strict_arguments": True,
    }
    gated = open_field == THINKING
    try:
        tag = rtg.tool_call_structural_tag(fields.get(TOOLS), functions, **kwargs)
    except Exception as exc:
        return BeamTag(None, f"{type(exc).__name__}: {exc}", gated=gated, template=vt)
    if tag is None:
        return BeamTag(None, why_no_tag(vt, functions, **kwargs), gated=gated, template=vt)
    return BeamTag(tag, "", gated=gated, template=vt)


def why_no_tag(
    vt: ResponseTemplate,
    functions: Sequence[Mapping[str, Any]],
    *,
    thinking: Any,
    answer: Any,
    message_start: list[str] | None,
    **_: Any,
) -> str:
    """Every step of vLLM's derivation that fails for this template (the derivation itself returns only
    ``None``): the call field, its opener and closer, the arguments, the reasoning, the answer."""
    reasons: list[str] = []
    call = vt.fields.get(TOOLS)
    if functions:
        if call is None:
            reasons.append("no tool-call field")
        elif not rtg._names_function_by_opener(call):
            reasons.append("the tool name is not captured by the opener (a `{name}`/`{content}` transform)")
        else:
            if rtg._split_group(call.open_re.pattern, "name") is None:
                reasons.append("the opener's name group cannot be split out")
            if rtg._closers(call) is None:
                pattern = call.close_re.pattern if call.close_re is not None else ""
                reasons.append(f"call closer not literal: {pattern}")
            else:
                for fn in functions:
                    params = fn.get("parameters") or {"type": "object", "properties": {}}
                    try:
                        strict = rtg._arguments_format(call, params, strict=True, sorted_arguments=True)
                        loose = rtg._arguments_format(call, params, strict=False)
                    except ValueError as exc:
                        reasons.append(f"arguments of {fn.get('name')}: {exc}")
                        break
                    if strict is None and loose is None:
                        args = call.content_args or {}
                        reasons.append(f"arguments not derivable ({call.content} {sorted(args)})")
                        break
    if thinking is not None:
        if not rtg._openers(thinking, None) or (message_start and not rtg._openers(thinking, message_start)):
            pattern = thinking.open_re.pattern if thinking.open_re is not None else ""
            reasons.append(f"reasoning opener not literal: {pattern}")
        if rtg._closers(thinking) is None:
            reasons.append(f"reasoning closer not literal: {thinking.close_re.pattern}")
    if answer is not None and (
        rtg._reply_format(answer, None, None) is None
        or (message_start and rtg._reply_format(answer, message_start, None) is None)
    ):
        reasons.append("no literal opener for the answer")
    return "; ".join(reasons) or "no tag (cause not identified)"


# ------------------------------------------------------------------------------------------------------
# Literal spellings: could an export be written that vLLM's derivation takes?
# ------------------------------------------------------------------------------------------------------


def literal_spellings(data: Mapping[str, Any]) -> list[tuple[dict[str, Any], list[str]]]:
    """Variants of an exported template whose reasoning and call delimiters are closer to literal, each
    with the changes made (field.key: old -> new); most lenient first. Only the delimiters vLLM's
    derivation needs literal and cannot expand are changed (the reasoning's opener and closer, the
    call's closer; the call's opener holds the name group, which it takes as a pattern)."""
    import copy

    base = copy.deepcopy(dict(data))
    keys = [
        (name, key)
        for name, key in ((THINKING, "open_pattern"), (THINKING, "close_pattern"), (TOOLS, "close_pattern"))
        if isinstance(base["fields"].get(name, {}).get(key), str)
        and rtg._literals(base["fields"][name][key]) is None
    ]
    options = [
        [(name, key, cand) for cand in literal_candidates(base["fields"][name][key])] for name, key in keys
    ]
    variants: list[tuple[dict[str, Any], list[str]]] = []
    # Every field's k-th candidate together (few delimiters per template: no product needed).
    depth = max((len(o) for o in options), default=0)
    for k in range(depth):
        variant = copy.deepcopy(base)
        changes = []
        for opts in options:
            if not opts:
                continue
            name, key, cand = opts[min(k, len(opts) - 1)]
            changes.append(f"{name}.{key}: {base['fields'][name][key]} -> {cand}")
            variant["fields"][name][key] = cand
        variants.append((variant, changes))
    return variants


_SHORT = (
    ("export: ", "export refused"),
    ("vLLM refuses the template", "template refused"),
    ("no tool-call field", "no tool calls"),
    ("the tool name is not captured", "name not in the opener"),
    ("the opener's name group", "name not in the opener"),
    ("call closer not literal", "call closer not literal"),
    ("arguments not derivable", "arguments"),
    ("arguments of ", "arguments"),
    ("reasoning opener not literal", "reasoning opener not literal"),
    ("reasoning closer not literal", "reasoning closer not literal"),
    ("no literal opener for the answer", "no literal answer opener"),
    ("xgrammar", "xgrammar refuses vLLM's tag"),
    ("the prompt leaves the answer open", "answer open"),
)


def short_reason(reason: str) -> str:
    """A few words for each cause in a :func:`why_no_tag` reason (for tables)."""
    out: list[str] = []
    for part in reason.split("; "):
        part = part.strip()
        label = next((short for prefix, short in _SHORT if part.startswith(prefix)), short(part, 40))
        if label == "export refused":
            m = re.search(r"key '(\w+)'|field '(\w+)'", part)
            label = f"export refused ({(m.group(1) or m.group(2)) if m else '?'})"
        if label == "xgrammar refuses vLLM's tag" and "Lookahead" in part:
            label = "xgrammar refuses vLLM's tag (a lookahead)"
        if label not in out:
            out.append(label)
    return ", ".join(out)
