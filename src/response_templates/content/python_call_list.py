"""The ``python-call-list`` content parser: a list of keyword-argument calls, with a strict grammar.

The region is one list of calls, ``[get_weather(city="Paris", days=3), now()]``, and becomes
``[{"name": ..., "arguments": {...}}]`` (use it with ``transform_each``). The grammar is the one of the
reference implementation (transformers 5.24) exactly, so that every implementation reads a region the
same way; for formats that need more (a bare call, one call per line, Python's full literal syntax) the
extension ``python-calls`` reads the same shape leniently (docs/extensions.md).

The grammar, with whitespace meaning only space, tab, line feed and carriage return, allowed before and
after every token:

* the whole region is ``[`` call (``,`` call)* ``]`` or ``[]``; only whitespace may surround it;
* a call is a name, ``(``, keyword arguments ``name=value`` separated by commas, ``)``; a name is
  ``[A-Za-z_][A-Za-z0-9_]*`` segments joined by single ``.`` or ``-`` (``ns.tool-name``); positional
  arguments, a trailing comma and an argument given twice are errors;
* a value is a string in ``'...'`` or ``"..."`` on one line, a JSON number, a list, a dict whose keys
  are strings (each key once), ``True``/``true``, ``False``/``false`` or ``None``/``null``; tuples,
  names and expressions are errors;
* string escapes are JSON's (``\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX``, surrogate pairs combined) plus
  ``\\'``; any other escape, and a lone surrogate (written raw or as an escape), is an error;
* an integer must lie within ``-(2**53 - 1)`` .. ``2**53 - 1`` (longer literals are refused by their
  digit count, before any conversion); a float that overflows to infinity is an error;
* lists and dicts nest at most :data:`MAX_CALL_LIST_DEPTH` levels inside an argument value.

The reader is a single left-to-right pass (linear in the region's length); its recursion is bounded
by the nesting limit. Errors are :class:`~response_templates.errors.ContentError` naming what was
expected and the offset in the region.

>>> from response_templates.content import parse_content
>>> parse_content('[get_weather(city="Paris", days=3), ns.get-time()]', "python-call-list")
[{'name': 'get_weather', 'arguments': {'city': 'Paris', 'days': 3}}, {'name': 'ns.get-time', 'arguments': {}}]
>>> parse_content("[f(x={'a': [1, 2.5, true, None]})]", "python-call-list")
[{'name': 'f', 'arguments': {'x': {'a': [1, 2.5, True, None]}}}]
>>> parse_content("[f(1)]", "python-call-list")
Traceback (most recent call last):
...
response_templates.errors.ContentError: python-call-list: expected a keyword argument name=value (positional arguments are not supported) at offset 3 of the region, near '1)]'
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any, NoReturn

from ..errors import ContentError
from ._args import check_args, ensure_valid
from .registry import ContentArgs, ContentParser

__all__ = ["MAX_CALL_LIST_DEPTH", "MAX_CALL_LIST_INTEGER", "PYTHON_CALL_LIST"]

MAX_CALL_LIST_DEPTH: int = 100
"""How many lists/dicts may enclose each other inside one ``python-call-list`` argument value."""

MAX_CALL_LIST_INTEGER: int = 2**53 - 1
"""The largest magnitude of a ``python-call-list`` integer (the integers a double represents exactly)."""

_MAX_INTEGER_DIGITS = len(str(MAX_CALL_LIST_INTEGER))  # 16: one more digit is always out of range

_SPACES = re.compile(r"[ \t\n\r]*")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:[-.][A-Za-z0-9_]+)*")
_NUMBER = re.compile(r"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?")
_HEX4 = re.compile(r"[0-9A-Fa-f]{4}")
#: A run of characters a string may hold as they are, per quote character.
_PLAIN = {
    "'": re.compile(r"[^'\\\n\r\ud800-\udfff]*"),
    '"': re.compile(r'[^"\\\n\r\ud800-\udfff]*'),
}
_SIMPLE_ESCAPES = {
    '"': '"',
    "'": "'",
    "\\": "\\",
    "/": "/",
    "b": "\b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
}
_CONSTANTS: dict[str, Any] = {
    "True": True,
    "true": True,
    "False": False,
    "false": False,
    "None": None,
    "null": None,
}


class _Reader:
    """One pass over the region text; ``pos`` is the offset of the next unread character."""

    __slots__ = ("pos", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def fail(self, what: str, at: int | None = None) -> NoReturn:
        where = self.pos if at is None else at
        near = self.text[where : where + 20]
        shown = f", near {near!r}" if near else " (the end of the region)"
        raise ContentError(f"python-call-list: {what} at offset {where} of the region{shown}")

    def peek(self) -> str:
        """The next character after any whitespace ("" at the end)."""
        match = _SPACES.match(self.text, self.pos)
        assert match is not None  # the pattern matches the empty string
        self.pos = match.end()
        return self.text[self.pos : self.pos + 1]

    def take(self, char: str, what: str) -> None:
        if self.peek() != char:
            self.fail(what)
        self.pos += 1

    def name(self, what: str) -> str:
        self.peek()
        match = _NAME.match(self.text, self.pos)
        if match is None:
            self.fail(what)
        self.pos = match.end()
        return match.group()

    # -- the list of calls ------------------------------------------------------------------------

    def calls(self) -> list[dict[str, Any]]:
        self.take("[", "expected '[' (the calls must be written as a list)")
        out: list[dict[str, Any]] = []
        if self.peek() == "]":
            self.pos += 1
        else:
            while True:
                out.append(self.call())
                if self.peek() == "]":
                    self.pos += 1
                    break
                self.take(",", "expected ',' or ']' after a call")
        if self.peek():
            self.fail("unexpected text after the closing ']'")
        return out

    def call(self) -> dict[str, Any]:
        name = self.name("expected a function name")
        self.take("(", f"expected '(' after the function name {name!r}")
        arguments: dict[str, Any] = {}
        if self.peek() == ")":
            self.pos += 1
            return {"name": name, "arguments": arguments}
        while True:
            self.peek()
            start = self.pos
            key = self.name(
                "expected a keyword argument name=value (positional arguments are not supported)"
                if not arguments
                else "expected a keyword argument name=value after ',' "
                "(positional arguments and trailing commas are not supported)"
            )
            self.take(
                "=", f"expected '=' after the argument name {key!r} (positional arguments are not supported)"
            )
            if key in arguments:
                self.fail(f"the argument {key!r} is given twice", start)
            arguments[key] = self.value(0)
            if self.peek() == ")":
                self.pos += 1
                return {"name": name, "arguments": arguments}
            self.take(",", f"expected ',' or ')' in the arguments of {name!r}")

    # -- values -----------------------------------------------------------------------------------

    def value(self, depth: int) -> Any:
        """One value; ``depth`` is how many lists/dicts enclose it."""
        char = self.peek()
        if char in ("'", '"'):
            return self.string(char)
        if char in ("[", "{"):
            if depth >= MAX_CALL_LIST_DEPTH:
                self.fail(f"lists and dicts nest more than {MAX_CALL_LIST_DEPTH} levels deep")
            self.pos += 1
            return self.list_rest(depth + 1) if char == "[" else self.dict_rest(depth + 1)
        number = _NUMBER.match(self.text, self.pos)
        if number is not None:
            return self.number(number)
        word = _NAME.match(self.text, self.pos)
        if word is not None and word.group() in _CONSTANTS:
            self.pos = word.end()
            return _CONSTANTS[word.group()]
        self.fail("expected a value (a string, number, list, dict, True, False or None)")

    def list_rest(self, depth: int) -> list[Any]:
        out: list[Any] = []
        if self.peek() == "]":
            self.pos += 1
            return out
        while True:
            out.append(self.value(depth))
            if self.peek() == "]":
                self.pos += 1
                return out
            self.take(",", "expected ',' or ']' in a list")

    def dict_rest(self, depth: int) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.peek() == "}":
            self.pos += 1
            return out
        while True:
            quote = self.peek()
            if quote not in ("'", '"'):
                self.fail("expected a string key (dict keys must be strings; no trailing comma)")
            start = self.pos
            key = self.string(quote)
            if key in out:
                self.fail(f"the dict key {key!r} is given twice", start)
            self.take(":", "expected ':' after a dict key")
            out[key] = self.value(depth)
            if self.peek() == "}":
                self.pos += 1
                return out
            self.take(",", "expected ',' or '}' in a dict")

    def number(self, match: re.Match[str]) -> int | float:
        literal = match.group()
        if match.group(2) is None and match.group(3) is None:
            # Count the digits first: a huge literal never reaches int().
            if len(match.group(1)) > _MAX_INTEGER_DIGITS or abs(int(literal)) > MAX_CALL_LIST_INTEGER:
                self.fail("an integer outside -(2**53 - 1) .. 2**53 - 1")
            self.pos = match.end()
            return int(literal)
        value = float(literal)
        if math.isinf(value):
            self.fail("a number too large for a float")
        self.pos = match.end()
        return value

    def string(self, quote: str) -> str:
        """The string whose opening ``quote`` is at ``pos``."""
        text, start = self.text, self.pos
        plain = _PLAIN[quote]
        parts: list[str] = []
        i = start + 1
        while True:
            run = plain.match(text, i)
            assert run is not None  # the pattern matches the empty string
            parts.append(run.group())
            i = run.end()
            char = text[i : i + 1]
            if char == quote:
                self.pos = i + 1
                return "".join(parts)
            if char == "\\":
                i = self.escape(i, parts)
            elif not char:
                self.fail("a string is not closed", start)
            elif char in "\n\r":
                self.fail("a raw line break inside a string (write it as \\n)", i)
            else:
                self.fail("a lone surrogate code point inside a string", i)

    def escape(self, i: int, parts: list[str]) -> int:
        """Decode the escape whose backslash is at ``i``; the offset after it."""
        text = self.text
        code = text[i + 1 : i + 2]
        simple = _SIMPLE_ESCAPES.get(code)
        if simple is not None:
            parts.append(simple)
            return i + 2
        if code != "u" or _HEX4.match(text, i + 2) is None:
            self.fail(f"an unsupported escape {text[i : i + 2]!r} in a string", i)
        value = int(text[i + 2 : i + 6], 16)
        end = i + 6
        if 0xD800 <= value <= 0xDBFF and text.startswith("\\u", end) and _HEX4.match(text, end + 2):
            low = int(text[end + 2 : end + 6], 16)
            if 0xDC00 <= low <= 0xDFFF:
                value = 0x10000 + ((value - 0xD800) << 10) + (low - 0xDC00)
                end += 6
        if 0xD800 <= value <= 0xDFFF:
            self.fail(f"a lone surrogate escape {text[i:end]!r} in a string", i)
        parts.append(chr(value))
        return end


def _validate_python_call_list(args: Any, field: str | None) -> dict[str, Any]:
    check_args(args, (), "python-call-list", field)
    return ContentArgs()


def _parse_python_call_list(text: str, args: Mapping[str, Any]) -> list[dict[str, Any]]:
    ensure_valid(args, _validate_python_call_list)
    return _Reader(text).calls()


PYTHON_CALL_LIST = ContentParser(
    "python-call-list", False, _parse_python_call_list, _validate_python_call_list, quoted_strings=True
)
