"""Tests for the content parsers (docs/spec.md, section 6).

Intended differences from the reference implementation (transformers.utils.chat_parsing), each checked
by the test named after it:

* bool: only true/false/1/0 (any case) are accepted; other text ("yes", "") is a ContentError. The
  reference reads anything else as False. -- test_diff_bool_rejects_other_words
* content_args are checked when the template is loaded: content_args that is not an object, arguments
  of the wrong type (e.g. "strip": "false", which the reference reads as true), empty separators, a
  missing or invalid tag_pattern, a tag_pattern without a key group, and a bad value_parser are
  TemplateErrors naming the field and key. The reference uses truthiness and fails (if at all) only
  while parsing. -- test_diff_args_checked_at_load_time
  Arguments that cannot change the result are ignored as in the reference (unknown names, strip on
  int/float); lint warns about them (tests/content/test_content_args_lenient.py).
* json string_delims: one left-to-right pass; delimiters inside an ordinary "..." string are literal text.
  The reference replaces them anywhere, which can silently change a valid string
  (["a<e>,<e>b"] becomes ["a", "b"] there). -- test_diff_delims_inside_quoted_string_are_literal
* json string_delims: when several opening markers start at the same place, the longest wins; the
  reference applies the pairs one after another in list order. -- test_diff_longest_opening_delimiter_wins
* json string_delims: the text may contain \\x01/\\x02 (the reference uses them as sentinels and refuses
  such text, even with allow_non_json). -- test_diff_control_characters_allowed_with_string_delims
* json: nesting deeper than MAX_JSON_DEPTH (512) is a ContentError mentioning the nesting depth; the
  reference accepts up to Python's recursion limit and then lets RecursionError escape.
  -- test_diff_json_depth_limit
* json allow_non_json: every failure falls back to the stripped text, including too-deep nesting and
  integers longer than Python's digit limit (the reference lets RecursionError / ValueError escape).
  -- test_diff_allow_non_json_covers_every_failure
* json: an unterminated custom-delimited string is a ContentError naming the delimiter (the reference
  reports a generic JSON error after leaving the marker in place). -- test_json_unterminated_delimited_string
* xml-inline: a value group that took no part in a match gives None and is not passed to the
  value_parser (the reference crashed with a value_parser). -- test_diff_xml_nonparticipating_value_is_none
* xml-inline merge_duplicates: a first value that is itself a list stays one item ([[1, 2], 3]); the
  reference appended the later values into that list ([1, 2, 3]).
  -- test_diff_merge_duplicates_keeps_list_values
* xml-inline: a match whose key group took no part is a ContentError (the reference raised a misleading
  "tag_pattern must have a named group 'key'"). -- test_xml_key_group_not_participating
* xml-inline: tag_pattern matching is bounded by REGEX_TIMEOUT; a pattern that backtracks
  catastrophically gives a ContentError instead of hanging. -- test_diff_xml_regex_timeout
* errors: every parse failure is a ContentError (a ValueError subclass); the reference raised ValueError,
  KeyError, TypeError or RecursionError depending on the case. -- the error tests throughout.

Float: whatever Python's float() accepts is accepted, including "nan", "inf", "-Infinity" and "1_0.5",
exactly as in the reference. JSON: NaN/Infinity/-Infinity are accepted, as json.loads does by default.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Mapping
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hypothesis_profiles import examples
from response_templates import content
from response_templates.content import (
    CONTENT_PARSERS,
    MAX_JSON_DEPTH,
    ContentArgs,
    ContentParser,
    get_content_parser,
    parse_content,
    register_content_parser,
)
from response_templates.errors import ContentError, ResponseTemplateError, TemplateError

GEMMA = {"unquoted_keys": True, "string_delims": [['<|"|>', '<|"|>']]}
ESCAPE = {"unquoted_keys": True, "string_delims": [["<escape>", "<escape>"]]}
QWEN_TAG = r"<parameter=(?P<key>[^>\n]+)>\n?(?P<value>.*?)\n?</parameter>"
GLM_TAG = r"<arg_key>(?P<key>.*?)</arg_key>\s*<arg_value>(?P<value>.*?)</arg_value>"
MINIMAX_M3_TAG = r"\]<\]minimax\[>\[<(?P<key>[^/>\s]+)>(?P<value>.*?)\]<\]minimax\[>\[</(?P=key)>"
TAG = r"<(?P<key>\w+)>(?P<value>.*?)</(?P=key)>"
JSON_OR_TEXT = {"name": "json", "args": {"allow_non_json": True}}


def same(a: Any, b: Any) -> bool:
    """Equal values with equal types (True is not 1, 1.0 is not 1) and NaN equal to NaN."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return type(a) is type(b) and json.dumps(a) == json.dumps(b)


def validated(name: str, args: Mapping[str, Any] | None = None, field: str = "f") -> dict:
    return get_content_parser(name, field).validate({} if args is None else args, field)


def nested_list(depth: int) -> str:
    return "[" * depth + "]" * depth


# ------------------------------------------------------------------------------------------ registry


def test_registry_has_the_seed_parsers_and_the_extension_parser() -> None:
    seed = {"text", "int", "float", "bool", "json", "xml-inline", "kv-lines"}
    # python-call-list: the reference's since 5.24; python-calls: an extension (docs/extensions.md)
    assert set(CONTENT_PARSERS) == seed | {"python-call-list", "python-calls"}
    for name, parser in CONTENT_PARSERS.items():
        assert parser.name == name


