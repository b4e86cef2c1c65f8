"""Extension ``json-envelope``: one JSON object, several output keys (docs/extensions.md)."""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import response_templates as rt
from extension_templates import CALL, template
from extension_templates import pieces as _pieces
from extension_templates import run as _run
from hypothesis_profiles import examples
from response_templates import library
from response_templates.errors import TemplateError

# ---------------------------------------------------------------------------------------- json-envelope

ROUTE = {
    "response": "content",
    "*": "content",
    "tool_call": {"to": "tool_calls", "add": "item", "transform": CALL},
    "tool_calls": {"to": "tool_calls", "add": "items", "transform": CALL},
}


def envelope(**extra: Any) -> dict[str, Any]:
    return {"content": "json", "content_args": {"allow_non_json": True}, "route": ROUTE, **extra}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"response": "hi"}', {"content": "hi"}),
        ("plain", {"content": "plain"}),
        ('{"tool_call": {"name": "f", "arguments": {"a": 1}}}', {"tool_calls": [("f", {"a": 1})]}),
        (
            '{"tool_calls": [{"name": "f", "arguments": {}}, {"name": "g", "arguments": {}}]}',
            {"tool_calls": [("f", {}), ("g", {})]},
        ),
        ('{"tool_calls": [], "response": ""}', {}),
    ],
)
def test_route_splits_an_implicit_envelope(text: str, expected: dict[str, Any]) -> None:
    t = template({"envelope": envelope()}, ["json-envelope"])
    message = rt.parse_response(text, t, prefix="")
    calls = [(c["function"]["name"], c["function"]["arguments"]) for c in message.pop("tool_calls", [])]
    assert {**message, **({"tool_calls": calls} if calls else {})} == expected


def test_route_on_explicit_regions_combines_in_stream_order() -> None:
    t = template({"env": {**envelope(), "open": "<j>", "close": "</j>", "repeats": True}}, ["json-envelope"])
    text = (
        '<j>{"tool_call": {"name": "f", "arguments": {}}}</j><j>{"response": "a"}</j><j>{"response": "b"}</j>'
    )
    message = rt.parse_response(text, t, prefix="")
    assert message["content"] == "ab" and [c["function"]["name"] for c in message["tool_calls"]] == ["f"]


@pytest.mark.parametrize(
    ("text", "needle"),
    [('{"other": 1}', "does not list"), ('{"tool_calls": 3}', "items of a list"), ("[1]", "JSON object")],
)
def test_route_errors_name_the_field(text: str, needle: str) -> None:
    route = {k: v for k, v in ROUTE.items() if k != "*"}
    t = template({"env": {**envelope(route=route), "open": "<j>", "close": "</j>"}}, ["json-envelope"])
    with pytest.raises(rt.ParseError, match=needle) as info:
        rt.parse_response(f"<j>{text}</j>", t, prefix="")
    assert info.value.field == "env"


@pytest.mark.parametrize(
    ("fields", "key", "needle"),
    [
        ({"e": envelope(route={})}, "route", "non-empty object"),
        ({"e": envelope(route={"a": {"to": "x", "add": "many"}})}, "route", "'item' or 'items'"),
        ({"e": envelope(route={"a": {"to": "x", "transform": {}}})}, "route", "needs 'add'"),
        ({"e": envelope(route={"a": 3})}, "route", "output key or an object"),
        ({"e": envelope(transform={"x": "{content}"})}, "route", "cannot be combined with 'transform'"),
        ({"e": envelope(optional=False)}, "optional", "'optional': false"),
        ({"e": envelope(route={"a": "x", "b": {"to": "x", "add": "item"}})}, "route", "both as a list"),
        ({"e": envelope(route={"a": "c"}), "c": {"open": "<c>"}}, "route", "is a field"),
    ],
)
def test_route_rules(fields: dict[str, Any], key: str, needle: str) -> None:
    with pytest.raises(TemplateError, match=needle) as info:
        rt.load_template(template(fields, ["json-envelope"]))
    assert info.value.key == key


def test_route_without_declaration_names_field_key_and_extension() -> None:
    with pytest.raises(TemplateError) as info:
        rt.load_template(template({"e": envelope()}))
    assert (info.value.field, info.value.key) == ("e", "route")
    assert '"extensions": ["json-envelope"]' in str(info.value)


@settings(max_examples=examples(60), deadline=None)
@given(
    st.lists(
        st.sampled_from(
            ['{"response": "a"}', '{"tool_call": {"name": "f", "arguments": {}}}', "<j>", "</j>", "x", " "]
        ),
        max_size=10,
    ),
    st.integers(0, 2**16),
)
def test_route_chunking_never_changes_the_result(words: list[str], seed: int) -> None:
    t = template(
        {"env": {**envelope(), "open": "<j>", "close": "</j>", "repeats": True}, "text": {}},
        ["json-envelope"],
    )
    t["fields"]["env"]["route"] = {**ROUTE, "*": "other"}
    text = "".join(words)
    try:
        whole = _run(t, [text])
    except rt.ParseError:
        return
    assert _run(t, _pieces(text, random.Random(seed))) == whole


def test_generic_json_library_template() -> None:
    fam = library.family("generic-json")
    assert fam.uses == ("E7", "E9") and "json-envelope" in fam.template().extensions
    text = '{"tool_calls": [{"name": "f", "arguments": {"a": "2"}}]}'
    tools = [
        {
            "type": "function",
            "function": {
                "name": "f",
                "parameters": {"type": "object", "properties": {"a": {"type": "integer"}}},
            },
        }
    ]
    for size in (len(text), 1, 3):
        p = rt.ResponseParser(fam.template(), prefix="<|assistant|>\n", tools=tools)
        for start in range(0, len(text), size):
            p.feed(text[start : start + size])
        message, _ = p.finalize()
        assert message["tool_calls"][0]["function"] == {"name": "f", "arguments": {"a": 2}}


def test_lfm2_json_gives_a_flat_list_of_calls() -> None:
    """Regression: 'repeats' + 'transform_each' made [[call]]; the arrays' items now feed tool_calls via 'into'."""
    fam = library.family("lfm2-json")
    assert "into" in fam.template().extensions and fam.uses == ("E8",)
    text = (
        'Hi<|tool_call_start|>[{"name": "f", "arguments": {"a": 1}}, {"name": "g", "arguments": {}}]<|tool_call_end|>'
        '<|tool_call_start|>[{"name": "h", "arguments": {}}]<|tool_call_end|><|im_end|>'
    )
    for size in (len(text), 1, 3):
        p = rt.ResponseParser(fam.template(), prefix=fam.generation_prompt)
        for start in range(0, len(text), size):
            p.feed(text[start : start + size])
        message, _ = p.finalize()
        assert message["content"] == "Hi"
        assert [c["function"] for c in message["tool_calls"]] == [
            {"name": "f", "arguments": {"a": 1}},
            {"name": "g", "arguments": {}},
            {"name": "h", "arguments": {}},
        ]
