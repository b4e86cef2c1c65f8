"""Calls that fail after they were announced: what a client holds is valid JSON (issue 12, hole 4), or,
for a call the end of the output cut off, exactly what the model wrote (issue 28, item 4).

An announced call whose region then fails while the output goes on (invalid JSON) has already streamed
part of its arguments; the adapters end it with the text that closes them
(``toolstream.completion.json_completion``), or with ``{}`` when nothing was sent
(``arguments="buffered"``, arguments sent whole). A call that the end of the output cut off is not
closed (closing it would complete values the model never finished): it ends with the text sent, the
start of a JSON text, marked incomplete. The property test feeds tool-call outputs of several families,
truncated and corrupted at random points, in random chunks, and reads each call's arguments from the
stream itself, the way a client concatenates them. ``unparsed`` events (``errors="keep"``) become
content text (tests/wire/test_wire_cut_calls.py: except the text of a cut call that was announced).
"""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import response_templates as rt
from hypothesis_profiles import examples
from response_templates.toolstream import ToolCallStreamer
from response_templates.toolstream.completion import json_completion
from response_templates.wire import run_stream
from response_templates.wire._base import partial_input
from toolstream_fixtures import (
    DEEPSEEK_V31,
    FAMILIES,
    GEMMA_4,
    HERMES,
    KIMI_K2,
    MISTRAL_PRE_V11,
    OBJECTS,
    QWEN3_CODER,
    pieces,
    serialize,
)
from wire_checks import PROTOCOLS, make_adapter

SETTINGS = settings(max_examples=examples(300), deadline=None, suppress_health_check=list(HealthCheck))
STREAM_SETTINGS = settings(SETTINGS, max_examples=examples(200))  # each example runs a whole stream

# ------------------------------------------------------------------------------------------------------
# what a client holds


def streamed_arguments(protocol: str, chunks: list[dict]) -> list[str]:
    """Each call's arguments as a client assembles them from the stream: the concatenated fragments."""
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


def final_arguments(protocol: str, final: dict) -> list[Any]:
    if protocol == "chat":
        return [c["function"]["arguments"] for c in final["choices"][0]["message"].get("tool_calls", [])]
    if protocol == "responses":
        return [i["arguments"] for i in final["output"] if i["type"] == "function_call"]
    return [b["input"] for b in final["content"] if b["type"] == "tool_use"]


def stream(
    protocol: str,
    template: dict,
    chunks: list[str],
    *,
    prompt: str = "",
    tools: Any = None,
    finish_reason: str = "stop",
    errors: str = "raise",
    **kw: Any,
) -> tuple[list[dict], Any]:
    parser = rt.ResponseParser(template, prefix=prompt, tools=tools, errors=errors)
    adapter = make_adapter(protocol, template, tools, **kw)
    return list(run_stream(parser, adapter, chunks, finish_reason=finish_reason)), adapter


#: What :func:`check_valid` returns for the arguments of a call the end of the output cut off.
CUT_OFF = "<cut off>"


def check_valid(protocol: str, chunks: list[dict], adapter: Any) -> list[Any]:
    """Every call's streamed arguments parse, except those of a call the end of the output cut off (the
    last one, marked incomplete), which are the start of a JSON text; all agree with the non-streamed
    object."""
    texts = streamed_arguments(protocol, chunks)
    final = final_arguments(protocol, adapter.final())
    assert len(final) == len(texts)
    values: list[Any] = []
    for position, text in enumerate(texts):
        try:
            values.append(json.loads(text))  # the property: a JSONDecodeError only for ...
        except ValueError:
            # ... a call cut off by the end of the output: the last one, left as it was written
            assert position == len(texts) - 1
            assert any("cut off" in e or "ended inside the call" in e for e in adapter.errors)
            json_completion(text)  # the start of a JSON text (raises otherwise)
            values.append(CUT_OFF)
    if protocol == "anthropic":
        assert all(isinstance(v, dict) for v in values if v is not CUT_OFF)  # an object's text
        if values and values[-1] is CUT_OFF:
            assert final[-1] == partial_input(texts[-1])  # the members the model finished
    else:
        assert final == texts
    if protocol == "chat" and values and values[-1] is CUT_OFF:
        calls = adapter.final()["choices"][0]["message"]["tool_calls"]
        assert calls[-1]["status"] == "incomplete"
    return values


# ------------------------------------------------------------------------------------------------------
# the example


