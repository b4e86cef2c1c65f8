"""The call shape (``response_templates.calls``): both shapes of a tool call are read and typed alike.

A tool call is either chat-shaped, ``{"type": "function", "function": {"name": ..., "arguments": ...}}``,
or bare, ``{"name": ..., "arguments": ...}`` (``"parameters"`` also holds the arguments). Typing by the
request's ``tools`` must not depend on the shape: a bare call used to keep ``{"n": "3"}`` as a string
where the chat-shaped call gave ``{"n": 3}``. The reference implementation types only chat-shaped
calls; that is the intended difference ``bare-call-typing`` (docs/differences.md).
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

import response_templates as rt
from call_shapes import (
    ARGUMENTS_KEY,
    CAPTURE_TRANSFORMS,
    JSON_TEMPLATE,
    PARAMS,
    TOOLS,
    TYPED,
    WRITTEN,
    capture_template,
)
from response_templates import calls
from response_templates.calls import call_parts, type_call, type_tool_calls


def arguments_of(call: dict[str, Any]) -> Any:
    parts = call_parts(call)
    assert parts is not None, call
    return parts[2]


# -- the bug: a bare-shaped transform is typed like the chat-shaped one ------------------------------------


def test_bare_shape_is_typed_by_parse_response() -> None:
    message = rt.parse_response(
        '<call name=f>{"n": "3"}</call>', capture_template(CAPTURE_TRANSFORMS["bare"]), prefix="", tools=TOOLS
    )
    assert message == {"tool_calls": {"name": "f", "arguments": {"n": 3}}}


@pytest.mark.parametrize("shape", sorted(CAPTURE_TRANSFORMS))
def test_every_shape_is_typed_alike_and_keeps_its_shape(shape: str) -> None:
    template = capture_template(CAPTURE_TRANSFORMS[shape])
    untyped = rt.parse_response(f"<call name=f>{WRITTEN}</call>", template, prefix="")
    typed = rt.parse_response(f"<call name=f>{WRITTEN}</call>", template, prefix="", tools=TOOLS)
    assert arguments_of(typed["tool_calls"]) == TYPED
    # Typing replaces the arguments only: the untyped value with the typed arguments in their place.
    expected = copy.deepcopy(untyped["tool_calls"])
    holder = expected.get("function", expected)
    holder[ARGUMENTS_KEY[shape]] = TYPED
    assert typed["tool_calls"] == expected


@pytest.mark.parametrize("key", ["arguments", "parameters"])
def test_bare_json_written_by_the_model_is_typed(key: str) -> None:
    text = f'<tool_call>{{"name": "f", "{key}": {WRITTEN}}}</tool_call>'
    message = rt.parse_response(text, JSON_TEMPLATE, prefix="", tools=TOOLS)
    assert message == {"tool_calls": [{"name": "f", key: TYPED}]}


def test_bare_shape_is_typed_while_streaming() -> None:
    template = capture_template(CAPTURE_TRANSFORMS["bare"])
    parser = rt.ResponseParser(template, prefix="", tools=TOOLS)
    events: list[Any] = list(parser.initial_events)
    for char in f"<call name=f>{WRITTEN}</call>":
        events.extend(parser.feed(char))
    message, final = parser.finalize()
    events.extend(final)
    closes = [event for event in events if event["type"] == "region_close"]
    assert closes == [
        {"type": "region_close", "field": "tool_calls", "value": {"name": "f", "arguments": TYPED}}
    ]
    assert message == {"tool_calls": {"name": "f", "arguments": TYPED}}


def test_streaming_and_whole_text_type_both_shapes_the_same() -> None:
    for shape, transform in CAPTURE_TRANSFORMS.items():
        template = capture_template(transform)
        text = f"<call name=f>{WRITTEN}</call>"
        parser = rt.ResponseParser(template, prefix="", tools=TOOLS)
        for piece in (text[:20], text[20:31], text[31:]):
            parser.feed(piece)
        streamed, _ = parser.finalize()
        assert streamed == rt.parse_response(text, template, prefix="", tools=TOOLS), shape


# -- type_tool_calls / type_call on values -------------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "expected"),
    [
        ({"name": "f", "arguments": {"n": "3"}}, {"name": "f", "arguments": {"n": 3}}),
        ({"name": "f", "parameters": {"n": "3"}}, {"name": "f", "parameters": {"n": 3}}),
        (
            {"id": "c1", "name": "f", "arguments": {"n": "3"}},
            {"id": "c1", "name": "f", "arguments": {"n": 3}},
        ),
        (
            {"type": "function", "function": {"name": "f", "arguments": {"n": "3"}}},
            {"type": "function", "function": {"name": "f", "arguments": {"n": 3}}},
        ),
        (
            {"type": "function", "id": "c1", "function": {"name": "f", "parameters": {"n": "3"}}},
            {"type": "function", "id": "c1", "function": {"name": "f", "parameters": {"n": 3}}},
        ),
        # "arguments" wins over "parameters", as call_parts reads it
        (
            {"name": "f", "arguments": {"n": "3"}, "parameters": {"n": "4"}},
            {"name": "f", "arguments": {"n": 3}, "parameters": {"n": "4"}},
        ),
    ],
    ids=repr,
)
def test_type_tool_calls_reads_both_shapes(call: dict[str, Any], expected: dict[str, Any]) -> None:
    before = copy.deepcopy(call)
    assert type_tool_calls(call, PARAMS) == expected
    assert type_tool_calls([call, [call]], PARAMS) == [expected, [expected]]
    assert call == before  # never modified


@pytest.mark.parametrize(
    "value",
    [
        {"name": "g", "arguments": {"n": "3"}},  # unknown tool
        {"name": "f", "arguments": '{"n": "3"}'},  # arguments not decoded
        {"name": "f"},  # no arguments
        {"name": 5, "arguments": {"n": "3"}},
        {"arguments": {"n": "3"}},
        {"name": "f", "arguments": {"n": 3, "s": "7"}},  # nothing to change
        {"outer": {"name": "f", "arguments": {"n": "3"}}},  # dicts are not descended
    ],
    ids=repr,
)
def test_values_typing_leaves_alone(value: Any) -> None:
    assert type_tool_calls(value, PARAMS) is value


def test_type_call_keeps_the_values_own_shape() -> None:
    bare = {"name": "f", "arguments": {"n": "3"}, "extra": [1]}
    typed = type_call(bare, PARAMS)
    assert typed == {"name": "f", "arguments": {"n": 3}, "extra": [1]}
    assert "function" not in typed
    assert typed["extra"] is bare["extra"]


def test_call_parts_and_typing_use_one_reading() -> None:
    """Whatever call_parts calls a call's arguments is exactly what typing replaces."""
    values = [
        {"name": "f", "arguments": {"n": "3"}},
        {"name": "f", "parameters": {"n": "3"}},
        {"function": {"name": "f", "arguments": {"n": "3"}}},
        {"function": {"name": "f", "parameters": {"n": "3"}}},
        {"function": "not a dict", "name": "f", "arguments": {"n": "3"}},
        {"name": "f", "arguments": {"n": "3"}, "parameters": {"n": "x"}},
    ]
    for value in values:
        parts = call_parts(value)
        assert parts is not None
        typed_parts = call_parts(type_tool_calls(value, PARAMS))
        assert typed_parts == (parts[0], parts[1], {"n": 3}), value


