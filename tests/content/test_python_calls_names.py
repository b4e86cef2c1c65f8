"""``python-calls`` (the lenient reader) takes the names tool calls really use: dotted and hyphenated
function names (``ns.tool-name(...)``) and Python keywords as names (``book_flight(from="SFO")``), which
Python's own parser refuses; everything it accepted before still reads the same."""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import call_list_gen
import response_templates as rt
from call_list_gen import Writer, expected_calls
from extension_templates import py_field, template
from hypothesis_profiles import examples
from response_templates.content import parse_content
from response_templates.errors import ContentError


def calls(text: str, **args: Any) -> list[tuple[str, dict[str, Any]]]:
    return [(c["name"], c["arguments"]) for c in parse_content(text, "python-calls", args or None)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('book_flight(from="SFO", to="JFK")', [("book_flight", {"from": "SFO", "to": "JFK"})]),
        (
            "[f(class=1, import=2, lambda=3, def=4, if=5, None=6, True=7)]",
            [("f", {"class": 1, "import": 2, "lambda": 3, "def": 4, "if": 5, "None": 6, "True": 7})],
        ),
        ("ns.tool-name(a=1)", [("ns.tool-name", {"a": 1})]),
        (
            "[get-weather(city='Paris'), a.b-c.d_e(x=[1])]",
            [("get-weather", {"city": "Paris"}), ("a.b-c.d_e", {"x": [1]})],
        ),
        (
            "[class(from=1), ns.import(x=2), True(None=3)]",
            [("class", {"from": 1}), ("ns.import", {"x": 2}), ("True", {"None": 3})],
        ),
        ("f(a-b=1, a.b=2, from_=3)", [("f", {"a-b": 1, "a.b": 2, "from_": 3})]),
        ("tool-1.v2(x=1)", [("tool-1.v2", {"x": 1})]),
        ("f(\n  from = 'a',\n  to\n  = 'b'\n)", [("f", {"from": "a", "to": "b"})]),
        # one call per line, and the raw-line-break repair, keep the names too
        (
            "get-time(zone='UTC')\nbook_flight(from='SFO')",
            [("get-time", {"zone": "UTC"}), ("book_flight", {"from": "SFO"})],
        ),
        ("[run-code(code='a\n  b', global=True)]", [("run-code", {"code": "a\n  b", "global": True})]),
        # text inside strings is never rewritten
        (
            "f(x='from=1 a-b( class(', y=\"ns.t-n(a=1)\", z=r'in=(', w='''def(''')",
            [("f", {"x": "from=1 a-b( class(", "y": "ns.t-n(a=1)", "z": "in=(", "w": "def("})],
        ),
        ("f(x='it\\'s from=', y=1)", [("f", {"x": "it's from=", "y": 1})]),
        # a placeholder-like name written by the model stays itself
        ("f(_rt_name0=1, from=2)", [("f", {"_rt_name0": 1, "from": 2})]),
        # surrogate pairs written as escapes are one character, and JSON's \/ is /, as python-call-list
        # reads them (Python keeps the two surrogates and the backslash); a raw NUL in a string is kept
        (r"f(s='\ud83d\ude00', t='a\/b', u=r'a\/b')", [("f", {"s": "\U0001f600", "t": "a/b", "u": "a\\/b"})]),
        ("f(s='nul\x00')", [("f", {"s": "nul\x00"})]),
    ],
)
def test_names_python_cannot_parse(text: str, expected: list[tuple[str, dict[str, Any]]]) -> None:
    assert calls(text) == expected


def test_name_suffix_applies_to_hyphenated_names() -> None:
    assert calls('brave-search.call(query="x")', name_suffix=".call") == [("brave-search", {"query": "x"})]


@pytest.mark.parametrize(
    "text",
    [
        "f(x=a-b)",  # a value is still never a name or an expression
        "f(x=from)",
        "f(x=ns.tool-name(a=1))",
        "f(from=1, from=2)",  # a repeated argument, keyword or not
        "f(a-b=1, a-b=2)",
        "f(1, from=2)",
        "f(x=1 if(y) else 2)",
        "f(from==1)",
        "f(x=lambda=1)",
        r"f(s='\ud83d')",  # a lone surrogate
        "a--b(x=1)",
        "-a(x=1)",
    ],
)
def test_still_rejected(text: str) -> None:
    with pytest.raises(ContentError):
        parse_content(text, "python-calls")


def test_through_a_template() -> None:
    t = template({"tool_calls": py_field(), "content": {}}, extensions=["python-calls"])
    out = rt.parse_response('Booking.<|assistant|><py>[book-flight(from="SFO", to="JFK")]</py>', t, prefix="")
    assert out["tool_calls"] == [
        {"type": "function", "function": {"name": "book-flight", "arguments": {"from": "SFO", "to": "JFK"}}}
    ]


@settings(max_examples=examples(300))
@given(call_list_gen.calls, st.randoms(use_true_random=False))
def test_reads_every_python_call_list_text_the_same(
    data: list[tuple[str, dict[str, Any]]], rng: random.Random
) -> None:
    """Whatever python-call-list accepts (generated with random names, values, escapes and spacing),
    python-calls accepts too, with the same calls."""
    text = Writer(rng).calls(data)
    expected = expected_calls(data)
    assert parse_content(text, "python-call-list") == expected
    assert parse_content(text, "python-calls") == expected
