"""The value pipeline (``response_templates.values``): content parser -> routing or transform -> typing.

One pipeline object per request, shared by the parser (explicit regions, implicit segments) and the
message assembler (the implicit field, parsed once at the end); the assembler never calls the parser.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

import response_templates as rt
from response_templates.assembly import MessageAssembler
from response_templates.errors import ContentError
from response_templates.values import ValuePipeline, route_value

CALL = {
    "type": "function",
    "function": {"name": "f", "parameters": {"properties": {"n": {"type": "integer"}}}},
}
PARAMS = {"f": {"n": {"type": "integer"}}}

TEMPLATE = rt.load_template(
    {
        "start_anchor": "A",
        "extensions": ["json-envelope"],
        "fields": {
            "tool_calls": {
                "open": "<c>",
                "close": "</c>",
                "content": "json",
                "repeats": True,
                "transform": {"type": "function", "function": "{content}"},
            },
            "each": {
                "open": "<e>",
                "close": "</e>",
                "content": "json",
                "transform_each": True,
                "transform": {"item": "{a}"},
            },
            "env": {
                "open": "<j>",
                "close": "</j>",
                "content": "json",
                "route": {"text": {"to": "said"}, "calls": {"to": "calls", "add": "items"}},
            },
            "number": {"open": "<n>", "close": "</n>", "content": "int"},
            "content": {"content": "int"},
        },
    }
)
FIELD = TEMPLATE.by_name


def test_content_parser_then_transform_then_typing() -> None:
    pipeline = ValuePipeline(TEMPLATE, PARAMS)
    raw = '{"name": "f", "arguments": {"n": "3"}}'
    assert pipeline.value(FIELD["tool_calls"], raw, {}) == {
        "type": "function",
        "function": {"name": "f", "arguments": {"n": 3}},
    }
    # without tools nothing is typed
    assert ValuePipeline(TEMPLATE, {}).value(FIELD["tool_calls"], raw, {})["function"]["arguments"] == {
        "n": "3"
    }


def test_transform_each_fills_the_transform_per_item() -> None:
    assert ValuePipeline(TEMPLATE, {}).value(FIELD["each"], '[{"a": 1}, {"a": 2}]', {}) == [
        {"item": 1},
        {"item": 2},
    ]


def test_routing_then_typing_of_each_routed_entry() -> None:
    raw = '{"text": "hi", "calls": [{"function": {"name": "f", "arguments": {"n": "4"}}}]}'
    routed = ValuePipeline(TEMPLATE, PARAMS).value(FIELD["env"], raw, {})
    assert routed == {"said": "hi", "calls": [{"function": {"name": "f", "arguments": {"n": 4}}}]}
    assert route_value(FIELD["env"], {"text": "a"}, {}) == {"said": "a"}
    with pytest.raises(ContentError, match="does not list"):
        route_value(FIELD["env"], {"other": 1}, {})


@pytest.mark.pure_python("compiled code does not set an error's __cause__")
def test_region_value_wraps_a_content_error_with_the_region() -> None:
    with pytest.raises(rt.ParseError) as info:
        ValuePipeline(TEMPLATE, {}).region_value(FIELD["number"], "x", {}, offset=7, prefix_length=2)
    err = info.value
    assert (err.field, err.raw, err.offset, err.prefix_length) == ("number", "x", 7, 2)
    assert isinstance(err.__cause__, ContentError)
    assert err.detail == str(err.__cause__)


class _Broken:
    """A content parser with a bug: it raises something other than ContentError."""

    streamable = False

    def __init__(self, exc: BaseException) -> None:
        self.exc = exc

    def parse(self, raw: str, args: Any) -> Any:
        raise self.exc


@pytest.mark.parametrize("exc", [TypeError("t"), KeyError("k"), RecursionError("r"), TimeoutError("s")])
def test_region_value_catches_other_errors_defensively(exc: BaseException) -> None:
    field = dataclasses.replace(FIELD["number"], parser=_Broken(exc))  # type: ignore[arg-type]
    with pytest.raises(rt.ParseError, match=f"unexpected {type(exc).__name__} while parsing the region"):
        ValuePipeline(TEMPLATE, {}).region_value(field, "1", {}, offset=0, prefix_length=0)


def test_segment_value_is_none_when_a_segment_does_not_parse_alone() -> None:
    pipeline = ValuePipeline(TEMPLATE, {})
    assert pipeline.segment_value(" 12 ", {}) == 12
    assert pipeline.segment_value("\n", {}) is None


@pytest.mark.pure_python("compiled code does not set an error's __cause__")
def test_implicit_value_wraps_without_the_defensive_wording() -> None:
    with pytest.raises(rt.ParseError) as info:
        ValuePipeline(TEMPLATE, {}).implicit_value("1 x", {}, offset=3, prefix_length=0)
    assert (info.value.field, info.value.raw, info.value.offset) == ("content", "1 x", 3)
    assert isinstance(info.value.__cause__, ContentError)


def test_the_assembler_takes_the_pipeline_not_the_parser() -> None:
    pipeline = ValuePipeline(TEMPLATE, {})
    assembler = MessageAssembler(TEMPLATE, pipeline)
    assembler.add_implicit_segment(" 1", {}, 0)
    assembler.add_implicit_segment("2 ", {}, 9)
    assembler.add(FIELD["number"], 5, "5", 3, 0)
    assert assembler.message(0) == {"content": 12, "number": 5}
    bad = MessageAssembler(TEMPLATE, pipeline)
    bad.add_implicit_segment("x", {}, 4)
    bad.add(FIELD["number"], 5, "5", 0, 0)
    with pytest.raises(rt.ParseError) as info:
        bad.message(0)
    assert info.value.offset == 4 and info.value.partial_message == {"number": 5}


def test_parser_and_assembler_share_one_pipeline() -> None:
    parser = rt.ResponseParser(TEMPLATE, prefix="", tools=[CALL])
    assert parser._values is parser._assembler._pipeline
    assert parser._values.tool_params == PARAMS