# -- the call-shape API --------------------------------------------------------------------------------


def test_call_function_and_arguments_key() -> None:
    chat = {"type": "function", "function": {"name": "f", "parameters": {}}}
    assert calls.call_function(chat) is chat["function"]
    bare = {"name": "f", "arguments": {}}
    assert calls.call_function(bare) is bare
    assert calls.call_function({"function": "x", "name": "f"}) == {"function": "x", "name": "f"}
    assert calls.arguments_key(chat["function"]) == "parameters"
    assert calls.arguments_key({"arguments": 1, "parameters": 2}) == "arguments"
    assert calls.arguments_key({"name": "f"}) is None
    assert calls.ARGUMENTS_KEYS == ("arguments", "parameters")


def test_argument_cast() -> None:
    params = {"f": {"n": {"type": "integer"}, "tags": {"type": "array"}, "xs": {"type": "integer"}, "s": {}}}
    cast = calls.argument_cast(params, "f", "n", "string")
    assert cast is not None
    assert cast("3") == 3
    assert cast("three") == "three"
    # a list where the schema does not allow one: a repeated key, cast item by item
    items = calls.argument_cast(params, "f", "xs", "array")
    assert items is not None
    assert items(["1", "x", 2]) == [1, "x", 2]
    assert calls.argument_cast(params, "f", "tags", "array") is None  # an array the schema allows
    assert calls.argument_cast(params, "f", "s", "string") is None  # no type to cast to
    assert calls.argument_cast(params, "f", "missing", "string") is None
    assert calls.argument_cast(params, "g", "n", "string") is None
    assert calls.argument_cast(params, None, "n", "string") is None


