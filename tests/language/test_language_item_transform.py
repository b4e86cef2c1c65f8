"""Extension ``item-transform``: the name as the key (docs/extensions.md)."""

from __future__ import annotations

import pytest

import response_templates as rt
from extension_templates import APERTUS, template
from response_templates.errors import TemplateError

# ---------------------------------------------------------------------------------- item-transform


def test_item_transform_binds_key_and_value() -> None:
    t = template(APERTUS, ["item-transform"])
    msg = rt.parse_response('<t>[{"get_weather": {"city": "Tokyo"}}, {"f": {}}]</t>', t, prefix="")
    assert msg["tool_calls"] == [
        {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Tokyo"}}},
        {"type": "function", "function": {"name": "f", "arguments": {}}},
    ]
    assert rt.load_template(t).by_name["tool_calls"].item_transform


def test_item_transform_needs_single_key_objects() -> None:
    t = template(APERTUS, ["item-transform"])
    for bad in ('[{"a": 1, "b": 2}]', "[{}]", "[1]", "{}"):
        with pytest.raises(rt.ParseError, match=r"transform_each|item-transform"):
            rt.parse_response(f"<t>{bad}</t>", t, prefix="")


def test_item_transform_binds_captures_but_not_element_keys() -> None:
    fields = {"c": {**APERTUS["tool_calls"], "transform": {"k": "{key}", "n": "{name}"}}}
    with pytest.raises(TemplateError, match="can never resolve") as info:
        rt.load_template(template(fields, ["item-transform"]))
    assert (info.value.field, info.value.key) == ("c", "transform")
    fields = {
        "c": {
            **APERTUS["tool_calls"],
            "open_pattern": "<t id=(?P<id>\\d+)>",
            "transform": {"id": "{id}", "name": "{key}"},
        }
    }
    del fields["c"]["open"]
    msg = rt.parse_response('<t id=7>[{"f": 1}]</t>', template(fields, ["item-transform"]), prefix="")
    assert msg == {"c": [{"id": "7", "name": "f"}]}


def test_item_transform_leaves_ordinary_transform_each_alone() -> None:
    fields = {
        "c": {
            "open": "<t>",
            "close": "</t>",
            "content": "json",
            "transform_each": True,
            "transform": "{name}",
        }
    }
    t = rt.load_template(template(fields, ["item-transform"]))
    assert not t.by_name["c"].item_transform
    assert rt.parse_response('<t>[{"name": "a", "x": 1}]</t>', t, prefix="") == {"c": ["a"]}
