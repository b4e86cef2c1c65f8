"""The tool-call layer (``response_templates.toolstream``).

* ``tool_call_plan`` reads where names, ids and arguments come from, for the model families' templates.
* ``ToolCallStreamer`` over the parser's events: for every chunking, the same calls, argument deltas
  that concatenate to the final arguments string, which ``json.loads`` to exactly the typed arguments of
  the parsed message; early announcement; failure, truncation and the other fallbacks.

The generated documents and the families' templates are in ``tests/toolstream_fixtures.py``.
"""

from __future__ import annotations

import json
import random
import re
from typing import Any

import jiter
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import response_templates as rt
from hypothesis_profiles import examples
from response_templates.jsonlex.canonical import strict_equal as _strict_equal
from response_templates.toolstream import (
    ToolCallStreamer,
    arguments_text,
    call_parts,
    tool_call_plan,
)
from toolstream_fixtures import (
    DEEPSEEK_V31,
    FAMILIES,
    HERMES,
    KIMI_K2,
    MISTRAL_PRE_V11,
    OBJECTS,
    QWEN3_CODER,
    chunkings,
    pieces,
    serialize,
)

_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
SETTINGS = settings(max_examples=examples(400), deadline=None, suppress_health_check=list(HealthCheck))


def stream_calls(
    template: dict, prompt: str, chunks: list[str], tools: Any = None, *, truncated: bool = False, **kw: Any
) -> tuple[list[dict], ToolCallStreamer, dict | None]:
    parser = rt.ResponseParser(template, prefix=prompt, tools=tools)
    streamer = ToolCallStreamer(template, tools=tools, **kw)
    events = streamer.feed(parser.initial_events)
    for chunk in chunks:
        try:
            events += streamer.feed(parser.feed(chunk))
        except rt.ParseError as exc:
            events += streamer.feed(exc.events or [])
    try:
        message, final = parser.finalize()
    except rt.ParseError as exc:
        message, final = None, exc.events or []
    events += streamer.finish(final, truncated=truncated)
    return events, streamer, message


def check_call_events(events: list[dict]) -> None:
    """Structure: indices 0, 1, 2... in order, one call at a time, deltas concatenate to the end's text."""
    current, sent, count = None, [], 0
    for event in events:
        if event["type"] == "tool_call_start":
            assert current is None and event["index"] == count
            current, sent = event["index"], []
            count += 1
        elif event["type"] == "tool_call_delta":
            assert event["index"] == current
            sent.append(event["arguments"])
            text = "".join(sent)
            if not event["whole"] and not _SURROGATE_ESCAPE.search(text):
                # streamed text: every prefix is valid partial JSON for a client (jiter rejects lone
                # surrogates even in complete JSON, so those are left out)
                jiter.from_json(text.encode(), partial_mode=True)
        else:
            assert event["index"] == current and event["arguments"] == "".join(sent)
            if event["complete"]:
                assert _strict_equal(json.loads(event["arguments"]), event["input"])
            current = None
    assert current is None


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_families_stream_the_parsed_calls_for_every_chunking(family: str) -> None:
    template, prompt, output, tools = FAMILIES[family]
    message = rt.parse_response(output, template, prefix=prompt, tools=tools)
    expected = [call_parts(c) for c in message.get("tool_calls", [])]
    reference = None
    for name, chunks in chunkings(output):
        events, streamer, streamed = stream_calls(template, prompt, chunks, tools)
        assert streamed == message
        check_call_events(events)
        ends = [e for e in events if e["type"] == "tool_call_end"]
        assert all(e["complete"] for e in ends) and not streamer.errors
        got = [(e["name"], e["id"], e["input"]) for e in ends]
        assert got == expected, name
        for end, (_, _, arguments) in zip(ends, expected, strict=True):
            assert end["arguments"] == arguments_text(arguments)  # exactly json.dumps of the typed value
        summary = [
            {k: v for k, v in e.items() if k != "whole"} for e in events if e["type"] != "tool_call_delta"
        ]
        if reference is None:
            reference = summary
        assert summary == reference, name


