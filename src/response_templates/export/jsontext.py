"""Internal: JSON as text, for files the export writes or edits.

:func:`dumps` writes a value as strict JSON in a given layout: a lone surrogate in a string is written as
its ``\\uXXXX`` escape (raw, it cannot be encoded as UTF-8), and a number JSON cannot write (NaN, an
infinity) is refused, never written as the ``NaN``/``Infinity`` that are not JSON.

:func:`scan` reads a JSON text with a tokenizer of its own (RFC 8259, strict: any nesting depth, any
number, any escape, lone surrogates included) and, when the text is one object, says where each of its
top-level members begins and ends, so that one member can be replaced or added while every other byte of
the text stays as it was. Nothing is decoded but the top-level keys, so nothing is rounded or merged.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["Layout", "Member", "Members", "NotJSON", "dumps", "non_finite", "scan"]

_SURROGATE = re.compile("[\ud800-\udfff]")


@dataclass(frozen=True)
class Layout:
    """How :func:`dumps` lays a value out.

    With ``unit`` (an indentation), one member or element a line: ``newline`` ends each line and ``prefix``
    is the indentation of the line the value starts on. Without it, the value is on one line, its parts
    separated by ``item`` and ``colon``.
    """

    unit: str | None = "  "
    newline: str = "\n"
    prefix: str = ""
    item: str = ", "
    colon: str = ": "


def _string(text: str) -> str:
    out = json.dumps(text, ensure_ascii=False)
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", out) if _SURROGATE.search(out) else out


def _scalar(value: Any) -> str:
    if isinstance(value, str):
        return _string(value)
    if value is None or isinstance(value, bool):
        return json.dumps(value)
    if isinstance(value, int):
        return int.__repr__(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{value!r} has no JSON form")
        return float.__repr__(value)  # the shortest text that reads back as the same double
    raise TypeError(f"{type(value).__name__} is not a JSON value")


def dumps(value: Any, layout: Layout = Layout()) -> str:
    """``value`` (JSON data: dicts with string keys, lists, strings, numbers, booleans, None) as strict JSON.

    Raises ``ValueError`` for NaN or an infinity and ``TypeError`` for a value that is not JSON data.
    """
    return _dumps(value, layout, layout.prefix)


def _dumps(value: Any, layout: Layout, prefix: str) -> str:
    if isinstance(value, Mapping):
        for key in value:
            if not isinstance(key, str):
                raise TypeError(f"a key of type {type(key).__name__} is not a JSON key")
        parts = [f"{_string(k)}{layout.colon}" for k in value]
        items = list(value.values())
        opener, closer = "{", "}"
    elif isinstance(value, (list, tuple)):
        parts = ["" for _ in value]
        items = list(value)
        opener, closer = "[", "]"
    else:
        return _scalar(value)
    if not items:
        return opener + closer
    if layout.unit is None:
        inner = layout.item.join(p + _dumps(v, layout, prefix) for p, v in zip(parts, items, strict=True))
        return opener + inner + closer
    deeper = prefix + layout.unit
    lead = layout.newline + deeper
    inner = ("," + lead).join(p + _dumps(v, layout, deeper) for p, v in zip(parts, items, strict=True))
    return opener + lead + inner + layout.newline + prefix + closer


def non_finite(value: Any) -> float | None:
    """The first NaN or infinity ``value`` holds (walking dicts and lists), or None."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, float) and not math.isfinite(item):
            return item
        if isinstance(item, Mapping):
            stack.extend(reversed(list(item.values())))
        elif isinstance(item, (list, tuple)):
            stack.extend(reversed(item))
    return None


# --------------------------------------------------------------------------------- reading a document


class NotJSON(ValueError):
    """The text is not one JSON text (the message says what and where)."""


@dataclass(frozen=True)
class Member:
    """One member of the top-level object: ``key`` (decoded); ``lead`` the whitespace before the key
    (after the ``{`` or ``,`` before it) and ``colon`` the text between the key and the value;
    ``key_start``, ``value_start``, ``value_end`` offsets in the text."""

    key: str
    lead: str
    colon: str
    key_start: int
    value_start: int
    value_end: int


@dataclass(frozen=True)
class Members:
    """What :func:`scan` found: whether the text is an object and, if so, its members in order and where
    its braces are."""

    is_object: bool
    members: tuple[Member, ...] = ()
    open_brace: int = -1
    close_brace: int = -1


