"""content_args that cannot change the result are read as the reference reads them, and lint names them.

Refused (TemplateError): what would be misread, such as ``"strip": "false"`` (the reference reads any
non-empty string as true). Ignored with a lint warning: arguments a parser does not have (often a
misspelling), ``strip`` on ``int``/``float``, ``strip`` on ``json`` without ``allow_non_json``, extra keys
of a ``value_parser``. Read: ``strip`` on ``bool`` and on ``json``'s ``allow_non_json`` fallback. An
``xml-inline`` ``tag_pattern`` without a ``value`` group reads flag tags: each tag's value is ``""``.
"""

from __future__ import annotations

import copy
import logging
from typing import Any

import pytest

import response_templates as rt
from response_templates.content import get_content_parser, parse_content
from response_templates.content._args import IgnoredArg, recording_ignored_args

ref_parsers = pytest.importorskip("transformers.utils.chat_parsing.content_parsers")
reference = pytest.importorskip("transformers.utils.chat_parsing")
logging.getLogger("transformers").setLevel(logging.ERROR)

FLAG = r"<(?P<key>\w+)/>"


def one(content: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"start_anchor": "<A>", "fields": {"v": {"open": "<v>", "close": "</v>", "content": content,
                                                   "content_args": args}}}  # fmt: skip


def ignored(name: str, args: dict[str, Any]) -> list[IgnoredArg]:
    with recording_ignored_args() as found:
        get_content_parser(name, "v").validate(args, "v")
    return found


def warnings(template: dict[str, Any]) -> list[tuple[str, str, str | None]]:
    return [
        (i.level, i.code, i.field)
        for i in rt.lint(template)
        if i.code in ("ignored-content-arg", "flag-tags")
    ]


@pytest.mark.parametrize(
    ("name", "args", "text"),
    [
        ("int", {"strip": False}, " 7\n"),
        ("float", {"strip": False}, "\t2.5 "),
        ("int", {"base": 16}, "10"),
        ("text", {"strip": True, "lang": "en"}, " a "),
        ("json", {"strip": False}, ' {"a": 1} '),
        ("json", {"unquoted_key": True}, '{"a": 1}'),
        ("kv-lines", {"merge_duplicates": True}, "a: 1\na: 2"),
        ("kv-lines", {"value_parser": {"name": "int", "note": "x"}}, "a: 1"),
        ("xml-inline", {"tag_pattern": r"<(?P<key>\w)>(?P<value>.*?)</(?P=key)>", "strip": 1}, "<a> 1 </a>"),
    ],
)
def test_ignored_arguments_give_the_reference_result_and_a_lint_warning(
    name: str, args: dict[str, Any], text: str
) -> None:
    assert parse_content(text, name, args) == ref_parsers.parse_content(text, name, copy.deepcopy(args))
    assert [i.field for i in ignored(name, args)] == ["v"]
    assert warnings(one(name, args)) == [("warning", "ignored-content-arg", "v")]
    assert not [i for i in rt.lint(one(name, args)) if i.level == "error"]


def test_the_warning_names_the_argument_and_why() -> None:
    (issue,) = [i for i in rt.lint(one("json", {"unquoted_key": True})) if i.code == "ignored-content-arg"]
    assert (
        issue.key == "content_args" and "'unquoted_key'" in issue.message and "misspelling" in issue.message
    )
    (issue,) = [i for i in rt.lint(one("int", {"strip": False})) if i.code == "ignored-content-arg"]
    assert "'strip'" in issue.message and "whitespace" in issue.message
    nested = one("kv-lines", {"value_parser": {"name": "int", "args": {"strip": False}}})
    (issue,) = [i for i in rt.lint(nested) if i.code == "ignored-content-arg"]
    assert "value_parser 'int'" in issue.message


def test_arguments_that_are_read_give_no_warning() -> None:
    assert ignored("text", {"strip": False}) == []
    assert ignored("bool", {"strip": False}) == []
    assert ignored("json", {"strip": False, "allow_non_json": True}) == []
    assert warnings(one("json", {"allow_non_json": True, "strip": False})) == []


def test_recording_is_off_outside_the_block() -> None:
    with recording_ignored_args() as found:
        pass
    get_content_parser("int", "v").validate({"strip": False}, "v")
    assert found == []


