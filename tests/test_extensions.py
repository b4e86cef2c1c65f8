"""Template-language extensions (docs/extensions.md): the declaration, python-calls, into, item-transform."""

from __future__ import annotations

import itertools
import keyword
import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import response_templates as rt
from response_templates import library
from response_templates.content import MAX_PYTHON_DEPTH, parse_content
from response_templates.errors import ContentError, TemplateError

CALL = {"type": "function", "function": {"name": "{name}", "arguments": "{arguments}"}}


def template(fields: dict[str, Any], extensions: list[str] | None = None) -> dict[str, Any]:
    data: dict[str, Any] = {"start_anchor": "<|assistant|>", "fields": fields}
    if extensions is not None:
        data["extensions"] = extensions
    return data


def py_field(**extra: Any) -> dict[str, Any]:
    return {
        "open": "<py>",
        "close": "</py>",
        "content": "python-calls",
        "transform_each": True,
        "transform": CALL,
        **extra,
    }


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


@settings(max_examples=300, deadline=None)
@given(_CALLS, st.sampled_from(["list", "lines"]))
def test_python_calls_round_trip(calls: list[dict[str, Any]], style: str) -> None:
    assert parse_content(render(calls, style), "python-calls") == calls


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


def _pieces(text: str, rng: random.Random) -> list[str]:
    cuts = (
        sorted(rng.sample(range(1, len(text)), min(len(text) - 1, rng.randint(0, 8))))
        if len(text) > 1
        else []
    )
    bounds = [0, *cuts, len(text)]
    return [text[a:b] for a, b in itertools.pairwise(bounds)]


def _run(t: dict[str, Any], pieces: list[str]) -> tuple[Any, list[Any]]:
    p = rt.ResponseParser(t, prefix="")
    events = list(p.initial_events)
    for piece in pieces:
        events += p.feed(piece)
    message, final = p.finalize()
    events += final
    return message, [(e["type"], e["field"], e.get("value")) for e in events if e["type"] != "region_chunk"]


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


@settings(max_examples=200, deadline=None)
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


# ---------------------------------------------------------------------------------- item-transform

APERTUS = {
    "tool_calls": {
        "open": "<t>",
        "close": "</t>",
        "content": "json",
        "transform_each": True,
        "transform": {"type": "function", "function": {"name": "{key}", "arguments": "{value}"}},
    }
}


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


# ------------------------------------------------------------------------------------------ xml-values

XML_TAG = r'<p n="(?P<key>[^"]+)"(?: s="(?P<s>\w+)")?>(?P<value><!\[CDATA\[.*?\]\]>|.*?)</p>'
XML_TYPES = {"true": {"name": "text", "args": {"strip": False}}, "false": {"name": "json"}}


def xml_field(**args: Any) -> dict[str, Any]:
    return {
        "open": "<f>",
        "close": "</f>",
        "content": "xml-inline",
        "content_args": {"tag_pattern": XML_TAG, **args},
    }


def test_xml_values_types_unescapes_and_unwraps() -> None:
    t = template(
        {"c": xml_field(type_group="s", type_parsers=XML_TYPES, unescape=True, cdata=True)}, ["xml-values"]
    )
    text = (
        '<f><p n="a" s="false">12</p><p n="b" s="true"> 12</p><p n="c">x &amp; &quot;y&quot;</p>'
        '<p n="d"><![CDATA[a</p>&amp;]]></p><p n="e" s="other">[1]</p></f>'
    )
    assert rt.parse_response(text, t, prefix="") == {
        "c": {"a": 12, "b": " 12", "c": 'x & "y"', "d": "a</p>&amp;", "e": "[1]"}
    }


def test_xml_values_falls_back_to_value_parser() -> None:
    t = template(
        {"c": xml_field(type_group="s", type_parsers=XML_TYPES, value_parser={"name": "int"})}, ["xml-values"]
    )
    assert rt.parse_response('<f><p n="a">7</p><p n="b" s="true">7</p></f>', t, prefix="") == {
        "c": {"a": 7, "b": "7"}
    }


