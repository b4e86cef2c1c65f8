"""A tool call cut off by the end of the output (issue 28, item 4).

The output ends inside a call (the token limit, ``finish_reason="length"``). Its text must be in exactly
one place of the final message, no value the model did not finish may be completed, and the final
message must say the call is incomplete:

* a call already announced to the client (its name was read while streaming) stays a tool call; its
  arguments are exactly the argument text sent (the start of a JSON text, not closed), it is marked
  incomplete, and its region's raw text is not sent again as content;
* a call not announced (cut inside its name, or right after the open delimiter) is no tool call: its raw
  text is content, as in ``rt.parse_response(..., errors="keep")``, whose error says ``cut_off``.
"""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

import response_templates as rt
from response_templates.wire import run_stream
from toolstream_fixtures import pieces
from wire_checks import PROTOCOLS, make_adapter

QWEN3 = rt.templates.get("qwen3")
CUT = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Par'
SENT = '{"city": "Par'  # the arguments as the model wrote them, up to the cut


def chunkings(text: str) -> list[list[str]]:
    return [[text], list(text), pieces(text, random.Random(5))]


def stream(protocol: str, output: str, chunks: list[str], **kw: Any) -> tuple[list[dict], Any]:
    errors = kw.pop("errors", "keep")
    finish_reason = kw.pop("finish_reason", "length")
    parser = rt.ResponseParser(QWEN3, prefix="", errors=errors)
    adapter = make_adapter(protocol, QWEN3, **kw)
    return list(run_stream(parser, adapter, chunks, finish_reason=finish_reason)), adapter


def streamed_arguments(protocol: str, chunks: list[dict]) -> list[str]:
    """Each call's arguments as a client concatenates them from the stream."""
    calls: dict[int, list[str]] = {}
    for chunk in chunks:
        if protocol == "chat":
            for choice in chunk["choices"]:
                for call in choice["delta"].get("tool_calls", []):
                    calls.setdefault(call["index"], []).append(call["function"].get("arguments", ""))
        elif protocol == "responses":
            if chunk["type"] == "response.output_item.added" and chunk["item"]["type"] == "function_call":
                calls[chunk["output_index"]] = [chunk["item"]["arguments"]]
            elif chunk["type"] == "response.function_call_arguments.delta":
                calls[chunk["output_index"]].append(chunk["delta"])
        elif chunk["type"] == "content_block_start" and chunk["content_block"]["type"] == "tool_use":
            calls[chunk["index"]] = []
        elif chunk["type"] == "content_block_delta" and chunk["delta"]["type"] == "input_json_delta":
            calls[chunk["index"]].append(chunk["delta"]["partial_json"])
    return ["".join(calls[k]) for k in sorted(calls)]


def read_final(protocol: str, final: dict) -> tuple[list[dict], list[str]]:
    """The tool calls (name, arguments or input, status) and the content texts of a final object."""
    if protocol == "chat":
        message = final["choices"][0]["message"]
        calls = [
            {
                "name": c["function"]["name"],
                "arguments": c["function"]["arguments"],
                "status": c.get("status"),
            }
            for c in message.get("tool_calls") or []
        ]
        return calls, [message["content"]] if message.get("content") else []
    if protocol == "responses":
        calls = [
            {"name": i["name"], "arguments": i["arguments"], "status": i["status"]}
            for i in final["output"]
            if i["type"] == "function_call"
        ]
        texts = [p["text"] for i in final["output"] if i["type"] == "message" for p in i["content"]]
        return calls, texts
    calls = [{"name": b["name"], "input": b["input"]} for b in final["content"] if b["type"] == "tool_use"]
    return calls, [b["text"] for b in final["content"] if b["type"] == "text"]


def assert_finished_incomplete(protocol: str, final: dict) -> None:
    if protocol == "chat":
        assert final["choices"][0]["finish_reason"] == "length"
    elif protocol == "responses":
        assert final["status"] == "incomplete"
        assert final["incomplete_details"] == {"reason": "max_output_tokens"}
    else:
        assert final["stop_reason"] == "max_tokens"


