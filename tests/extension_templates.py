"""Shared by the extension tests (``tests/language/test_language_*.py``): a template around some fields,
the chat tool-call shape, a ``python-calls`` field, random chunking and a run that records the events."""

from __future__ import annotations

import itertools
import random
from typing import Any

import response_templates as rt

CALL = {"type": "function", "function": {"name": "{name}", "arguments": "{arguments}"}}


def template(fields: dict[str, Any], extensions: list[str] | None = None) -> dict[str, Any]:
    data: dict[str, Any] = {"start_anchor": "<|assistant|>", "fields": fields}
    if extensions is not None:
        data["extensions"] = extensions
    return data


def py_field(**extra: Any) -> dict[str, Any]:
    return {
        "open": "<py>",
        "close": "</py>",
        "content": "python-calls",
        "transform_each": True,
        "transform": CALL,
        **extra,
    }


def pieces(text: str, rng: random.Random) -> list[str]:
    cuts = (
        sorted(rng.sample(range(1, len(text)), min(len(text) - 1, rng.randint(0, 8))))
        if len(text) > 1
        else []
    )
    bounds = [0, *cuts, len(text)]
    return [text[a:b] for a, b in itertools.pairwise(bounds)]


def run(t: dict[str, Any], pieces: list[str]) -> tuple[Any, list[Any]]:
    p = rt.ResponseParser(t, prefix="")
    events = list(p.initial_events)
    for piece in pieces:
        events += p.feed(piece)
    message, final = p.finalize()
    events += final
    return message, [(e["type"], e["field"], e.get("value")) for e in events if e["type"] != "region_chunk"]


#: an ``item-transform`` field (Apertus writes ``{"name": {arguments}}`` objects)
APERTUS = {
    "tool_calls": {
        "open": "<t>",
        "close": "</t>",
        "content": "json",
        "transform_each": True,
        "transform": {"type": "function", "function": {"name": "{key}", "arguments": "{value}"}},
    }
}
