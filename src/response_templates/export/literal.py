"""Internal: delimiters spelled literally in an export for vLLM, so that vLLM's own template grammar takes it.

vLLM 0.34's ``beam`` parser derives a structural tag from the response template for forced tool choice
(``vllm/parser/response_template_grammar.py``). It needs the reasoning's opener and closer and the call's
closer as literal texts (a pattern that expands to a few literals at most); a lenient spelling such as
``<think>(?:\\s*<think>)?`` (a repeated opener read as one) or ``\\s*`` between two tags stops it, and the
``beam`` parser then has no grammar for ``tool_choice="required"``.

:data:`FOR_VLLM` lists the library families whose export is spelled literally for vLLM, with each change.
A family is listed only where the change loses nothing, as measured on the family's recorded outputs by
``tests/engines/test_vllm_literal_export.py`` (vLLM's own parser reads every one of them exactly as with
the lenient spelling, and vLLM's ``required`` grammar then accepts at least as many of those with calls as
ours does) and printed per family by ``benchmarks/bench_grammar.py --against vllm`` (docs/grammar.md).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

__all__ = ["FOR_VLLM", "literal_candidates", "spell_for_vllm"]

#: Family -> the changes, each (field, key, the lenient pattern, the literal one), with the field names of
#: the engines' vocabulary (``thinking``, ``tool_calls``).
FOR_VLLM: Mapping[str, tuple[tuple[str, str, str, str], ...]] = {
    "deepseek-v3": (
        (
            "tool_calls",
            "close_pattern",
            "```\\s*<｜tool▁call▁end｜>(?:\\s*<｜tool▁calls▁end｜>)?|<｜end▁of▁sentence｜>",
            "```\\n?<｜tool▁call▁end｜>(?:\\n?<｜tool▁calls▁end｜>)?|<｜end▁of▁sentence｜>",
        ),
    ),
    "minicpm5": (("thinking", "open_pattern", "<think>(?:\\s*<think>)?", "<think>"),),
    "step-3": (
        ("thinking", "open_pattern", "<think>(?:\\s*<think>)?", "<think>"),
        (
            "tool_calls",
            "close_pattern",
            "</steptml:invoke>\\s*<｜tool_call_end｜>(?:\\s*<｜tool_calls_end｜>)?|<\\|EOT\\|>",
            "</steptml:invoke>\\n?<｜tool_call_end｜>(?:\\n?<｜tool_calls_end｜>)?|<\\|EOT\\|>",
        ),
    ),
}

_SPACE = r"\s*"
#: ``X(?:\s*X)?``: an opener also read repeated (``X`` literal text).
_REPEATED = re.compile(r"(?P<x>(?:\\.|[^\\()|?*+\[\]{}.^$])+)\(\?:\\s\*(?P=x)\)\?")


def literal_candidates(pattern: str) -> list[str]:
    """Stricter spellings of a delimiter pattern, the most lenient first, each stricter than the one
    before: a repeated opener (``X(?:\\s*X)?``) written once; then also ``\\s*`` as ``\\n?``; then
    ``\\s*`` as nothing.

    >>> literal_candidates(r"<think>(?:\\s*<think>)?")
    ['<think>']
    >>> literal_candidates(r"</a>\\s*</b>")
    ['</a>\\\\n?</b>', '</a></b>']
    """
    once = _REPEATED.sub(lambda m: m.group("x"), pattern)
    out = [once, once.replace(_SPACE, r"\n?"), once.replace(_SPACE, "")]
    return [c for i, c in enumerate(out) if c != pattern and c not in out[:i]]


def spell_for_vllm(family: str | None, data: dict[str, Any]) -> list[str]:
    """Apply :data:`FOR_VLLM`'s changes for ``family`` to an export's ``data`` (in place) and say what
    changed; a change whose lenient pattern is no longer the template's (the library moved on) is skipped."""
    changes = []
    for field, key, lenient, literal in FOR_VLLM.get(family or "", ()):
        spec = data.get("fields", {}).get(field)
        if isinstance(spec, dict) and spec.get(key) == lenient:
            spec[key] = literal
            changes.append(f"{field}.{key}: {lenient} -> {literal}")
    return changes
