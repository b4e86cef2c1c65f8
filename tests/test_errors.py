"""docs/spec.md, section 9: every error is typed, says where it happened, and leaves the parser usable.

Exact values throughout: ``field``, ``raw`` (the region text exactly as written), ``offset`` (the
region's first character in the stream = prefix remainder + generated text) and ``prefix_length``.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

import response_templates as rt

ANCHOR = "<|im_start|>assistant\n"

TEMPLATE = {
    "start_anchor": ANCHOR,
    "defaults": {"role": "assistant"},
    "fields": {
        "reasoning_content": {"open": "<think>", "close": "</think>"},
        "tool_calls": {"open": "<tool_call>", "close": "</tool_call>", "repeats": True, "content": "json"},
        "content": {"close": "<|im_end|>"},
    },
}


def open_(field: str) -> dict:
    return {"type": "region_open", "field": field}


def chunk(field: str, text: str, dirty: bool = False) -> dict:
    return {"type": "region_chunk", "field": field, "text": text, "dirty": dirty}


def close(field: str, value: Any) -> dict:
    return {"type": "region_close", "field": field, "value": value}


def where(err: rt.ParseError) -> tuple[Any, ...]:
    return err.field, err.raw, err.offset, err.prefix_length


# ---------------------------------------------------------------------------------------------------
# The hierarchy
# ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "cls",
    [
        rt.ResponseTemplateError,
        rt.TemplateError,
        rt.ParseError,
        rt.ContentError,
        rt.PatternTimeoutError,
        rt.ParserStateError,
    ],
)
def test_every_error_is_a_value_error(cls: type) -> None:
    """Every error is in the project's hierarchy, rooted at ResponseTemplateError ⊂ ValueError."""
    assert issubclass(cls, rt.ResponseTemplateError)
    assert issubclass(cls, ValueError)


def test_special_subclasses() -> None:
    """A pattern timeout is a template error; a state error is also a RuntimeError."""
    assert issubclass(rt.PatternTimeoutError, rt.TemplateError)
    assert issubclass(rt.ParserStateError, RuntimeError)
    assert not issubclass(rt.ParseError, rt.TemplateError)


def test_template_error_caught_as_value_error() -> None:
    """Code written against the reference (except ValueError) keeps working for template errors."""
    with pytest.raises(ValueError, match="field 'x', key 'open'"):
        rt.load_template({"start_anchor": "a", "fields": {"x": {"open": ""}}})


def test_bad_tools_list_is_a_library_error() -> None:
    """A malformed tools list raises the library's own (ValueError) error, not a TypeError."""
    with pytest.raises(rt.ResponseTemplateError):
        rt.parse_response("x", TEMPLATE, prefix="", tools=[42])


@pytest.mark.pure_python("feed() of another type than str or bytes raises TypeError at the typed signature")
def test_feed_rejects_other_types() -> None:
    """feed() takes str or UTF-8 bytes; anything else is a ResponseTemplateError (and nothing is lost)."""
    parser = rt.ResponseParser(TEMPLATE, prefix="")
    parser.feed("a")
    for bad in (3, None, ["b"], 1.5):
        with pytest.raises(rt.ResponseTemplateError, match="str or UTF-8 bytes"):
            parser.feed(bad)  # type: ignore[arg-type]
    parser.feed("c")
    assert parser.finalize()[0] == {"role": "assistant", "content": "ac"}


def test_parse_response_rejects_non_string_items() -> None:
    """parse_response takes a string or a list of strings."""
    with pytest.raises(rt.ResponseTemplateError):
        rt.parse_response(["ok", 3], TEMPLATE, prefix="")  # type: ignore[list-item]
    with pytest.raises(rt.ResponseTemplateError):
        rt.parse_response(3, TEMPLATE, prefix="")  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------------
# Where: field, raw, offset, prefix_length
# ---------------------------------------------------------------------------------------------------


def test_parse_error_position_without_prefix() -> None:
    """field, the raw region text (unstripped) and the offset of its first character."""
    text = "Hi <tool_call> {bad </tool_call>"
    with pytest.raises(rt.ParseError) as info:
        rt.parse_response(text, TEMPLATE, prefix="")
    err = info.value
    assert where(err) == ("tool_calls", " {bad ", 14, 0)
    assert text[err.offset : err.offset + len(err.raw)] == err.raw
    message = str(err)
    assert "'tool_calls'" in message and "offset 14" in message and "' {bad '" in message


