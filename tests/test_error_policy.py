"""The error policy (docs/errors.md, "Error policy"): ``errors="raise"`` (default) or ``errors="keep"``.

With "keep" nothing raises a ParseError: a failed region's text, delimiters included, stays in the message
as content in stream order, an ``unparsed`` event follows its ``region_close``, and ``message.errors``
(a :class:`~response_templates.ParsedMessage`) lists the failures. Also: ``finalize`` always ends the
parser, and stored errors are bounded in number and hold no tracebacks (issue 12, holes 2 and 3).
"""

from __future__ import annotations

import contextlib
import copy
import json
import pickle
import tracemalloc
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import response_templates as rt
from hypothesis_profiles import examples
from response_templates.parser import MAX_ERRORS

QWEN3 = rt.templates.get("qwen3")
PROMPT = "<|im_start|>user\nWeather?<|im_end|>\n<|im_start|>assistant\n"
GOOD_A = '<tool_call>\n{"name": "a", "arguments": {}}\n</tool_call>'
BAD_B = '<tool_call>\n{"name": "b", "arguments": {oops}}\n</tool_call>'
GOOD_C = '<tool_call>\n{"name": "c", "arguments": {"x": 1}}\n</tool_call>'
OUTPUT = f"<think>\nhmm\n</think>\n\nSure.{GOOD_A}\n{BAD_B}\n{GOOD_C}<|im_end|>"


def call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "arguments": arguments}}


def stream(template: Any, prefix: str, pieces: list[Any], **kw: Any) -> tuple[rt.ParsedMessage, list[Any]]:
    parser = rt.ResponseParser(template, prefix=prefix, errors="keep", **kw)
    events = list(parser.initial_events)
    for piece in pieces:
        events += parser.feed(piece)
    message, final = parser.finalize()
    return message, events + final


def merged(events: list[Any]) -> list[Any]:
    """Events with consecutive chunks of one region joined (chunking only changes how text is split)."""
    out: list[Any] = []
    for event in events:
        last = out[-1] if out else {}
        if event["type"] == "region_chunk" == last.get("type") and last["field"] == event["field"]:
            out[-1] = {**last, "text": last["text"] + event["text"]}
            continue
        out.append(dict(event))
    return out


def described(message: rt.ParsedMessage) -> tuple[Any, list[tuple[str | None, str]]]:
    return dict(message), [(e.field, str(e)) for e in message.errors]


# -- the Qwen3 case of issue 12 ----------------------------------------------------------------------------


def test_default_is_raise() -> None:
    with pytest.raises(rt.ParseError) as info:
        rt.parse_response(OUTPUT, QWEN3, prefix=PROMPT)
    assert info.value.field == "tool_calls"


def test_keep_keeps_reasoning_other_calls_and_the_failed_call_text_in_place() -> None:
    message = rt.parse_response(OUTPUT, QWEN3, prefix=PROMPT, errors="keep")
    assert isinstance(message, rt.ParsedMessage)
    assert message == {
        "role": "assistant",
        "reasoning_content": "hmm",
        "content": "Sure.\n" + BAD_B,
        "tool_calls": [call("a", {}), call("c", {"x": 1})],
    }
    assert [(e.field, e.raw) for e in message.errors] == [("tool_calls", BAD_B[len("<tool_call>") : -12])]
    assert isinstance(message.errors[0], rt.ParseError)


def test_unparsed_event_follows_the_region_close() -> None:
    _, events = stream(QWEN3, PROMPT, [OUTPUT])
    at = next(i for i, e in enumerate(events) if e["type"] == "region_close" and e.get("error"))
    assert events[at]["value"] is None
    assert events[at + 1] == {
        "type": "unparsed",
        "field": "tool_calls",
        "text": BAD_B,
        "error": events[at]["error"],
    }
    assert sum(e["type"] == "unparsed" for e in events) == 1


def test_raise_mode_emits_no_unparsed_event() -> None:
    parser = rt.ResponseParser(QWEN3, prefix=PROMPT)
    with pytest.raises(rt.ParseError) as info:
        parser.feed(OUTPUT)
    assert all(e["type"] != "unparsed" for e in info.value.events or [])


def test_text_between_two_failed_calls_keeps_its_order() -> None:
    text = "one<tool_call>{x}</tool_call>two<tool_call>{y}</tool_call>three"
    message = rt.parse_response(text, QWEN3, prefix="", errors="keep")
    assert message["content"] == text
    assert [e.raw for e in message.errors] == ["{x}", "{y}"]


# -- other failures ---------------------------------------------------------------------------------------

INT_IMPLICIT = {
    "start_anchor": "A",
    "fields": {
        "tc": {"open": "<tc>", "close": "</tc>", "content": "json", "repeats": True},
        "n": {"content": "int"},
    },
}


def test_failed_implicit_value_keeps_its_raw_text() -> None:
    with pytest.raises(rt.ParseError):
        rt.parse_response("<tc>[1]</tc>abc", INT_IMPLICIT, prefix="")
    message = rt.parse_response("<tc>[1]</tc>abc", INT_IMPLICIT, prefix="", errors="keep")
    assert message == {"tc": [[1]], "n": "abc"}
    assert [e.field for e in message.errors] == ["n"]


