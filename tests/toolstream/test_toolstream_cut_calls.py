"""ToolCallStreamer and a call the end of the output cut off (issue 28, item 4): its end event keeps the
text sent as it is (``cut_off``), where a call whose region failed while the output went on is closed."""

from __future__ import annotations

from typing import Any

import pytest

import response_templates as rt
from response_templates.toolstream import ToolCallStreamer
from response_templates.toolstream.completion import json_completion

QWEN3 = rt.templates.get("qwen3")
CUT = '<tool_call>\n{"name": "get_weather", "arguments": {"q": ["a", {"b": "c'


def run(output: str, *, truncated: bool, errors: str = "raise") -> list[dict[str, Any]]:
    parser = rt.ResponseParser(QWEN3, prefix="", errors=errors)
    calls = ToolCallStreamer(QWEN3)
    events: list[Any] = []
    for char in output:
        try:
            events += calls.feed(parser.feed(char))
        except rt.ParseError as error:
            events += calls.feed(error.events or [])
    try:
        _, final = parser.finalize()
    except rt.ParseError as error:
        final = error.events or []
    return events + calls.finish(final, truncated=truncated)


@pytest.mark.parametrize("errors", ["raise", "keep"])
@pytest.mark.parametrize("truncated", [True, False])
def test_a_cut_call_ends_with_the_text_sent_unclosed(truncated: bool, errors: str) -> None:
    events = run(CUT, truncated=truncated, errors=errors)
    deltas = [e["arguments"] for e in events if e["type"] == "tool_call_delta"]
    end = events[-1]
    assert end["type"] == "tool_call_end" and end["cut_off"] is True
    assert not end["complete"] and end["input"] is None
    assert end["arguments"] == "".join(deltas) == '{"q": ["a", {"b": "c'  # no closing delta
    assert json_completion(end["arguments"])  # the start of a JSON text, which nothing closed
    assert ("cut off" if truncated else "ended inside the call") in end["error"]
    # where the output goes on after a region that failed, the call is closed to valid JSON, as before
    events = run(CUT + '", oops}]}}\n</tool_call>Then text.', truncated=truncated, errors=errors)
    end = [e for e in events if e["type"] == "tool_call_end"][-1]
    assert "cut_off" not in end and not end["complete"]
    assert end["arguments"] == '{"q": ["a", {"b": "c"}]}'


def test_a_complete_json_text_cut_before_its_close_is_incomplete_but_whole() -> None:
    output = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}'
    events = run(output, truncated=True)
    end = events[-1]
    assert end["cut_off"] is True and not end["complete"]
    assert end["arguments"] == '{"city": "Paris"}'  # all of it was written: nothing added, nothing lost
    events = run(output, truncated=False)  # no token limit: the region parsed, the call is complete
    assert events[-1]["complete"] and "cut_off" not in events[-1]
