"""Nested XML argument values: the ``xml-inline`` argument ``nested`` (extension ``xml-values``, E4)."""

from __future__ import annotations

import itertools
import json
import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import response_templates as rt
from hypothesis_profiles import examples
from response_templates import library
from response_templates.content import MAX_XML_DEPTH, get_content_parser, parse_content
from response_templates.errors import ContentError, TemplateError

# Plain XML: each argument is <key>...</key>, children use the same syntax.
TAG = r"<(?P<key>[A-Za-z_]\w*)(?: type=\"(?P<t>\w+)\")?>(?P<value>.*)</(?P=key)>"
JSON_LEAF = {"name": "json", "args": {"allow_non_json": True}}
TYPES = {"string": {"name": "text", "args": {"strip": False}}, "number": {"name": "float"}}

# MiniMax-M3: every tag is preceded by the separator token.
SEP = "]<]minimax[>["
MM_TAG = r"\]<\]minimax\[>\[<(?P<key>[^/>\s]+)>(?P<value>.*)\]<\]minimax\[>\[</[^>\s]+>"
MM_NESTED = {"tag_prefix": SEP, "item_tag": "item", "leaf_parser": JSON_LEAF}


def xml(text: str, **args: Any) -> Any:
    return parse_content(text, "xml-inline", {"tag_pattern": TAG, "nested": True, **args})


def mm(text: str, **args: Any) -> Any:
    return parse_content(
        text.replace("^", SEP), "xml-inline", {"tag_pattern": MM_TAG, "nested": MM_NESTED, **args}
    )


# ------------------------------------------------------------------------------------------------ rules


def test_children_with_distinct_names_make_an_object() -> None:
    assert xml("<p><x>1</x><y>2</y></p>") == {"p": {"x": "1", "y": "2"}}


def test_two_or_more_children_sharing_one_name_make_an_array() -> None:
    assert xml("<p><v>a</v><v>b</v><v>c</v></p>") == {"p": ["a", "b", "c"]}
    assert xml("<p><v>a</v></p>") == {"p": {"v": "a"}}  # one child without item_tag: an object


def test_item_tag_makes_an_array_even_of_one() -> None:
    assert xml("<p><item>a</item></p>", nested={"item_tag": "item"}) == {"p": ["a"]}
    assert xml("<p><item>a</item><x>b</x></p>", nested={"item_tag": "item"}) == {"p": {"item": "a", "x": "b"}}


def test_deep_nesting_arrays_of_arrays_and_objects() -> None:
    text = "<m><item><item>1</item><item>2</item></item><item><k><z>deep</z></k></item></m>"
    assert xml(text, nested={"item_tag": "item", "leaf_parser": JSON_LEAF}) == {
        "m": [[1, 2], {"k": {"z": "deep"}}]
    }


def test_flat_values_keep_the_flat_rules_exactly() -> None:
    # No value_parser: raw text, not stripped, even when a leaf_parser is given for nested leaves.
    assert xml("<a> 7 </a><b>x</b>", nested={"leaf_parser": JSON_LEAF}) == {"a": " 7 ", "b": "x"}
    flat = {"tag_pattern": TAG, "value_parser": {"name": "int"}}
    text = "<a>1</a><b>2</b>"
    assert parse_content(text, "xml-inline", {**flat, "nested": True}) == parse_content(
        text, "xml-inline", flat
    )


def test_leaves_default_to_the_arguments_parser() -> None:
    assert xml("<p><x>1</x><y>2</y></p>", value_parser={"name": "int"}) == {"p": {"x": 1, "y": 2}}
    # type_group/type_parsers pick the parser of the argument; its leaves use it too
    typed = {"type_group": "t", "type_parsers": TYPES}
    assert xml('<p type="number"><x>1</x></p><q type="string"><x> 1</x></q>', **typed) == {
        "p": {"x": 1.0},
        "q": {"x": " 1"},
    }


def test_leaf_parser_overrides_for_nested_leaves() -> None:
    got = mm("^<n>^<r>1.5^</r>^<i>-2^</i>^<s>hi^</s>^<b>true^</b>^</n>^<flat>5^</flat>")
    assert got == {"n": {"r": 1.5, "i": -2, "s": "hi", "b": True}, "flat": "5"}


def test_whitespace_between_children_is_ignored() -> None:
    assert xml("<p>\n  <x>1</x>\n  <y>2</y>\n</p>") == {"p": {"x": "1", "y": "2"}}
    assert mm("^<p>\n^<x>a^</x>\n^</p>\n") == {"p": {"x": "a"}}


def test_text_mixed_with_children_is_a_leaf_of_the_whole_text() -> None:
    assert xml("<p>say <b>hi</b> now</p>") == {"p": "say <b>hi</b> now"}
    assert xml("<p><x>1</x>tail</p>") == {"p": "<x>1</x>tail"}
    # deeper down too: the mixed element is one leaf
    assert xml("<p><x>a<b>c</b></x><y>2</y></p>") == {"p": {"x": "a<b>c</b>", "y": "2"}}