# ------------------------------------------------------------------------------------------------------
# cut inside the arguments: one tool call, its text as written, marked incomplete, not also content


@pytest.mark.parametrize("errors", ["keep", "raise"])
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_call_cut_in_its_arguments_is_one_incomplete_call_as_written(protocol: str, errors: str) -> None:
    reference = None
    for chunks in chunkings(CUT):
        out, adapter = stream(protocol, CUT, chunks, errors=errors)
        final = adapter.final()
        reference = reference or final
        assert final == reference  # whatever the chunking
        calls, texts = read_final(protocol, final)
        assert len(calls) == 1 and calls[0]["name"] == "get_weather"
        # what the client concatenates is exactly what the model wrote: nothing closed, nothing added
        assert streamed_arguments(protocol, out) == [SENT]
        if protocol == "anthropic":
            assert calls[0]["input"] == {}  # only the members the model finished: none
        else:
            assert calls[0]["arguments"] == SENT  # not '{"city": "Par"}'
            assert calls[0]["status"] == "incomplete"
            with pytest.raises(json.JSONDecodeError):
                json.loads(calls[0]["arguments"])
        # the call's text is not sent a second time, as content
        assert not any("get_weather" in t or "<tool_call>" in t for t in texts)
        assert_finished_incomplete(protocol, final)
        assert adapter.tool_calls.completed == 0
        assert len(adapter.errors) == 1 and "cut off" in adapter.errors[0]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_no_value_is_completed_wherever_the_cut_falls(protocol: str) -> None:
    # cut in a string, after a key, in an array, in a nested object: what was sent, and nothing else
    for cut, sent, finished in [
        ('{"city": "Pa', '{"city": "Pa', {}),
        ('{"city": "Paris", "days": 3', '{"city": "Paris", "days": ', {"city": "Paris"}),
        (
            '{"city": "Paris", "tags": ["a", "b',
            '{"city": "Paris", "tags": ["a", "b',
            {"city": "Paris", "tags": ["a"]},
        ),
        ('{"city": "Paris", "q": "a\\', '{"city": "Paris", "q": "a', {"city": "Paris"}),
    ]:
        output = '<tool_call>{"name": "get_weather", "arguments": ' + cut
        for chunks in ([output], list(output)):
            out, adapter = stream(protocol, output, chunks)
            calls, texts = read_final(protocol, adapter.final())
            assert streamed_arguments(protocol, out) == [sent]
            assert calls[0].get("arguments", sent) == sent
            if protocol == "anthropic":
                assert calls[0]["input"] == finished
            assert texts == []


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_buffered_arguments_of_a_cut_call_are_never_sent(protocol: str) -> None:
    # "buffered" sends arguments only once the region parsed: the cut call keeps none, and its text is
    # not content either (the call, announced and marked incomplete, stands for it)
    for chunks in ([CUT], list(CUT)):
        out, adapter = stream(protocol, CUT, chunks, arguments="buffered")
        calls, texts = read_final(protocol, adapter.final())
        assert streamed_arguments(protocol, out) == [""]  # not "{}": nothing the model wrote is a call
        if protocol == "anthropic":
            assert calls == [{"name": "get_weather", "input": {}}]
        else:
            assert calls == [{"name": "get_weather", "arguments": "", "status": "incomplete"}]
        assert texts == []


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_an_output_that_stops_inside_a_call_is_not_completed_either(protocol: str) -> None:
    # the engine said "stop" (a stop string) but the call never closed: the same representation
    out, adapter = stream(protocol, CUT, list(CUT), finish_reason="stop")
    calls, texts = read_final(protocol, adapter.final())
    assert streamed_arguments(protocol, out) == [SENT] and texts == []
    assert calls[0].get("status", "incomplete") == "incomplete"
    assert adapter.tool_calls.completed == 0 and "ended inside the call" in adapter.errors[0]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_whole_call_cut_before_its_close_is_one_incomplete_call_in_every_mode(protocol: str) -> None:
    # every value was written, only "</tool_call>" is missing: with the token limit the call is still
    # not complete, but nothing of it is lost either, also when it is sent at close (it used to vanish)
    output = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}'
    for kw in ({}, {"tool_streaming": "at_close"}, {"arguments": "buffered"}):
        for chunks in ([output], list(output)):
            out, adapter = stream(protocol, output, chunks, **kw)
            calls, texts = read_final(protocol, adapter.final())
            sent = "" if kw.get("arguments") == "buffered" else '{"city": "Paris"}'
            assert streamed_arguments(protocol, out) == [sent], kw
            if protocol == "anthropic":
                assert calls == [{"name": "get_weather", "input": json.loads(sent or "{}")}]
            else:
                assert calls == [{"name": "get_weather", "arguments": sent, "status": "incomplete"}]
            assert texts == [] and adapter.tool_calls.completed == 0


