"""Internal: which text, inside a JSON string, is its own canonical text (``JsonScanner.feed_verbatim``).

Such text has no quote that ends the string, no character canonical JSON escapes (control characters,
lone surrogates) and only the escapes canonical JSON writes the same way (not ``\\/`` nor ``\\uXXXX``).
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["CUT_ESCAPE", "NOT_VERBATIM", "VERBATIM", "Verdicts", "verdict"]

_VERBATIM: Final = re.compile(r'[^"\\\x00-\x1f\ud800-\udfff]*(?:\\["\\bfnrt][^"\\\x00-\x1f\ud800-\udfff]*)*')

#: The verdicts on a text: not verbatim, verbatim, or verbatim but for a backslash at its end that starts
#: an escape cut in two.
NOT_VERBATIM: Final = 0
VERBATIM: Final = 1
CUT_ESCAPE: Final = 2
#: Texts up to this many characters are remembered by :class:`Verdicts`, at most _KNOWN_MAX of them.
_TEXT_MAX: Final = 16
_KNOWN_MAX: Final = 512


def verdict(text: str) -> int:
    """Whether ``text`` (not empty) continues a string verbatim: one of the verdicts above."""
    if _VERBATIM.fullmatch(text) is not None:
        return VERBATIM
    if text[-1] == "\\" and _VERBATIM.fullmatch(text, 0, len(text) - 1) is not None:
        return CUT_ESCAPE
    return NOT_VERBATIM


class Verdicts:
    """:func:`verdict`, remembered for short texts: a long argument repeats a few tokens that need the
    full check (``' \\\\"'``, ``'\\\\n'``, ...) thousands of times.

    >>> verdicts = Verdicts()
    >>> [verdicts.of(t) for t in ('a\\\\"b', 'a"b', 'a\\\\', 'a\\\\"b')] == [VERBATIM, NOT_VERBATIM, CUT_ESCAPE, VERBATIM]
    True
    """

    __slots__ = ("_known",)

    def __init__(self) -> None:
        self._known: dict[str, int] = {}

    def of(self, text: str) -> int:
        """The verdict on ``text`` (not empty)."""
        if len(text) > _TEXT_MAX:
            return verdict(text)
        known = self._known.get(text, -1)
        if known < 0:
            known = verdict(text)
            if len(self._known) < _KNOWN_MAX:
                self._known[text] = known
        return known
