"""Internal: the JSON dialect of the ``json`` content parser, and the lexical rules shared by its readers.

The ``json`` content parser takes three arguments (docs/usage.md, "json"); two of them change how the
text is cut into tokens:

* ``unquoted_keys``: a key may be written bare, as a run of word characters (``\\w+``, Unicode), in a
  key position: after ``{`` or ``,`` and optional whitespace, and followed by optional whitespace and
  ``:``;
* ``string_delims``: ``[open, close]`` pairs of markers around a string written verbatim (no escapes).
  When several pairs share an opening marker, the first one wins.

A :class:`JsonDialect` holds these, built once when the template is loaded, and the rules that the three
readers of dialect text apply in the same way: the content parser (:meth:`JsonDialect.to_standard`, a
whole text rewritten to standard JSON), the end-finder of ``close_json`` regions
(:class:`~response_templates.jsonlex.end.JsonEnd`) and the tool-argument scanner
(:class:`~response_templates.jsonlex.scanner.JsonScanner`), the last two chunk by chunk:

* outside strings, where an opening marker starts, the longest one that starts there opens a
  **delimited string**, whose body is everything up to the first occurrence of its closing marker;
* a ``"`` opens a **standard string**, closed by the next ``"`` that is not escaped (preceded by an even
  number of backslashes); nothing inside a string of either kind is a token;
* with ``unquoted_keys``, a **bare key** as described above.

:meth:`JsonDialect.problem` keeps these from competing: an opening marker may not start with a character
that standard JSON uses outside strings (whitespace, ``"``, ``{}[],:``, or a character of a number or
literal: ``[A-Za-z0-9+.-]``), nor, with ``unquoted_keys``, with a word character. The ``json`` parser
rejects such arguments when the template is loaded.

>>> dialect = JsonDialect(unquoted_keys=True, string_delims=(("<e>", "<e>"),))
>>> dialect.to_standard('{city: <e>Paris, "FR"<e>, "n": "<e>"}')
'{"city": "Paris, \\\\"FR\\\\"", "n": "<e>"}'
>>> dialect.opener_at("[<e", 1), dialect.opener_at("[<e>x", 1), dialect.opener_at("[<x", 1)
(None, '<e>', '')
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import regex

__all__ = [
    "JSON_WS",
    "MAX_JSON_DEPTH",
    "STANDARD",
    "WORD_CHAR",
    "WORD_RUN",
    "JsonDialect",
    "UnclosedString",
    "dialect_for",
    "end_of_string",
]

MAX_JSON_DEPTH: int = 512
"""Deepest nesting of arrays/objects the ``json`` parser accepts (``[]`` is depth 1)."""

#: The whitespace JSON allows between tokens.
JSON_WS = " \t\n\r"

#: The characters of a bare key (``unquoted_keys``): one, and a run of them.
WORD_CHAR = regex.compile(r"\w")
WORD_RUN = regex.compile(r"\w*")

_WS_CLASS = r"[ \t\r\n]"
#: Characters that standard JSON uses outside strings, which an opening marker may not start with.
_STRUCTURAL = '{}[],:"'
_SCALAR_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+-.")


class UnclosedString(ValueError):
    """A delimited string whose closing marker never comes (raised by :meth:`JsonDialect.to_standard`)."""

    def __init__(self, opener: str, closer: str, at: int) -> None:
        super().__init__(
            f"the string opened with {opener!r} at character {at} is never closed with {closer!r}"
        )
        self.opener = opener
        self.closer = closer
        self.at = at


def end_of_string(text: str, start: int) -> int:
    """Index of the ``"`` that closes the standard string whose body starts at ``start``, or -1.

    >>> end_of_string('"a\\\\"b\\\\\\\\" x', 1)
    7
    """
    search = start
    while True:
        end = text.find('"', search)
        if end < 0:
            return -1
        before = end - 1
        while before >= start and text[before] == "\\":
            before -= 1
        if (end - 1 - before) % 2 == 0:
            return end
        search = end + 1


@dataclass(frozen=True)
class JsonDialect:
    """The lexical dialect of one ``json`` parser: bare keys, and delimited strings.

    Attributes:
        unquoted_keys: bare ``\\w+`` keys are accepted.
        string_delims: the ``(open, close)`` pairs, as validated (repeated openers included).
        closers: opening marker -> its closing marker (the first pair with that opener).
        openers: the opening markers, longest first.
        opener_starts: the first characters of the opening markers.
    """

    unquoted_keys: bool = False
    string_delims: tuple[tuple[str, str], ...] = ()
    closers: Mapping[str, str] = field(init=False, repr=False, compare=False)
    openers: tuple[str, ...] = field(init=False, repr=False, compare=False)
    opener_starts: frozenset[str] = field(init=False, repr=False, compare=False)
    _rewriter: Any = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        closers: dict[str, str] = {}
        for open_d, close_d in self.string_delims:
            closers.setdefault(open_d, close_d)
        openers = tuple(sorted(closers, key=len, reverse=True))
        object.__setattr__(self, "closers", closers)
        object.__setattr__(self, "openers", openers)
        object.__setattr__(self, "opener_starts", frozenset(o[0] for o in openers))
        alternatives = []
        if openers:
            # Longest opening marker first, so that it wins over a shorter one starting at the same place.
            alternatives.append("(?P<delim>" + "|".join(regex.escape(o) for o in openers) + ")")
        if openers or self.unquoted_keys:
            alternatives.append('(?P<quote>")')
        if self.unquoted_keys:
            alternatives.append(rf"(?P<lead>[{{,]{_WS_CLASS}*+)(?P<key>\w++)(?P<trail>{_WS_CLASS}*+):")
        object.__setattr__(self, "_rewriter", regex.compile("|".join(alternatives)) if alternatives else None)

    @property
    def plain(self) -> bool:
        """Whether this is standard JSON (no bare keys, no delimited strings)."""
        return self._rewriter is None

    @classmethod
    def from_args(cls, content_args: Mapping[str, Any]) -> JsonDialect:
        """The dialect of a ``json`` parser's ``content_args``; :data:`STANDARD` for any other parser's.

        Validated arguments carry their dialect (key ``_dialect``); other mappings are read leniently
        (arguments of the wrong shape count as absent: the parser's validation reports them).
        """
        dialect = content_args.get("_dialect")
        if isinstance(dialect, JsonDialect):
            return dialect
        unquoted = content_args.get("unquoted_keys", False) is True
        raw = content_args.get("string_delims", ())
        pairs: list[tuple[str, str]] = []
        if isinstance(raw, (list, tuple)):
            for pair in raw:
                if (
                    isinstance(pair, (list, tuple))
                    and len(pair) == 2
                    and all(isinstance(p, str) and p for p in pair)
                ):
                    pairs.append((pair[0], pair[1]))
        return dialect_for(unquoted, tuple(pairs))

    # -- load-time checks ----------------------------------------------------------------------------------

    def problem(self) -> str | None:
        """Why the lexers cannot honour this dialect, or None. Independent of how the field is read."""
        for index, (opener, _) in enumerate(self.string_delims):
            first = opener[0]
            why = ""
            if first in JSON_WS:
                why = "starts with whitespace, which JSON allows between any two tokens"
            elif first in _STRUCTURAL:
                why = f"starts with {first!r}, which standard JSON uses outside strings"
            elif first in _SCALAR_CHARS:
                why = f"starts with {first!r}, which is read as part of a number or of a literal such as true"
            elif self.unquoted_keys and WORD_CHAR.match(first):
                why = f"starts with the word character {first!r}, part of a bare key (unquoted_keys)"
            if why:
                return (
                    f"content_args 'string_delims' item {index}: the opening marker {opener!r} {why}; "
                    "the JSON lexer could not tell where strings start"
                )
        return None

    def value_end_problem(self) -> str | None:
        """Why a region cannot end where its value ends (``close_json``) in this dialect, or None.

        While the text seen so far ends with a proper prefix of an opening marker, the end-finder waits for
        the next characters, but the region has already received the held text. Openers are refused whose
        wait could hide the value's end: a ``]`` or ``}`` after the first character of an opener, or, for
        an opener that begins a longer one, its closing marker inside the rest of that longer one.
        """
        for opener in self.openers:
            inner = opener[1:-1]
            if "]" in inner or "}" in inner:
                return (
                    f"content_args 'string_delims': the opening marker {opener!r} contains ']' or '}}' after "
                    "its first character; with 'close_json' the end of the value could not be found as the "
                    "text arrives"
                )
            for shorter in self.openers:
                if len(shorter) < len(opener) and opener.startswith(shorter):
                    closer = self.closers[shorter]
                    if closer in opener[len(shorter) : -1]:
                        return (
                            f"content_args 'string_delims': the closing marker {closer!r} of {shorter!r} "
                            f"occurs inside the longer opening marker {opener!r}; with 'close_json' the end "
                            "of the value could not be found as the text arrives"
                        )
        return None

    # -- primitives ------------------------------------------------------------------------------------------

    def opener_at(self, text: str, pos: int, final: bool = False) -> str | None:
        """The opening marker that starts at ``pos``: ``""`` if none, ``None`` if more text could decide.

        The longest marker wins, so a marker that is matched already still waits while the text is a
        proper prefix of a longer one (unless ``final``: no text will follow).
        """
        rest = len(text) - pos
        for opener in self.openers:  # longest first
            if text.startswith(opener, pos):
                return opener
            if not final and rest < len(opener) and opener.startswith(text[pos:]):
                return None
        return ""

    @staticmethod
    def find_closer(text: str, pos: int, closer: str) -> tuple[int, int]:
        """Where ``closer`` next occurs from ``pos`` (-1 if not), and, if not, how many trailing characters
        of ``text`` may be its beginning (they must be searched again with the following text)."""
        end = text.find(closer, pos)
        if end >= 0:
            return end, 0
        n = len(text)
        for keep in range(min(len(closer) - 1, n - pos), 0, -1):
            if closer.startswith(text[n - keep :]):
                return -1, keep
        return -1, 0

    def to_standard(self, text: str) -> str:
        """``text`` rewritten as standard JSON in one left-to-right pass (raises :class:`UnclosedString`).

        A delimited string becomes a standard string with the same value; a bare key gets quotes. Standard
        strings are copied untouched, so nothing inside a string is ever rewritten. An unterminated
        standard string is left for the JSON decoder to report.
        """
        scanner = self._rewriter
        if scanner is None:
            return text
        closers = self.closers
        out: list[str] = []
        pos = 0
        while True:
            match = scanner.search(text, pos)
            if match is None:
                out.append(text[pos:])
                return "".join(out)
            out.append(text[pos : match.start()])
            opener = match.group("delim") if closers else None
            if opener is not None:
                closer = closers[opener]
                end = text.find(closer, match.end())
                if end < 0:
                    raise UnclosedString(opener, closer, match.start())
                out.append(json.dumps(text[match.end() : end], ensure_ascii=False))
                pos = end + len(closer)
            elif match.group("quote") is not None:
                end = end_of_string(text, match.end())
                if end < 0:
                    out.append(text[match.start() :])
                    return "".join(out)
                out.append(text[match.start() : end + 1])
                pos = end + 1
            else:
                out.append(f'{match.group("lead")}"{match.group("key")}"{match.group("trail")}:')
                pos = match.end()


@functools.lru_cache(maxsize=128)
def dialect_for(unquoted_keys: bool, string_delims: tuple[tuple[str, str], ...]) -> JsonDialect:
    """The (shared, immutable) dialect with these arguments."""
    return JsonDialect(unquoted_keys=unquoted_keys, string_delims=string_delims)


def pairs_of(string_delims: Sequence[Sequence[str]]) -> tuple[tuple[str, str], ...]:
    """``string_delims`` as a tuple of ``(open, close)`` tuples."""
    return tuple((pair[0], pair[1]) for pair in string_delims)


#: Standard JSON.
STANDARD = dialect_for(False, ())