def test_parse_error_offset_counts_prefix_remainder() -> None:
    """The stream is the prefix after the anchor followed by the generated text."""
    prefix = "<|im_start|>user\nq<|im_end|>\n" + ANCHOR + "<think>abc"
    parser = rt.ResponseParser(TEMPLATE, prefix=prefix)
    assert parser.prefix_length == len("<think>abc") == 10
    with pytest.raises(rt.ParseError) as info:
        parser.feed("</think>x<tool_call>[1,</tool_call>")
    assert where(info.value) == ("tool_calls", "[1,", 30, 10)
    assert "offset 30 of the stream, 20 of the generated text" in str(info.value)


def test_parse_error_for_region_that_began_in_prefix() -> None:
    """A region opened in the prefix has an offset inside the prefix (negative in the generated text)."""
    parser = rt.ResponseParser(TEMPLATE, prefix=ANCHOR + "<tool_call>[1,")
    with pytest.raises(rt.ParseError) as info:
        parser.feed("</tool_call>")
    assert where(info.value) == ("tool_calls", "[1,", 11, 14)
    assert "-3 of the generated text" in str(info.value)


def test_parse_error_raised_while_reading_the_prefix() -> None:
    """A region that fails inside the prefix raises from the constructor, with its position."""
    with pytest.raises(rt.ParseError) as info:
        rt.ResponseParser(TEMPLATE, prefix=ANCHOR + "ok<tool_call>nope</tool_call>")
    assert where(info.value) == ("tool_calls", "nope", 13, 29)


def test_parse_error_offset_deep_into_a_long_stream() -> None:
    """Offsets are absolute positions, however long the stream and however it was chunked."""
    text = "x" * 5000 + "<think>" + "y" * 3000 + "</think><tool_call>{oops}</tool_call>"
    parser = rt.ResponseParser(TEMPLATE, prefix="")
    with pytest.raises(rt.ParseError) as info:
        for i in range(0, len(text), 13):
            parser.feed(text[i : i + 13])
    assert where(info.value) == ("tool_calls", "{oops}", 5000 + 7 + 3000 + 8 + 11, 0)


def test_parse_error_raw_is_whole_region_text() -> None:
    """raw is exactly what the model wrote between the delimiters, even when long."""
    body = '{"a": ' + '"' + "z" * 500 + '"'
    with pytest.raises(rt.ParseError) as info:
        rt.parse_response(f"<tool_call>{body}</tool_call>", TEMPLATE, prefix="")
    assert info.value.raw == body
    assert len(str(info.value)) < 1000  # the message shortens it, the attribute does not


def test_parse_error_for_implicit_field_at_finalize() -> None:
    """The implicit field is parsed at the end; its error points at its first segment."""
    template = {
        "start_anchor": ANCHOR,
        "fields": {"n": {"content": "int"}, "r": {"open": "<r>", "close": "</r>"}},
    }
    with pytest.raises(rt.ParseError) as info:
        rt.parse_response("<r>x</r>12a", template, prefix="")
    assert where(info.value) == ("n", "12a", 8, 0)


def test_transform_error_names_field() -> None:
    """A transform path that does not resolve is a ParseError naming the field and region."""
    template = {
        "start_anchor": ANCHOR,
        "fields": {
            "t": {"open": "<t>", "close": "</t>", "content": "json", "transform": {"n": "{content.name}"}}
        },
    }
    with pytest.raises(rt.ParseError) as info:
        rt.parse_response('..<t>{"nam": 1}</t>', template, prefix="")
    assert where(info.value) == ("t", '{"nam": 1}', 5, 0)
    assert "name" in str(info.value)


# ---------------------------------------------------------------------------------------------------
# Errors leave the parser usable and lose nothing
# ---------------------------------------------------------------------------------------------------


def test_error_from_feed_carries_events_of_that_call() -> None:
    """An error raised from feed carries .events: the events that call produced before the error."""
    parser = rt.ResponseParser(TEMPLATE, prefix="")
    assert parser.feed("<think>r") == [open_("reasoning_content"), chunk("reasoning_content", "r")]
    with pytest.raises(rt.ParseError) as info:
        parser.feed("</think>hi<tool_call>{bad</tool_call>")
    assert info.value.events == [
        close("reasoning_content", "r"),
        open_("content"),
        chunk("content", "hi"),
        close("content", "hi"),
        open_("tool_calls"),
        chunk("tool_calls", "{bad", dirty=True),
        {"type": "region_close", "field": "tool_calls", "value": None, "error": info.value.detail},
    ]
    assert "invalid JSON" in info.value.detail