def test_xml_values_typed_value_error_names_the_key() -> None:
    t = template({"c": xml_field(type_group="s", type_parsers=XML_TYPES)}, ["xml-values"])
    with pytest.raises(rt.ParseError, match="'a'"):
        rt.parse_response('<f><p n="a" s="false">{bad</p></f>', t, prefix="")


@pytest.mark.parametrize(
    "arg", [{"unescape": True}, {"cdata": True}, {"type_group": "s", "type_parsers": XML_TYPES}]
)
def test_xml_values_without_declaration_names_field_key_and_extension(arg: dict[str, Any]) -> None:
    with pytest.raises(TemplateError) as info:
        rt.load_template(template({"c": xml_field(**arg)}))
    assert (info.value.field, info.value.key) == ("c", "content_args")
    assert '"extensions": ["xml-values"]' in str(info.value)


def test_xml_values_in_a_nested_value_parser_needs_the_declaration() -> None:
    inner = {"name": "xml-inline", "args": {"tag_pattern": XML_TAG, "cdata": True}}
    fields = {"c": {"open": "<f>", "content": "kv-lines", "content_args": {"value_parser": inner}}}
    with pytest.raises(TemplateError, match="xml-values"):
        rt.load_template(template(fields))
    rt.load_template(template(fields, ["xml-values"]))


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        ({"type_group": "s"}, "go together"),
        ({"type_parsers": XML_TYPES}, "go together"),
        ({"type_group": "nope", "type_parsers": XML_TYPES}, "named group"),
        ({"type_group": "key", "type_parsers": XML_TYPES}, "named group"),
        ({"type_group": "s", "type_parsers": {}}, "non-empty object"),
        ({"type_group": "s", "type_parsers": {"true": {"name": "nope"}}}, "type_parsers\\['true'\\]"),
        ({"unescape": "yes"}, "true or false"),
        ({"cdata": 1}, "true or false"),
    ],
)
def test_xml_values_arguments_are_checked_at_load_time(args: dict[str, Any], needle: str) -> None:
    with pytest.raises(TemplateError, match=needle) as info:
        rt.load_template(template({"c": xml_field(**args)}, ["xml-values"]))
    assert (info.value.field, info.value.key) == ("c", "content_args")


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            ['<p n="a" s="false">', "1", "</p>", "<f>", "</f>", "<![CDATA[", "]]>", "&amp;", "x"]
        ),
        max_size=14,
    ),
    st.integers(0, 2**16),
)
def test_xml_values_chunking_never_changes_the_result(words: list[str], seed: int) -> None:
    t = template(
        {
            "c": {
                **xml_field(type_group="s", type_parsers=XML_TYPES, unescape=True, cdata=True),
                "repeats": True,
            },
            "content": {},
        },
        ["xml-values"],
    )
    text = "".join(words)
    try:
        whole = _run(t, [text])
    except rt.ParseError:
        return
    assert _run(t, _pieces(text, random.Random(seed))) == whole


@pytest.mark.parametrize(
    ("name", "text", "arguments"),
    [
        (
            "deepseek-v3.2",
            '<｜DSML｜function_calls>\n<｜DSML｜invoke name="f">\n<｜DSML｜parameter name="zip" string="true">03106'
            '</｜DSML｜parameter>\n<｜DSML｜parameter name="n" string="false">3106</｜DSML｜parameter>\n'
            "</｜DSML｜invoke>\n</｜DSML｜function_calls>",
            {"zip": "03106", "n": 3106},
        ),
        (
            "kimi-k3",
            '<|open|>tools<|sep|><|open|>call tool="f" index="1"<|sep|><|open|>argument key="q" type="string"<|sep|>'
            'say &quot;hi&quot;<|close|>argument<|sep|><|open|>argument key="n" type="integer"<|sep|>5'
            "<|close|>argument<|sep|><|close|>call<|sep|><|close|>tools<|sep|>",
            {"q": 'say "hi"', "n": 5},
        ),
        (
            "minicpm5",
            '<function name="f"><param name="m"><![CDATA[<a>x</a> </param>]]></param></function>',
            {"m": "<a>x</a> </param>"},
        ),
    ],
)
def test_library_templates_that_use_xml_values(name: str, text: str, arguments: dict[str, Any]) -> None:
    fam = library.family(name)
    assert "xml-values" in fam.template().extensions and "E4" in fam.uses
    for size in (len(text), 1, 3):
        p = rt.ResponseParser(fam.template(), prefix=fam.generation_prompt)
        for start in range(0, len(text), size):
            p.feed(text[start : start + size])
        message, _ = p.finalize()
        assert [c["function"]["arguments"] for c in message["tool_calls"]] == [arguments]


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