# One token after optional whitespace. Strings: no raw control character, only the escapes JSON has (the
# loop is unrolled, so matching is linear); numbers: JSON's grammar, ASCII digits only.
_TOKEN_PATTERN = r"""[ \t\n\r]*(?:
      (?P<string>"[^"\\\x00-\x1f]*(?:\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4})[^"\\\x00-\x1f]*)*")
    | (?P<number>-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)
    | (?P<literal>true|false|null)
    | (?P<punct>[{}\[\]:,])
    )"""
_TOKEN = re.compile(_TOKEN_PATTERN, re.VERBOSE)
# Python's reader (the one transformers, vLLM and SGLang read tokenizer_config.json with) also takes these.
_TOKEN_PYTHON = re.compile(_TOKEN_PATTERN[:-1] + "| (?P<constant>NaN|-?Infinity)\n    )", re.VERBOSE)
_WS = re.compile(r"[ \t\n\r]*")

# What the scanner expects next.
_VALUE, _VALUE_OR_END, _KEY, _KEY_OR_END, _COLON, _COMMA_OR_END = range(6)
_EXPECTED = {
    _VALUE: "a value",
    _VALUE_OR_END: "a value or ']'",
    _KEY: "a string key",
    _KEY_OR_END: "a string key or '}'",
    _COLON: "':'",
    _COMMA_OR_END: "',' or the end of the container",
}


def _where(text: str, pos: int) -> str:
    line = text.count("\n", 0, pos) + 1
    column = pos - (text.rfind("\n", 0, pos) + 1) + 1
    return f"line {line} column {column} (char {pos})"


def _fail(text: str, pos: int, expected: int) -> NotJSON:
    pos = _WS.match(text, pos).end()  # type: ignore[union-attr]  # the pattern matches the empty string
    found = "the end of the text" if pos >= len(text) else repr(text[pos : pos + 12])
    return NotJSON(f"{_EXPECTED[expected]} was expected at {_where(text, pos)}, found {found}")


def scan(text: str, *, python_constants: bool = False) -> Members:
    """Check that ``text`` is one JSON text and find the top-level members if it is an object.

    Raises :class:`NotJSON`, saying what was expected where, when it is not JSON. No depth limit: the
    containers are tracked on a list, not by recursion. With ``python_constants``, ``NaN``, ``Infinity``
    and ``-Infinity`` are taken as numbers, as Python's JSON reader takes them.
    """
    token_re = _TOKEN_PYTHON if python_constants else _TOKEN
    stack: list[str] = []  # "{" or "[" for each open container
    state = _VALUE
    pos = 0
    members: list[Member] = []
    is_object = False
    open_brace = close_brace = -1
    key, lead, key_start, key_end, value_start = "", "", -1, -1, -1
    while True:
        if not stack and state == _COMMA_OR_END:  # the top-level value is complete
            rest = _WS.match(text, pos).end()  # type: ignore[union-attr]
            if rest != len(text):
                raise NotJSON(f"text follows the JSON value at {_where(text, rest)}")
            return Members(is_object, tuple(members), open_brace, close_brace)
        match = token_re.match(text, pos)
        if match is None:
            raise _fail(text, pos, state)
        kind = match.lastgroup
        assert kind is not None
        start, pos = match.start(kind), match.end()
        token = match.group(kind)
        top_member = len(stack) == 1 and stack[0] == "{"
        if state in (_VALUE, _VALUE_OR_END) and (kind != "punct" or token in "{["):
            if top_member:
                value_start = start
            if kind == "punct":
                if not stack and token == "{":
                    is_object, open_brace = True, start
                stack.append(token)
                state = _KEY_OR_END if token == "{" else _VALUE_OR_END
                continue
            state = _COMMA_OR_END
        elif state in (_KEY, _KEY_OR_END) and kind == "string":
            if top_member:
                key, lead, key_start, key_end = json.loads(token), text[match.start() : start], start, pos
            state = _COLON
            continue
        elif state == _COLON and token == ":":
            state = _VALUE
            continue
        elif state == _COMMA_OR_END and token == "," and stack:
            state = _KEY if stack[-1] == "{" else _VALUE
            continue
        elif (token == "]" and state in (_VALUE_OR_END, _COMMA_OR_END) and stack[-1:] == ["["]) or (
            token == "}" and state in (_KEY_OR_END, _COMMA_OR_END) and stack[-1:] == ["{"]
        ):
            stack.pop()
            if not stack and token == "}":
                close_brace = start
            state = _COMMA_OR_END
        else:
            raise _fail(text, match.start(), state)
        # a value is complete: a scalar, or the container just closed
        if len(stack) == 1 and stack[0] == "{":
            members.append(Member(key, lead, text[key_end:value_start], key_start, value_start, pos))
