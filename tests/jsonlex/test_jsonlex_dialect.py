"""The JSON dialect (``jsonlex.dialect``): its primitives, and the arguments refused at load time."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

import response_templates as rt
from response_templates.content import get_content_parser, parse_content
from response_templates.errors import TemplateError
from response_templates.jsonlex import STANDARD, JsonDialect, JsonEnd, JsonScanner, value_end_problem
from response_templates.jsonlex.dialect import dialect_for


def _json_template(content_args: dict[str, Any], close_json: bool = False) -> dict[str, Any]:
    field: dict[str, Any] = {"open": "CALL", "content": "json", "content_args": content_args}
    if close_json:
        field["close_json"] = True
    else:
        field["close"] = "END"
    return {
        "start_anchor": "<A>",
        "extensions": ["json-value-end"] if close_json else [],
        "fields": {"tool_calls": field, "content": {}},
    }


# ------------------------------------------------------------------------------------------ primitives


def test_longest_opener_wins_and_waits_while_undecided() -> None:
    dialect = JsonDialect(string_delims=(("<", ">"), ("<<", ">>")))
    assert dialect.openers == ("<<", "<")
    assert dialect.opener_at("[<", 1) is None  # "<<" may follow
    assert dialect.opener_at("[<", 1, final=True) == "<"
    assert dialect.opener_at("[<a", 1) == "<"
    assert dialect.opener_at("[<<", 1) == "<<"
    assert dialect.opener_at("[x", 1) == ""


def test_first_pair_with_an_opener_wins() -> None:
    dialect = dialect_for(False, (("<e>", "</e>"), ("<e>", "<e>")))
    assert dict(dialect.closers) == {"<e>": "</e>"}


def test_find_closer_holds_back_only_a_possible_beginning() -> None:
    assert JsonDialect.find_closer("ab</s>c", 0, "</s>") == (2, 0)
    assert JsonDialect.find_closer("ab</", 0, "</s>") == (-1, 2)
    assert JsonDialect.find_closer("ab<x", 0, "</s>") == (-1, 0)
    assert JsonDialect.find_closer("<", 0, "<e>") == (-1, 1)


def test_from_args_reads_validated_and_plain_arguments() -> None:
    validated = get_content_parser("json", "f").validate({"unquoted_keys": True}, "f")
    assert JsonDialect.from_args(validated).unquoted_keys
    assert JsonDialect.from_args({"string_delims": [["<e>", "<e>"]]}).openers == ("<e>",)
    assert JsonDialect.from_args({"strip": True}) is STANDARD  # another parser's arguments
    assert JsonDialect.from_args({"string_delims": "bad"}) is STANDARD
    assert STANDARD.plain and not JsonDialect(unquoted_keys=True).plain


def test_to_standard_leaves_strings_alone() -> None:
    dialect = JsonDialect(unquoted_keys=True, string_delims=(("<e>", "<e>"),))
    assert dialect.to_standard('{a: "x, b: <e>", c: <e>"q"<e>}') == '{"a": "x, b: <e>", "c": "\\"q\\""}'


def test_scanner_waits_for_a_longer_opener_across_feeds() -> None:
    # "[<" then "<a>>]": the opener is "<<", not "<" (the whole text decides, not where it was cut).
    for cut in range(1, len("[<<a>>, <b>]")):
        text = "[<<a>>, <b>]"
        scanner = JsonScanner(arguments_paths=[()], string_delims=[["<", ">"], ["<<", ">>"]])
        reports = scanner.feed(text[:cut]) + scanner.feed(text[cut:]) + scanner.end()
        assert "".join(r["json"] for r in reports if r["type"] == "arguments") == '["a", "b"]', cut
    assert parse_content("[<<a>>, <b>]", "json", {"string_delims": [["<", ">"], ["<<", ">>"]]}) == ["a", "b"]


# ----------------------------------------------------------------------------- JsonEnd, every split

_END_CASES = [
    ({"string_delims": [["<e>", "<e>"]]}, '{"a": <e>x}y<e>}', 16),
    ({"string_delims": [["<e>", "<e>"]]}, "[<e><e>, <e>]<<e>]", 18),
    ({"unquoted_keys": True, "string_delims": [["<s>", "</s>"]]}, "{k: <s>]</</s</s>} tail", 18),
    ({"unquoted_keys": True, "string_delims": [['<|"|>', '<|"|>']]}, '{a:<|"|>}"<|"|>,b:[1]}', 22),
    ({"unquoted_keys": True}, '{a: "}", b_1: {c: [1, "]"]}} x', 28),
    ({"string_delims": [["<", ">"], ["<<", ">>"]]}, "[<<]>>, <]>] ;", 12),
    ({"string_delims": [["«", "»"]]}, " «a]»;", 5),
    ({"string_delims": [["<e>", "<e>"]]}, '[<e"]"]', 7),  # not an opener: "<e" then a string
]


@pytest.mark.parametrize(("args", "text", "end"), _END_CASES)
def test_json_end_at_every_split(args: dict[str, Any], text: str, end: int) -> None:
    validated = get_content_parser("json", "f").validate(args, "f")
    for i, j in itertools.combinations_with_replacement(range(len(text) + 1), 2):
        finder = JsonEnd.for_args(validated)
        offset, found = 0, -1
        for piece in (text[:i], text[i:j], text[j:]):
            if not piece:
                continue
            at = finder.feed(piece)
            if at >= 0:
                found = offset + at
                break
            offset += len(piece)
        assert found == end, (i, j)
        assert finder.done


# ------------------------------------------------------------------------------- load-time rejections

_BAD_OPENERS = [
    " <q>",
    "\t",
    "\n<q>",
    '"""',
    '"',
    "{{",
    "}x",
    "[x",
    "]",
    ",",
    ":",
    "1x",
    "e",
    "N",
    "-",
    "+",
    ".",
]