@settings(max_examples=60, deadline=None)
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


# ------------------------------------------------------------------------------------- json-value-end


def _jv_template(content: str = "text", **extra: Any) -> dict[str, Any]:
    field: dict[str, Any] = {"open": "<j>", "close_json": True, "repeats": True, "content": content, **extra}
    if content == "text":
        field["content_args"] = {"strip": False}
    return template({"j": field, "rest": {"content_args": {"strip": False}}}, ["json-value-end"])


def _run_all(t: dict[str, Any], pieces: list[str]) -> tuple[Any, list[Any], dict[str, str]]:
    """Message (or finalize's error) with every error raised on the way, the open/close events, and the
    chunk text per field. A failing region is reported once the call that closed it has read all its text,
    so all of this is the same for every chunking."""
    p = rt.ResponseParser(t, prefix="")
    events: list[Any] = []
    raised: list[str] = []
    for piece in pieces:
        try:
            events += p.feed(piece)
        except rt.ParseError as exc:
            events += exc.events
            raised.append(str(exc).split(" (")[0])
    try:
        message, final = p.finalize()
        events += final
    except rt.ParseError as exc:
        events += exc.events
        message = ("error", str(exc))
    if raised:
        message = (message, raised)
    chunks: dict[str, str] = {}
    for e in events:
        if isinstance(e, dict) and e["type"] == "region_chunk":
            chunks[e["field"]] = chunks.get(e["field"], "") + e["text"]
    boundaries = [
        e if isinstance(e, tuple) else (e["type"], e["field"], e.get("value"))
        for e in events
        if isinstance(e, tuple) or e["type"] != "region_chunk"
    ]
    return message, boundaries, chunks


_JV_VOCAB = [
    "<j>",
    " ",
    "\n",
    "{",
    "}",
    "[",
    "]",
    '"',
    "\\",
    '"}"',
    "12",
    "true",
    "x",
    ";",
    ",",
    ":",
    '\\"',
    "-3.5e2",
]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from(_JV_VOCAB), max_size=16),
    st.integers(0, 2**16),
    st.sampled_from(["text", "json"]),
)
def test_json_value_end_chunking_never_changes_the_result(words: list[str], seed: int, content: str) -> None:
    t = _jv_template(content)
    text = "".join(words)
    whole = _run_all(t, [text])
    assert _run_all(t, list(text)) == whole
    assert _run_all(t, _pieces(text, random.Random(seed))) == whole
    # Nothing lost: every character is in some region or in an open delimiter.
    message, _, chunks = whole
    if not isinstance(message, tuple):  # after an error the rest is read by later calls
        # (a "<j>" inside a region's JSON string is routed as text, hence >=)
        assert sum(map(len, chunks.values())) + 3 * text.count("<j>") >= len(text)


_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(alphabet='ab"\\}]{[ ;\n\u00e9', max_size=6),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(alphabet='k"}', max_size=3), inner, max_size=3)
    ),
    max_leaves=8,
)


@settings(max_examples=300, deadline=None)
@given(
    _JSON,
    st.sampled_from(["", " ", "\n  "]),
    st.sampled_from([" tail", ";x", "<j>[1] y", "\n", ""]),
    st.integers(0, 2**16),
)
def test_json_value_end_ends_exactly_where_the_value_ends(value: Any, ws: str, after: str, seed: int) -> None:
    import json

    dumped = json.dumps(value, ensure_ascii=False)
    text = "<j>" + ws + dumped + after
    t = _jv_template()
    message, _, _ = _run_all(t, _pieces(text, random.Random(seed)))
    first = ws + dumped
    assert message["j"][0] == first
    # The text after the value goes back to the outer state (another region, or the implicit field).
    rest = after.replace("<j>[1]", "")
    assert message.get("rest", "") == rest
    assert message["j"][1:] == (["[1]"] if "<j>" in after else [])
    parsed = rt.parse_response(text, _jv_template("json"), prefix="")
    assert parsed["j"][0] == value or (value in ({}, [], "", None) and not parsed.get("j"))


