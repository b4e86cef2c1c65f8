"""``close_json`` regions in a JSON dialect end where the ``json`` parser says the value ends.

The bug this guards against: with ``string_delims`` ``[["<e>", "<e>"]]`` the end-finder did not know
delimited strings, so ``CALL{"a": <e>x}y<e>}`` ended the region at the ``}`` inside the string and the
content parser then failed on ``{"a": <e>x}``. Only the public API (and ``JsonEnd.for_args``) is used, so
this file also runs against older code.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest

import response_templates as rt
from response_templates.jsonlex.end import JsonEnd

DELIMS = {"string_delims": [["<e>", "<e>"]]}


def _template(content_args: dict[str, Any]) -> dict[str, Any]:
    return {
        "start_anchor": "<A>",
        "extensions": ["json-value-end"],
        "fields": {
            "tool_calls": {
                "open": "CALL",
                "close_json": True,
                "content": "json",
                "content_args": content_args,
            },
            "content": {},
        },
    }


def _stream(template: dict[str, Any], pieces: list[str]) -> dict[str, Any]:
    parser = rt.ResponseParser(template, prefix="")
    for piece in pieces:
        parser.feed(piece)
    message, _ = parser.finalize()
    return dict(message)


def _splits(text: str, cuts: int) -> list[list[str]]:
    """``text`` cut at every combination of ``cuts`` positions."""
    out = []
    for points in itertools.combinations(range(1, len(text)), cuts):
        bounds = (0, *points, len(text))
        out.append([text[a:b] for a, b in itertools.pairwise(bounds)])
    return out


def test_delimited_string_hides_its_closing_brace_whole_text() -> None:
    assert rt.parse_response('CALL{"a": <e>x}y<e>}', _template(DELIMS), prefix="") == {
        "tool_calls": {"a": "x}y"}
    }


@pytest.mark.parametrize("cuts", [1, 2])
def test_delimited_string_hides_its_closing_brace_every_chunking(cuts: int) -> None:
    text = 'CALL{"a": <e>x}y<e>} after'
    expected = {"tool_calls": {"a": "x}y"}, "content": "after"}
    for pieces in _splits(text, cuts):
        assert _stream(_template(DELIMS), pieces) == expected, pieces
    assert _stream(_template(DELIMS), list(text)) == expected


def test_brackets_and_quotes_inside_delimited_strings_do_not_count() -> None:
    args = {"unquoted_keys": True, "string_delims": [["<e>", "<e>"], ["«", "»"]]}
    text = 'CALL{code: <e>if (a) { return "]"; }<e>, xs: [«]»,«}»], "q": "<e>}"} tail'
    expected = {
        "tool_calls": {"code": 'if (a) { return "]"; }', "xs": ["]", "}"], "q": "<e>}"},
        "content": "tail",
    }
    assert rt.parse_response(text, _template(args), prefix="") == expected
    for pieces in _splits(text, 1):
        assert _stream(_template(args), pieces) == expected, pieces


def test_a_top_level_delimited_string_ends_at_its_closing_marker() -> None:
    text = "CALL <e>a}b<e> rest"
    expected = {"tool_calls": "a}b", "content": "rest"}
    assert rt.parse_response(text, _template(DELIMS), prefix="") == expected
    for pieces in _splits(text, 2):
        assert _stream(_template(DELIMS), pieces) == expected, pieces


@pytest.mark.parametrize("cuts", [1, 2])
def test_json_end_for_args_reads_delimited_strings(cuts: int) -> None:
    text = '{"a": <e>x}y<e>} tail'
    for pieces in _splits(text, cuts):
        end = JsonEnd.for_args(
            {"unquoted_keys": False, "string_delims": [["<e>", "<e>"]], "allow_non_json": False}
        )
        offset = 0
        found = -1
        for piece in pieces:
            at = end.feed(piece)
            if at >= 0:
                found = offset + at
                break
            offset += len(piece)
        assert found == len('{"a": <e>x}y<e>}'), pieces
