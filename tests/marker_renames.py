"""The renamed fork of a chat template and its outputs (the case of a new family whose markers nobody has
seen): ``<think>`` -> ``<reflect>``, ``<tool_call>`` -> ``<invoke>``, in texts and in nested values alike.
Used by ``tests/derivation`` and ``benchmarks/bench_derive.py`` (docs/derive.md)."""

from __future__ import annotations

from typing import Any

RENAMES = (
    ("<think>", "<reflect>"),
    ("</think>", "</reflect>"),
    ("<tool_call>", "<invoke>"),
    ("</tool_call>", "</invoke>"),
)


def rename(value: Any) -> Any:
    """``value`` (a text, or lists and dicts of them) with every marker renamed."""
    if isinstance(value, str):
        for old, new in RENAMES:
            value = value.replace(old, new)
        return value
    if isinstance(value, list):
        return [rename(v) for v in value]
    if isinstance(value, dict):
        return {k: rename(v) for k, v in value.items()}
    return value
