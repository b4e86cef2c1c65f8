"""Error offsets never depend on chunking (docs/spec.md, sections 4 and 9).

A region's offset is where its first character stands in the stream, whatever pieces the text came in;
in particular an implicit segment that starts at the first character of a chunk (the parser's fast path
for chunks that cannot hold a delimiter) starts there, not at the chunk's end.
"""

from __future__ import annotations

import pytest

import response_templates as rt

TEMPLATE = {
    "start_anchor": "<A>",
    "fields": {"t": {"open": "<t>", "close": "</t>"}, "content": {"content": "int"}},
}
TEXT = "<t>x</t>abc"


def _offset(pieces: list[str]) -> int | None:
    parser = rt.ResponseParser(TEMPLATE, prefix="")
    with pytest.raises(rt.ParseError) as info:
        for piece in pieces:
            parser.feed(piece)
        parser.finalize()
    return info.value.offset


@pytest.mark.parametrize("cut", range(len(TEXT) + 1))
def test_implicit_error_offset_is_the_same_for_every_split(cut: int) -> None:
    assert _offset([TEXT[:cut], TEXT[cut:]]) == TEXT.index("abc")


def test_implicit_error_offset_one_character_at_a_time() -> None:
    assert _offset(list(TEXT)) == TEXT.index("abc")
