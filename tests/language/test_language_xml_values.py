"""Extension ``xml-values``: typed, escaped, CDATA and nested XML values (docs/extensions.md; the
``nested`` argument is in ``tests/content/test_content_xml_nested.py``)."""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import response_templates as rt
from extension_templates import pieces as _pieces
from extension_templates import run as _run
from extension_templates import template
from hypothesis_profiles import examples
from response_templates import library
from response_templates.errors import TemplateError

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


@settings(max_examples=examples(60), deadline=None)
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
