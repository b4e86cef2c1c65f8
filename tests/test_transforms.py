"""Tests for transforms (docs/spec.md, section 6).

Intended differences from the reference implementation (transformers.utils.chat_parsing), each checked
by the test named after it:

* A placeholder in a dict key ({"{name}": ...}) is rejected at load time; the reference kept such a key
  as a literal, silently. -- test_diff_placeholder_in_key_rejected
* A transform may only contain JSON data (dicts with string keys, lists, strings, numbers, booleans,
  null) nested at most MAX_TRANSFORM_DEPTH deep; anything else is a TemplateError at load time. The
  reference passed other objects through. -- test_diff_non_json_transform_rejected
* Substituted dicts and lists are copies: the output never shares a mutable object with the variables or
  between two of its own places. The reference inserted the very same object.
  -- test_diff_substituted_values_are_copies
* Every unresolved placeholder is a ContentError (a ValueError) naming the path, the segment and the
  available keys; the reference raised KeyError for an unknown variable and ValueError otherwise.
  -- test_diff_unknown_variable_is_content_error
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from response_templates.errors import ContentError, TemplateError
from response_templates.transforms import (
    MAX_TRANSFORM_DEPTH,
    apply_transform,
    apply_transform_each,
    transform_placeholders,
    validate_transform,
)

TOOL_CALL = {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}}


# ------------------------------------------------------------------------------------------ validation


@pytest.mark.parametrize(
    "transform",
    [
        TOOL_CALL,
        "{content}",
        "{content.args.city}",
        "plain literal",
        "{}",
        "{ name }",
        "{a-b}",
        '{"json": "text"}',
        [1, 2.5, True, None, "x", {"k": ["{content}"]}],
        {},
        [],
        None,
        42,
    ],
)
def test_valid_transforms(transform: Any) -> None:
    validate_transform(transform, "tool_calls")


@pytest.mark.parametrize(
    ("transform", "where"),
    [
        ("call {name}", "transform"),
        ("{name} ", "transform"),
        ("{a}{b}", "transform"),
        ("{{name}}", "transform"),
        ({"function": {"name": "fn_{name}"}}, "transform['function']['name']"),
        ({"list": ["ok", "x={content}"]}, "transform['list'][1]"),
    ],
)
def test_mixed_placeholder_rejected(transform: Any, where: str) -> None:
    with pytest.raises(TemplateError) as info:
        validate_transform(transform, "tool_calls")
    err = info.value
    assert err.field == "tool_calls" and err.key == "transform"
    assert "mixes a {placeholder}" in str(err) and where in str(err)


def test_diff_placeholder_in_key_rejected() -> None:
    with pytest.raises(TemplateError) as info:
        validate_transform({"args": {"{name}": "{content}"}}, "calls")
    assert info.value.key == "transform" and "'{name}'" in str(info.value) and "keys" in str(info.value)


@pytest.mark.parametrize(
    ("transform", "needle"),
    [
        ((1, 2), "tuple"),
        ({"a": {1, 2}}, "set"),
        ({"a": b"x"}, "bytes"),
        ({"a": object()}, "object"),
        ({1: "x"}, "non-string key 1"),
        ({"a": [{None: 1}]}, "non-string key None"),
    ],
)
def test_diff_non_json_transform_rejected(transform: Any, needle: str) -> None:
    with pytest.raises(TemplateError) as info:
        validate_transform(transform, "calls")
    assert info.value.field == "calls" and info.value.key == "transform" and needle in str(info.value)


def test_transform_depth_limit_and_cycles() -> None:
    deep: Any = "x"
    for _ in range(MAX_TRANSFORM_DEPTH):
        deep = [deep]
    validate_transform(deep, "f")
    with pytest.raises(TemplateError, match="nested more than"):
        validate_transform([deep], "f")
    cyclic: list[Any] = []
    cyclic.append(cyclic)
    cyclic.append(cyclic)
    with pytest.raises(TemplateError, match="cycle"):
        validate_transform(cyclic, "f")


def test_apply_unvalidated_cyclic_transform_is_template_error() -> None:
    cyclic: list[Any] = []
    cyclic.append(cyclic)
    with pytest.raises(TemplateError, match="nested too deeply"):
        apply_transform(cyclic, {})


@pytest.mark.parametrize(
    ("transform", "roots"),
    [
        (TOOL_CALL, {"name", "content"}),
        ({"a": "{content.args.x}", "b": ["{id}", "{content}"]}, {"content", "id"}),
        ("{content}", {"content"}),
        ({"literal": "text", "n": 1}, set()),
        (None, set()),
    ],
)
def test_transform_placeholders(transform: Any, roots: set[str]) -> None:
    assert transform_placeholders(transform) == roots


# ------------------------------------------------------------------------------------------------ apply


def test_apply_tool_call() -> None:
    out = apply_transform(TOOL_CALL, {"name": "get_weather", "content": {"city": "Paris", "days": 3}})
    assert out == {
        "type": "function",
        "function": {"name": "get_weather", "arguments": {"city": "Paris", "days": 3}},
    }


@pytest.mark.parametrize("value", [3, 2.5, True, False, None, "s", [1, "a"], {"k": [None]}])
def test_placeholder_keeps_type(value: Any) -> None:
    out = apply_transform({"v": "{x}"}, {"x": value})
    assert out == {"v": value} and type(out["v"]) is type(value)


def test_top_level_placeholder_and_literals() -> None:
    assert apply_transform("{content}", {"content": [1]}) == [1]
    assert apply_transform("literal", {}) == "literal"
    assert apply_transform(7, {}) == 7
    assert apply_transform(None, {}) is None
    assert apply_transform({"a": "{ x }", "b": "{}"}, {"x": 1}) == {"a": "{ x }", "b": "{}"}


def test_dotted_paths() -> None:
    variables = {"content": {"name": "f", "args": {"x": {"y": [1, 2]}}}}
    transform = {"n": "{content.name}", "y": "{content.args.x.y}", "all": "{content.args}"}
    assert apply_transform(transform, variables) == {"n": "f", "y": [1, 2], "all": {"x": {"y": [1, 2]}}}


def test_unicode_placeholder_names() -> None:
    assert apply_transform("{名前.値}", {"名前": {"値": 1}}) == 1


def test_diff_unknown_variable_is_content_error() -> None:
    with pytest.raises(ContentError) as info:
        apply_transform(TOOL_CALL, {"content": {}, "nam": "x"})
    message = str(info.value)
    assert "'{name}'" in message and "no variable 'name'" in message
    assert "'content'" in message and "'nam'" in message
    assert isinstance(info.value, ValueError)


def test_missing_key_lists_available_keys() -> None:
    with pytest.raises(ContentError) as info:
        apply_transform("{content.args.city}", {"content": {"args": {"town": 1, "zip": 2}}})
    message = str(info.value)
    assert "'{content.args.city}'" in message and "'content.args' has no key 'city'" in message
    assert "'town'" in message and "'zip'" in message


def test_non_dict_in_the_middle() -> None:
    with pytest.raises(ContentError) as info:
        apply_transform("{content.args.city}", {"content": {"args": ["Paris"]}})
    message = str(info.value)
    assert "'{content.args.city}'" in message and "'city'" in message and "'content.args' is list" in message
    with pytest.raises(ContentError, match="'content' is str"):
        apply_transform("{content.x}", {"content": "text"})
    with pytest.raises(ContentError, match="'content' is NoneType"):
        apply_transform("{content.x}", {"content": None})


def test_many_available_keys_are_shortened() -> None:
    with pytest.raises(ContentError) as info:
        apply_transform("{content.missing}", {"content": {f"k{i}": i for i in range(1000)}})
    assert "1000 in all" in str(info.value) and len(str(info.value)) < 600


def test_diff_substituted_values_are_copies() -> None:
    content = {"args": {"x": [1, {"y": 2}]}}
    out = apply_transform({"a": "{content}", "b": "{content}", "c": "{content.args}"}, {"content": content})
    assert out["a"] == out["b"] == content
    assert out["a"] is not content and out["a"] is not out["b"]
    assert out["a"]["args"]["x"] is not content["args"]["x"]
    assert out["c"] is not content["args"] and out["c"]["x"][1] is not content["args"]["x"][1]
    out["a"]["args"]["x"].append("mutated")
    out["b"]["args"]["x"][1]["y"] = 99
    assert content == {"args": {"x": [1, {"y": 2}]}}
    assert out["c"] == {"x": [1, {"y": 2}]}


def test_literal_parts_of_the_transform_are_fresh() -> None:
    transform = {"type": "function", "meta": {"tags": ["a"]}}
    first = apply_transform(transform, {})
    first["meta"]["tags"].append("b")
    assert transform == {"type": "function", "meta": {"tags": ["a"]}}
    assert apply_transform(transform, {}) == {"type": "function", "meta": {"tags": ["a"]}}


@pytest.mark.parametrize("depth", [512, 100_000])
def test_copy_of_deep_values_does_not_recurse(depth: int) -> None:
    value: Any = {"leaf": 1}
    for _ in range(depth):
        value = [value]
    out = apply_transform({"v": "{content}"}, {"content": value})
    node, original = out["v"], value
    for _ in range(depth):
        assert isinstance(node, list) and node is not original
        node, original = node[0], original[0]
    assert node == {"leaf": 1} and node is not original


def test_copy_keeps_shape_of_shared_and_cyclic_values() -> None:
    shared = [1]
    cyclic: list[Any] = [shared, shared]
    cyclic.append(cyclic)
    out = apply_transform("{x}", {"x": cyclic})
    assert out is not cyclic and out[2] is out and out[0] is out[1] and out[0] is not shared


# ---------------------------------------------------------------------------------------- transform_each


EACH = {"type": "function", "function": {"name": "{tool_name}", "arguments": "{parameters}"}}


def test_transform_each_cohere_style() -> None:
    value = [
        {"tool_name": "search", "parameters": {"q": "x"}},
        {"tool_name": "calc", "parameters": {"expr": "1+1"}},
    ]
    assert apply_transform_each(EACH, value, {}) == [
        {"type": "function", "function": {"name": "search", "arguments": {"q": "x"}}},
        {"type": "function", "function": {"name": "calc", "arguments": {"expr": "1+1"}}},
    ]


def test_transform_each_item_keys_win_over_captures() -> None:
    out = apply_transform_each(
        {"n": "{name}", "c": "{cap}"}, [{"name": "item"}], {"name": "capture", "cap": 1}
    )
    assert out == [{"n": "item", "c": 1}]


def test_transform_each_empty_list() -> None:
    assert apply_transform_each(EACH, [], {}) == []


@pytest.mark.parametrize(
    ("value", "needle"), [({"tool_name": "x"}, "dict"), ("text", "str"), (None, "NoneType")]
)
def test_transform_each_needs_a_list(value: Any, needle: str) -> None:
    with pytest.raises(ContentError) as info:
        apply_transform_each(EACH, value, {})
    assert "list of objects" in str(info.value) and needle in str(info.value)


def test_transform_each_elements_must_be_dicts() -> None:
    with pytest.raises(ContentError) as info:
        apply_transform_each(EACH, [{"tool_name": "a", "parameters": {}}, ["b"]], {})
    assert "element 1 is list" in str(info.value)


def test_transform_each_error_names_element() -> None:
    with pytest.raises(ContentError) as info:
        apply_transform_each(EACH, [{"tool_name": "a", "parameters": {}}, {"tool_name": "b"}], {})
    message = str(info.value)
    assert "element 1" in message and "'{parameters}'" in message and "'tool_name'" in message


def test_transform_each_copies_values() -> None:
    params = {"q": ["x"]}
    out = apply_transform_each(EACH, [{"tool_name": "s", "parameters": params}], {})
    assert out[0]["function"]["arguments"] == params and out[0]["function"]["arguments"] is not params


# --------------------------------------------------------------------- differential against reference

ref = pytest.importorskip("transformers.utils.chat_parsing.content_parsers")

DIFFERENTIAL_CASES: list[tuple[Any, dict[str, Any]]] = [
    (TOOL_CALL, {"name": "f", "content": {"a": 1}}),
    (TOOL_CALL, {"name": None, "content": [1, 2]}),
    ({"type": "function", "function": "{content}"}, {"content": {"name": "f", "arguments": {}}}),
    ({"function": {"name": "{content.name}", "arguments": "{content.parameters}"}},
     {"content": {"name": "f", "parameters": {"x": 1}}}),
    ({"id": "{id}", "function": {"name": "{name}", "arguments": "{content}"}},
     {"id": "call_1", "name": "f", "content": {}}),
    ("{content}", {"content": 3.5}),
    ("{content.a.b.c}", {"content": {"a": {"b": {"c": [True]}}}}),
    ("not a placeholder", {}),
    ({"a": ["{x}", "lit", 1, None, False]}, {"x": "v"}),
    ({"a": "{ x }", "b": "{}", "c": "{a-b}"}, {}),
    ("{名前}", {"名前": 1}),
    # errors: both must raise
    (TOOL_CALL, {"content": {}}),
    ("{content.missing}", {"content": {"a": 1}}),
    ("{content.a.b}", {"content": {"a": [1]}}),
    ("{content.a}", {"content": "text"}),
]  # fmt: skip


@pytest.mark.parametrize(("transform", "variables"), DIFFERENTIAL_CASES)
def test_matches_reference(transform: Any, variables: dict[str, Any]) -> None:
    validate_transform(transform, "f")
    try:
        expected = ref._apply_transform(transform, variables)
    except Exception:
        with pytest.raises(ContentError):
            apply_transform(transform, variables)
        return
    assert json.dumps(apply_transform(transform, variables)) == json.dumps(expected)


def test_matches_reference_on_mixed_string_rejection() -> None:
    for text in ["call {name}", "{a}{b}", "{{x}}", "ok", "{x}", "{ x }"]:
        try:
            ref.validate_transform_strings("f", text)
            ref_ok = True
        except ValueError:
            ref_ok = False
        try:
            validate_transform(text, "f")
            ours_ok = True
        except TemplateError:
            ours_ok = False
        assert ours_ok == ref_ok, text


# ------------------------------------------------------------------------------------------ properties

json_scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text()
json_values = st.recursive(
    json_scalars,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(), children, max_size=4),
    max_leaves=20,
)
literal_text = st.text().filter(lambda s: "{" not in s)
literal_transforms = st.recursive(
    st.none() | st.booleans() | st.integers() | literal_text,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(literal_text, children, max_size=4),
    max_leaves=20,
)


@given(literal_transforms)
def test_prop_literal_transform_is_reproduced(transform: Any) -> None:
    validate_transform(transform, "f")
    out = apply_transform(transform, {})
    assert out == transform
    if isinstance(transform, (dict, list)):
        assert out is not transform
    assert transform_placeholders(transform) == set()


@given(json_values, json_values)
def test_prop_placeholder_substitutes_equal_copy(value: Any, other: Any) -> None:
    out = apply_transform({"a": "{content}", "b": ["{other}"]}, {"content": value, "other": other})
    assert json.dumps(out) == json.dumps({"a": value, "b": [other]})
    if isinstance(value, (dict, list)):
        assert out["a"] is not value
