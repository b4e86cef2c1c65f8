"""``json_dumper``: the same text, or the same error, as ``json.dumps`` with the same options, for every
object (it backs the wire's ``dumps_chunk``, ``dumps_arguments`` and the batch ``LineEncoder``)."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from response_templates.jsonlex.canonical import dumps_arguments, json_dumper
from response_templates.wire._base import dumps_chunk

OPTIONS: list[dict[str, Any]] = [
    {},
    {"ensure_ascii": False},
    {"separators": (",", ":")},
    {"ensure_ascii": False, "default": str},
    {"ensure_ascii": True, "separators": (", ", ": "), "default": repr},
]

scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text()  # NaN, inf, lone surrogates
keys = st.text() | st.integers() | st.booleans() | st.none() | st.floats(allow_nan=False)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.tuples(inner, inner) | st.dictionaries(keys, inner, max_size=4)
    ),
    max_leaves=20,
)


def outcome(call: Any, obj: Any) -> tuple[str, str]:
    try:
        return "text", call(obj)
    except Exception as exc:  # the same error type and message
        return type(exc).__name__, str(exc)


@pytest.mark.parametrize("options", OPTIONS)
@given(value=values)
def test_same_text_as_json_dumps(options: dict[str, Any], value: Any) -> None:
    assert json_dumper(**options)(value) == json.dumps(value, **options)


@pytest.mark.parametrize("options", OPTIONS)
@pytest.mark.parametrize(
    "bad",
    [
        {"a": {1, 2}},  # not serializable (or serialized by default=)
        [1, object()],
        {(1, 2): "tuple key"},  # a key type json refuses
        b"bytes",
    ],
)
def test_same_error_as_json_dumps(options: dict[str, Any], bad: Any) -> None:
    assert outcome(json_dumper(**options), bad) == outcome(lambda o: json.dumps(o, **options), bad)


def test_a_circular_structure_is_json_dumps_error() -> None:
    loop: list[Any] = [1]
    loop.append(loop)
    dumper = json_dumper(separators=(",", ":"))
    assert outcome(dumper, loop) == outcome(lambda o: json.dumps(o, separators=(",", ":")), loop)
    assert dumper([1, {"a": math.inf}]) == '[1,{"a":Infinity}]'  # still works afterwards


def test_the_users_of_the_dumper_keep_their_texts() -> None:
    chunk = {"id": "c", "choices": [{"delta": {"content": "Zürich \u2028 \ud800"}, "finish_reason": None}]}
    assert dumps_chunk(chunk) == json.dumps(chunk, separators=(",", ":"))
    assert dumps_arguments({"city": "Zürich", "x": "\ud800"}) == '{"city": "Zürich", "x": "\\ud800"}'