@pytest.mark.parametrize(
    "family", ["qwen3", "deepseek-v3.1", "kimi-k2", "gemma-4", "mistral-pre-v11", "gpt-oss"]
)
def test_json_arguments_stream_while_they_are_written(family: str) -> None:
    template, prompt, output, tools = FAMILIES[family]
    parser = rt.ResponseParser(template, prefix=prompt, tools=tools)
    streamer = ToolCallStreamer(template, tools=tools)
    streamer.feed(parser.initial_events)
    early = []
    for char in output:
        events = parser.feed(char)
        closes = any(e["type"] == "region_close" and e["field"] == "tool_calls" for e in events)
        for event in streamer.feed(events):
            if not closes:
                early.append(event["type"])
    assert "tool_call_start" in early
    assert early.count("tool_call_delta") >= 5  # argument text flows before the call's region closes


def test_plans_of_the_families() -> None:
    def plan(template: dict) -> tuple:
        p = tool_call_plan(rt.load_template(template).by_name["tool_calls"])
        return p.name, p.id, p.arguments, p.each, p.scan

    assert plan(HERMES) == (
        ("json", (("name",),)),
        None,
        ("json", (("arguments",), ("parameters",))),
        False,
        True,
    )
    assert plan(QWEN3_CODER) == (("capture", "name"), None, None, False, False)
    assert plan(DEEPSEEK_V31) == (("capture", "name"), None, ("json", ((),)), False, True)
    assert plan(KIMI_K2) == (("capture", "name"), ("capture", "id"), ("json", ((),)), False, True)
    assert plan(MISTRAL_PRE_V11) == (("json", (("name",),)), None, ("json", (("arguments",),)), True, True)
    llama = {
        "start_anchor": "x",
        "fields": {
            "tool_calls": {
                "open": "<|python_tag|>",
                "content": "json",
                "transform": {
                    "type": "function",
                    "function": {"name": "{content.name}", "arguments": "{content.parameters}"},
                },
            }
        },
    }
    assert plan(llama)[:3] == (("json", (("name",),)), None, ("json", (("parameters",),)))
    literal = {
        "start_anchor": "x",
        "fields": {
            "tool_calls": {
                "open": "<py>",
                "close": "</py>",
                "transform": {
                    "type": "function",
                    "function": {"name": "python", "arguments": {"code": "{content}"}},
                },
            }
        },
    }
    assert plan(literal)[:3] == (("literal", "python"), None, None)
    close_name = {
        "start_anchor": "x",
        "fields": {
            "tool_calls": {
                "open": "<c>",
                "close_pattern": "</c name=(?P<n>\\w+)>",
                "content": "json",
                "transform": {"function": {"name": "{n}", "arguments": "{content}"}},
            }
        },
    }
    assert plan(close_name)[:3] == (None, None, ("json", ((),)))


# ------------------------------------------------------------------------------------------------------
# fallbacks and failures


def test_typing_never_sends_a_value_the_parser_changes() -> None:
    template, prompt, _, tools = FAMILIES["qwen3"]
    output = '<tool_call>{"name": "get_weather", "arguments": {"days": "3", "city": "12", "hourly": "yes"}}</tool_call>'
    for _, chunks in chunkings(output):
        events, _, message = stream_calls(template, prompt, chunks, tools)
        deltas = [e["arguments"] for e in events if e["type"] == "tool_call_delta"]
        assert "".join(deltas) == '{"days": 3, "city": "12", "hourly": "yes"}'
        assert not any('"3' in d for d in deltas)
        assert json.loads("".join(deltas)) == message["tool_calls"][0]["function"]["arguments"]


def test_arguments_before_the_name_are_sent_at_close() -> None:
    output = '<tool_call>{"arguments": {"city": "Paris"}, "name": "get_weather"}</tool_call>'
    events, _, _ = stream_calls(HERMES, "", list(output))
    assert [e["type"] for e in events] == ["tool_call_start", "tool_call_delta", "tool_call_end"]
    assert events[1] == {
        "type": "tool_call_delta",
        "index": 0,
        "arguments": '{"city": "Paris"}',
        "whole": True,
    }