FAILING = (
    'Checking.<tool_call>{"name": "get_weather", "arguments": {"city": "Paris", oops}}</tool_call>'
    'Retrying.<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call><|im_end|>'
)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_failed_call_ends_with_its_arguments_closed(protocol: str) -> None:
    for chunks in ([FAILING], list(FAILING), pieces(FAILING, random.Random(3))):
        out, adapter = stream(protocol, HERMES, chunks)
        assert check_valid(protocol, out, adapter) == [{"city": "Paris"}, {"city": "Paris"}]
        assert len(adapter.errors) == 1 and "did not parse" in adapter.errors[0]
    if protocol == "responses":
        statuses = [i["status"] for i in adapter.final()["output"] if i["type"] == "function_call"]
        assert statuses == ["incomplete", "completed"]
    elif protocol == "chat":  # the same mark, on the chat call (an additive key)
        calls = adapter.final()["choices"][0]["message"]["tool_calls"]
        assert [c.get("status") for c in calls] == ["incomplete", None]


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize(
    ("cut", "sent"),
    [
        ('{"city": "Pa', '{"city": "Pa'),  # inside a string
        ('{"city": "Paris", "days": 3', '{"city": "Paris", "days": '),  # a number is sent when complete
        ('{"city": "Paris", "tags": ["a", ', '{"city": "Paris", "tags": ["a"'),  # an element to come
        ('{"city": "Paris", "nested": {"k": ', '{"city": "Paris", "nested": {"k": '),  # a value to come
        ('{"city": "Paris", "q": "a\\', '{"city": "Paris", "q": "a'),  # a cut escape is not sent
        ("{", "{"),
    ],
)
def test_a_call_cut_by_the_token_limit_ends_with_the_text_written(protocol: str, cut: str, sent: str) -> None:
    output = '<tool_call>{"name": "get_weather", "arguments": ' + cut
    for chunks in ([output], list(output)):
        out, adapter = stream(protocol, HERMES, chunks, finish_reason="length")
        assert check_valid(protocol, out, adapter) == [CUT_OFF]
        assert streamed_arguments(protocol, out) == [sent]  # not closed: no value is completed
        assert adapter.tool_calls.completed == 0


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_buffered_arguments_wait_for_the_region_to_parse(protocol: str) -> None:
    streamed, _ = stream(protocol, HERMES, list(FAILING))
    out, adapter = stream(protocol, HERMES, list(FAILING), arguments="buffered")
    # the failed call is announced (its name was known) but gets "{}"; the good one gets its arguments whole
    assert check_valid(protocol, out, adapter) == [{}, {"city": "Paris"}]
    assert len(out) < len(streamed)
    if protocol == "chat":
        fragments = [
            c["function"].get("arguments")
            for chunk in out
            for c in chunk["choices"][0]["delta"].get("tool_calls", [])
            if chunk["choices"]
        ]
        assert fragments == ["", "{}", "", '{"city": "Paris"}']
    good = 'OK.<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call><|im_end|>'
    a = stream(protocol, HERMES, list(good))[1].final()
    b = stream(protocol, HERMES, list(good), arguments="buffered")[1].final()
    assert a == b  # the same objects: only the stream's timing differs


def test_buffered_arrays_of_calls_are_sent_at_close() -> None:
    template, prompt, output, tools = FAMILIES["mistral-pre-v11"]
    out, adapter = stream("chat", template, list(output), prompt=prompt, tools=tools, arguments="buffered")
    reference = stream("chat", template, [output], prompt=prompt, tools=tools)[1]
    assert check_valid("chat", out, adapter) and adapter.final() == reference.final()


def test_arguments_mode_is_checked() -> None:
    with pytest.raises(ValueError, match="arguments must be one of"):
        make_adapter("chat", HERMES, arguments="lazy")
    with pytest.raises(ValueError, match="arguments must be one of"):
        ToolCallStreamer(HERMES, arguments="lazy")


def test_string_arguments_that_are_not_json_are_sent_as_a_json_string() -> None:
    output = '<tool_call>{"name": "shell", "arguments": "ls -la"}</tool_call><tool_call>{"name": "f", "arguments": "{\\"a\\": 1}"}</tool_call>'
    for protocol in PROTOCOLS:
        out, adapter = stream(protocol, HERMES, list(output))
        values = check_valid(protocol, out, adapter)
        assert values == (
            [{"value": "ls -la"}, {"a": 1}] if protocol == "anthropic" else ["ls -la", {"a": 1}]
        )


def test_toolstream_closes_the_text_it_sent() -> None:
    parser = rt.ResponseParser(HERMES, prefix="")
    calls = ToolCallStreamer(HERMES)
    events = calls.feed(parser.feed('<tool_call>{"name": "f", "arguments": {"q": ["a", {"b": "c'))
    with pytest.raises(rt.ParseError) as error:
        parser.feed('\x01"}]}}</tool_call>')  # the region fails, and the output goes on
    events += calls.feed(error.value.events or [])
    deltas = [e["arguments"] for e in events if e["type"] == "tool_call_delta"]
    assert deltas[-1] == '"}]}'  # the closing delta
    end = events[-1]
    assert end["type"] == "tool_call_end" and not end["complete"] and end["input"] is None
    assert end["arguments"] == "".join(deltas) == '{"q": ["a", {"b": "c"}]}'


