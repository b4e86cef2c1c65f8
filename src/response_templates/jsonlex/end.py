"""Find where a JSON value ends, incrementally (extension ``json-value-end``, docs/extensions.md).

A region declared with ``"close_json": true`` ends exactly where its JSON value ends. :class:`JsonEnd`
reads the region's text chunk by chunk, each character once (work linear in the text), and reports the
end as soon as no further input could move it:

* after optional leading whitespace, an object, array or string ends at its closing character (brackets
  are matched by kind; a bracket or quote inside a string does not count, and escapes are honoured);
* a top-level number or ``true``/``false``/``null`` (a run of ``[A-Za-z0-9+.-]``) ends at the first
  character that cannot continue it, which is only known when that character arrives, or at the end of the
  stream;
* a malformed value (a first character that cannot start JSON, a mismatched closing bracket) never
  ends: the region runs to the end of the stream, and the content parser reports the error there.

The end depends only on the text, never on how it was split, so chunking cannot change it.

>>> end = JsonEnd()
>>> end.feed(' {"a": "}"'), end.feed(', "b": [1]} ; rest')
(-1, 11)
>>> end = JsonEnd()
>>> end.feed("12"), end.feed("3"), end.feed(";")
(-1, -1, 0)
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["JsonEnd"]

# Outside strings only these characters matter; inside a string only a quote or a backslash.
_STRUCTURE = re.compile(r'[\[\]{}"]')
_IN_STRING = re.compile(r'["\\]')
_TOKEN_END = re.compile(r"[^A-Za-z0-9+.\-]")
_WHITESPACE = " \t\n\r"
_CLOSER = {"{": "}", "[": "]"}

_BEFORE, _NESTED, _STRING, _ESCAPE, _TOKEN, _DONE, _MALFORMED = range(7)


class JsonEnd:
    """Incremental end-finder for one JSON value (leading whitespace allowed)."""

    __slots__ = ("_stack", "_state", "_top_string")

    @classmethod
    def for_args(cls, content_args: Any) -> JsonEnd:
        """The end-finder for a region read by the ``json`` parser with these validated ``content_args``."""
        return cls()

    def __init__(self) -> None:
        self._state = _BEFORE
        self._stack: list[str] = []  # the closers expected, innermost last
        self._top_string = False  # the value itself is a string

    @property
    def done(self) -> bool:
        return self._state == _DONE

    def feed(self, text: str) -> int:
        """Read ``text``; return the offset in it just after the value's end, or -1 if not ended yet.

        After an end is returned the finder is done and must not be fed again. For a top-level number or
        literal, the returned offset is that of the first character after it (not part of the value).
        """
        i, n = 0, len(text)
        while i < n:
            state = self._state
            if state == _BEFORE:
                while i < n and text[i] in _WHITESPACE:
                    i += 1
                if i == n:
                    return -1
                char = text[i]
                if char in _CLOSER:
                    self._stack.append(_CLOSER[char])
                    self._state = _NESTED
                elif char == '"':
                    self._top_string = True
                    self._state = _STRING
                elif char == "-" or (char.isascii() and char.isalnum()):
                    self._state = _TOKEN
                else:
                    self._state = _MALFORMED
                    return -1
                i += 1
            elif state == _NESTED:
                match = _STRUCTURE.search(text, i)
                if match is None:
                    return -1
                char = match.group()
                i = match.end()
                if char == '"':
                    self._state = _STRING
                elif char in _CLOSER:
                    self._stack.append(_CLOSER[char])
                elif char != self._stack.pop():
                    self._state = _MALFORMED
                    return -1
                elif not self._stack:
                    self._state = _DONE
                    return i
            elif state == _STRING:
                match = _IN_STRING.search(text, i)
                if match is None:
                    return -1
                i = match.end()
                if match.group() == "\\":
                    self._state = _ESCAPE
                elif self._top_string:
                    self._state = _DONE
                    return i
                else:
                    self._state = _NESTED
            elif state == _ESCAPE:
                i += 1  # the escaped character (a \uXXXX's digits contain no quote or backslash)
                self._state = _STRING
            elif state == _TOKEN:
                match = _TOKEN_END.search(text, i)
                if match is None:
                    return -1
                self._state = _DONE
                return match.start()
            else:  # malformed (or done): nothing ends it any more
                return -1
        return -1
