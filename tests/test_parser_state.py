"""The router state of ``ResponseParser`` (parser.py, "Router state"): four states and their transitions.

``_current`` is the open region (or None), ``_suspended`` the region a nested one opened inside; the
watched delimiters follow from them. These tests walk every transition and check the state after it.
"""

from __future__ import annotations

from typing import Any

import response_templates as rt

TEMPLATE = rt.load_template(
    {
        "start_anchor": "A",
        "extensions": ["interleaved", "json-value-end"],
        "fields": {
            "reasoning_content": {"open": "<think>", "close": "</think>"},
            "tool_calls": {
                "open": "<call>",
                "close": "</call>",
                "content": "json",
                "repeats": True,
                "within": ["reasoning_content"],
            },
            "args": {"open": "ARGS", "close_json": True, "content": "json", "repeats": True},
            "content": {},
        },
    }
)


def state(parser: rt.ResponseParser) -> tuple[str, ...]:
    current, suspended = parser._current, parser._suspended
    if current is None:
        assert suspended is None
        return ("outside",)
    if current.field.implicit:
        assert suspended is None
        return ("implicit", current.field.name)
    if suspended is None:
        return ("explicit", current.field.name)
    return ("nested", current.field.name, suspended.field.name)


def watched(parser: rt.ResponseParser) -> Any:
    current = parser._current
    if current is None or current.field.implicit:
        return TEMPLATE.outside
    return TEMPLATE.inside[current.field.name]


def walk(pieces: list[str]) -> list[tuple[str, ...]]:
    parser = rt.ResponseParser(TEMPLATE, prefix="")
    states = []
    for piece in pieces:
        parser.feed(piece)
        assert parser._watch is watched(parser)
        states.append(state(parser))
    parser.finalize()
    assert state(parser) == ("outside",)
    return states


def test_outside_implicit_explicit_and_back() -> None:
    assert walk(["", "Hi ", "<think>", "hmm", "</think>", "<call>", '{"a": 1}', "</call>", "bye"]) == [
        ("outside",),
        ("implicit", "content"),  # text outside opens an implicit segment
        ("explicit", "reasoning_content"),  # an open delimiter closes the segment and opens the region
        ("explicit", "reasoning_content"),
        ("outside",),  # a close delimiter
        ("explicit", "tool_calls"),
        ("explicit", "tool_calls"),
        ("outside",),
        ("implicit", "content"),
    ]


def test_nested_region_suspends_and_resumes_the_outer_one() -> None:
    assert walk(["<think>a", "<call>", "{}", "</call>", "b", "</think>"]) == [
        ("explicit", "reasoning_content"),
        ("nested", "tool_calls", "reasoning_content"),  # 'within': the outer region is suspended
        ("nested", "tool_calls", "reasoning_content"),
        ("explicit", "reasoning_content"),  # the nested one closes: the outer resumes
        ("explicit", "reasoning_content"),
        ("outside",),
    ]


def test_the_end_of_the_stream_closes_the_nested_and_the_resumed_region() -> None:
    parser = rt.ResponseParser(TEMPLATE, prefix="")
    parser.feed("<think>a<call>{")
    assert state(parser) == ("nested", "tool_calls", "reasoning_content")
    try:
        parser.finalize()
    except rt.ParseError as exc:
        closes = [e["field"] for e in exc.events or [] if e["type"] == "region_close"]
        assert closes == ["tool_calls", "reasoning_content"]
    assert state(parser) == ("outside",)


def test_a_json_value_end_region_keeps_its_end_finder_and_has_no_fast_path() -> None:
    parser = rt.ResponseParser(TEMPLATE, prefix="")
    parser.feed('ARGS{"a": ')
    assert state(parser) == ("explicit", "args")
    assert parser._current is not None and parser._current.end is not None
    assert parser._fast_first is None
    parser.feed('"}"} after')
    assert state(parser) == ("implicit", "content")
    message, _ = parser.finalize()
    assert message == {"args": [{"a": "}"}], "content": "after"}


def test_a_region_records_its_text_start_and_captures() -> None:
    template = {
        "start_anchor": "A",
        "fields": {
            "tool_calls": {"open_pattern": r"<(?P<name>\w+)>", "close": "</>", "transform": {"n": "{name}"}},
            "content": {},
        },
    }
    parser = rt.ResponseParser(template, prefix="")
    parser.feed("ab<f>x")
    parser.feed("y")
    region = parser._current
    assert region is not None
    assert (region.field.name, region.start, region.captures, "".join(region.body)) == (
        "tool_calls",
        5,
        {"name": "f"},
        "xy",
    )