def test_parser_keeps_working_after_error_from_feed() -> None:
    """After a ParseError from feed: feed more, finalize, and every other region is there."""
    parser = rt.ResponseParser(TEMPLATE, prefix="")
    with pytest.raises(rt.ParseError) as info:
        # the text after the failing region is in the same chunk: it must not be lost
        parser.feed('a<tool_call>{bad</tool_call>b<tool_call>["ok"]</tool_call><think>')
    assert parser.errors == [info.value]
    # the whole chunk was read before the error was raised: its events are all on the error
    assert info.value.events[-8:] == [
        {"type": "region_close", "field": "tool_calls", "value": None, "error": info.value.detail},
        open_("content"),
        chunk("content", "b"),
        close("content", "b"),
        open_("tool_calls"),
        chunk("tool_calls", '["ok"]', dirty=True),
        close("tool_calls", ["ok"]),
        open_("reasoning_content"),
    ]
    assert parser.feed("t</think>c<tool_call>[2]</tool_call>") == [
        chunk("reasoning_content", "t"),
        close("reasoning_content", "t"),
        open_("content"),
        chunk("content", "c"),
        close("content", "c"),
        open_("tool_calls"),
        chunk("tool_calls", "[2]", dirty=True),
        close("tool_calls", [2]),
    ]
    message, final = parser.finalize()
    assert message == {
        "role": "assistant",
        "content": "abc",
        "tool_calls": [["ok"], [2]],
        "reasoning_content": "t",
    }
    assert final == []
    assert parser.errors == [info.value]


def test_two_errors_are_both_listed() -> None:
    """parser.errors lists every error raised so far, in order."""
    parser = rt.ResponseParser(TEMPLATE, prefix="")
    with pytest.raises(rt.ParseError) as first:
        parser.feed("<tool_call>x</tool_call>")
    with pytest.raises(rt.ParseError) as second:
        parser.feed("<tool_call>y</tool_call>")
    assert parser.errors == [first.value, second.value]
    assert [e.raw for e in parser.errors] == ["x", "y"]
    assert parser.finalize() == ({"role": "assistant"}, [])


def test_error_from_finalize_then_finalize_again() -> None:
    """A region that fails when the stream ends: the error carries events and the rest of the message
    (``partial_message``); the parser is finished (finalize again is a state error)."""
    parser = rt.ResponseParser(TEMPLATE, prefix="")
    parser.feed('hi<tool_call>["a"]</tool_call><tool_call>[1')
    with pytest.raises(rt.ParseError) as info:
        parser.finalize()
    assert where(info.value) == ("tool_calls", "[1", 41, 0)
    assert info.value.events == [
        {"type": "region_close", "field": "tool_calls", "value": None, "error": info.value.detail}
    ]
    assert parser.errors == [info.value]
    assert info.value.partial_message == {"role": "assistant", "content": "hi", "tool_calls": [["a"]]}
    assert parser.finalized
    with pytest.raises(rt.ParserStateError):
        parser.finalize()


def test_implicit_field_error_at_finalize_loses_nothing() -> None:
    """After the implicit field fails at finalize, the other regions are still recoverable."""
    template = {
        "start_anchor": ANCHOR,
        "fields": {
            "tc": {"open": "<tc>", "close": "</tc>", "content": "json", "repeats": True},
            "n": {"content": "int"},
        },
    }
    parser = rt.ResponseParser(template, prefix="")
    parser.feed("<tc>[1]</tc>abc")
    with pytest.raises(rt.ParseError) as info:
        parser.finalize()
    assert where(info.value) == ("n", "abc", 12, 0)
    message = info.value.partial_message
    assert message == {"tc": [[1]]}


