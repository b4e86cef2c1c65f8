"""Internal: find where a JSON value ends, incrementally (extension ``json-value-end``).

A region declared with ``"close_json": true`` (docs/extensions.md) ends where its JSON value ends.
:class:`JsonEnd` reads the region's text chunk by chunk, each character once (work linear in the text),
and reports the end as soon as no further input could move it:

* after optional leading whitespace, an object, array or string ends at its closing character (brackets
  are matched by kind; a bracket or quote inside a string does not count, and escapes are honoured);
* a top-level number or ``true``/``false``/``null`` (a run of ``[A-Za-z0-9+.-]``) ends at the first
  character that cannot continue it, which is only known when that character arrives, or at the end of the
  stream;
* a malformed value (a first character that cannot start JSON, a mismatched closing bracket) never
  ends: the region runs to the end of the stream, and the content parser reports the error there.

Strings are cut as the field's ``json`` parser reads them (:mod:`.dialect`): with ``string_delims``, a
delimited string is a string too, from its opening marker to the first occurrence of its closing marker,
and a bracket inside it does not count. Bare keys (``unquoted_keys``) hold only word characters, so
they never hide a bracket or a string and need no rule here.

The end depends only on the text, never on how it was split, so chunking cannot change it: while the text
ends with what may be the beginning of an opening marker (or, inside a delimited string, of its closing
marker), those few characters are kept and read again with the next chunk.

>>> end = JsonEnd()
>>> end.feed(' {"a": "}"'), end.feed(', "b": [1]} ; rest')
(-1, 11)
>>> end = JsonEnd()
>>> end.feed("12"), end.feed("3"), end.feed(";")
(-1, -1, 0)
>>> end = JsonEnd.for_args({"string_delims": [["<e>", "<e>"]]})
>>> end.feed('{"a": <'), end.feed('e>x}y<'), end.feed('e>} tail')
(-1, -1, 3)
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from .dialect import JSON_WS, STANDARD, JsonDialect

__all__ = ["JsonEnd", "value_end_problem"]

# Outside strings only these characters matter (and the first characters of opening markers); inside a
# standard string only a quote or a backslash.
_STRUCTURE_CHARS: Final = '[]{}"'
_IN_STRING: Final = re.compile(r'["\\]')
_TOKEN_END: Final = re.compile(r"[^A-Za-z0-9+.\-]")
_CLOSER: Final = {"{": "}", "[": "]"}

_BEFORE, _NESTED, _STRING, _ESCAPE, _DELIMITED, _TOKEN, _DONE, _MALFORMED = range(8)


def _structure_re(dialect: JsonDialect) -> re.Pattern[str]:
    chars = _STRUCTURE_CHARS + "".join(sorted(dialect.opener_starts - set(_STRUCTURE_CHARS)))
    return re.compile("[" + re.escape(chars) + "]")


_STANDARD_STRUCTURE: Final = _structure_re(STANDARD)


def value_end_problem(content_args: Mapping[str, Any]) -> str | None:
    """Why a ``close_json`` region read with these ``content_args`` cannot end where its value ends.

    None when it can (always, for a parser other than ``json``); else a message for a TemplateError. The
    checks that do not depend on ``close_json`` are made by the ``json`` parser's own validation.
    """
    return JsonDialect.from_args(content_args).value_end_problem()


class JsonEnd:
    """Incremental end-finder for one JSON value (leading whitespace allowed), in a dialect."""

    __slots__ = ("_closer", "_dialect", "_held", "_stack", "_starts", "_state", "_structure", "_top_string")

    @classmethod
    def for_args(cls, content_args: Mapping[str, Any]) -> JsonEnd:
        """The end-finder for a region read by a parser with these validated ``content_args``.

        The dialect of a ``json`` parser is honoured; any other parser's region is read as standard JSON.
        """
        return cls(JsonDialect.from_args(content_args))

    def __init__(self, dialect: JsonDialect = STANDARD) -> None:
        self._dialect = dialect
        self._starts = dialect.opener_starts
        self._structure = _STANDARD_STRUCTURE if not dialect.openers else _structure_re(dialect)
        self._state = _BEFORE
        self._stack: list[str] = []  # the closers expected, innermost last
        self._top_string = False  # the value itself is a string
        self._closer = ""  # the closing marker of the delimited string being read
        self._held = ""  # the end of the previous text, to be read again (a marker may start there)

    @property
    def done(self) -> bool:
        return self._state == _DONE

    def feed(self, text: str) -> int:
        """Read ``text``; return the offset in it just after the value's end, or -1 if not ended yet.

        After an end is returned the finder is done and must not be fed again. For a top-level number or
        literal, the returned offset is that of the first character after it (not part of the value).
        """
        if self._held:
            return self._feed_held(text)
        i, n = 0, len(text)
        starts = self._starts
        while i < n:
            state = self._state
            if state == _NESTED:
                match = self._structure.search(text, i)
                if match is None:
                    return -1
                char = match.group()
                i = match.end()
                if char in starts:
                    opener = self._dialect.opener_at(text, i - 1)
                    if opener is None:
                        return self._hold(text, i - 1)
                    if opener:
                        self._closer = self._dialect.closers[opener]
                        self._state = _DELIMITED
                        i += len(opener) - 1
                        continue
                    if char not in _STRUCTURE_CHARS:
                        continue
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
            elif state == _DELIMITED:
                at, keep = self._dialect.find_closer(text, i, self._closer)
                if at < 0:
                    return self._hold(text, n - keep) if keep else -1
                i = at + len(self._closer)
                if self._top_string:
                    self._state = _DONE
                    return i
                self._state = _NESTED
            elif state == _BEFORE:
                while i < n and text[i] in JSON_WS:
                    i += 1
                if i == n:
                    return -1
                i = self._first(text, i)
                if i < 0:
                    return -1
            elif state == _TOKEN:
                match = _TOKEN_END.search(text, i)
                if match is None:
                    return -1
                self._state = _DONE
                return match.start()
            else:  # malformed (or done): nothing ends it any more
                return -1
        return -1

    def _feed_held(self, text: str) -> int:
        """Feed ``text`` after the characters held from the previous feed (offsets stay ``text``'s)."""
        held, self._held = self._held, ""
        end = self.feed(held + text)
        # The held characters are a proper prefix of an opening marker or of a closing marker; the
        # load-time checks (value_end_problem) make sure the value cannot end inside them.
        return -1 if end < 0 else max(end - len(held), 0)

    def _hold(self, text: str, at: int) -> int:
        """Keep ``text[at:]`` to be read again with the next feed."""
        self._held = text[at:]
        return -1

    def _first(self, text: str, i: int) -> int:
        """Read the value's first character(s) at ``i``: the position after them, or -1 to stop here."""
        char = text[i]
        if char in self._starts:
            opener = self._dialect.opener_at(text, i)
            if opener is None:
                return self._hold(text, i)
            if opener:
                self._top_string = True
                self._closer = self._dialect.closers[opener]
                self._state = _DELIMITED
                return i + len(opener)
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
        return i + 1