@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("text", {"strip": "false"}),
        ("bool", {"strip": "no"}),
        ("json", {"strip": 0}),
        ("json", {"unquoted_keys": 1}),
    ],
)
def test_misread_values_are_still_refused(name: str, args: dict[str, Any]) -> None:
    with pytest.raises(rt.TemplateError) as info:
        rt.load_template(one(name, args))
    assert (info.value.field, info.value.key) == ("v", "content_args")


def test_bool_strip_false_is_read() -> None:
    assert parse_content("true", "bool", {"strip": False}) is True
    with pytest.raises(rt.ContentError):  # strict-bool: the reference reads " true" as False
        parse_content(" true", "bool", {"strip": False})
    assert ref_parsers.parse_content(" true", "bool", {"strip": False}) is False


def test_json_strip_false_applies_to_the_allow_non_json_fallback() -> None:
    args = {"allow_non_json": True, "strip": False}
    for text in ["  raw text \n", " [1] ", "{a: 1}\n"]:
        assert parse_content(text, "json", args) == ref_parsers.parse_content(text, "json", dict(args))
    assert parse_content("  raw \n", "json", args) == "  raw \n"
    assert parse_content("  raw \n", "json", {"allow_non_json": True}) == "raw"


@pytest.mark.parametrize(
    ("args", "text"),
    [
        ({"tag_pattern": FLAG}, "<urgent/> \n <silent/>"),
        ({"tag_pattern": FLAG, "value_parser": {"name": "text"}}, "<a/>"),
        ({"tag_pattern": FLAG, "merge_duplicates": True}, "<a/><b/><a/>"),
        ({"tag_pattern": r"<(?P<key>\w+)(?:/>|>.*?</(?P=key)>)"}, "<a/><b>ignored</b>"),
        ({"tag_pattern": FLAG}, " \n "),
    ],
)
def test_flag_tags_match_the_reference(args: dict[str, Any], text: str) -> None:
    assert parse_content(text, "xml-inline", args) == ref_parsers.parse_content(
        text, "xml-inline", dict(args)
    )


@pytest.mark.parametrize("text", ["<urgent/> text <silent/>", "no tags"])
def test_diff_flag_tags_refuse_text_outside_every_tag(text: str) -> None:
    # xml-inline-unread-text (docs/differences.md): the reference drops the words without a trace.
    with pytest.raises(rt.ContentError, match="outside every tag"):
        parse_content(text, "xml-inline", {"tag_pattern": FLAG})
    assert "text" not in str(ref_parsers.parse_content(text, "xml-inline", {"tag_pattern": FLAG}))


def test_flag_tags_give_the_empty_string() -> None:
    assert parse_content("<urgent/><silent/>", "xml-inline", {"tag_pattern": FLAG}) == {
        "urgent": "",
        "silent": "",
    }
    with pytest.raises(rt.ContentError):  # "" is not an int, in the reference too
        parse_content("<a/>", "xml-inline", {"tag_pattern": FLAG, "value_parser": {"name": "int"}})


def test_flag_tags_get_a_lint_note() -> None:
    assert warnings(one("xml-inline", {"tag_pattern": FLAG})) == [("note", "flag-tags", "v")]
    assert warnings(one("xml-inline", {"tag_pattern": r"<(?P<key>\w)>(?P<value>.*?)</(?P=key)>"})) == []


def test_a_tag_pattern_without_a_key_group_is_still_refused() -> None:
    with pytest.raises(rt.TemplateError, match=r"\(\?P<key>\.\.\.\)"):
        rt.load_template(one("xml-inline", {"tag_pattern": r"<(?P<value>\w+)/>"}))


def test_whole_template_differential() -> None:
    tpl = {
        "start_anchor": "<A>",
        "fields": {
            "flags": {
                "open": "<f>",
                "close": "</f>",
                "content": "xml-inline",
                "content_args": {"tag_pattern": FLAG},
            },
            "n": {"open": "<n>", "close": "</n>", "content": "int", "content_args": {"strip": False}},
            "content": {"content_args": {"strip": True, "colour": "blue"}},
        },
    }
    text = "Hi <f><urgent/></f><n> 3 </n>"
    assert dict(rt.parse_response(text, tpl, prefix="")) == reference.parse_response(
        text, copy.deepcopy(tpl), prefix=""
    )
