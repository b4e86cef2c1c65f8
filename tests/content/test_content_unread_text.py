"""Text that no rule of a content parser consumed never disappears without a trace (issue 28, item 3).

Every content parser, given a region with stray non-whitespace text, either keeps that text in its value
or raises a ``ContentError`` (a ``ParseError`` through the parser: with ``errors="keep"`` the region's text
stays in the message and the failure is in ``message.errors``). docs/errors.md lists what each parser does.
"""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import response_templates as rt
from hypothesis_profiles import examples
from response_templates.content import CONTENT_PARSERS, parse_content
from response_templates.errors import ContentError

STRAY = "Zqx"

QWEN_TAG = r"<parameter=(?P<key>[^<>\n]+)>\n?(?P<value>.*?)\n?(?:</parameter>|(?=<parameter=[^<>\n]+>)|\Z)"
PLAIN_TAG = r"<(?P<key>\w+)>(?P<value>.*?)</(?P=key)>"

#: For every content parser: (content_args, a region text it reads, that text with stray words in it).
CASES: dict[str, list[tuple[dict[str, Any], str, str]]] = {
    "text": [({}, "hello", f"hello {STRAY}")],
    "int": [({}, "12", f"12 {STRAY}")],
    "float": [({}, "1.5", f"1.5 {STRAY}")],
    "bool": [({}, "true", f"true {STRAY}")],
    "json": [
        ({}, '{"a": 1}', f'{{"a": 1}} {STRAY}'),
        ({"allow_non_json": True}, '{"a": 1}', f'{{"a": 1}} {STRAY}'),
        ({"unquoted_keys": True}, "{a: 1}", f"{{a: 1}} {STRAY}"),
    ],
    "xml-inline": [
        ({"tag_pattern": PLAIN_TAG}, "<a>1</a>\n<b>2</b>", f"<a>1</a> {STRAY} <b>2</b>"),
        ({"tag_pattern": PLAIN_TAG}, "<a>1</a>", f"{STRAY}<a>1</a>"),
        ({"tag_pattern": PLAIN_TAG}, "<a>1</a>", f"<a>1</a>\n{STRAY}\n"),
        ({"tag_pattern": PLAIN_TAG}, " ", STRAY),
        ({"tag_pattern": r"<(?P<key>\w+)/>"}, "<a/> <b/>", f"<a/> {STRAY} <b/>"),
        ({"tag_pattern": QWEN_TAG}, "\n<parameter=a>\n1\n</parameter>\n", f"\n{STRAY}\n<parameter=a>\n1\n"),
        ({"tag_pattern": PLAIN_TAG, "nested": True}, "<a><x>1</x></a>", f"<a><x>1</x></a>{STRAY}"),
        ({"tag_pattern": PLAIN_TAG, "nested": True}, "<a>1</a>", f"{STRAY} <a>1</a>"),
    ],
    "kv-lines": [
        ({}, "a: 1\n\nb: 2", f"a: 1\n{STRAY}\nb: 2"),
        ({"line_sep": ";", "kv_sep": "="}, "a=1;;b=2", f"a=1;{STRAY};b=2"),
        ({"strip": False}, "a: 1\n", f"a: 1\n  {STRAY}"),
    ],
    "python-call-list": [({}, "[f(a=1)]", f"[f(a=1)] {STRAY}")],
    "python-calls": [
        ({}, "[f(a=1)]", f"[f(a=1)]  # {STRAY}"),
        ({}, "f(a=1)\ng(b=2)", f"f(a=1)  # {STRAY}\ng(b=2)"),
        ({}, "[f(a=1)]", f"[f(a=1)] {STRAY}"),
    ],
}


def _kept_or_refused(name: str, args: dict[str, Any], text: str) -> str:
    """``"kept"`` when the stray word is in the value, ``"refused"`` when the parser raises."""
    try:
        value = parse_content(text, name, args)
    except ContentError:
        return "refused"
    assert STRAY in json.dumps(value, ensure_ascii=False, default=str), (name, args, text, value)
    return "kept"


def test_every_content_parser_keeps_or_refuses_stray_text() -> None:
    assert set(CASES) == set(CONTENT_PARSERS), "a content parser without a stray-text case"
    outcomes = {}
    for name, cases in CASES.items():
        for index, (args, clean, stray) in enumerate(cases):
            assert STRAY not in json.dumps(parse_content(clean, name, args), default=str)
            outcomes[name, index] = _kept_or_refused(name, args, stray)
    # What docs/errors.md says each parser does with it: text keeps it, json only with allow_non_json.
    kept = {key for key, outcome in outcomes.items() if outcome == "kept"}
    assert kept == {("text", 0), ("json", 1)}


