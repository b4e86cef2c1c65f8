"""A Qwen3-Coder XML call cut off by the end of the output (issue 28, items 3 and 4 together).

A value without ``</parameter>`` is recovered where the next ``<parameter=`` or ``</function>`` ends it
(item 3), but the end of the output ends nothing: a call whose text runs out inside a value is incomplete,
so it is a ParseError with ``cut_off`` (``errors="keep"``: its text stays content and ``message.errors``
says so), exactly as a JSON call cut at ``{"city": "Par``, and no client gets a value the model did not
finish (item 4).
"""

from __future__ import annotations

import random
from typing import Any

import pytest

import response_templates as rt
from response_templates.wire import run_stream
from toolstream_fixtures import pieces
from wire_checks import PROTOCOLS, make_adapter

QWEN = ["qwen3-coder", "qwen3-coder-instruct", "intellect-3"]
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
        },
    },
}
TOOLS = [WEATHER]
HEAD = "<tool_call>\n<function=get_weather>\n"

#: Outputs that end inside the last parameter's value: the call never ended.
CUT = [
    HEAD + "<parameter=city>\nPar",
    HEAD + "<parameter=city>\n",
    HEAD + "<parameter=city>\nParis\n",
    HEAD + "<parameter=city>\nParis\n</parame",
    HEAD + "<parameter=city>\nParis\n</parameter>\n<parameter=days>\n3",
    HEAD + "<parameter=city>\nParis\n<parameter=days>\n3",  # the first value recovered, the last cut
]
CUT_IDS = ["in-value", "value-empty", "before-close", "in-close", "second-value", "both-unclosed"]

#: Outputs whose every value ended (by its close tag, the next parameter or the call's end): recovered.
RECOVERED = [
    (HEAD + "<parameter=city>\nParis\n</function>\n</tool_call>", {"city": "Paris"}),
    (HEAD + "<parameter=city>\nParis\n</function>", {"city": "Paris"}),
    (HEAD + "<parameter=city>\nParis\n<parameter=days>\n3\n</function>", {"city": "Paris", "days": 3}),
    # cut after a closed value: nothing the model wrote is completed
    (HEAD + "<parameter=city>\nParis\n</parameter>\n", {"city": "Paris"}),
]


def template(name: str) -> Any:
    return rt.templates.get(name)


def chunkings(text: str) -> list[list[str]]:
    return [[text], list(text), pieces(text, random.Random(3))]


@pytest.mark.parametrize("output", CUT, ids=CUT_IDS)
@pytest.mark.parametrize("name", QWEN)
def test_a_call_cut_in_a_value_is_an_error_marked_cut_off(name: str, output: str) -> None:
    with pytest.raises(rt.ParseError) as raised:
        rt.parse_response(output, template(name), prefix="", tools=TOOLS)
    assert raised.value.cut_off and raised.value.field == "tool_calls"
    message = rt.parse_response(output, template(name), prefix="", tools=TOOLS, errors="keep")
    # no tool call, the text once, as content, and the error says the call was cut off
    assert dict(message) == {"role": "assistant", "content": output.rstrip()}
    assert [(e.field, e.cut_off) for e in message.errors] == [("tool_calls", True)]


@pytest.mark.parametrize("output", CUT, ids=CUT_IDS)
def test_the_streaming_parser_says_the_same_for_every_chunking(output: str) -> None:
    whole = rt.parse_response(output, template("qwen3-coder"), prefix="", tools=TOOLS, errors="keep")
    for chunks in chunkings(output):
        parser = rt.ResponseParser(template("qwen3-coder"), prefix="", tools=TOOLS, errors="keep")
        for chunk in chunks:
            parser.feed(chunk)
        message, _ = parser.finalize()
        assert dict(message) == dict(whole) and [e.cut_off for e in message.errors] == [True]


@pytest.mark.parametrize("output, arguments", RECOVERED)
@pytest.mark.parametrize("name", QWEN)
def test_values_that_ended_stay_recovered(name: str, output: str, arguments: dict[str, Any]) -> None:
    message = rt.parse_response(output, template(name), prefix="", tools=TOOLS)
    assert [c["function"]["arguments"] for c in message["tool_calls"]] == [arguments]
    assert not message.errors


def test_the_end_of_the_turn_ends_the_call_and_its_value() -> None:
    # <|im_end|> closes the call: the model finished its turn, so its last value is what it wrote.
    output = HEAD + "<parameter=city>\nParis<|im_end|>"
    message = rt.parse_response(output, template("qwen3-coder"), prefix="", tools=TOOLS)
    assert [c["function"]["arguments"] for c in message["tool_calls"]] == [{"city": "Paris"}]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_adapters_send_one_incomplete_call_without_the_unfinished_value(protocol: str) -> None:
    # The call was announced (its name streamed) before the cut: it stays one tool call, marked
    # incomplete, whose arguments are what was sent (nothing: the value was never finished).
    for chunks in chunkings(CUT[0]):
        parser = rt.ResponseParser(template("qwen3-coder"), prefix="", tools=TOOLS, errors="keep")
        adapter = make_adapter(protocol, template("qwen3-coder"), tools=TOOLS)
        list(run_stream(parser, adapter, chunks, finish_reason="length"))
        final = adapter.final()
        if protocol == "chat":
            (choice,) = final["choices"]
            assert choice["finish_reason"] == "length" and not choice["message"]["content"]
            calls = [
                (c["function"]["name"], c["function"]["arguments"], c["status"])
                for c in choice["message"]["tool_calls"]
            ]
            assert calls == [("get_weather", "", "incomplete")]
        elif protocol == "responses":
            assert final["status"] == "incomplete"
            calls = [(i["name"], i["arguments"], i["status"]) for i in final["output"]]
            assert calls == [("get_weather", "", "incomplete")]
        else:
            assert final["stop_reason"] == "max_tokens"
            blocks = [(b["type"], b.get("name"), b.get("input")) for b in final["content"]]
            assert blocks == [("tool_use", "get_weather", {})]


# ---------------------------------------------------------------------------------- seed-oss

SEED = "<seed:tool_call>\n<function=get_weather>\n"


@pytest.mark.parametrize(
    "output, arguments",
    [
        (
            SEED + "<parameter=city>Paris\n<parameter=days>3</parameter>\n</function>",
            {"city": "Paris", "days": 3},
        ),
        (SEED + "<parameter=city>Paris\n</function>\n</seed:tool_call>", {"city": "Paris"}),
        (SEED + "<parameter=city>Paris\n</parameter>\n", {"city": "Paris\n"}),  # a closed value is exact
    ],
)
def test_seed_oss_values_without_close_tags_are_recovered(output: str, arguments: dict[str, Any]) -> None:
    message = rt.parse_response(output, template("seed-oss"), prefix="", tools=TOOLS)
    assert [c["function"]["arguments"] for c in message["tool_calls"]] == [arguments]


@pytest.mark.parametrize("tail", ["<parameter=city>Par", "<parameter=city>Paris</parameter><parameter=days>"])
def test_seed_oss_a_call_cut_in_a_value_is_an_error_marked_cut_off(tail: str) -> None:
    message = rt.parse_response(SEED + tail, template("seed-oss"), prefix="", tools=TOOLS, errors="keep")
    assert dict(message) == {"role": "assistant", "content": SEED + tail}
    assert [(e.field, e.cut_off) for e in message.errors] == [("tool_calls", True)]