# ------------------------------------------------------------------------------------------------------
# the property: outputs of several families, truncated and corrupted at random, in random chunks


def _hermes(args: list[dict], rng: random.Random) -> str:
    return (
        "Sure.\n"
        + "".join(
            '<tool_call>\n{"name": "get_weather", "arguments": ' + serialize(a, rng) + "}\n</tool_call>"
            for a in args
        )
        + "<|im_end|>"
    )


def _kimi(args: list[dict], rng: random.Random) -> str:
    calls = "".join(
        f"<|tool_call_begin|>functions.get_weather:{i}<|tool_call_argument_begin|>{serialize(a, rng)}<|tool_call_end|>"
        for i, a in enumerate(args)
    )
    return "On it.<|tool_calls_section_begin|>" + calls + "<|tool_calls_section_end|><|im_end|>"


def _deepseek(args: list[dict], rng: random.Random) -> str:
    calls = "".join(
        f"<｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{serialize(a, rng)}<｜tool▁call▁end｜>" for a in args
    )
    return "</think>Hi<｜tool▁calls▁begin｜>" + calls + "<｜tool▁calls▁end｜><｜end▁of▁sentence｜>"


def _mistral(args: list[dict], rng: random.Random) -> str:
    calls = ", ".join('{"name": "get_weather", "arguments": ' + serialize(a, rng) + "}" for a in args)
    return "[TOOL_CALLS] [" + calls + "]</s>"


def _coder(args: list[dict], rng: random.Random) -> str:
    def params(a: dict) -> str:
        return "".join(f"<parameter={k or 'k'}>\n{json.dumps(v)}\n</parameter>\n" for k, v in a.items())

    return "".join(f"<tool_call>\n<function=get_weather>\n{params(a)}</function>\n</tool_call>" for a in args)


def _gemma(args: list[dict], rng: random.Random) -> str:
    return (
        "".join("<|tool_call>call:get_weather" + serialize(a, rng) + "<tool_call|>" for a in args) + "<turn|>"
    )


SHAPES = {
    "qwen3": (HERMES, "", _hermes),
    "kimi-k2": (KIMI_K2, "", _kimi),
    "deepseek-v3.1": (DEEPSEEK_V31, "", _deepseek),
    "mistral-arrays": (MISTRAL_PRE_V11, "", _mistral),
    "qwen3-coder": (QWEN3_CODER, "", _coder),
    "gemma-4": (GEMMA_4, "", _gemma),
}
_JUNK = ["{", "}", "[", "]", '"', "\\", ",", ":", " ", "x", "1", ".", "-", "e", "<", "\n", "\\u12", "tru"]


def corrupt(text: str, rng: random.Random) -> str:
    """One to three random edits (insert, delete, replace), then maybe a cut."""
    for _ in range(rng.randint(1, 3)):
        if not text:
            break
        at = rng.randrange(len(text) + 1)
        kind = rng.random()
        if kind < 0.4:
            text = text[:at] + rng.choice(_JUNK) + text[at:]
        elif kind < 0.7:
            text = text[:at] + text[at + 1 :]
        else:
            text = text[:at] + rng.choice(_JUNK) + text[at + 1 :]
    if rng.random() < 0.6:
        text = text[: rng.randrange(len(text) + 1)]
    return text


@STREAM_SETTINGS
@given(
    shape=st.sampled_from(sorted(SHAPES)),
    arguments=st.lists(OBJECTS, min_size=1, max_size=2),
    seed=st.integers(0, 2**32),
    protocol=st.sampled_from(PROTOCOLS),
    mode=st.sampled_from(["stream", "buffered"]),
    finish_reason=st.sampled_from(["stop", "length"]),
    errors=st.sampled_from(["raise", "keep"]),
)
def test_streamed_arguments_always_parse(
    shape: str, arguments: list[dict], seed: int, protocol: str, mode: str, finish_reason: str, errors: str
) -> None:
    template, prompt, write = SHAPES[shape]
    rng = random.Random(seed)
    output = corrupt(write(arguments, rng), rng)
    out, adapter = stream(
        protocol,
        template,
        pieces(output, rng),
        prompt=prompt,
        finish_reason=finish_reason,
        errors=errors,
        arguments=mode,
    )
    check_valid(protocol, out, adapter)


