"""Extension ``into``: several fields feeding one output key (docs/extensions.md)."""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import response_templates as rt
from extension_templates import pieces as _pieces
from extension_templates import py_field, template
from extension_templates import run as _run
from hypothesis_profiles import examples
from response_templates.errors import TemplateError

# -------------------------------------------------------------------------------------------- into

INTO = {
    "tool_calls": {
        "open": "<json>",
        "close": "</json>",
        "repeats": True,
        "content": "json",
        "transform": {"type": "function", "function": "{content}"},
    },
    "py_calls": py_field(into="tool_calls"),
    "content": {},
}


def test_into_accumulates_in_stream_order() -> None:
    t = template(INTO, ["python-calls", "into"])
    text = 'a<py>[f(x=1), g()]</py>b<json>{"name": "h", "arguments": {}}</json>c<py>k(y=2)</py>'
    msg = rt.parse_response(text, t, prefix="")
    assert [c["function"]["name"] for c in msg["tool_calls"]] == ["f", "g", "h", "k"]
    assert "py_calls" not in msg and msg["content"] == "abc"


def test_into_with_repeats_adds_one_item_per_match() -> None:
    fields = {
        "tool_calls": {"open": "<a>", "close": "</a>", "repeats": True},
        "other": {"open": "<b>", "close": "</b>", "repeats": True, "into": "tool_calls"},
    }
    msg = rt.parse_response("<b>1</b><a>2</a><b>3</b>", template(fields, ["into"]), prefix="")
    assert msg == {"tool_calls": ["1", "2", "3"]}


def test_into_a_key_that_is_no_field() -> None:
    fields = {
        "a": {"open": "<a>", "close": "</a>", "repeats": True, "into": "items"},
        "b": {"open": "<b>", "close": "</b>", "repeats": True, "into": "items"},
    }
    t = template(fields, ["into"])
    assert rt.parse_response("<b>1</b><a>2</a>", t, prefix="") == {"items": ["1", "2"]}
    assert rt.parse_response("nothing", t, prefix="") == {}


def test_into_without_repeats_needs_a_list_value() -> None:
    fields = {
        "t": {"open": "<a>", "close": "</a>", "repeats": True},
        "b": {"open": "<b>", "close": "</b>", "into": "t"},
    }
    with pytest.raises(rt.ParseError) as info:
        rt.parse_response("<b>x</b>", template(fields, ["into"]), prefix="")
    assert info.value.field == "b" and "must be a list" in str(info.value)


@pytest.mark.parametrize(
    ("fields", "key", "needle"),
    [
        ({"t": {"open": "<a>"}, "b": {"open": "<b>", "into": "t"}}, "into", "must have 'repeats'"),
        (
            {"t": {"open": "<a>", "repeats": True, "join": ""}, "b": {"open": "<b>", "into": "t"}},
            "into",
            "no 'join'",
        ),
        ({"b": {"open": "<b>", "into": "b"}}, "into", "itself"),
        ({"b": {"open": "<b>", "into": ""}}, "into", "non-empty"),
        ({"b": {"open": "<b>", "into": 3}}, "into", "non-empty"),
        ({"b": {"into": "x"}}, "into", "implicit"),
        ({"b": {"open": "<b>", "repeats": True, "join": "", "into": "x"}}, "into", "join"),
        ({"b": {"open": "<b>", "optional": False, "into": "x"}}, "optional", "optional"),
        (
            {"t": {"open": "<a>", "repeats": True, "into": "u"}, "b": {"open": "<b>", "into": "t"}},
            "into",
            "name the final output key",
        ),
        ({"b": {"open": "<b>", "into": "role"}}, "into", "defaults"),
    ],
)
def test_into_rules(fields: dict[str, Any], key: str, needle: str) -> None:
    data = template(fields, ["into"])
    data["defaults"] = {"role": "assistant"}
    with pytest.raises(TemplateError, match=needle) as info:
        rt.load_template(data)
    assert info.value.field == "b" and info.value.key == key


_VOCAB = [
    "<py>",
    "</py>",
    "<json>",
    "</json>",
    "f(x=1)",
    "g()",
    "[",
    "]",
    ", ",
    '{"name": "h", "arguments": {}}',
    "hi ",
    "<",
    "\n",
]


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(st.sampled_from(_VOCAB), max_size=20), st.integers(0, 2**32 - 1))
def test_into_chunking_never_changes_the_result(words: list[str], seed: int) -> None:
    t = template(INTO, ["python-calls", "into"])
    text = "".join(words)
    try:
        whole = _run(t, [text])
    except rt.ParseError as exc:
        for pieces in (list(text), _pieces(text, random.Random(seed))):
            with pytest.raises(rt.ParseError) as again:
                _run(t, pieces)
            assert again.value.field == exc.field
        return
    assert _run(t, list(text)) == whole
    assert _run(t, _pieces(text, random.Random(seed))) == whole