def test_json_value_end_scalars_wait_for_the_next_character() -> None:
    p = rt.ResponseParser(_jv_template("json"), prefix="")
    events = p.feed("<j>12")
    assert [e["type"] for e in events] == ["region_open", "region_chunk"]
    events = p.feed("3 ok")
    assert [e for e in events if e["type"] == "region_close"] == [
        {"type": "region_close", "field": "j", "value": [123][0]}
    ]
    message, _ = p.finalize()
    assert message["j"] == [123] and message["rest"] == " ok"
    p = rt.ResponseParser(_jv_template("json"), prefix="")
    p.feed('<j>{"a": 1}')  # an object is final at its closing brace: no wait
    assert p.finalize()[0]["j"] == [{"a": 1}]


def test_json_value_end_malformed_runs_to_the_end_and_the_parser_reports_it() -> None:
    for text in ("<j>{]} more", "<j>) more", '<j>{"a": "unterminated'):
        with pytest.raises(rt.ParseError) as info:
            rt.parse_response(text, _jv_template("json"), prefix="")
        assert info.value.field == "j"
    message = rt.parse_response("<j>{]} more", _jv_template(), prefix="")
    assert message["j"] == ["{]} more"]


@pytest.mark.parametrize(
    ("fields", "key", "needle"),
    [
        ({"j": {"close_json": True}}, "close_json", "implicit"),
        ({"j": {"open": "<j>", "close": "</j>", "close_json": True}}, "close_json", "cannot be combined"),
        ({"j": {"open": "<j>", "close_json": 1}}, "close_json", "true or false"),
    ],
)
def test_json_value_end_rules(fields: dict[str, Any], key: str, needle: str) -> None:
    with pytest.raises(TemplateError, match=needle) as info:
        rt.load_template(template(fields, ["json-value-end"]))
    assert info.value.field == "j" and info.value.key == key


def test_json_value_end_without_declaration_names_field_key_and_extension() -> None:
    with pytest.raises(TemplateError, match="json-value-end") as info:
        rt.load_template(template({"j": {"open": "<j>", "close_json": True}}))
    assert info.value.field == "j" and info.value.key == "close_json"


def test_json_value_end_is_linear() -> None:
    import time

    def cost(n: int) -> float:
        text = "<j>" + '{"a": [' + ", ".join(['"x\\"}]"'] * n) + "]}" + " tail"
        p = rt.ResponseParser(_jv_template("json"), prefix="")
        start = time.perf_counter()
        for i in range(0, len(text), 7):
            p.feed(text[i : i + 7])
        p.finalize()
        return time.perf_counter() - start

    small, big = cost(2000), cost(16000)
    assert big < small * 8 * 4


def test_llama_3_json_ends_each_call_where_its_json_ends() -> None:
    fam = library.family("llama-3-json")
    assert fam.uses == ("E3",) and "json-value-end" in fam.template().extensions
    text = (
        '<|python_tag|>{"name": "f", "parameters": {"q": "a; b } {\\"name\\": x"}}; '
        '{"type": "function", "name": "g", "parameters": {}}<|eom_id|>'
    )
    whole = None
    for size in (len(text), 1, 5):
        p = rt.ResponseParser(fam.template(), prefix=fam.generation_prompt)
        for start in range(0, len(text), size):
            p.feed(text[start : start + size])
        message, _ = p.finalize()
        assert "content" not in message
        assert [c["function"] for c in message["tool_calls"]] == [
            {"name": "f", "arguments": {"q": 'a; b } {"name": x'}},
            {"name": "g", "arguments": {}},
        ]
        whole = whole or message
        assert message == whole
