"""The extension declaration (``extensions``: known names, versions, what an undeclared key says) and the
extensions in use as lint and the library report them (docs/extensions.md)."""

from __future__ import annotations

from typing import Any

import pytest

import response_templates as rt
from extension_templates import APERTUS, py_field, template
from response_templates import library
from response_templates.errors import TemplateError

# ------------------------------------------------------------------------------------- declaration


def test_known_extensions() -> None:
    assert set(rt.templates.EXTENSIONS) == {
        "python-calls",
        "into",
        "item-transform",
        "xml-values",
        "json-envelope",
        "optional-placeholders",
        "json-value-end",
        "interleaved",
    }


def test_declared_extensions_are_kept_with_version_1() -> None:
    t = rt.load_template({**template({"c": py_field()}, ["python-calls"]), "version": 1})
    assert t.extensions == ("python-calls",)
    assert rt.load_template(template({"content": {}})).extensions == ()


@pytest.mark.parametrize(
    ("extensions", "needle"),
    [
        (["nesting"], "unknown extension 'nesting'"),
        (["nope"], "unknown extension 'nope'"),
        ("python-calls", "must be a list"),
        ([1], "must be a list"),
        (["into", "into"], "more than once"),
    ],
)
def test_bad_declarations_are_rejected(extensions: Any, needle: str) -> None:
    with pytest.raises(TemplateError, match=needle) as info:
        rt.load_template(template({"content": {}}, extensions))
    assert info.value.key == "extensions"


def test_python_calls_without_declaration_names_field_key_and_extension() -> None:
    with pytest.raises(TemplateError) as info:
        rt.load_template(template({"calls": py_field()}))
    err = info.value
    assert (err.field, err.key) == ("calls", "content")
    assert "'python-calls'" in str(err) and '"extensions": ["python-calls"]' in str(err)


def test_into_without_declaration_names_field_key_and_extension() -> None:
    fields = {
        "tool_calls": {"open": "<a>", "close": "</a>", "repeats": True},
        "b": {"open": "<b>", "into": "tool_calls"},
    }
    with pytest.raises(TemplateError) as info:
        rt.load_template(template(fields))
    assert (info.value.field, info.value.key) == ("b", "into")
    assert '"extensions": ["into"]' in str(info.value)


def test_a_seed_implementation_key_set_is_unchanged_without_extensions() -> None:
    # The seed's {key}/{value} element variables keep their seed meaning without the declaration.
    fields = {
        "x": {
            "open": "<x>",
            "close": "</x>",
            "content": "json",
            "transform_each": True,
            "transform": "{value}",
        }
    }
    msg = rt.parse_response('<x>[{"value": 3}]</x>', template(fields), prefix="")
    assert msg == {"x": [3]}


# ------------------------------------------------------------------------------------ lint, library


def test_lint_reports_each_extension_in_use() -> None:
    data = template(
        {
            "tool_calls": {**APERTUS["tool_calls"], "repeats": True},
            "py": py_field(into="tool_calls"),
        },
        ["item-transform", "python-calls", "into"],
    )
    issues = [i for i in rt.lint(data) if i.code == "extension"]
    assert all(i.level == "note" for i in issues)
    assert {(i.field, i.key) for i in issues} == {
        (None, "extensions"),
        ("tool_calls", "transform"),
        ("py", "content"),
        ("py", "into"),
    }
    assert not [i for i in rt.lint(data) if i.level == "error"]


@pytest.mark.parametrize(
    ("name", "text", "calls"),
    [
        ("pythonic", "[get_weather(city='LA'), f()]", ["get_weather", "f"]),
        ("pythonic", "<|python_start|>[f(a=1)]<|python_end|>", ["f"]),
        ("lfm2", "<think>x</think>Hi<|tool_call_start|>[f(a=1), g()]<|tool_call_end|><|im_end|>", ["f", "g"]),
        ("olmo-3", "<function_calls>f(a=1)\ng(b=[1])</function_calls><|im_end|>", ["f", "g"]),
        ("apertus", '<|tools_prefix|>[{"f": {"a": 1}}, {"g": {}}]<|tools_suffix|>', ["f", "g"]),
        (
            "llama-3.1-builtin",
            '<|python_tag|>brave_search.call(query="x")<|eom_id|>',
            ["brave_search"],
        ),
        ("llama-3.1-builtin", '{"name": "f", "parameters": {"a": 1}}<|eot_id|>', ["f"]),
    ],
)
def test_library_templates_that_use_extensions(name: str, text: str, calls: list[str]) -> None:
    fam = library.family(name)
    template_ = fam.template()
    assert template_.extensions and fam.uses
    for size in (len(text), 1, 3):
        p = rt.ResponseParser(template_, prefix=fam.generation_prompt)
        for start in range(0, len(text), size):
            p.feed(text[start : start + size])
        message, _ = p.finalize()
        assert [c["function"]["name"] for c in message["tool_calls"]] == calls