@pytest.mark.parametrize(
    ("name", "args", "text", "where"),
    [
        (
            "xml-inline",
            {"tag_pattern": PLAIN_TAG},
            f"<a>1</a> {STRAY} <b>2</b>",
            f"the text '{STRAY}' at character 9",
        ),
        ("xml-inline", {"tag_pattern": PLAIN_TAG}, "<a>1</a><b>2", "the text '<b>2' at character 8"),
        ("kv-lines", {}, f"a: 1\n\n{STRAY}", f"line 3 '{STRAY}' has no separator ':'"),
        ("python-calls", {}, f"f(a=1)  # {STRAY}", f"the comment '# {STRAY}' at offset 8"),
    ],
)
def test_the_error_says_which_text_would_be_lost(
    name: str, args: dict[str, Any], text: str, where: str
) -> None:
    with pytest.raises(ContentError) as info:
        parse_content(text, name, args)
    assert where in str(info.value)


def test_python_calls_refuses_a_comment_but_not_a_hash_in_a_string() -> None:
    with pytest.raises(ContentError, match="comment"):
        parse_content("[f(a='#1')]  # why", "python-calls")
    text = "[f(a='#1', b=\"x # y\"), g(c='''#\n#''')]"
    assert parse_content(text, "python-calls") == [
        {"name": "f", "arguments": {"a": "#1", "b": "x # y"}},
        {"name": "g", "arguments": {"c": "#\n#"}},
    ]


# ---------------------------------------------------------------------- inserted anywhere, any parser

#: Texts each parser reads, into which the property test inserts the stray word at any position.
SEEDS: list[tuple[str, dict[str, Any], str]] = [
    ("xml-inline", {"tag_pattern": PLAIN_TAG}, "<city>Paris</city>\n<days>3</days>"),
    (
        "xml-inline",
        {"tag_pattern": QWEN_TAG},
        "\n<parameter=city>\nParis\n</parameter>\n<parameter=days>\n3\n",
    ),
    ("kv-lines", {}, "city: Paris\n\ndays: 3\n"),
    ("json", {}, '{"city": "Paris", "days": [3, true, null]}'),
    ("python-calls", {}, "[get_weather(city='Paris', days=3), now()]"),
    ("python-call-list", {}, "[get_weather(city='Paris', days=3), now()]"),
    ("int", {}, " 42 "),
    ("bool", {}, "false"),
    ("text", {}, "some text"),
]


@settings(max_examples=examples(300), deadline=None)
@given(st.sampled_from(SEEDS), st.data())
def test_a_word_inserted_anywhere_is_kept_or_refused(
    seed: tuple[str, dict[str, Any], str], data: Any
) -> None:
    name, args, text = seed
    at = data.draw(st.integers(0, len(text)))
    pad = data.draw(st.sampled_from(["", " ", "\n"]))
    _kept_or_refused(name, args, text[:at] + pad + STRAY + pad + text[at:])


# ------------------------------------------------------------------- through the parser, and streamed

TEMPLATE = {
    "start_anchor": "<|assistant|>",
    "fields": {
        "v": {
            "open": "<v>",
            "close": "</v>",
            "content": "xml-inline",
            "content_args": {"tag_pattern": PLAIN_TAG},
        },
        "k": {"open": "<k>", "close": "</k>", "content": "kv-lines"},
        "content": {},
    },
}


def _stream(text: str, pieces: list[int]) -> tuple[dict[str, Any], list[Any]]:
    parser = rt.ResponseParser(TEMPLATE, prefix="", errors="keep")
    at = 0
    for size in pieces:
        parser.feed(text[at : at + size])
        at += size
    parser.feed(text[at:])
    message, _ = parser.finalize()
    return dict(message), [(e.field, e.raw) for e in message.errors]


@pytest.mark.parametrize(
    "text",
    [
        f"Hi <v><a>1</a> {STRAY} </v> there",
        f"<k>a: 1\n{STRAY}\n</k>",
        f"<v><a>1</a></v><k>a: 1\n{STRAY}</k>",
    ],
)
def test_through_the_parser_the_text_stays_and_the_error_is_listed(text: str) -> None:
    with pytest.raises(rt.ParseError):
        rt.parse_response(text, TEMPLATE, prefix="")
    message = rt.parse_response(text, TEMPLATE, prefix="", errors="keep")
    assert STRAY in message["content"] and len(message.errors) == 1
    whole = (dict(message), [(e.field, e.raw) for e in message.errors])
    rng = random.Random(text)
    for chunking in ([1] * len(text), *([rng.randint(1, 6) for _ in range(len(text))] for _ in range(4))):
        assert _stream(text, chunking) == whole