def test_text_before_the_cut_call_is_kept_and_a_complete_call_stays_complete() -> None:
    output = (
        'Checking.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>\n'
        + CUT
    )
    for chunks in chunkings(output):
        _, adapter = stream("chat", output, chunks)
        calls, texts = read_final("chat", adapter.final())
        assert texts == ["Checking."]
        assert calls == [
            {"name": "get_weather", "arguments": '{"city": "Paris"}', "status": None},
            {"name": "get_weather", "arguments": SENT, "status": "incomplete"},
        ]


# ------------------------------------------------------------------------------------------------------
# whole parsing: the same output is no tool call, its text once in content, the error says cut off


def test_whole_parsing_keeps_the_cut_call_as_content_once_and_says_it_was_cut() -> None:
    message = rt.parse_response(CUT, QWEN3, prefix="", errors="keep")
    assert dict(message) == {"role": "assistant", "content": CUT}  # no tool call, nothing completed
    assert [(e.field, e.cut_off) for e in message.errors] == [("tool_calls", True)]
    assert message.errors[0].raw == CUT[len("<tool_call>") :]
    # the streaming parser says the same, whatever the chunking
    for chunks in chunkings(CUT):
        parser = rt.ResponseParser(QWEN3, prefix="", errors="keep")
        for chunk in chunks:
            parser.feed(chunk)
        streamed, _ = parser.finalize()
        assert streamed == message and [e.cut_off for e in streamed.errors] == [True]
    # errors="raise": the error raised says it too
    with pytest.raises(rt.ParseError) as raised:
        rt.parse_response(CUT, QWEN3, prefix="")
    assert raised.value.cut_off
    # a region that closed and failed was not cut off
    bad = rt.parse_response("<tool_call>{oops}</tool_call>", QWEN3, prefix="", errors="keep")
    assert [e.cut_off for e in bad.errors] == [False]


# ------------------------------------------------------------------------------------------------------
# cut before the call is named: no call anywhere, the raw text once, as content


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize(
    "output",
    ['<tool_call>\n{"name": "get_we', '<tool_call>\n{"name": "get_weather', "<tool_call>\n", "<tool_call>"],
    ids=["in-the-name", "name-unterminated", "after-the-opener", "at-the-opener"],
)
def test_a_call_cut_before_its_name_is_content_once(protocol: str, output: str) -> None:
    message = rt.parse_response(output, QWEN3, prefix="", errors="keep")
    assert "tool_calls" not in message and message["content"] == output.strip()
    assert [(e.field, e.cut_off) for e in message.errors] == [("tool_calls", True)]
    for chunks in chunkings(output):
        out, adapter = stream(protocol, output, chunks)
        final = adapter.final()
        calls, texts = read_final(protocol, final)
        assert calls == [] and streamed_arguments(protocol, out) == []
        assert [t.strip() for t in texts] == [message["content"]]  # once, as parse_response has it
        assert_finished_incomplete(protocol, final)
        assert len(adapter.errors) == 1 and "cut off" in adapter.errors[0]