def test_streamable_flags() -> None:
    streamable = {name for name, parser in CONTENT_PARSERS.items() if parser.streamable}
    assert streamable == {"text", "int", "float", "bool"}


def test_get_content_parser_unknown_name_lists_available() -> None:
    with pytest.raises(TemplateError) as info:
        get_content_parser("yaml", "answer")
    err = info.value
    assert err.field == "answer" and err.key == "content"
    assert "'yaml'" in str(err) and "json" in str(err) and "kv-lines" in str(err)


def test_get_content_parser_non_string_name() -> None:
    with pytest.raises(TemplateError) as info:
        get_content_parser(3, "answer")  # type: ignore[arg-type]
    assert info.value.key == "content" and "3" in str(info.value)


def test_register_content_parser_adds_and_rejects_duplicates(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(content, "CONTENT_PARSERS", dict(CONTENT_PARSERS))

    def validate(args: Any, field: str) -> dict:
        return dict(args)

    upper = ContentParser("upper", True, lambda text, args: text.upper(), validate)
    register_content_parser(upper)
    assert content.get_content_parser("upper", "f") is upper
    assert content.parse_content("abc", "upper", {}) == "ABC"
    with pytest.raises(ValueError, match="'upper' is already registered"):
        register_content_parser(upper)
    with pytest.raises(ValueError, match="'json' is already registered"):
        register_content_parser(ContentParser("json", False, lambda t, a: t, validate))
    with pytest.raises(TypeError, match="ContentParser"):
        register_content_parser("upper")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="non-empty"):
        register_content_parser(ContentParser("", False, lambda t, a: t, validate))