def test_non_object_arguments_are_sent_whole() -> None:
    output = '<tool_call>{"name": "f", "arguments": "{\\"a\\": 1}"}</tool_call>'
    events, _, _ = stream_calls(HERMES, "", list(output))
    assert [e["type"] for e in events] == ["tool_call_start", "tool_call_delta", "tool_call_end"]
    assert events[1]["arguments"] == '{"a": 1}' and events[1]["whole"]


def test_repeated_key_still_parses_to_the_final_arguments() -> None:
    output = '<tool_call>{"name": "f", "arguments": {"a": 1, "b": 2, "a": 3}}</tool_call>'
    events, _streamer, message = stream_calls(HERMES, "", list(output))
    end = events[-1]
    assert end["complete"] and end["arguments"] == '{"a": 1, "b": 2, "a": 3}'
    assert (
        json.loads(end["arguments"]) == message["tool_calls"][0]["function"]["arguments"] == {"a": 3, "b": 2}
    )


def test_a_repeated_name_is_reported_not_papered_over() -> None:
    output = '<tool_call>{"name": "f", "name": "g", "arguments": {}}</tool_call>'
    events, streamer, _ = stream_calls(HERMES, "", list(output))
    assert events[0]["name"] == "f" and not events[-1]["complete"]
    assert "parsed call is 'g'" in events[-1]["error"] and streamer.errors


def test_invalid_json_after_the_announcement_ends_the_call_incomplete() -> None:
    output = 'Hi<tool_call>{"name": "f", "arguments": {"a": 1, oops}}</tool_call> then <tool_call>{"name": "g", "arguments": {}}</tool_call>'
    for _, chunks in chunkings(output):
        events, streamer, message = stream_calls(HERMES, "", chunks)
        check_call_events(events)
        ends = [e for e in events if e["type"] == "tool_call_end"]
        assert [(e["name"], e["complete"]) for e in ends] == [("f", False), ("g", True)]
        assert ends[0]["arguments"] == '{"a": 1}' and ends[0]["input"] is None  # closed: valid JSON
        assert "did not parse" in ends[0]["error"] and len(streamer.errors) == 1
        assert message["tool_calls"] == [{"type": "function", "function": {"name": "g", "arguments": {}}}]


def test_a_region_that_fails_before_its_name_is_dropped() -> None:
    events, streamer, _ = stream_calls(HERMES, "", ["<tool_call>{nope}</tool_call>"])
    assert events == [] and "produced no call" in streamer.errors[0]


@pytest.mark.parametrize(
    ("cut", "sent", "untruncated"),
    [
        (
            '{"name": "get_weather", "arguments": {"city": "Pa',
            '{"city": "Pa',
            1,
        ),  # inside the arguments: left as written, not closed (no value is completed)
        ('{"name": "get_weather", "arguments": {"city": "Paris"}}', '{"city": "Paris"}', 2),  # no close
        ('{"name": "get_wea', None, 1),  # inside the name: never announced
    ],
)
def test_truncated_stream_never_completes_the_open_call(cut: str, sent: str | None, untruncated: int) -> None:
    output = '<tool_call>{"name": "f", "arguments": {}}</tool_call><tool_call>' + cut
    for _, chunks in chunkings(output):
        events, streamer, _ = stream_calls(HERMES, "", chunks, truncated=True)
        check_call_events(events)
        ends = [e for e in events if e["type"] == "tool_call_end"]
        assert ends[0]["complete"]
        assert len(ends) == (1 if sent is None else 2)
        if sent is not None:
            assert not ends[1]["complete"] and "cut off" in ends[1]["error"]
            assert ends[1]["arguments"] == sent and ends[1]["input"] is None and ends[1]["cut_off"]
        assert streamer.completed == 1
    # Without truncation the end of the stream closes the region, and the call completes if it parses.
    _, streamer, _ = stream_calls(HERMES, "", [output])
    assert streamer.completed == untruncated