def test_required_field_missing() -> None:
    """optional: false and the field never matched → ParseError naming it, with .partial_message."""
    template = {
        "start_anchor": ANCHOR,
        "defaults": {"role": "assistant"},
        "fields": {
            "tool_calls": {
                "open": "<tool_call>",
                "close": "</tool_call>",
                "content": "json",
                "optional": False,
            },
            "content": {},
        },
    }
    parser = rt.ResponseParser(template, prefix="")
    parser.feed("just talk")
    with pytest.raises(rt.ParseError) as info:
        parser.finalize()
    err = info.value
    assert err.field == "tool_calls"
    assert "'tool_calls'" in str(err) and "required" in str(err)
    assert err.partial_message == {"role": "assistant", "content": "just talk"}
    assert err.events == [close("content", "just talk")]
    assert parser.errors == [err]


def test_required_field_present_but_empty() -> None:
    """A required field whose value is empty counts as missing."""
    template = {"start_anchor": ANCHOR, "fields": {"a": {"open": "<a>", "close": "</a>", "optional": False}}}
    with pytest.raises(rt.ParseError) as info:
        rt.parse_response("<a>  </a>", template, prefix="")
    assert info.value.field == "a"
    assert info.value.partial_message == {}
    assert rt.parse_response("<a>x</a>", template, prefix="") == {"a": "x"}


# ---------------------------------------------------------------------------------------------------
# Bytes
# ---------------------------------------------------------------------------------------------------

TEXT_TEMPLATE = {
    "start_anchor": ANCHOR,
    "fields": {"c": {"content": "text", "content_args": {"strip": False}}},
}


def test_multibyte_characters_split_across_feeds() -> None:
    """UTF-8 bytes may split a character anywhere: every split gives the same text."""
    text = "aé€😀<think>ü</think>z"
    data = text.encode()
    for cut in range(len(data) + 1):
        parser = rt.ResponseParser(TEMPLATE, prefix="")
        parser.feed(data[:cut])
        parser.feed(data[cut:])
        assert parser.finalize()[0] == {"role": "assistant", "content": "aé€😀z", "reasoning_content": "ü"}
    parser = rt.ResponseParser(TEXT_TEMPLATE, prefix="")
    events = [e for b in data for e in parser.feed(bytes([b]))]
    assert "".join(e["text"] for e in events if e["type"] == "region_chunk") == text
    assert parser.finalize()[0] == {"c": text}


def test_invalid_utf8_names_byte_offset_and_parser_continues() -> None:
    """Invalid UTF-8 → ParseError naming the byte offset in the generated bytes; the parser goes on."""
    parser = rt.ResponseParser(TEXT_TEMPLATE, prefix="")
    assert parser.feed("é".encode()) == [open_("c"), chunk("c", "é")]
    with pytest.raises(rt.ParseError) as info:
        parser.feed(b"ab\xffcd")
    assert "byte 4" in str(info.value)
    assert info.value.events == []
    assert parser.errors == [info.value]
    assert parser.feed(b"ok") == [chunk("c", "ok")]
    assert parser.finalize()[0] == {"c": "éok"}


def test_truncated_character_at_end_of_stream() -> None:
    """A character cut off by the end of the stream is an error from finalize; it holds the rest."""
    parser = rt.ResponseParser(TEXT_TEMPLATE, prefix="")
    parser.feed(b"a\xe2\x82")
    with pytest.raises(rt.ParseError, match="UTF-8") as info:
        parser.finalize()
    assert info.value.partial_message == {"c": "a"}


def test_invalid_utf8_offset_is_where_the_sequence_starts() -> None:
    """The byte offset names the first byte of the invalid sequence (one chunk)."""
    parser = rt.ResponseParser(TEXT_TEMPLATE, prefix="")
    with pytest.raises(rt.ParseError) as info:
        parser.feed(b"a\xc3(b")
    assert "byte 1 " in str(info.value)


@pytest.mark.parametrize(("chunks", "expected"), [([b"a\xc3", b"(b"], 1), ([b"abc", b"\xe2\x82", b"x"], 3)])
def test_invalid_utf8_offset_independent_of_chunking(chunks: list[bytes], expected: int) -> None:
    """The byte offset is where the invalid sequence starts, however the bytes were split."""
    parser = rt.ResponseParser(TEXT_TEMPLATE, prefix="")
    with pytest.raises(rt.ParseError) as info:
        for piece in chunks:
            parser.feed(piece)
    assert f"byte {expected} " in str(info.value)