def test_registered_parser_usable_as_value_parser(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(content, "CONTENT_PARSERS", dict(CONTENT_PARSERS))
    register_content_parser(ContentParser("upper", True, lambda text, args: text.upper(), lambda a, f: {}))
    args = {"value_parser": {"name": "upper"}}
    assert content.parse_content("a: x\nb: y", "kv-lines", args) == {"a": "X", "b": "Y"}


def test_validate_returns_normalized_content_args() -> None:
    args = validated("json")
    assert isinstance(args, ContentArgs)
    assert args["unquoted_keys"] is False and args["allow_non_json"] is False and args["string_delims"] == []
    assert validated("text") == {"strip": True}
    assert validated("kv-lines")["line_sep"] == "\n"
    assert validated("kv-lines")["kv_sep"] == ":"


def test_parse_accepts_plain_dict_args() -> None:
    # parse functions re-validate args that did not come from validate
    parser = get_content_parser("xml-inline", "f")
    assert parser.parse("<a>1</a>", {"tag_pattern": r"<(?P<key>\w+)>(?P<value>.*?)</\w+>"}) == {"a": "1"}
    assert get_content_parser("text", "f").parse(" x ", {"strip": False}) == " x "
    assert get_content_parser("json", "f").parse("{a: 1}", {"unquoted_keys": True}) == {"a": 1}


def test_parse_content_rejects_non_string_text() -> None:
    with pytest.raises(ContentError, match="string"):
        parse_content(b"1", "int", {})  # type: ignore[arg-type]


def test_parse_content_unknown_parser() -> None:
    with pytest.raises(TemplateError, match="unknown content parser 'nope'"):
        parse_content("x", "nope", {})


# ------------------------------------------------------------------------------ content_args checking


@pytest.mark.parametrize("name", sorted(["text", "int", "float", "bool", "json", "kv-lines"]))
def test_unknown_arg_is_ignored(name: str) -> None:
    # As in the reference; lint reports it (tests/content/test_content_args_lenient.py).
    assert validated(name, {"bogus_arg": 1}, field="answer") == validated(name, {}, field="answer")


def test_unknown_arg_is_ignored_xml_inline() -> None:
    pattern = "(?P<key>a)(?P<value>b)"
    assert validated("xml-inline", {"tag_pattern": pattern, "extra": True}) == validated(
        "xml-inline", {"tag_pattern": pattern}
    )


@pytest.mark.parametrize("name", sorted(CONTENT_PARSERS))
@pytest.mark.parametrize("bad", [None, [], "strip", 3])
def test_content_args_must_be_an_object(name: str, bad: Any) -> None:
    with pytest.raises(TemplateError) as info:
        get_content_parser(name, "answer").validate(bad, "answer")
    assert info.value.key == "content_args" and "content_args must be an object" in str(info.value)


@pytest.mark.parametrize(
    ("name", "args", "needle"),
    [
        ("text", {"strip": "false"}, "'strip'"),
        ("text", {"strip": 0}, "'strip'"),
        ("json", {"unquoted_keys": 1}, "'unquoted_keys'"),
        ("json", {"allow_non_json": "yes"}, "'allow_non_json'"),
        ("json", {"string_delims": "<e>"}, "'string_delims'"),
        ("json", {"string_delims": [["<e>"]]}, "item 0"),
        ("json", {"string_delims": [["<e>", ""]]}, "item 0"),
        ("json", {"string_delims": [["<e>", "<e>"], ["a", "b", "c"]]}, "item 1"),
        ("json", {"string_delims": [["<e>", 5]]}, "item 0"),
        ("json", {"string_delims": ["ab"]}, "item 0"),
        ("json", {"strip": "no"}, "'strip'"),
        ("bool", {"strip": 1}, "'strip'"),
        ("kv-lines", {"line_sep": ""}, "'line_sep'"),
        ("kv-lines", {"kv_sep": ""}, "'kv_sep'"),
        ("kv-lines", {"kv_sep": 1}, "'kv_sep'"),
        ("kv-lines", {"strip": None}, "'strip'"),
        ("xml-inline", {}, "requires content_args 'tag_pattern'"),
        ("xml-inline", {"tag_pattern": ""}, "'tag_pattern'"),
        ("xml-inline", {"tag_pattern": 5}, "'tag_pattern'"),
        ("xml-inline", {"tag_pattern": "(?P<key>a"}, "not a valid regex"),
        ("xml-inline", {"tag_pattern": "(a)(?P<value>b)"}, "(?P<key>...)"),
        (
            "xml-inline",
            {"tag_pattern": "(?P<key>a)(?P<value>b)", "merge_duplicates": "1"},
            "'merge_duplicates'",
        ),
    ],
)
def test_bad_arg_values(name: str, args: dict, needle: str) -> None:
    with pytest.raises(TemplateError) as info:
        validated(name, args, field="calls")
    assert info.value.field == "calls" and info.value.key == "content_args"
    assert needle in str(info.value)


def test_string_delims_accept_tuples_and_empty_list() -> None:
    assert validated("json", {"string_delims": []})["string_delims"] == []
    assert validated("json", {"string_delims": [("<e>", "</e>")]})["string_delims"] == [["<e>", "</e>"]]


@pytest.mark.parametrize(
    ("spec", "needle"),
    [
        ("json", "must be an object"),
        ({"name": "nope"}, "unknown content parser 'nope'"),
        ({"name": 5}, "unknown content parser 5"),
        ({"name": "json", "args": []}, "content_args must be an object"),
        ({"name": "xml-inline", "args": {"tag_pattern": "(?P<value>x)"}}, "(?P<key>...)"),
    ],
)
@pytest.mark.parametrize("owner", ["xml-inline", "kv-lines"])
def test_bad_value_parser(spec: Any, needle: str, owner: str) -> None:
    args: dict[str, Any] = {"value_parser": spec}
    if owner == "xml-inline":
        args["tag_pattern"] = "(?P<key>a)(?P<value>b)"
    with pytest.raises(TemplateError) as info:
        validated(owner, args, field="calls")
    assert info.value.field == "calls" and info.value.key == "content_args"
    assert needle in str(info.value) and "value_parser" in str(info.value)


def test_value_parser_nesting_is_bounded() -> None:
    spec: dict[str, Any] = {"name": "text"}
    for _ in range(50):
        spec = {"name": "kv-lines", "args": {"value_parser": spec}}
    with pytest.raises(TemplateError, match="nested more than"):
        validated("kv-lines", {"value_parser": spec})


def test_value_parser_defaults_to_text() -> None:
    # as in the reference, a value_parser without a name is the text parser
    assert parse_content("a:  x  ", "kv-lines", {"value_parser": {"args": {"strip": False}}}) == {"a": "x"}
    assert parse_content("<a> x </a>", "xml-inline", {
        "tag_pattern": r"<(?P<key>\w+)>(?P<value>.*?)</\w+>", "value_parser": {}}) == {"a": "x"}  # fmt: skip


def test_value_parser_null_means_none() -> None:
    args = {"tag_pattern": r"<(?P<key>\w+)>(?P<value>.*?)</\w+>", "value_parser": None}
    assert parse_content("<a> 1 </a>", "xml-inline", args) == {"a": " 1 "}


# ------------------------------------------------------------------------------------- scalar parsers


def test_text_strips_by_default() -> None:
    assert parse_content("\n  hello world \t\n", "text", {}) == "hello world"


def test_text_strip_false_keeps_everything() -> None:
    assert parse_content("\n  hello \n", "text", {"strip": False}) == "\n  hello \n"


@pytest.mark.parametrize(("raw", "value"), [("42", 42), (" -7\n", -7), ("+3", 3), ("1_000", 1000), ("0", 0)])
def test_int(raw: str, value: int) -> None:
    assert same(parse_content(raw, "int", {}), value)


@pytest.mark.parametrize("raw", ["abc", "3.0", "", "  ", "1e3", "0x10"])
def test_int_errors_name_the_text(raw: str) -> None:
    with pytest.raises(ContentError) as info:
        parse_content(raw, "int", {})
    assert "int" in str(info.value) and repr(raw.strip()) in str(info.value)


def test_int_too_many_digits() -> None:
    with pytest.raises(ContentError, match="more digits"):
        parse_content("9" * 5000, "int", {})


def test_long_text_is_shortened_in_messages() -> None:
    with pytest.raises(ContentError) as info:
        parse_content("x" * 10_000, "int", {})
    assert len(str(info.value)) < 300 and "10000 characters" in str(info.value)


@pytest.mark.parametrize(
    ("raw", "value"),
    [("1.5", 1.5), (" -2e3 ", -2000.0), ("3", 3.0), (".5", 0.5), ("1_0.5", 10.5), ("inf", math.inf),
     ("-Infinity", -math.inf), ("nan", math.nan), ("NaN", math.nan)],
)  # fmt: skip
def test_float(raw: str, value: float) -> None:
    assert same(parse_content(raw, "float", {}), value)


@pytest.mark.parametrize("raw", ["x", "", "1.2.3", "1,5"])
def test_float_errors_name_the_text(raw: str) -> None:
    with pytest.raises(ContentError) as info:
        parse_content(raw, "float", {})
    assert "float" in str(info.value) and repr(raw) in str(info.value)


@pytest.mark.parametrize(
    ("raw", "value"),
    [("true", True), ("TRUE", True), (" True\n", True), ("1", True), ("false", False), ("FaLsE", False),
     ("0", False), (" 0 ", False)],
)  # fmt: skip
def test_bool(raw: str, value: bool) -> None:
    assert parse_content(raw, "bool", {}) is value


@pytest.mark.parametrize("raw", ["yes", "no", "", "2", "truth", "t", "on"])
def test_diff_bool_rejects_other_words(raw: str) -> None:
    with pytest.raises(ContentError) as info:
        parse_content(raw, "bool", {})
    assert "true, false, 1 or 0" in str(info.value) and repr(raw) in str(info.value)


@pytest.mark.parametrize("name", ["int", "float"])
def test_numbers_ignore_strip(name: str) -> None:
    # int() and float() ignore the whitespace that strip removes, so strip cannot change the result.
    assert validated(name, {"strip": False}) == validated(name, {}) == {}
    assert parse_content(" 1\n", name, {"strip": False}) == parse_content(" 1\n", name, {})


def test_diff_args_checked_at_load_time() -> None:
    # The reference would accept all of these and only misbehave (or not) while parsing.
    for name, args in [
        ("text", {"strip": "no"}),
        ("json", {"unquoted_keys": "yes"}),
        ("xml-inline", {"tag_pattern": r"<(?P<value>\w+)>"}),
        ("kv-lines", {"value_parser": {"name": "yaml"}}),
    ]:
        with pytest.raises(TemplateError):
            validated(name, args)


def test_errors_are_value_errors() -> None:
    with pytest.raises(ValueError):
        parse_content("x", "int", {})
    assert issubclass(ContentError, ResponseTemplateError)


# ----------------------------------------------------------------------------------------------- json


@pytest.mark.parametrize(
    ("raw", "value"),
    [
        ('{"a": 1}', {"a": 1}),
        ('  [1, 2.5, "x", null, true]\n', [1, 2.5, "x", None, True]),
        ('"just a string"', "just a string"),
        ("3", 3),
        ('{"a": {"b": [1, {"c": null}]}}', {"a": {"b": [1, {"c": None}]}}),
    ],
)
def test_json_standard(raw: str, value: Any) -> None:
    assert same(parse_content(raw, "json", {}), value)


def test_json_non_finite_numbers_accepted_like_json_loads() -> None:
    result = parse_content("[NaN, Infinity, -Infinity]", "json", {})
    assert math.isnan(result[0]) and result[1:] == [math.inf, -math.inf]


@pytest.mark.parametrize("raw", ["", "not json", '{"a": 1,}', "{'a': 1}", '{"a": 1} trailing', "[1, 2"])
def test_json_errors_are_content_errors(raw: str) -> None:
    with pytest.raises(ContentError, match="json: invalid JSON") as info:
        parse_content(raw, "json", {})
    assert "line 1 column" in str(info.value)


def test_json_error_mentions_rewritten_text() -> None:
    with pytest.raises(ContentError) as info:
        parse_content("{a: }", "json", {"unquoted_keys": True})
    assert "after rewriting" in str(info.value) and '{"a": }' in str(info.value)


def test_json_integer_too_long() -> None:
    with pytest.raises(ContentError, match="json:"):
        parse_content("[" + "1" * 5000 + "]", "json", {})


@pytest.mark.parametrize(
    ("raw", "args", "value"),
    [
        ('{name: "foo"}', {"unquoted_keys": True}, {"name": "foo"}),
        ("{a:1,b:{c:[1,2]}}", {"unquoted_keys": True}, {"a": 1, "b": {"c": [1, 2]}}),
        ('{"a": 1, b: 2}', {"unquoted_keys": True}, {"a": 1, "b": 2}),
        ("{名前:1}", {"unquoted_keys": True}, {"名前": 1}),
        ("{_x1:true,y_:null}", {"unquoted_keys": True}, {"_x1": True, "y_": None}),
        ('{"already": "quoted"}', {"unquoted_keys": True}, {"already": "quoted"}),
        ("[1, 2]", {"unquoted_keys": True}, [1, 2]),
    ],
)
def test_json_unquoted_keys(raw: str, args: dict, value: Any) -> None:
    assert same(parse_content(raw, "json", args), value)


def test_json_unquoted_keys_off_by_default() -> None:
    with pytest.raises(ContentError):
        parse_content('{name: "foo"}', "json", {})


def test_diff_unquoted_keys_leave_strings_alone() -> None:
    args = {"unquoted_keys": True}
    assert parse_content('{"code": "{x:1}"}', "json", args) == {"code": "{x:1}"}
    assert parse_content('{a:"x,b:y"}', "json", args) == {"a": "x,b:y"}
    assert parse_content('{a: "say \\"{b:1}\\", c:2"}', "json", args) == {"a": 'say "{b:1}", c:2'}
    # inside custom-delimited strings too
    assert parse_content('{a:<|"|>{b:1},c:2<|"|>}', "json", GEMMA) == {"a": "{b:1},c:2"}


def test_diff_unquoted_keys_allow_whitespace() -> None:
    args = {"unquoted_keys": True}
    assert parse_content("{ a : 1,\n  b: 2 }", "json", args) == {"a": 1, "b": 2}
    assert parse_content("{\ta\t:\t[1]}", "json", args) == {"a": [1]}


@pytest.mark.parametrize(
    ("raw", "args", "value"),
    [
        ('{location:<|"|>Paris, "FR"<|"|>,unit:<|"|>celsius<|"|>}', GEMMA,
         {"location": 'Paris, "FR"', "unit": "celsius"}),
        ('{a:<|"|>line1\nline2\t\\n<|"|>}', GEMMA, {"a": "line1\nline2\t\\n"}),
        ('{xs:[<|"|>a<|"|>,<|"|>b<|"|>],n:3}', GEMMA, {"xs": ["a", "b"], "n": 3}),
        ('{<|"|>quoted key<|"|>:1}', GEMMA, {"quoted key": 1}),
        ("{path:<escape>C:\\dir\\file<escape>}", ESCAPE, {"path": "C:\\dir\\file"}),
        ("[<e>a<e>, <e>b<e>]", {"string_delims": [["<e>", "</e>"], ["<e>", "<e>"]]}, None),
        ("[<s>a</s>, <s></s>]", {"string_delims": [["<s>", "</s>"]]}, ["a", ""]),
        ('{a:<|"|>\x00\x1f<|"|>}', GEMMA, {"a": "\x00\x1f"}),
    ],
)  # fmt: skip
def test_json_string_delims(raw: str, args: dict, value: Any) -> None:
    if value is None:  # first pair with a given opener wins: "<e>a<e>, <e>b<e>" has no "</e>"
        with pytest.raises(ContentError, match="never closed"):
            parse_content(raw, "json", args)
    else:
        assert same(parse_content(raw, "json", args), value)


def test_json_unterminated_delimited_string() -> None:
    with pytest.raises(ContentError) as info:
        parse_content('{a:<|"|>oops}', "json", GEMMA)
    assert "'<|\"|>'" in str(info.value) and "never closed" in str(info.value)


def test_diff_delims_inside_quoted_string_are_literal() -> None:
    args = {"string_delims": [["<e>", "<e>"]]}
    assert parse_content('["a<e>,<e>b"]', "json", args) == ["a<e>,<e>b"]
    assert parse_content('{"k": "x<e>y<e>z", "v": <e>w<e>}', "json", args) == {"k": "x<e>y<e>z", "v": "w"}


def test_diff_longest_opening_delimiter_wins() -> None:
    args = {"string_delims": [["<", ">"], ["<<", ">>"]]}
    assert parse_content("[<<a>>, <b>]", "json", args) == ["a", "b"]


def test_diff_control_characters_allowed_with_string_delims() -> None:
    assert parse_content('{a:<|"|>x\x01y\x02<|"|>}', "json", GEMMA) == {"a": "x\x01y\x02"}


def test_json_allow_non_json_returns_stripped_text() -> None:
    args = {"allow_non_json": True}
    assert parse_content("  Paris, France \n", "json", args) == "Paris, France"
    assert parse_content(' {"a": 1} ', "json", args) == {"a": 1}
    assert parse_content("", "json", args) == ""
    assert parse_content('{a:<|"|>unterminated ', "json", {**GEMMA, "allow_non_json": True}) == (
        '{a:<|"|>unterminated'
    )


def test_diff_json_depth_limit() -> None:
    assert MAX_JSON_DEPTH == 512
    deep_ok = parse_content(nested_list(MAX_JSON_DEPTH), "json", {})
    assert isinstance(deep_ok, list)
    for text in [
        nested_list(MAX_JSON_DEPTH + 1),
        nested_list(900),
        "[" * 100_000,
        '{"a":' * 600 + "1" + "}" * 600,
    ]:
        with pytest.raises(ContentError, match="nesting depth") as info:
            parse_content(text, "json", {})
        assert "512" in str(info.value)


def test_json_depth_limit_with_dialect() -> None:
    with pytest.raises(ContentError, match="nesting depth"):
        parse_content("{a:" * 600 + "1" + "}" * 600, "json", {"unquoted_keys": True})


def test_json_many_brackets_but_shallow_is_fine() -> None:
    text = "[" + ",".join(["[]"] * 2000) + "]"
    assert len(parse_content(text, "json", {})) == 2000


def test_diff_allow_non_json_covers_every_failure() -> None:
    args = {"allow_non_json": True}
    assert parse_content(" " + "[" * 100_000, "json", args) == "[" * 100_000
    assert parse_content(nested_list(600), "json", args) == nested_list(600)
    assert parse_content("1" * 5000, "json", args) == "1" * 5000


def test_json_large_input_is_linear_enough() -> None:
    value = {f"k{i}": "v, x: {y}" * 5 for i in range(20_000)}
    text = json.dumps(value)
    bare = "{" + ",".join(f"{k}:<e>{v}<e>" for k, v in value.items()) + "}"
    start = time.perf_counter()
    assert parse_content(text, "json", {"unquoted_keys": True}) == value
    assert parse_content(bare, "json", {"unquoted_keys": True, "string_delims": [["<e>", "<e>"]]}) == value
    assert time.perf_counter() - start < 5


def test_json_escaped_quote_handling_in_scanner() -> None:
    args = {"unquoted_keys": True}
    assert parse_content('{a: "x\\\\", b: "y\\"z: w"}', "json", args) == {"a": "x\\", "b": 'y"z: w'}
    assert parse_content('{a: "\\\\\\"c:1"}', "json", args) == {"a": '\\"c:1'}


# ---------------------------------------------------------------------------------------- xml-inline


def test_xml_inline_qwen3_coder() -> None:
    text = "<parameter=city>\nParis\n</parameter>\n<parameter=days>\n3\n</parameter>\n"
    assert parse_content(text, "xml-inline", {"tag_pattern": QWEN_TAG}) == {"city": "Paris", "days": "3"}


def test_xml_inline_with_json_value_parser() -> None:
    text = (
        "<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n"
        "<arg_key>days</arg_key><arg_value>3</arg_value>"
        '<arg_key>opts</arg_key><arg_value>{"a": [1]}</arg_value>'
    )
    args = {"tag_pattern": GLM_TAG, "value_parser": JSON_OR_TEXT}
    assert parse_content(text, "xml-inline", args) == {"city": "Paris", "days": 3, "opts": {"a": [1]}}


def test_xml_inline_backreference_pattern() -> None:
    text = "]<]minimax[>[<city>Paris]<]minimax[>[</city>]<]minimax[>[<n>2]<]minimax[>[</n>"
    args = {"tag_pattern": MINIMAX_M3_TAG, "value_parser": JSON_OR_TEXT}
    assert parse_content(text, "xml-inline", args) == {"city": "Paris", "n": 2}


def test_xml_inline_dotall_and_no_matches() -> None:
    args = {"tag_pattern": TAG}
    assert parse_content("<a>x\ny</a>", "xml-inline", args) == {"a": "x\ny"}
    assert parse_content(" \n\t", "xml-inline", args) == {}
    with pytest.raises(ContentError, match="outside every tag"):  # xml-inline-unread-text
        parse_content("no tags here", "xml-inline", args)


def test_xml_inline_duplicates_overwrite_by_default() -> None:
    args = {"tag_pattern": TAG}
    assert parse_content("<a>1</a><a>2</a>", "xml-inline", args) == {"a": "2"}


def test_xml_inline_merge_duplicates() -> None:
    args = {"tag_pattern": TAG, "merge_duplicates": True}
    assert parse_content("<a>1</a><b>x</b><a>2</a><a>3</a>", "xml-inline", args) == {
        "a": ["1", "2", "3"],
        "b": "x",
    }


def test_diff_merge_duplicates_keeps_list_values() -> None:
    args = {
        "tag_pattern": TAG,
        "merge_duplicates": True,
        "value_parser": {"name": "json"},
    }
    assert parse_content("<a>[1, 2]</a><a>3</a>", "xml-inline", args) == {"a": [[1, 2], 3]}
    assert parse_content("<a>[1]</a><a>[2]</a><a>[]</a>", "xml-inline", args) == {"a": [[1], [2], []]}


def test_diff_xml_nonparticipating_value_is_none() -> None:
    args = {"tag_pattern": r"<(?P<key>\w+)(?:/>|>(?P<value>.*?)</(?P=key)>)", "value_parser": {"name": "int"}}
    assert parse_content("<a/><b>2</b>", "xml-inline", args) == {"a": None, "b": 2}


def test_xml_key_group_not_participating() -> None:
    args = {"tag_pattern": r"(?:<(?P<key>\w+)>|<>)(?P<value>\w*);"}
    with pytest.raises(ContentError, match="'key' group took no part"):
        parse_content("<>x;", "xml-inline", args)


def test_xml_value_parser_error_names_key() -> None:
    args = {"tag_pattern": TAG, "value_parser": {"name": "int"}}
    with pytest.raises(ContentError) as info:
        parse_content("<count>many</count>", "xml-inline", args)
    assert "'count'" in str(info.value) and "'many'" in str(info.value)


def test_xml_inline_precompiles_pattern() -> None:
    args = validated("xml-inline", {"tag_pattern": r"<(?P<key>\w+)>(?P<value>.*?)</\w+>"})
    assert hasattr(args["_tag_re"], "finditer")
    assert args["value_parser"] is None


def test_diff_xml_regex_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(content, "REGEX_TIMEOUT", 0.05)
    args = {"tag_pattern": r"(?P<key>(?:a|aa)+)c(?P<value>)"}
    start = time.perf_counter()
    with pytest.raises(ContentError, match="ran longer than"):
        parse_content("a" * 80, "xml-inline", args)
    assert time.perf_counter() - start < 5


def test_nested_xml_inline_value_parser() -> None:
    inner = {"name": "xml-inline", "args": {"tag_pattern": r"\[(?P<key>\w+)=(?P<value>[^\]]*)\]"}}
    args = {"tag_pattern": TAG, "value_parser": inner}
    assert parse_content("<a>[x=1][y=2]</a>", "xml-inline", args) == {"a": {"x": "1", "y": "2"}}


# ------------------------------------------------------------------------------------------- kv-lines


def test_kv_lines_basic() -> None:
    text = "name: Ada\n\n  lang :  python  \n \t\n"
    assert parse_content(text, "kv-lines", {}) == {"name": "Ada", "lang": "python"}
    with pytest.raises(
        ContentError, match="line 3 'no separator here' has no separator"
    ):  # kv-lines-unread-line
        parse_content("name: Ada\n\nno separator here\n", "kv-lines", {})


def test_kv_lines_splits_at_first_separator() -> None:
    assert parse_content("url: http://x:80/", "kv-lines", {}) == {"url": "http://x:80/"}


def test_kv_lines_custom_separators_and_no_strip() -> None:
    assert parse_content("a=1;b = 2;;", "kv-lines", {"line_sep": ";", "kv_sep": "="}) == {"a": "1", "b": "2"}
    assert parse_content(" a = 1 \n", "kv-lines", {"kv_sep": "=", "strip": False}) == {" a ": " 1 "}


def test_kv_lines_value_parser_and_error() -> None:
    args = {"value_parser": {"name": "int"}}
    assert parse_content("a: 1\nb: 2", "kv-lines", args) == {"a": 1, "b": 2}
    with pytest.raises(ContentError) as info:
        parse_content("a: 1\nb: two", "kv-lines", args)
    assert "'b'" in str(info.value) and "'two'" in str(info.value)


def test_kv_lines_later_duplicate_wins() -> None:
    assert parse_content("a: 1\na: 2", "kv-lines", {}) == {"a": "2"}


# --------------------------------------------------------------------- differential against reference

ref_parsers = pytest.importorskip("transformers.utils.chat_parsing.content_parsers")

DIFFERENTIAL_CASES: list[tuple[str, dict, str]] = [
    # text
    ("text", {}, "  hi  "),
    ("text", {"strip": False}, " hi \n"),
    ("text", {}, ""),
    ("text", {}, "\n\tmulti\nline\n"),
    ("text", {}, "ünïcode\u3000"),
    ("text", {"strip": True}, "<b>markup</b>"),
    # int
    ("int", {}, "42"),
    ("int", {}, " -7 \n"),
    ("int", {}, "+3"),
    ("int", {}, "1_000"),
    ("int", {}, "٣"),
    ("int", {}, "abc"),
    ("int", {}, "3.0"),
    ("int", {}, ""),
    # float
    ("float", {}, "1.5"),
    ("float", {}, " -2e3 "),
    ("float", {}, "nan"),
    ("float", {}, "inf"),
    ("float", {}, "-Infinity"),
    ("float", {}, "1_0.5"),
    ("float", {}, ".5"),
    ("float", {}, "x"),
    ("float", {}, ""),
    # bool (the inputs the reference handles correctly)
    ("bool", {}, "true"),
    ("bool", {}, "FALSE"),
    ("bool", {}, " True\n"),
    ("bool", {}, "1"),
    ("bool", {}, "0"),
    ("bool", {}, "tRuE"),
    # json
    ("json", {}, '{"a": 1}'),
    ("json", {}, '[1, 2.5, "x", null, true]'),
    ("json", {}, ' "str" '),
    ("json", {}, "3"),
    ("json", {}, "NaN"),
    ("json", {}, "[Infinity, -Infinity]"),
    ("json", {}, '{"a": {"b": [1, {"c": null}]}}'),
    ("json", {}, '{"x": "\\u00e9\\n"}'),
    ("json", {}, '{"a":1,}'),
    ("json", {}, ""),
    ("json", {}, "not json"),
    ("json", {"allow_non_json": True}, "  not json  "),
    ("json", {"allow_non_json": True}, '{"ok": true}'),
    ("json", {"allow_non_json": True}, "{broken"),
    ("json", {"unquoted_keys": True}, '{a:1,b:"two"}'),
    ("json", {"unquoted_keys": True}, "{a:{b:[1,2]}}"),
    ("json", {"unquoted_keys": True}, '{"a":1,b:2}'),
    ("json", {"unquoted_keys": True}, "{_x1:true}"),
    ("json", {"unquoted_keys": True}, "{名前:1}"),
    ("json", {"unquoted_keys": True}, "{1:2}"),
    ("json", {"unquoted_keys": True}, '{"plain": "json"}'),
    ("json", {"unquoted_keys": True}, "[1,2,3]"),
    ("json", {"unquoted_keys": True}, "{a:}"),
    ("json", {"unquoted_keys": True, "allow_non_json": True}, " {a: oops "),
    ("json", GEMMA, '{location:<|"|>Paris, "FR"<|"|>,unit:<|"|>celsius<|"|>}'),
    ("json", GEMMA, '{xs:[<|"|>a<|"|>,<|"|>b<|"|>],n:3,ok:true}'),
    ("json", GEMMA, '{a:<|"|>multi\nline {b:1}<|"|>}'),
    ("json", ESCAPE, "{path:<escape>C:\\dir\\file<escape>}"),
    ("json", ESCAPE, "{q:<escape>say \"hi\"<escape>,n:null}"),
    ("json", {"string_delims": [["<s>", "</s>"]]}, "[<s>a</s>, <s></s>]"),
    ("json", {"string_delims": [["<s>", "</s>"]]}, '{"k": <s>v</s>}'),
    ("json", {"string_delims": [["<s>", "</s>"], ["<t>", "</t>"]]}, "[<s>a</s>, <t>b</t>]"),
    # xml-inline
    ("xml-inline", {"tag_pattern": QWEN_TAG},
     "<parameter=city>\nParis\n</parameter>\n<parameter=n>\n3\n</parameter>"),
    ("xml-inline", {"tag_pattern": GLM_TAG, "value_parser": JSON_OR_TEXT},
     "<arg_key>city</arg_key>\n<arg_value>Paris</arg_value><arg_key>n</arg_key><arg_value>[1]</arg_value>"),
    ("xml-inline", {"tag_pattern": MINIMAX_M3_TAG, "value_parser": JSON_OR_TEXT},
     "]<]minimax[>[<city>Paris]<]minimax[>[</city>]<]minimax[>[<n>2]<]minimax[>[</n>"),
    ("xml-inline", {"tag_pattern": TAG, "merge_duplicates": True},
     "<a>1</a><b>x</b><a>2</a><a>3</a>"),
    ("xml-inline", {"tag_pattern": TAG}, "<a>1</a><a>2</a>"),
    ("xml-inline", {"tag_pattern": TAG}, " \n "),
    ("xml-inline", {"tag_pattern": TAG, "value_parser": {"name": "int"}},
     "<a> 1 </a><b>2</b>"),
    ("xml-inline", {"tag_pattern": TAG, "value_parser": {"name": "int"}},
     "<a>one</a>"),
    ("xml-inline", {"tag_pattern": TAG,
                    "value_parser": {"name": "kv-lines"}}, "<a>x: 1\ny: 2</a>"),
    # kv-lines
    ("kv-lines", {}, "a: 1\nb: 2"),
    ("kv-lines", {}, "name: Ada\n\n  lang :  python  \n \n"),
    ("kv-lines", {}, "url: http://x:80/"),
    ("kv-lines", {"line_sep": ";", "kv_sep": "="}, "a=1;b = 2;; ;c=3"),
    ("kv-lines", {"kv_sep": "=", "strip": False}, " a = 1 \n"),
    ("kv-lines", {"value_parser": {"name": "int"}}, "a: 1\nb: 2"),
    ("kv-lines", {"value_parser": {"name": "json", "args": {"allow_non_json": True}}}, "a: [1]\nb: text"),
    ("kv-lines", {}, "a: 1\na: 2\r\nb: 3\r\n"),
    ("kv-lines", {}, ": empty key"),
    ("kv-lines", {"value_parser": {"name": "bool"}}, "x: true\ny: 0"),
]  # fmt: skip


def test_enough_differential_cases() -> None:
    assert len(DIFFERENTIAL_CASES) >= 60
    # The reference implements the seed parsers only; extension parsers are tested in tests/language/.
    # python-call-list has its own differential suite (tests/content/test_python_call_list.py).
    assert {name for name, _, _ in DIFFERENTIAL_CASES} == set(CONTENT_PARSERS) - {
        "python-calls",
        "python-call-list",
    }


@pytest.mark.parametrize(("name", "args", "text"), DIFFERENTIAL_CASES)
def test_matches_reference(name: str, args: dict, text: str) -> None:
    try:
        expected = ref_parsers.parse_content(text, name, args)
    except Exception:
        with pytest.raises(ContentError):
            parse_content(text, name, args)
        return
    assert same(parse_content(text, name, args), expected)


# ------------------------------------------------------------------------------------------ properties


@given(st.text())
def test_prop_text_round_trip(text: str) -> None:
    assert parse_content(text, "text", {"strip": False}) == text
    assert parse_content(text, "text", {}) == text.strip()


@given(st.integers())
def test_prop_int_round_trip(value: int) -> None:
    assert parse_content(f" {value}\n", "int", {}) == value


@given(st.floats())
def test_prop_float_round_trip(value: float) -> None:
    assert same(parse_content(repr(value), "float", {}), value)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(), children, max_size=4),
    max_leaves=20,
)