def test_empty_and_self_closing_children() -> None:
    assert xml("<p><x></x><y/><z /></p>") == {"p": {"x": "", "y": None, "z": None}}


def test_tags_without_the_prefix_are_text() -> None:
    assert mm("^<q>a <b>bold</b> c^</q>") == {"q": "a <b>bold</b> c"}
    assert mm("^<q>^<t><x>^</t>^</q>") == {"q": {"t": "<x>"}}


def test_entities_in_leaves_and_keys() -> None:
    got = xml("<p><x>a &amp; &lt;b&gt;</x><y>&quot;q&quot;</y></p>", unescape=True)
    assert got == {"p": {"x": "a & <b>", "y": '"q"'}}
    assert xml("<p><x>a &amp; b</x></p>") == {"p": {"x": "a &amp; b"}}  # only with unescape


def test_cdata_in_leaves_is_opaque_and_unwrapped() -> None:
    text = "<p><x><![CDATA[</x><y>&amp;]]></x></p>"
    assert xml(text, cdata=True, unescape=True) == {"p": {"x": "</x><y>&amp;"}}
    assert xml(text) == {"p": {"x": "<![CDATA[</x><y>&amp;]]>"}}  # kept verbatim without cdata
    assert xml("<p><![CDATA[<x>1</x>]]></p>", cdata=True) == {"p": "<x>1</x>"}


def test_duplicate_keys_in_an_object_follow_merge_duplicates() -> None:
    text = "<p><a>1</a><b>2</b><a>3</a></p>"
    assert xml(text) == {"p": {"a": "3", "b": "2"}}
    assert xml(text, merge_duplicates=True) == {"p": {"a": ["1", "3"], "b": "2"}}


def test_leaf_parser_errors_name_the_path() -> None:
    with pytest.raises(ContentError, match=r"'p\.x\[1\]'"):
        xml("<p><x><v>1</v><v>z</v></x></p>", value_parser={"name": "int"})


# ------------------------------------------------------------------------------------------------ errors


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("<p><x>1</y></p>", "does not match <x>"),
        ("<p><x>1</p>", "does not match <x>"),
        ("<p><x>1", "never closed"),
        ("</p>", "has no open tag"),
        ("<p>1</p></q>", "has no open tag"),
    ],
)
def test_bad_nesting_is_a_content_error(text: str, needle: str) -> None:
    with pytest.raises(ContentError, match=needle):
        xml(text)


def test_an_element_the_tag_pattern_does_not_match_is_an_error() -> None:
    with pytest.raises(ContentError, match="does not match the whole element"):
        parse_content(
            "<a>1</a><b2>x</b2>",
            "xml-inline",
            {"tag_pattern": r"<(?P<key>a)>(?P<value>.*)</a>", "nested": True},
        )


def test_depth_limit() -> None:
    def deep(levels: int) -> str:
        return "<k>" * levels + "x" + "</k>" * levels

    value: Any = xml(deep(MAX_XML_DEPTH))["k"]
    for _ in range(MAX_XML_DEPTH - 2):
        value = value["k"]
    assert value == {"k": "x"}
    with pytest.raises(ContentError, match=f"more than {MAX_XML_DEPTH} levels"):
        xml(deep(MAX_XML_DEPTH + 1))
    with pytest.raises(ContentError, match="levels"):
        xml("<k>" * 100_000)


@settings(max_examples=examples(200), deadline=None)
@given(st.text(alphabet="<>/ab &;x![]CDAT\n", max_size=60))
def test_arbitrary_text_gives_a_value_or_a_content_error(text: str) -> None:
    try:
        result = xml(text, cdata=True, unescape=True, merge_duplicates=True, nested={"item_tag": "a"})
    except ContentError:
        return
    json.dumps(result)


# ------------------------------------------------------------------------------------- load-time checks


def field(**args: Any) -> dict[str, Any]:
    return {
        "open": "<f>",
        "close": "</f>",
        "content": "xml-inline",
        "content_args": {"tag_pattern": TAG, **args},
    }


def template(fields: dict[str, Any], extensions: list[str] | None = None) -> dict[str, Any]:
    data: dict[str, Any] = {"start_anchor": "<|assistant|>", "fields": fields}
    if extensions is not None:
        data["extensions"] = extensions
    return data


@pytest.mark.parametrize("nested", [True, False, {"item_tag": "item"}])
def test_nested_needs_the_declaration(nested: Any) -> None:
    with pytest.raises(TemplateError) as info:
        rt.load_template(template({"c": field(nested=nested)}))
    assert (info.value.field, info.value.key) == ("c", "content_args")
    assert '"extensions": ["xml-values"]' in str(info.value)
    rt.load_template(template({"c": field(nested=nested)}, ["xml-values"]))


def test_nested_inside_a_value_parser_needs_the_declaration() -> None:
    inner = {"name": "xml-inline", "args": {"tag_pattern": TAG, "nested": True}}
    fields = {"c": {"open": "<f>", "content": "kv-lines", "content_args": {"value_parser": inner}}}
    with pytest.raises(TemplateError, match="xml-values"):
        rt.load_template(template(fields))
    rt.load_template(template(fields, ["xml-values"]))