def test_argument_cast_agrees_with_type_call() -> None:
    kinds = [
        {"type": "integer"},
        {"type": "number"},
        {"type": ["null", "boolean"]},
        {"anyOf": [{"type": "object"}]},
    ]
    written = ["3", "3.5", "true", "null", "x", '{"a": 1}', ["1", "2"]]
    for schema in kinds:
        params = {"f": {"a": schema}}
        for value in written:
            kind = "array" if isinstance(value, list) else "string"
            cast = calls.argument_cast(params, "f", "a", kind)
            typed = type_call({"name": "f", "arguments": {"a": value}}, params)["arguments"]["a"]
            assert (cast(value) if cast is not None else value) == typed, (schema, value)


# -- the reference: it types chat-shaped calls only (intended difference 'bare-call-typing') ------------


def test_reference_does_not_type_the_bare_shape() -> None:
    reference = pytest.importorskip("transformers.utils.chat_parsing")
    text = '<call name=f>{"n": "3"}</call>'
    chat = capture_template(CAPTURE_TRANSFORMS["chat"])
    bare = capture_template(CAPTURE_TRANSFORMS["bare"])
    # chat shape: both type
    ours_chat = rt.parse_response(text, chat, prefix="", tools=TOOLS)
    assert (
        reference.parse_response(text, copy.deepcopy(chat), prefix="", tools=copy.deepcopy(TOOLS))
        == ours_chat
    )
    # bare shape: only ours types
    assert rt.parse_response(text, bare, prefix="", tools=TOOLS) == {
        "tool_calls": {"name": "f", "arguments": {"n": 3}}
    }
    assert reference.parse_response(text, copy.deepcopy(bare), prefix="", tools=copy.deepcopy(TOOLS)) == {
        "tool_calls": {"name": "f", "arguments": {"n": "3"}}
    }
    # "parameters" for the arguments: only ours types, in either shape
    for shape in ("bare-parameters", "chat-parameters"):
        template = capture_template(CAPTURE_TRANSFORMS[shape])
        theirs = reference.parse_response(
            text, copy.deepcopy(template), prefix="", tools=copy.deepcopy(TOOLS)
        )
        assert arguments_of(theirs["tool_calls"]) == {"n": "3"}
        ours = rt.parse_response(text, template, prefix="", tools=TOOLS)
        assert arguments_of(ours["tool_calls"]) == {"n": 3}
    # the model's own bare JSON, without a transform: the same
    written = '<tool_call>{"name": "f", "arguments": {"n": "3"}}</tool_call>'
    assert rt.parse_response(written, JSON_TEMPLATE, prefix="", tools=TOOLS) == {
        "tool_calls": [{"name": "f", "arguments": {"n": 3}}]
    }
    assert reference.parse_response(
        written, copy.deepcopy(JSON_TEMPLATE), prefix="", tools=copy.deepcopy(TOOLS)
    ) == {"tool_calls": [{"name": "f", "arguments": {"n": "3"}}]}
