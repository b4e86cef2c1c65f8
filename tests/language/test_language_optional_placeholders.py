"""Extension ``optional-placeholders``: parts that may be missing (docs/extensions.md)."""

from __future__ import annotations

from typing import Any

import pytest

import response_templates as rt
from extension_templates import template
from response_templates import library
from response_templates.errors import TemplateError

# ------------------------------------------------------------------------------------- optional-placeholders


def _opt_template(
    transform: Any, *, each: bool = False, declare: bool = True, **field: Any
) -> dict[str, Any]:
    spec = {"open_pattern": "<call(?: id=(?P<id>\\w+))?>", "close": "</call>", "content": "json", **field}
    spec.update({"transform": transform, "transform_each": each} if each else {"transform": transform})
    return template({"tool_calls": spec}, ["optional-placeholders"] if declare else None)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('<call id=x7>{"name": "f"}</call>', {"name": "f", "id": "x7", "list": ["x7", 1]}),
        ('<call>{"name": "f"}</call>', {"name": "f", "list": [None, 1]}),
    ],
)
def test_optional_placeholder_is_omitted_when_its_path_does_not_resolve(text: str, expected: Any) -> None:
    t = _opt_template({"name": "{content.name}", "id": "{id?}", "list": ["{id?}", 1]})
    message = rt.parse_response(text, t, prefix="<|assistant|>")
    assert message["tool_calls"] == expected


def test_optional_placeholder_in_transform_each_and_deep_paths() -> None:
    t = _opt_template({"name": "{name}", "id": "{id?}", "city": "{arguments.city?}"}, each=True)
    text = (
        '<call>[{"name": "f", "id": "a", "arguments": {"city": "P"}}, {"name": "g", "arguments": 3}]</call>'
    )
    message = rt.parse_response(text, t, prefix="<|assistant|>")
    assert message["tool_calls"] == [{"name": "f", "id": "a", "city": "P"}, {"name": "g"}]


def test_optional_placeholder_keeps_a_null_value() -> None:
    t = _opt_template({"id": "{content.id?}", "n": "{content.n}"})
    message = rt.parse_response('<call>{"id": null, "n": 1}</call>', t, prefix="<|assistant|>")
    assert message["tool_calls"] == {"id": None, "n": 1}


def test_required_placeholder_still_fails_beside_an_optional_one() -> None:
    t = _opt_template({"id": "{id?}", "name": "{content.name}"})
    with pytest.raises(rt.ParseError, match="name"):
        rt.parse_response("<call>{}</call>", t, prefix="<|assistant|>")


def test_optional_placeholder_without_declaration_names_field_key_and_extension() -> None:
    with pytest.raises(TemplateError, match="optional-placeholders") as info:
        rt.load_template(_opt_template({"id": "{id?}"}, declare=False))
    assert info.value.field == "tool_calls" and info.value.key == "transform"
    route = {"tool_call": {"to": "tool_calls", "add": "item", "transform": {"id": "{id?}"}}}
    with pytest.raises(TemplateError, match="optional-placeholders") as info:
        rt.load_template(template({"envelope": {"content": "json", "route": route}}, ["json-envelope"]))
    assert info.value.key == "route"


def test_optional_placeholder_root_must_still_exist_outside_transform_each() -> None:
    with pytest.raises(TemplateError, match="never resolve"):
        rt.load_template(_opt_template({"id": "{nope?}"}))


@pytest.mark.parametrize(
    ("name", "text", "expected_ids"),
    [
        (
            "mistral-v11-call-id",
            "[TOOL_CALLS]f[CALL_ID]abc123XYZ[ARGS]{}[TOOL_CALLS]g[ARGS]{}</s>",
            ["abc123XYZ", None],
        ),
        (
            "mistral-v3",
            '[TOOL_CALLS][{"name": "f", "arguments": {}, "id": "a1"}, {"name": "g", "arguments": {}}]</s>',
            ["a1", None],
        ),
        (
            "generic-json",
            '{"tool_calls": [{"name": "f", "arguments": {}, "id": "c1"}, {"name": "g", "arguments": {}}]}',
            ["c1", None],
        ),
    ],
)
def test_library_templates_that_use_optional_placeholders(
    name: str, text: str, expected_ids: list[Any]
) -> None:
    fam = library.family(name)
    assert "optional-placeholders" in fam.template().extensions
    whole = None
    for size in (len(text), 1, 3):
        p = rt.ResponseParser(fam.template(), prefix=fam.generation_prompt or "")
        for start in range(0, len(text), size):
            p.feed(text[start : start + size])
        message, _ = p.finalize()
        assert [c.get("id") for c in message["tool_calls"]] == expected_ids
        assert "id" not in message["tool_calls"][1]
        whole = whole or message
        assert message == whole
