"""The implicit field with ``repeats`` (and ``join``): one item per segment, as transformers 5.24 reads it.

A segment is each run of text the implicit field receives between two other regions (or its own close,
or the ends of the stream). Whitespace-only runs are segments (``""`` with the ``text`` parser, like an
explicit match of whitespace); two regions that touch leave none. Each segment is parsed on its own, with
its own close captures. Without ``repeats`` the segments are still concatenated and parsed once
(docs/differences.md, ``implicit-concat``).
"""

from __future__ import annotations

import copy
import logging
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import response_templates as rt
from hypothesis_profiles import examples

reference = pytest.importorskip("transformers.utils.chat_parsing")
logging.getLogger("transformers").setLevel(logging.ERROR)

T = {"open": "<t>", "close": "</t>", "repeats": True}


def template(content: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {"start_anchor": "<A>", "fields": {"t": T, **fields, "content": content}}


def ours(text: str, tpl: dict[str, Any], prefix: str = "") -> Any:
    return dict(rt.parse_response(text, copy.deepcopy(tpl), prefix=prefix))


def ref(text: str, tpl: dict[str, Any], prefix: str = "") -> Any:
    return reference.parse_response(text, copy.deepcopy(tpl), prefix=prefix)


def test_join_joins_the_segments() -> None:
    tpl = template({"repeats": True, "join": " "})
    assert ours("a<t>x</t>b<t>y</t>c", tpl) == {"t": ["x", "y"], "content": "a b c"}


def test_without_join_a_list_of_segments() -> None:
    assert ours("a<t>x</t>b<t>y</t>c", template({"repeats": True}))["content"] == ["a", "b", "c"]


def test_without_repeats_the_segments_are_concatenated() -> None:
    assert ours("a<t>x</t>b<t>y</t>c", template({}))["content"] == "abc"


def test_whitespace_segments_count_and_touching_regions_leave_none() -> None:
    tpl = template({"repeats": True})
    assert ours("a<t>x</t>\n<t>y</t>c", tpl)["content"] == ["a", "", "c"]
    assert ours("a<t>x</t><t>y</t>c", tpl)["content"] == ["a", "c"]
    assert ours(" \n ", tpl)["content"] == [""]
    assert "content" not in ours("<t>x</t>", tpl)


def test_each_segment_is_parsed_on_its_own() -> None:
    assert ours("1<t>x</t> 2 ", template({"repeats": True, "content": "int"}))["content"] == [1, 2]
    value = ours('{"a": 1}<t>x</t>[2]', template({"repeats": True, "content": "json"}))["content"]
    assert value == [{"a": 1}, [2]]


def test_a_segment_that_does_not_parse_is_a_parse_error_naming_it() -> None:
    with pytest.raises(rt.ParseError) as info:
        ours("1<t>x</t> <t>y</t>2", template({"repeats": True, "content": "int"}))
    assert info.value.field == "content" and info.value.raw == " "
    assert info.value.offset == len("1<t>x</t>")


def test_join_needs_strings() -> None:
    with pytest.raises(rt.ParseError, match="'join' needs every segment to parse to a string"):
        ours("1<t>x</t>2", template({"repeats": True, "join": ",", "content": "int"}))


def test_each_segment_gets_its_own_close_captures() -> None:
    tpl = template(
        {
            "repeats": True,
            "close_pattern": r"<end (?P<k>\w+)>",
            "transform": {"k": "{k}", "text": "{content}"},
        }
    )
    assert ours("a<end 1>b<end 2>", tpl)["content"] == [{"k": "1", "text": "a"}, {"k": "2", "text": "b"}]


def test_segments_from_the_prefix_count() -> None:
    tpl = template({"repeats": True, "join": " "})
    assert ours("b<t>y</t>c", tpl, prefix="<A>a<t>x</t>")["content"] == "a b c"


def test_region_close_events_carry_each_segment_value() -> None:
    parser = rt.ResponseParser(template({"repeats": True, "content": "int"}), prefix="")
    events = parser.feed("1<t>x</t>2")
    message, final = parser.finalize()
    closes = [
        e["value"] for e in [*events, *final] if e["type"] == "region_close" and e["field"] == "content"
    ]
    assert closes == [1, 2] and message["content"] == [1, 2]


def test_errors_keep_keeps_the_raw_segment() -> None:
    parser = rt.ResponseParser(template({"repeats": True, "content": "int"}), prefix="", errors="keep")
    parser.feed("1<t>x</t>oops")
    message, _ = parser.finalize()
    assert message["content"] == [1, "oops"]
    assert [e.field for e in message.errors] == ["content"]


def test_matches_the_reference_on_the_issue_example() -> None:
    tpl = template({"repeats": True, "join": " "})
    assert ours("a<t>x</t>b<t>y</t>c", tpl) == ref("a<t>x</t>b<t>y</t>c", tpl)


TOKENS = st.sampled_from(["a", "b c", " ", "\n", "<t>", "</t>", "x", "<|im_end|>", "<t", "7"])
CONTENTS = st.sampled_from(
    [
        {"repeats": True},
        {"repeats": True, "join": " "},
        {"repeats": True, "join": ""},
        {"repeats": True, "close": "<|im_end|>"},
        {"repeats": True, "join": "|", "close": "<|im_end|>"},
        {"repeats": True, "content_args": {"strip": False}},
        {"repeats": True, "content": "int"},
    ]
)


def _outcome(run: Any, text: str, tpl: dict[str, Any]) -> tuple[str, Any]:
    try:
        return "ok", run(text, tpl)
    except Exception as exc:  # the reference raises ValueError; ours a ResponseTemplateError
        return "raise", type(exc).__name__


@settings(max_examples=examples(400), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(TOKENS, max_size=14).map("".join), CONTENTS)
def test_differential_against_the_reference(text: str, content: dict[str, Any]) -> None:
    tpl = template(content)
    ref_kind, ref_value = _outcome(ref, text, tpl)
    ours_kind, ours_value = _outcome(ours, text, tpl)
    assert ours_kind == ref_kind, (ours_value, ref_value)
    if ours_kind == "ok":
        assert ours_value == ref_value
        assert repr(ours_value) == repr(ref_value)  # same value types, same key order


@settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(TOKENS, max_size=14).map("".join), CONTENTS, st.lists(st.integers(1, 5), max_size=20))
def test_any_chunking_gives_the_same_message(text: str, content: dict[str, Any], sizes: list[int]) -> None:
    tpl = template(content)
    kind, whole = _outcome(ours, text, tpl)
    chunks, at = [], 0
    for size in [*sizes, len(text)]:
        chunks.append(text[at : at + size])
        at += size
    parser = rt.ResponseParser(copy.deepcopy(tpl), prefix="")
    try:
        for chunk in chunks:
            parser.feed(chunk)
        streamed: tuple[str, Any] = ("ok", dict(parser.finalize()[0]))
    except rt.ResponseTemplateError as exc:
        streamed = ("raise", type(exc).__name__)
    assert streamed == (kind, whole)