def test_truncated_character_offset() -> None:
    """A truncated character at the end of the stream is reported where it starts."""
    parser = rt.ResponseParser(TEXT_TEMPLATE, prefix="")
    parser.feed(b"a\xe2\x82")
    with pytest.raises(rt.ParseError) as info:
        parser.finalize()
    assert "byte 1 " in str(info.value)


# ---------------------------------------------------------------------------------------------------
# Hostile input: deep nesting, catastrophic backtracking
# ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "body", ["[" * 100000, "[" * 100000 + "]" * 100000, '{"a":' * 50000 + "1" + "}" * 50000]
)
def test_deeply_nested_json_is_a_parse_error(body: str) -> None:
    """Deeply nested JSON in a json region is a ParseError (not a RecursionError), and fast."""
    start = time.perf_counter()
    with pytest.raises(rt.ParseError) as info:
        rt.parse_response(f"<tool_call>{body}</tool_call>", TEMPLATE, prefix="")
    assert time.perf_counter() - start < 2
    assert (info.value.field, info.value.raw, info.value.offset) == ("tool_calls", body, 11)
    assert "nest" in str(info.value)


def test_deeply_nested_json_tool_argument_keeps_string() -> None:
    """Tool typing of a deeply nested object argument fails softly: the string is kept."""
    template = {
        "start_anchor": ANCHOR,
        "fields": {
            "tool_calls": {
                "open": "<tc>",
                "close": "</tc>",
                "content": "kv-lines",
                "transform": {"function": {"name": "f", "arguments": "{content}"}},
            }
        },
    }
    tool = {"name": "f", "parameters": {"type": "object", "properties": {"o": {"type": "array"}}}}
    deep = "[" * 100000
    message = rt.parse_response(f"<tc>o: {deep}</tc>", template, prefix="", tools=[tool])
    assert message["tool_calls"]["function"]["arguments"] == {"o": deep}


def test_catastrophic_backtracking_times_out() -> None:
    """A catastrophically backtracking pattern raises PatternTimeoutError within its time budget."""
    template = rt.load_template(
        {"start_anchor": ANCHOR, "fields": {"x": {"open_pattern": "(?:a|aa)+c", "close": "</x>"}}},
        regex_timeout=0.2,
    )
    parser = rt.ResponseParser(template, prefix="")
    start = time.perf_counter()
    with pytest.raises(rt.PatternTimeoutError) as info:
        parser.feed("a" * 40)
    assert time.perf_counter() - start < 3
    assert (info.value.field, info.value.key) == ("x", "open_pattern")
    assert isinstance(info.value, rt.TemplateError)
    assert "0.2" in str(info.value)


def test_catastrophic_backtracking_times_out_in_parse_response() -> None:
    """The same through parse_response (the final scan of the stream)."""
    template = rt.load_template(
        {"start_anchor": ANCHOR, "fields": {"c": {"close_pattern": "(?:a|aa)+c"}}},
        regex_timeout=0.2,
    )
    start = time.perf_counter()
    with pytest.raises(rt.PatternTimeoutError) as info:
        # the "c" every match ends with is in the text (without it there is nothing to search for)
        rt.parse_response("a" * 40 + "!c", template, prefix="")
    assert time.perf_counter() - start < 3
    assert (info.value.field, info.value.key) == ("c", "close_pattern")


def test_timeout_from_feed_carries_events() -> None:
    """Errors raised from feed carry .events, the events produced by that call before the error."""
    template = rt.load_template(
        {
            "start_anchor": ANCHOR,
            "fields": {
                "r": {"open": "<think>", "close": "</think>"},
                "x": {"open_pattern": "(?:a|aa)+c", "close": "</x>"},
            },
        },
        regex_timeout=0.2,
    )
    parser = rt.ResponseParser(template, prefix=ANCHOR + "<think>")
    with pytest.raises(rt.PatternTimeoutError) as info:
        parser.feed("q</think>" + "a" * 40)
    assert getattr(info.value, "events", None) == [chunk("r", "q"), close("r", "q")]


def test_regex_timeout_must_be_positive() -> None:
    """regex_timeout is a positive number of seconds."""
    for bad in (0, -1, "1", True):
        with pytest.raises(rt.TemplateError):
            rt.load_template({"start_anchor": "a", "fields": {"c": {}}}, regex_timeout=bad)  # type: ignore[arg-type]