def test_at_close_mode_sends_whole_parsed_calls_only() -> None:
    template, prompt, output, tools = FAMILIES["qwen3"]
    events, _, _message = stream_calls(template, prompt, list(output), tools, eager=False)
    assert [e["type"] for e in events] == ["tool_call_start", "tool_call_delta", "tool_call_end"] * 2
    assert all(e["whole"] for e in events if e["type"] == "tool_call_delta")
    failing = '<tool_call>{"name": "f", "arguments": {"a": 1, oops}}</tool_call>'
    events, streamer, _ = stream_calls(HERMES, "", list(failing), eager=False)
    assert events == [] and streamer.errors


def test_each_region_calls_end_one_after_another() -> None:
    template, prompt, output, _ = FAMILIES["mistral-pre-v11"]
    events, _, _ = stream_calls(template, prompt, list(output))
    kinds = [(e["type"], e["index"]) for e in events if e["type"] != "tool_call_delta"]
    assert kinds == [
        ("tool_call_start", 0),
        ("tool_call_end", 0),
        ("tool_call_start", 1),
        ("tool_call_end", 1),
    ]
    # an element whose arguments come before its name holds back itself and every later element
    output = '[TOOL_CALLS] [{"name": "a", "arguments": {}}, {"arguments": {"x": 1}, "name": "b"}, {"name": "c", "arguments": {}}]</s>'
    events, _, _message = stream_calls(template, prompt, list(output))
    check_call_events(events)
    assert [e["name"] for e in events if e["type"] == "tool_call_start"] == ["a", "b", "c"]
    assert [e["whole"] for e in events if e["type"] == "tool_call_delta"][-2:] == [True, True]


@SETTINGS
@given(st.text(alphabet="abc_", min_size=1, max_size=8), OBJECTS, st.integers(0, 2**32))
def test_any_json_call_any_chunking(name: str, arguments: dict, seed: int) -> None:
    """Random tool-call documents, formatted at random, cut at random: the call streams whole and right."""
    rng = random.Random(seed)
    body = serialize({"name": name, "arguments": arguments}, rng)
    assume(
        "</tool_call>" not in body
    )  # the close delimiter inside a string ends the region (the template's choice)
    output = f"Text <tool_call>\n{body}\n</tool_call> more"
    message = rt.parse_response(output, HERMES, prefix="")
    events, _streamer, streamed = stream_calls(HERMES, "", pieces(output, rng))
    assert streamed == message
    check_call_events(events)
    (end,) = [e for e in events if e["type"] == "tool_call_end"]
    assert end["complete"] and end["name"] == name
    assert _strict_equal(json.loads(end["arguments"]), message["tool_calls"][0]["function"]["arguments"])
    whole_events, _, _ = stream_calls(HERMES, "", [output])
    assert whole_events[-1]["arguments"] == end["arguments"]  # the same string for every chunking


def test_arguments_text_and_call_parts() -> None:
    assert arguments_text({"a": "\ud800"}) == '{"a": "\\ud800"}'
    assert arguments_text([1]) == "[1]" and arguments_text("raw") == "raw"
    assert call_parts({"function": {"name": ""}}) is None and call_parts("x") is None
    assert call_parts({"id": 7, "function": {"name": "f"}}) == ("f", "7", {})


def test_a_call_that_is_the_models_json_keeps_its_id() -> None:
    template = {
        "start_anchor": "x",
        "fields": {
            "tool_calls": {"open": "<c>", "close": "</c>", "repeats": True, "content": "json"},
            "content": {},
        },
    }
    for _, chunks in chunkings(
        '<c>{"id": "call_7", "name": "f", "arguments": {"a": 1}}</c><c>{"name": "g", "arguments": {}}</c>'
    ):
        events, _, message = stream_calls(template, "", chunks)
        starts = [(e["name"], e["id"]) for e in events if e["type"] == "tool_call_start"]
        assert starts == [
            ("f", "call_7"),
            ("g", None),
        ]  # an id written first is kept, a missing one not awaited
        assert message["tool_calls"][0]["id"] == "call_7"
    events, _, _ = stream_calls(template, "", list('<c>{"name": "f", "arguments": {"a": 1}}</c>'))
    assert [e["type"] for e in events][:2] == ["tool_call_start", "tool_call_delta"]
    assert not events[1]["whole"]  # streamed, not held until close
