"""Extension ``python-calls``: tool calls written as Python calls (docs/extensions.md)."""

from __future__ import annotations

import keyword
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import response_templates as rt
from extension_templates import py_field, template
from hypothesis_profiles import examples
from response_templates.content import MAX_PYTHON_DEPTH, parse_content
from response_templates.errors import ContentError, TemplateError

# ------------------------------------------------------------------------------------ python-calls


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[f(a=1, b='x'), g()]", [("f", {"a": 1, "b": "x"}), ("g", {})]),
        ("f(a=1)", [("f", {"a": 1})]),
        ("f(a=1)\n\ng(b=None)\n", [("f", {"a": 1}), ("g", {"b": None})]),
        ('brave_search.call(query="x")', [("brave_search.call", {"query": "x"})]),
        (
            "f(a=True, b=False, c=None, d=-2, e=-1.5, f=+3)",
            [("f", {"a": True, "b": False, "c": None, "d": -2, "e": -1.5, "f": 3})],
        ),
        (r"f(s='a\'b\n\u00e9', t=" + '"""x"""' + ")", [("f", {"s": "a'b\né", "t": "x"})]),
        ("f(x=[1, (2, 3)], y={'k': [{'z': ()}]})", [("f", {"x": [1, [2, 3]], "y": {"k": [{"z": []}]}})]),
        ("f(a=true, b=null)", [("f", {"a": True, "b": None})]),
        ("[\n  f(a=1),\n  g(b=2)\n]", [("f", {"a": 1}), ("g", {"b": 2})]),
        ("(f(), g())", [("f", {}), ("g", {})]),
        ("  ", []),
        ("[]", []),
        # a raw line break inside a one-line string (chat templates that quote without escaping)
        ("[run(code='a\n  b', q='back\\slash')]", [("run", {"code": "a\n  b", "q": "back\\slash"})]),
        ('f(a="x\ny")\ng(b=1)', [("f", {"a": "x\ny"}), ("g", {"b": 1})]),
    ],
)
def test_python_calls_parses(text: str, expected: list[tuple[str, dict[str, Any]]]) -> None:
    assert parse_content(text, "python-calls") == [{"name": n, "arguments": a} for n, a in expected]


@pytest.mark.parametrize(
    "text",
    [
        "f(1)",  # positional
        "f(a=x)",  # a bare name is not data
        "f(a=open('x'))",  # nothing is called
        "f(a=__import__('os').system('true'))",
        "f(a=1+2)",
        "f(a=1j)",
        "f(a=b'x')",
        "f(a={1, 2})",
        "f(a={1: 2})",
        "f(a=f'{x}')",
        "f(a=lambda: 1)",
        "f(**k)",
        "f(a=1, a=2)",
        "f(a={**k})",
        "[f(a=1)",
        "x",
        "f()[0]",
        "(lambda: 1)()",
        "f(a=1)\nnot a call",
        "f(a=...)",
        "f(a=--1)",
        "f(a=\x00)",
        "f(a=" + "[" * 5000 + "]" * 5000 + ")",
        "f(a=" + "-" * 5000 + "1)",
        "f(a=1" + ")" * 10,
    ],
)
def test_python_calls_rejects(text: str) -> None:
    with pytest.raises(ContentError):
        parse_content(text, "python-calls")


def test_python_calls_depth_is_bounded() -> None:
    ok = "f(a=" + "[" * 50 + "]" * 50 + ")"
    assert parse_content(ok, "python-calls")[0]["name"] == "f"
    deep = "f(a=" + "[" * (MAX_PYTHON_DEPTH + 5) + "]" * (MAX_PYTHON_DEPTH + 5) + ")"
    with pytest.raises(ContentError):
        parse_content(deep, "python-calls")


def test_python_calls_arguments_are_checked() -> None:
    with pytest.raises(TemplateError, match="accepts 'name_suffix'"):
        rt.load_template(template({"c": py_field(content_args={"x": 1})}, ["python-calls"]))
    with pytest.raises(TemplateError, match="name_suffix must be a string"):
        rt.load_template(template({"c": py_field(content_args={"name_suffix": 1})}, ["python-calls"]))


def test_python_calls_name_suffix_is_removed_when_present() -> None:
    args = {"name_suffix": ".call"}
    calls = parse_content('brave_search.call(query="x")\nget_time()\ncall()', "python-calls", args)
    assert [c["name"] for c in calls] == ["brave_search", "get_time", "call"]
    t = template({"c": py_field(content_args=args), "content": {}}, ["python-calls"])
    message = rt.parse_response('<py>wolfram_alpha.call(query="2+2")</py>', t, prefix="")
    assert message["c"] == [
        {"type": "function", "function": {"name": "wolfram_alpha", "arguments": {"query": "2+2"}}}
    ]


def test_python_calls_in_a_template_is_dirty_and_typed_by_tools() -> None:
    t = template({"tool_calls": py_field(repeats=False), "content": {}}, ["python-calls"])
    tools = [
        {
            "type": "function",
            "function": {"name": "f", "parameters": {"properties": {"n": {"type": "integer"}}}},
        }
    ]
    p = rt.ResponseParser(t, prefix="", tools=tools)
    events = p.feed("hi <py>[f(n='3')]</py>")
    message, _ = p.finalize()
    assert message["tool_calls"] == [{"type": "function", "function": {"name": "f", "arguments": {"n": 3}}}]
    assert all(e["dirty"] for e in events if e["type"] == "region_chunk" and e["field"] == "tool_calls")


_IDENT = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,6}", fullmatch=True).filter(
    lambda s: not keyword.iskeyword(s)
)
_SCALAR = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**30), 10**30),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=12),
)
_VALUE = st.recursive(
    _SCALAR,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=10,
)
_CALLS = st.lists(
    st.fixed_dictionaries(
        {
            "name": st.lists(_IDENT, min_size=1, max_size=3).map(".".join),
            "arguments": st.dictionaries(_IDENT, _VALUE, max_size=4),
        }
    ),
    max_size=4,
)


def render(calls: list[dict[str, Any]], style: str) -> str:
    parts = [f"{c['name']}({', '.join(f'{k}={v!r}' for k, v in c['arguments'].items())})" for c in calls]
    if style == "lines" and parts:
        return "\n".join(parts)
    return "[" + ", ".join(parts) + "]"


@settings(max_examples=examples(300), deadline=None)
@given(_CALLS, st.sampled_from(["list", "lines"]))
def test_python_calls_round_trip(calls: list[dict[str, Any]], style: str) -> None:
    assert parse_content(render(calls, style), "python-calls") == calls