@pytest.mark.parametrize("opener", _BAD_OPENERS)
def test_openers_the_lexer_cannot_tell_from_json_are_refused(opener: str) -> None:
    args = {"string_delims": [["<ok>", "</ok>"], [opener, "</q>"]]}
    with pytest.raises(TemplateError) as info:
        rt.load_template(_json_template(args))
    assert info.value.key == "content_args" and info.value.field == "tool_calls"
    assert "item 1" in str(info.value) and repr(opener) in str(info.value)
    with pytest.raises(TemplateError):
        parse_content("[]", "json", args)


@pytest.mark.parametrize("opener", ["_x", "é", "Ω"])
def test_word_character_openers_are_refused_with_bare_keys_only(opener: str) -> None:
    args = {"string_delims": [[opener, "</q>"]]}
    assert parse_content(f"[{opener}a</q>]", "json", args) == ["a"]
    with pytest.raises(TemplateError, match="bare key"):
        rt.load_template(_json_template({**args, "unquoted_keys": True}))


@pytest.mark.parametrize("opener", ["<e>", "«", "'", '<|"|>', "<escape>", "/*", "\\q"])
def test_usual_openers_load(opener: str) -> None:
    rt.load_template(_json_template({"unquoted_keys": True, "string_delims": [[opener, opener]]}))
    rt.load_template(
        _json_template({"unquoted_keys": True, "string_delims": [[opener, opener]]}, close_json=True)
    )


@pytest.mark.parametrize(
    ("delims", "needle"),
    [
        ([["<]x>", "</x>"]], "after its first character"),  # "[<]" | "y": the "]" would end the value
        ([["<}>", "<}>"]], "after its first character"),
        ([["<", "x"], ["<x>", "</x>"]], "inside the longer opening marker"),  # " <x" | "y": "<" + "x" ends it
    ],
)
def test_close_json_refuses_openers_whose_wait_could_hide_the_end(
    delims: list[list[str]], needle: str
) -> None:
    args = {"string_delims": delims}
    rt.load_template(_json_template(args))  # fine where the region has a close delimiter
    assert needle in (value_end_problem(get_content_parser("json", "f").validate(args, "f")) or "")
    with pytest.raises(TemplateError, match=needle) as info:
        rt.load_template(_json_template(args, close_json=True))
    assert info.value.field == "tool_calls"


def test_value_end_problem_is_none_for_other_parsers_and_usual_dialects() -> None:
    assert value_end_problem({"strip": True}) is None
    assert value_end_problem({}) is None
    assert value_end_problem({"unquoted_keys": True, "string_delims": [['<|"|>', '<|"|>']]}) is None
    assert value_end_problem({"string_delims": [["<", ">"], ["<<", ">>"]]}) is None
