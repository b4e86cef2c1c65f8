"""Checks shared by the tests of library families: a call in the message's shape, and parsing one output
every way (whole, one character at a time, in fixed and random splits) with the same result."""

from __future__ import annotations

import random
import re
from typing import Any

import response_templates as rt
from response_templates import library


def random_pieces(text: Any, rng: random.Random, longest: int = 6) -> list[Any]:
    """``text`` (a str, or bytes) cut into pieces of 1 to ``longest`` characters (bytes) at random."""
    out, i = [], 0
    while i < len(text):
        n = rng.randint(1, longest)
        out.append(text[i : i + n])
        i += n
    return out


def call(name: str, **arguments: Any) -> dict[str, Any]:
    """A tool call as the library's templates put it in the message."""
    return {"type": "function", "function": {"name": name, "arguments": arguments}}


def event_summary(events: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """Open/close events with their values, and each region's text (chunk texts concatenated)."""
    out: list[tuple[Any, ...]] = []
    text: dict[str, str] = {}
    for event in events:
        field = event["field"]
        if event["type"] == "region_chunk":
            text[field] = text.get(field, "") + event["text"]
        elif event["type"] == "region_open":
            text[field] = ""
            out.append(("open", field))
        else:
            out.append(("close", field, event.get("value"), text.pop(field, "")))
    return out


def parse_every_way(family: str, text: str, prefix: str | None = None) -> dict[str, Any]:
    """The message of ``text`` with the family's template (``prefix`` defaults to its generation prompt),
    checked to be the same whole, one character at a time and in fixed and random splits, with the same
    open/close events and region texts, and equal to ``parse_response``."""
    fam = library.family(family)
    template = fam.template()
    prefix = fam.generation_prompt if prefix is None else prefix
    rng = random.Random(len(text))
    splits: list[list[str]] = [[text], list(text)]
    for size in (2, 3, 7):
        splits.append([text[i : i + size] for i in range(0, len(text), size)])
    for _ in range(8):
        cuts = sorted(rng.sample(range(1, len(text)), min(rng.randint(1, 12), len(text) - 1)))
        splits.append([text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)])
    first: tuple[dict[str, Any], list[tuple[Any, ...]]] | None = None
    for chunks in splits:
        parser = rt.ResponseParser(template, prefix=prefix)
        events = list(parser.initial_events)
        for chunk in chunks:
            events += parser.feed(chunk)
        message, last = parser.finalize()
        events += last
        got = (message, event_summary(events))
        if first is None:
            first = got
        assert got == first, [len(c) for c in chunks]
    assert first is not None
    assert first[0] == rt.parse_response(text, template, prefix=prefix)
    return first[0]


#: Markup that regex delimiters spell out (``<tag>``, ``[TAG]``, ``<|tok|>``, ``<｜tok｜>``).
MARKUP = re.compile(r"</?[^\s<>()\[\]{}?*+\\]{1,40}>|\[[A-Z_]{3,20}\]|<\|[^|<>]{1,30}\|>|<｜[^｜<>]{1,30}｜>")


def delimiter_words(template: rt.ResponseTemplate) -> set[str]:
    """The template's literal delimiters and the markup its regex delimiters spell out."""
    words: set[str] = set()
    for field in template.fields:
        for delimiter in (field.open, field.close):
            if delimiter is None:
                continue
            if delimiter.literals is not None:
                words.update(delimiter.literals)
            else:
                words.update(MARKUP.findall(str(delimiter.source).replace("\\|", "|")))
    return words
