"""The three readers of the JSON dialect agree: the ``json`` content parser, ``JsonEnd`` and ``JsonScanner``.

Generated dialect documents (bare, quoted and delimited keys; standard and delimited strings; random
whitespace) are read by each: the content parser gives the value, ``JsonEnd`` finds the end of the value
exactly after the document under any chunking, and ``JsonScanner`` accepts it and rewrites it as the
canonical text of the same value. On random texts built from dialect tokens, the scanner fails exactly
when the content parser does, and ``JsonEnd`` ends every valid one right after it.
"""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import response_templates as rt
from response_templates.content import get_content_parser
from response_templates.errors import ContentError
from response_templates.jsonlex import JsonDialect, JsonEnd, JsonScanner, dumps_arguments
from response_templates.jsonlex.dialect import WORD_CHAR

DIALECTS = {
    "e-guillemets": {"unquoted_keys": True, "string_delims": [["<e>", "<e>"], ["«", "»"]]},
    "gemma": {"unquoted_keys": True, "string_delims": [['<|"|>', '<|"|>']]},
    "prefix-openers": {"string_delims": [["<", ">"], ["<<", ">>"]]},
    "long-closer": {"unquoted_keys": True, "string_delims": [["<s>", "</s>"]]},
}

_PARSER = get_content_parser("json", "f")

_KEYS = st.text(alphabet="ab_1é -<>e", min_size=0, max_size=5)
_STRINGS = st.text(alphabet='ab"\\}]{[<e>|/«»\n é', max_size=8)
_VALUES = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-99, 99), st.floats(-10, 10, allow_nan=False), _STRINGS),
    lambda children: st.one_of(st.lists(children, max_size=3), st.dictionaries(_KEYS, children, max_size=3)),
    max_leaves=10,
)


def _write(value: Any, dialect: JsonDialect, rng: random.Random) -> str:
    """``value`` in the dialect, each string and key written one of the ways the dialect allows."""

    def ws() -> str:
        return rng.choice(["", "", " ", "\n ", "\t"])

    def string(text: str) -> str:
        ways = [json.dumps(text, ensure_ascii=rng.random() < 0.3)]
        for opener, closer in dialect.closers.items():
            # verbatim: the body may not contain the closer (nor end with a part of it that makes one)
            if (text + closer).find(closer) == len(text) and not any(
                # a longer opener would win where this one starts
                other != opener
                and other.startswith(opener)
                and (other[len(opener) :] and (text + closer).startswith(other[len(opener) :]))
                for other in dialect.openers
            ):
                ways.append(opener + text + closer)
        return rng.choice(ways)

    def key(text: str) -> str:
        if dialect.unquoted_keys and text and all(WORD_CHAR.match(c) for c in text) and rng.random() < 0.6:
            return text
        return string(text)

    def go(v: Any) -> str:
        if isinstance(v, dict):
            if not v:
                return "{" + ws() + "}"
            return (
                "{" + ",".join(ws() + key(k) + ws() + ":" + ws() + go(x) + ws() for k, x in v.items()) + "}"
            )
        if isinstance(v, list):
            if not v:
                return "[" + ws() + "]"
            return "[" + ",".join(ws() + go(x) + ws() for x in v) + "]"
        if isinstance(v, str):
            return string(v)
        return json.dumps(v)

    return go(value)


def _pieces(text: str, rng: random.Random) -> list[str]:
    out, i = [], 0
    while i < len(text):
        n = rng.choice([1, 1, 2, 3, 5, 8])
        out.append(text[i : i + n])
        i += n
    return out


def _end_at(end: JsonEnd, pieces: list[str]) -> int:
    """Where ``end`` says the value ends, as an offset in the joined pieces (-1: not ended)."""
    offset = 0
    for piece in pieces:
        at = end.feed(piece)
        if at >= 0:
            return offset + at
        offset += len(piece)
    return -1


def _scan(dialect: JsonDialect, pieces: list[str]) -> list[dict[str, Any]]:
    scanner = JsonScanner(arguments_paths=[()], dialect=dialect)
    reports: list[dict[str, Any]] = []
    for piece in pieces:
        reports += scanner.feed(piece)
    return reports + scanner.end()


def _args(name: str) -> dict[str, Any]:
    return _PARSER.validate(DIALECTS[name], "f")


@pytest.mark.parametrize("name", sorted(DIALECTS))
@given(value=_VALUES, seed=st.integers(0, 2**32))
def test_generated_documents_read_the_same_by_all_three(name: str, value: Any, seed: int) -> None:
    rng = random.Random(seed)
    args = _args(name)
    dialect: JsonDialect = args["_dialect"]
    document = _write(value, dialect, rng)
    parsed = _PARSER.parse(document, args)
    assert json.dumps(parsed) == json.dumps(value)
    # JsonEnd: the value ends right after the document, however the text arrives.
    text = " " + document + " ; more"
    for pieces in ([text], _pieces(text, rng), list(text)):
        assert _end_at(JsonEnd.for_args(args), pieces) == len(document) + 1, pieces
    # JsonScanner: accepts it, and rewrites it as the canonical text of the same value.
    reports = _scan(dialect, _pieces(document, rng))
    assert not [r for r in reports if r["type"] == "error"], (document, reports)
    raw = "".join(r["raw"] for r in reports if r["type"] == "arguments")
    canonical = "".join(r["json"] for r in reports if r["type"] == "arguments")
    assert raw == document
    assert canonical == dumps_arguments(parsed)


_TOKENS = ["{", "}", "[", "]", ":", ",", " ", "\n", '"', "\\", "a", "b1", "1", "-2.5", "true", "null", "<e>"]
_TOKENS += ["<", "e>", "«", "»", "x}y", '"k"', "<s>", "</s>", ">", "<<", ">>"]


@pytest.mark.parametrize("name", sorted(DIALECTS))
@given(tokens=st.lists(st.sampled_from(_TOKENS), max_size=14), seed=st.integers(0, 2**32))
def test_random_token_texts_valid_for_all_or_none(name: str, tokens: list[str], seed: int) -> None:
    rng = random.Random(seed)
    args = _args(name)
    text = "".join(tokens)
    try:
        _PARSER.parse(text, args)
        valid = True
    except ContentError:
        valid = False
    reports = _scan(args["_dialect"], _pieces(text, rng))
    assert valid == (not any(r["type"] == "error" for r in reports)), (text, reports)
    if valid:
        stripped = text.rstrip(" \t\n\r")
        assert _end_at(JsonEnd.for_args(args), _pieces(text + " ", rng)) == len(stripped)


@given(value=_VALUES, seed=st.integers(0, 2**32))
def test_close_json_regions_stream_in_the_dialect(value: Any, seed: int) -> None:
    rng = random.Random(seed)
    value = {"v": value}  # a message leaves out empty values; an object with a member is not one
    content_args = DIALECTS["e-guillemets"]
    template = {
        "start_anchor": "<A>",
        "extensions": ["json-value-end"],
        "fields": {
            "call": {"open": "CALL", "close_json": True, "content": "json", "content_args": content_args},
            "content": {},
        },
    }
    document = _write(value, _args("e-guillemets")["_dialect"], rng)
    text = "CALL" + document + " tail"
    parser = rt.ResponseParser(template, prefix="")
    for piece in _pieces(text, rng):
        parser.feed(piece)
    message, _ = parser.finalize()
    assert json.dumps(message["call"]) == json.dumps(value)
    assert message["content"] == "tail"