# ------------------------------------------------------------------------------------------------------
# json_completion on its own


@SETTINGS
@given(value=OBJECTS, seed=st.integers(0, 2**32))
def test_every_prefix_of_a_json_text_completes(value: Any, seed: int) -> None:
    rng = random.Random(seed)
    text = serialize(value, rng)
    for cut in sorted({rng.randrange(len(text) + 1) for _ in range(20)} | {0, len(text)}):
        prefix = text[:cut]
        completed = prefix + json_completion(prefix)
        json.loads(completed)  # valid
        assert completed.startswith(prefix)
    assert json_completion(text) == ""


@SETTINGS
@given(value=OBJECTS, seed=st.integers(0, 2**32))
def test_json_completion_is_sound_or_refuses(value: Any, seed: int) -> None:
    rng = random.Random(seed)
    text = corrupt(serialize(value, rng), rng)
    try:
        suffix = json_completion(text)
    except ValueError as exc:
        assert "not the start of a JSON document" in str(exc)
        return
    json.loads(text + suffix)


@pytest.mark.parametrize(
    ("text", "suffix"),
    [
        ("", "null"),
        ('{"a"', ": null}"),
        ('{"a": 1,', '"": null}'),
        ("[1, ", "null]"),
        ("[", "]"),
        ("-", "0"),
        ("[1.", "0]"),
        ("[1e", "0]"),
        ("[1E-", "0]"),
        ("[tru", "e]"),
        ("[-Inf", "inity]"),
        ("[Na", "N]"),
        ('["a\\', '\\"]'),
        ('["a\\\\', '"]'),
        ('["\\u00e', '0"]'),
        ('{"k\\u', '0000": null}'),
        ('{"a": {"b": [{}', "]}}"),
    ],
)
def test_json_completion_rules(text: str, suffix: str) -> None:
    assert json_completion(text) == suffix
    json.loads(text + suffix)


@pytest.mark.parametrize("text", ['{"a" 1', "[1,]", "{,", "01", '"\\x"', '{"a": 1}x', "[tx", '"\x01', "]"])
def test_json_completion_refuses_what_no_json_starts_with(text: str) -> None:
    with pytest.raises(ValueError, match="not the start of a JSON document"):
        json_completion(text)


# ------------------------------------------------------------------------------------------------------
# unparsed text (errors="keep") is content


def _synthetic(kept: str) -> list[dict]:
    return [
        {"type": "region_open", "field": "content"},
        {"type": "region_chunk", "field": "content", "text": "Hi ", "dirty": False},
        {"type": "region_close", "field": "content", "value": "Hi"},
        {"type": "region_open", "field": "tool_calls"},
        {"type": "region_chunk", "field": "tool_calls", "text": "{oops}", "dirty": True},
        {"type": "region_close", "field": "tool_calls", "value": None, "error": "json: invalid JSON"},
        {"type": "unparsed", "field": "tool_calls", "text": kept, "error": "json: invalid JSON"},
        {"type": "region_open", "field": "content"},
        {"type": "region_chunk", "field": "content", "text": " bye", "dirty": False},
        {"type": "region_close", "field": "content", "value": "bye"},
    ]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_unparsed_text_is_sent_as_content(protocol: str) -> None:
    kept = "<tool_call>{oops}</tool_call>"
    adapter = make_adapter(protocol, HERMES)
    adapter.feed([])
    adapter.feed(_synthetic(kept))
    adapter.finish([])
    final = adapter.final()
    if protocol == "chat":
        assert final["choices"][0]["message"]["content"] == "Hi " + kept + " bye"
        assert final["choices"][0]["finish_reason"] == "stop"
    elif protocol == "responses":
        texts = [i["content"][0]["text"] for i in final["output"] if i["type"] == "message"]
        assert texts == ["Hi", kept, "bye"]
    else:
        assert [b["text"] for b in final["content"] if b["type"] == "text"] == ["Hi", kept, "bye"]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_kept_text_from_the_parser_reaches_the_client(protocol: str) -> None:
    out, adapter = stream(protocol, HERMES, list(FAILING), errors="keep")
    check_valid(protocol, out, adapter)
    final = adapter.final()
    bad = FAILING[len("Checking.") : FAILING.index("Retrying.")]
    if protocol == "chat":
        message = rt.parse_response(FAILING, HERMES, prefix="", errors="keep")
        assert final["choices"][0]["message"]["content"] == message["content"]
        assert bad in message["content"]
    elif protocol == "responses":
        assert bad in [i["content"][0]["text"] for i in final["output"] if i["type"] == "message"]
    else:
        assert bad in [b.get("text") for b in final["content"]]