@pytest.mark.parametrize(
    ("nested", "needle"),
    [
        ("yes", "true, false or an object"),
        (1, "true, false or an object"),
        ({"depth": 3}, "unknown keys 'depth'"),
        ({"tag_prefix": 5}, "tag_prefix"),
        ({"item_tag": ""}, "item_tag"),
        ({"item_tag": "a b"}, "item_tag"),
        ({"item_tag": 3}, "item_tag"),
        ({"leaf_parser": {"name": "nope"}}, "nested.leaf_parser"),
        ({"leaf_parser": "json"}, "nested.leaf_parser"),
    ],
)
def test_nested_is_checked_at_load_time(nested: Any, needle: str) -> None:
    with pytest.raises(TemplateError, match=needle) as info:
        rt.load_template(template({"c": field(nested=nested)}, ["xml-values"]))
    assert (info.value.field, info.value.key) == ("c", "content_args")


def test_validated_args_are_normalized() -> None:
    args = get_content_parser("xml-inline", "c").validate({"tag_pattern": TAG, "nested": True}, "c")
    assert args["nested"] == {"tag_prefix": "", "item_tag": None, "leaf_parser": None}
    assert get_content_parser("xml-inline", "c").validate({"tag_pattern": TAG}, "c")["nested"] is None


# ------------------------------------------------------------------------------------------- streaming


def _pieces(text: str, rng: random.Random) -> list[str]:
    cuts = (
        sorted(rng.sample(range(1, len(text)), min(len(text) - 1, rng.randint(0, 10))))
        if len(text) > 1
        else []
    )
    bounds = [0, *cuts, len(text)]
    return [text[a:b] for a, b in itertools.pairwise(bounds)]


def _run(t: Any, pieces: list[str]) -> Any:
    p = rt.ResponseParser(t, prefix="")
    try:
        for piece in pieces:
            p.feed(piece)
        message, _ = p.finalize()
    except rt.ParseError as exc:
        return ("error", exc.detail)
    return message


STREAM_TEMPLATE = template(
    {
        "c": {
            "open": "<f>",
            "close": "</f>",
            "repeats": True,
            "content": "xml-inline",
            "content_args": {
                "tag_pattern": MM_TAG,
                "nested": MM_NESTED,
                "cdata": True,
                "unescape": True,
            },
        },
        "content": {},
    },
    ["xml-values"],
)


@settings(max_examples=examples(150), deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                SEP,
                "<f>",
                "</f>",
                "<a>",
                "</a>",
                "<item>",
                "</item>",
                "<b>",
                "</b>",
                "1.5",
                "x",
                " ",
                "\n",
                "<![CDATA[",
                "]]>",
                "&amp;",
                "]<]",
                "minimax[",
            ]
        ),
        max_size=24,
    ),
    st.integers(0, 2**16),
)
def test_chunking_never_changes_the_message(words: list[str], seed: int) -> None:
    text = "".join(words)
    assert _run(STREAM_TEMPLATE, _pieces(text, random.Random(seed))) == _run(STREAM_TEMPLATE, [text])


def test_chunking_of_a_well_formed_nested_value() -> None:
    text = (
        f"<f>{SEP}<n>{SEP}<r>1.5{SEP}</r>{SEP}<l>{SEP}<item>a{SEP}</item>{SEP}<item>{SEP}<k>2{SEP}</k>"
        f"{SEP}</item>{SEP}</l>{SEP}</n></f>"
    )
    whole = _run(STREAM_TEMPLATE, [text])
    assert whole["c"] == [{"n": {"r": 1.5, "l": ["a", {"k": 2}]}}]
    for size in (1, 2, 5, 13):
        assert _run(STREAM_TEMPLATE, [text[i : i + size] for i in range(0, len(text), size)]) == whole


# ----------------------------------------------------------------------------------------------- library


@pytest.mark.parametrize(
    ("raw", "arguments"),
    [
        (
            "^<number>^<real>1.5^</real>^<imaginary>-2.5^</imaginary>^</number>",
            {"number": {"real": 1.5, "imaginary": -2.5}},
        ),
        ("^<tags>^<item>alpha^</item>^</tags>^<n>7^</n>", {"tags": ["alpha"], "n": "7"}),
        ("^<m>^<item>^<item>1^</item>^<item>2^</item>^</item>^</m>", {"m": [[1, 2]]}),
        ("^<q>a < b^</q>", {"q": "a < b"}),
    ],
)
def test_minimax_m3_reads_nested_values(raw: str, arguments: dict[str, Any]) -> None:
    fam = library.family("minimax-m3")
    assert "xml-values" in fam.template().extensions and "E4" in fam.uses
    text = f'^<tool_call>\n^<invoke name="f">{raw}^</invoke>\n^</tool_call>'.replace("^", SEP)
    for size in (len(text), 1, 7):
        p = rt.ResponseParser(fam.template(), prefix=fam.generation_prompt)
        for start in range(0, len(text), size):
            p.feed(text[start : start + size])
        message, _ = p.finalize()
        assert [c["function"]["arguments"] for c in message["tool_calls"]] == [arguments]