@given(json_values, st.booleans())
def test_prop_json_equals_json_loads(value: Any, unquoted: bool) -> None:
    text = json.dumps(value)
    # unquoted_keys never changes standard JSON, whatever its strings contain
    assert same(parse_content(text, "json", {"unquoted_keys": unquoted}), json.loads(text))


identifiers = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,8}", fullmatch=True)
tricky_text = st.lists(st.sampled_from([*'ab{},:"\\ \n[]', "x:", "{y:", ",z:"]), max_size=12).map("".join)


@given(st.dictionaries(identifiers, tricky_text, max_size=5))
def test_prop_unquoted_keys_never_change_string_values(value: dict[str, str]) -> None:
    bare = "{" + ", ".join(f"{key}: {json.dumps(text)}" for key, text in value.items()) + "}"
    assert parse_content(bare, "json", {"unquoted_keys": True}) == value


@given(st.dictionaries(identifiers, tricky_text.filter(lambda s: "<|" not in s), max_size=5))
def test_prop_gemma_delimited_strings_round_trip(value: dict[str, str]) -> None:
    bare = "{" + ",".join(f'{key}:<|"|>{text}<|"|>' for key, text in value.items()) + "}"
    assert parse_content(bare, "json", GEMMA) == value


# Bare '"' is left out of the delimited variant: a delimiter inside an ordinary string is a documented
# difference (test_diff_delims_inside_quoted_string_are_literal).
gemma_pieces = st.sampled_from(["{", "}", "[", "]", ",", ":", "a", "b", "1", " ", "\\", '<|"|>', "x:"])
plain_pieces = st.sampled_from(["{", "}", "[", "]", ",", ":", '"', "a", "b", "1", " ", "\\", "x:", "{y:"])


@settings(max_examples=examples(300), suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(gemma_pieces, max_size=14).map("".join), st.booleans())
def test_prop_delims_agree_with_reference_when_reference_succeeds(text: str, unquoted: bool) -> None:
    args = {"unquoted_keys": unquoted, "string_delims": [['<|"|>', '<|"|>']]}
    try:
        expected = ref_parsers.parse_content(text, "json", args)
    except Exception:
        return
    assert same(parse_content(text, "json", args), expected)


@settings(max_examples=examples(300), suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(plain_pieces, max_size=14).map("".join))
def test_prop_unquoted_keys_agree_with_reference_when_reference_succeeds(text: str) -> None:
    args = {"unquoted_keys": True}
    try:
        expected = ref_parsers.parse_content(text, "json", args)
    except Exception:
        return
    assert same(parse_content(text, "json", args), expected)
