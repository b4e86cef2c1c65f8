"""Many regex delimiters cost a few searches per scan, and the answer is still exact (issue 12 hole 2).

A watch set with many regex delimiters that start with literal text looks them up by that text
(matching._PrefixIndex). The properties: it answers every scan exactly as searching each delimiter one by
one does, and the number of regex searches per feed does not grow with the number of delimiters.
"""

from __future__ import annotations

from typing import Any

import regex
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import response_templates as rt
import test_matching as tm
from hypothesis_profiles import examples
from response_templates.matching import FLAGS, Delimiter, WatchSet, regex_literal_prefix

_heads = st.sampled_from(["<a", "<", "ab", "a", "<b>", "</a", "b<"])


@st.composite
def delimiter_specs(draw: st.DrawFn) -> list[tuple[str, str]]:
    """(pattern, kind) pairs; many patterns start with literal text, which the index keys on."""
    out = []
    for _ in range(draw(st.integers(1, 5))):
        pattern = draw(_heads) + draw(tm.patterns()) if draw(st.booleans()) else draw(tm.patterns())
        out.append((pattern, draw(st.sampled_from(["open", "close"]))))
    return out


def _build(specs: list[tuple[str, str]]) -> list[Delimiter]:
    return [
        Delimiter.regex(pattern, field=f"f{i}", kind=kind, key=f"{kind}_pattern")
        for i, (pattern, kind) in enumerate(specs)
    ]


def _answers(watch: WatchSet, text: str) -> list[Any]:
    got = []
    for k in range(len(text) + 1):
        for final in (False, True):
            for skip in (-1, 0, k // 2):
                m, undecided = watch.scan(text[:k], 0, final, skip, 5.0)
                # the parser reads `undecided` only when there is no match
                got.append(undecided if m is None else (m.start, m.end, m.captures, m.delimiter.field))
    return got


@settings(max_examples=examples(1500), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(delimiter_specs(), tm.texts)
@example([("<a>", "open"), ("<ab?", "open")], "x<ab")
@example([("<aa", "open"), ("a", "open"), ("a", "close")], "a<")
def test_index_answers_as_searching_each_delimiter(specs: list[tuple[str, str]], text: str) -> None:
    delimiters = _build(specs)
    one_by_one = WatchSet.build(delimiters, index_at=10**9)
    indexed = WatchSet.build(delimiters, index_at=1)
    assert _answers(indexed, text) == _answers(one_by_one, text)


@settings(max_examples=examples(1500), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(tm.patterns(), st.builds(str.__add__, _heads, tm.patterns())), tm.texts)
def test_literal_prefix_starts_every_match(pattern: str, text: str) -> None:
    prefix = regex_literal_prefix(pattern)
    compiled = regex.compile(pattern, FLAGS)
    for start in range(len(text) + 1):
        m = compiled.match(text, start)
        if m is not None:
            assert text.startswith(prefix, start), (pattern, text, start)


def many_fields(n: int) -> dict[str, Any]:
    fields: dict[str, Any] = {f"f{i}": {"open_pattern": f"<f{i}(?:a|b)>", "close": "</f>"} for i in range(n)}
    fields["content"] = {}
    return {"start_anchor": "<A>", "fields": fields}


TEXT = "".join(f"hello <f{i * 37 % 60}a>x{i}</f> " for i in range(40))


def _searches_per_feed(n: int) -> tuple[float, list[Any]]:
    parser = rt.ResponseParser(many_fields(n), prefix="")
    events: list[Any] = []
    feeds = 0
    for i in range(0, len(TEXT), 10):
        events += parser.feed(TEXT[i : i + 10])
        feeds += 1
    message, final = parser.finalize()
    return parser._meter.searches / feeds, [*events, *final, message]


def test_searches_per_feed_do_not_grow_with_the_number_of_delimiters() -> None:
    small, small_events = _searches_per_feed(60)
    large, large_events = _searches_per_feed(600)
    assert large <= small * 1.5 + 2  # one search per delimiter per feed would be 10 times as many
    assert large < 30
    assert small_events[-1] == large_events[-1]


def test_streaming_many_delimiters_gives_parse_response() -> None:
    template = many_fields(200)
    whole = rt.parse_response(TEXT, template, prefix="")
    assert isinstance(whole, dict)
    for size in (1, 3, 10, 64):
        parser = rt.ResponseParser(template, prefix="")
        for i in range(0, len(TEXT), size):
            parser.feed(TEXT[i : i + size])
        assert parser.finalize()[0] == whole
    assert whole["f37"] == "x1" and whole["content"].startswith("hello ")
