"""The JSON lines reader and writer of the batch paths give the standard library's exact results."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from response_templates.batch import jsonl

# Any JSON-like value, with any characters in strings (controls, non-ASCII, lone surrogates, backslashes).
values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True)
    | st.text(st.characters(codec=None, min_codepoint=0)),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=12,
)


@given(values)
def test_line_encoder_writes_the_text_of_json_dumps(value: Any) -> None:
    encoder = jsonl.LineEncoder()
    for _ in range(3):  # before and after a text that needed escapes
        assert encoder.encode(value) == json.dumps(value, ensure_ascii=False, default=str)
        assert encoder.encode("é") == '"é"'


def test_line_encoder_on_every_character() -> None:
    encoder = jsonl.LineEncoder()
    for start in range(0, 0x110000, 4096):
        text = "".join(map(chr, range(start, start + 4096)))
        assert encoder.encode({"k": text, text[:9]: [text]}) == json.dumps(
            {"k": text, text[:9]: [text]}, ensure_ascii=False
        )
        for c in text[::37]:
            assert encoder.encode([c, "a\\u"]) == json.dumps([c, "a\\u"], ensure_ascii=False)


def test_line_encoder_keeps_json_dumps_behaviour_for_other_objects() -> None:
    encoder = jsonl.LineEncoder()
    for value in [{1: 2, None: 3, 2.5: "x"}, {"set": {1}}, float("inf"), 10**40, (1, 2)]:
        assert encoder.encode(value) == json.dumps(value, ensure_ascii=False, default=str)
    with pytest.raises(TypeError):
        encoder.encode({(1, 2): 3})  # a key json.dumps refuses: the same error


LINES = [
    b'{"a": 1, "b": [1.5, -0.0, 1e400, 12345678901234567890123], "c": null}',
    b'{"nan": NaN, "inf": -Infinity}',
    b'{"s": "\\ud800 \\udfff \\u00e9 \\u0000"}',
    '{"raw": "é€😀"}\r'.encode(),
    b'{"dup": 1, "dup": 2}',
    "\ufeff".encode() + b'{"bom": 1}',
    '{"utf16": 1}'.encode("utf-16"),
    b"[" * 5000 + b"]" * 5000,
    b'{"cut": ',
    b'{"bad": "\xff"}',
    b"  7 ",
]


@pytest.mark.parametrize("line", LINES, ids=range(len(LINES)))
@pytest.mark.parametrize("reader", ["loads", "stdlib"])
def test_loads_gives_the_objects_and_errors_of_json_loads(line: bytes, reader: str) -> None:
    loads = jsonl.loads if reader == "loads" else jsonl._stdlib_loads
    try:
        expected: Any = json.loads(line)
    except (ValueError, RecursionError) as exc:
        with pytest.raises(type(exc)) as raised:
            loads(line)
        assert str(raised.value) == str(exc)
        return
    got = loads(line)
    assert repr(got) == repr(expected) or _same(got, expected)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and math.isnan(a):
        return isinstance(b, float) and math.isnan(b)
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b