def test_failed_region_inside_a_failing_implicit_field() -> None:
    message = rt.parse_response("12<tc>[1</tc>", INT_IMPLICIT, prefix="", errors="keep")
    assert message == {"n": "12<tc>[1</tc>"}
    assert [e.field for e in message.errors] == ["tc", "n"]


REQUIRED = {
    "start_anchor": "A",
    "fields": {"answer": {"open": "<a>", "close": "</a>", "optional": False}, "content": {}},
}


def test_missing_required_field() -> None:
    with pytest.raises(rt.ParseError) as info:
        rt.parse_response("no answer", REQUIRED, prefix="")
    assert info.value.partial_message == {"content": "no answer"}
    message = rt.parse_response("no answer", REQUIRED, prefix="", errors="keep")
    assert message == {"content": "no answer"}
    assert [(e.field, e.raw) for e in message.errors] == [("answer", None)]


NO_IMPLICIT = {
    "start_anchor": "A",
    "fields": {
        "content": {"open": "<c>", "close": "</c>"},
        "tool_calls": {"open": "<t>", "close": "</t>", "content": "json", "repeats": True},
    },
}


def test_without_implicit_field_the_text_goes_to_content() -> None:
    message = rt.parse_response(
        "<c>hi</c> lost <t>{bad}</t><t>[1]</t><c>there</c>", NO_IMPLICIT, prefix="", errors="keep"
    )
    assert message == {"content": "hi<t>{bad}</t>there", "tool_calls": [[1]]}


def test_region_that_fails_only_at_the_end_of_the_stream() -> None:
    text = 'Checking.<tool_call>\n{"name": "f", "argu'
    parser = rt.ResponseParser(QWEN3, prefix="")
    parser.feed(text)
    with pytest.raises(rt.ParseError) as info:
        parser.finalize()
    assert info.value.partial_message == {"role": "assistant", "content": "Checking."}
    assert parser.finalized  # finalize always ends the parser (docs/spec.md 9.8)
    with pytest.raises(rt.ParserStateError):
        parser.finalize()
    message, events = stream(QWEN3, "", [text])
    assert message == {"role": "assistant", "content": text}
    assert events[-1] == {
        "type": "unparsed",
        "field": "tool_calls",
        "text": text[len("Checking.") :],
        "error": events[-2]["error"],
    }


def test_finalize_ends_the_parser_after_a_missing_required_field() -> None:
    parser = rt.ResponseParser(REQUIRED, prefix="")
    with pytest.raises(rt.ParseError):
        parser.finalize()
    with pytest.raises(rt.ParserStateError):
        parser.finalize()


# -- invalid UTF-8 --------------------------------------------------------------------------------------------

TEXT = {"start_anchor": "A", "fields": {"t": {"open": "<t>", "close": "</t>", "content": "json"}, "c": {}}}


def test_invalid_utf8_is_replaced_and_recorded() -> None:
    parser = rt.ResponseParser(TEXT, prefix="", errors="keep")
    parser.feed("é".encode() + b"a\xffb\xe2\x82")
    message, _ = parser.finalize()
    assert message == {"c": "éa\ufffdb\ufffd"}
    assert [str(e).split(" (")[0] for e in message.errors] == [
        "invalid UTF-8 at byte 3",
        "invalid UTF-8 at byte 5",
    ]
    assert all(e.field is None for e in message.errors)


def test_invalid_utf8_in_parse_response_bytes() -> None:
    message = rt.parse_response(b"ok\xc3(", TEXT, prefix="", errors="keep")
    assert message == {"c": "ok\ufffd("}
    assert len(message.errors) == 1
    with pytest.raises(rt.ParseError):
        rt.parse_response(b"ok\xc3(", TEXT, prefix="")


BYTES = "é<t>{1}</t>🙂 bad json <t>{x}</t>".encode() + b"\xff\xfe<t>[1]</t>" + b"\xe2\x82\xac\xed\xa0\x80z"


def cuts(data: bytes | str, points: list[int]) -> list[Any]:
    bounds = sorted({p % (len(data) + 1) for p in points})
    return [data[a:b] for a, b in zip([0, *bounds], [*bounds, len(data)], strict=True) if b > a]


@settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.integers(min_value=0, max_value=10_000), max_size=12))
def test_bytes_in_keep_mode_do_not_depend_on_the_chunking(points: list[int]) -> None:
    whole_message, whole_events = stream(TEXT, "", [BYTES])
    message, events = stream(TEXT, "", cuts(BYTES, points))
    assert described(message) == described(whole_message)
    assert merged(events) == merged(whole_events)
    assert len(whole_message.errors) >= 4  # two regions and at least two bad sequences


# -- chunking --------------------------------------------------------------------------------------------------

WORDS = [
    "<think>",
    "</think>",
    "<tool_call>",
    "</tool_call>",
    "<|im_end|>",
    '{"name": "f", "arguments": {}}',
    "{oops",
    "}",
    "\n",
    "text ",
    "<tool",
    "</",
]


@settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.sampled_from(WORDS), max_size=14),
    st.lists(st.integers(min_value=0, max_value=500), max_size=10),
)
def test_keep_mode_does_not_depend_on_the_chunking(words: list[str], points: list[int]) -> None:
    text = "".join(words)
    whole_message, whole_events = stream(QWEN3, PROMPT, [text])
    message, events = stream(QWEN3, PROMPT, cuts(text, points))
    assert described(message) == described(whole_message)
    assert merged(events) == merged(whole_events)
    assert described(rt.parse_response(text, QWEN3, prefix=PROMPT, errors="keep")) == described(whole_message)
    # Nothing is lost: every unparsed text is in the output where the model wrote it, and in the message.
    for event in whole_events:
        if event["type"] == "unparsed":
            assert event["text"] in text
            assert event["text"].strip() in whole_message.get("content", "")


# -- ParsedMessage -------------------------------------------------------------------------------------------


def test_parsed_message_behaves_like_a_dict() -> None:
    message = rt.parse_response(OUTPUT, QWEN3, prefix=PROMPT, errors="keep")
    plain = dict(message)
    assert message == plain and repr(message) == repr(plain)
    assert json.loads(json.dumps(message)) == plain
    again = pickle.loads(pickle.dumps(message))
    assert type(again) is rt.ParsedMessage and again == plain
    assert [str(e) for e in again.errors] == [str(e) for e in message.errors]
    assert copy.deepcopy(message).errors[0].field == "tool_calls"


def test_parsed_message_in_raise_mode_has_no_errors() -> None:
    message = rt.parse_response("hi", QWEN3, prefix="")
    assert isinstance(message, rt.ParsedMessage) and message.errors == [] and message.errors_dropped == 0
    parsed, _ = rt.ResponseParser(QWEN3, prefix="").finalize()
    assert isinstance(parsed, rt.ParsedMessage)


def test_streaming_raise_mode_lists_earlier_errors_in_the_message() -> None:
    parser = rt.ResponseParser(QWEN3, prefix="")
    with pytest.raises(rt.ParseError) as info:
        parser.feed("a<tool_call>{x}</tool_call>b")
    message, _ = parser.finalize()
    assert message == {"role": "assistant", "content": "ab"}
    assert message.errors == [info.value]


def test_batch_keep() -> None:
    messages = rt.parse_response(["ok", "x<tool_call>{bad}</tool_call>"], QWEN3, prefix="", errors="keep")
    assert isinstance(messages, list)
    assert [m.errors == [] for m in messages] == [True, False]
    assert messages[1]["content"] == "x<tool_call>{bad}</tool_call>"
    with pytest.raises(rt.ParseError) as info:
        rt.parse_response(["ok", "x<tool_call>{bad}</tool_call>"], QWEN3, prefix="")
    assert info.value.index == 1


@pytest.mark.pure_python("a policy of another type than str raises TypeError at the typed signature")
@pytest.mark.parametrize("value", ["ignore", None, True])
def test_bad_policy_values(value: Any) -> None:
    with pytest.raises(rt.ResponseTemplateError, match="errors must be"):
        rt.parse_response("x", QWEN3, prefix="", errors=value)
    with pytest.raises(rt.ResponseTemplateError, match="errors must be"):
        rt.ResponseParser(QWEN3, prefix="", errors=value)


# -- bounded memory (issue 12, hole 2) -----------------------------------------------------------------------


def failing_stream(calls: int, errors: str) -> tuple[rt.ResponseParser, int]:
    tracemalloc.start()
    try:
        parser = rt.ResponseParser(QWEN3, prefix="", errors=errors)  # type: ignore[arg-type]
        before = tracemalloc.get_traced_memory()[0]
        text = BAD_B * calls
        for i in range(0, len(text), 64):
            with contextlib.suppress(rt.ParseError):
                parser.feed(text[i : i + 64])
        retained = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    return parser, retained


@pytest.mark.parametrize("errors", ["raise", "keep"])
def test_stored_errors_are_bounded(errors: str) -> None:
    calls = MAX_ERRORS + 150
    parser, _ = failing_stream(calls, errors)
    assert len(parser.errors) == MAX_ERRORS
    assert parser.errors_dropped == calls - MAX_ERRORS
    # No stored error pins frames (and through them buffers and regex searches), except maybe the last one.
    assert all(e.__traceback__ is None for e in parser.errors[:-1])
    assert all(e.__cause__ is None or e.__cause__.__traceback__ is None for e in parser.errors[:-1])
    message, _ = parser.finalize()
    assert len(message.errors) == MAX_ERRORS and message.errors_dropped == calls - MAX_ERRORS


def test_memory_of_a_failing_stream_stays_small() -> None:
    # 2,000 failing calls (about 110 KB of text): before, every stored error kept its traceback, about 7 KB
    # each (14 MB); now the errors are capped and the retained memory is the kept text and a few errors.
    _, retained = failing_stream(2000, "raise")
    assert retained < 2_000_000
    _, retained = failing_stream(2000, "keep")
    assert retained < 2_000_000
