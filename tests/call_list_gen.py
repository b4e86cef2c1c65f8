"""Generated ``python-call-list`` texts for the property tests of ``tests/content``: random calls (names,
nested values) and a :class:`Writer` that spells them with random quoting, escapes and whitespace."""

from __future__ import annotations

import keyword
import random
from typing import Any

from hypothesis import strategies as st

__all__ = ["MAX", "Writer", "calls", "expected_calls", "names", "values"]

#: the largest integer magnitude python-call-list reads
MAX = 2**53 - 1

#: names as python-call-list reads them (``ns.tool-name``, ``a.1``), Python keywords included (``from``)
_words = st.sampled_from([*keyword.kwlist, "true", "null", "_rt_name0"])
names = st.builds(
    lambda first, rest: first + "".join(sep + part for sep, part in rest),
    st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,6}", fullmatch=True) | _words,
    st.lists(
        st.tuples(st.sampled_from(".-"), st.from_regex(r"[A-Za-z0-9_]{1,4}", fullmatch=True) | _words),
        max_size=2,
    ),
)
plain_text = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters="\n\r"), max_size=12
) | st.sampled_from(["", "it's", 'say "hi"', "a\\b", "\\u0041", "é😀"])
json_numbers = st.integers(-MAX, MAX) | st.floats(allow_nan=False, allow_infinity=False)
scalars = plain_text | json_numbers | st.booleans() | st.none()
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(plain_text, inner, max_size=4),
    max_leaves=12,
)
calls = st.lists(st.tuples(names, st.dictionaries(names, values, max_size=4)), max_size=3)


class Writer:
    """Writes generated data as call-list text, choosing spellings at random (``rng``)."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def space(self) -> str:
        return self.rng.choice(["", "", " ", "\n  ", "\t", "\r\n"])

    def string(self, value: str) -> str:
        quote = self.rng.choice("'\"")
        out = []
        for char in value:
            code = ord(char)
            if char == quote or char == "\\":
                out.append("\\" + char)
            elif char in "\b\f\t/'\"" and self.rng.random() < 0.5:
                out.append({"\b": "\\b", "\f": "\\f", "\t": "\\t", "/": "\\/", "'": "\\'", '"': '\\"'}[char])
            elif code > 0xFFFF and self.rng.random() < 0.5:
                high, low = 0xD800 + ((code - 0x10000) >> 10), 0xDC00 + ((code - 0x10000) & 0x3FF)
                out.append(f"\\u{high:04X}\\u{low:04x}")
            elif code <= 0xFFFF and (code < 0x20 or self.rng.random() < 0.1):
                out.append(f"\\u{code:04x}")
            else:
                out.append(char)
        return quote + "".join(out) + quote

    def value(self, value: Any) -> str:
        s = self.space
        if value is None:
            return self.rng.choice(["None", "null"])
        if value is True or value is False:
            return self.rng.choice([str(value), str(value).lower()])
        if isinstance(value, str):
            return self.string(value)
        if isinstance(value, float):
            return repr(value)  # always has a '.' or an exponent: a JSON number read as a float
        if isinstance(value, int):
            return str(value)
        if isinstance(value, list):
            return "[" + s() + ("," + s()).join(self.value(v) for v in value) + s() + "]"
        items = (self.string(k) + s() + ":" + s() + self.value(v) for k, v in value.items())
        return "{" + s() + ("," + s()).join(items) + s() + "}"

    def calls(self, data: list[tuple[str, dict[str, Any]]]) -> str:
        s = self.space
        written = []
        for name, arguments in data:
            args = ("," + s()).join(f"{k}{s()}={s()}{self.value(v)}" for k, v in arguments.items())
            written.append(f"{name}{s()}({s()}{args}{s()})")
        return s() + "[" + s() + ("," + s()).join(written) + s() + "]" + s()


def expected_calls(data: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    return [{"name": name, "arguments": arguments} for name, arguments in data]
