"""Control tokens: a marker that the model spelled out with ordinary tokens is text, not a delimiter.

A tokenizer's control tokens (``<|im_end|>``, ``<tool_call>``, ...) are single token ids. A model can
also write the same characters with ordinary tokens, one piece at a time: in a sentence about the
format, in code, or because a tool result it repeats contains them. Read as text, that spelling is
indistinguishable from the real token, so it closes the message, opens a tool call or forges a turn.
Read as token ids it is not the token, and it stays text.

This module is the core's side of that rule, with no tokenizer in sight: the token layer
(:mod:`response_templates.hf`) knows which pieces of the output are control tokens, and tells the
parser (:meth:`~response_templates.ResponseParser.feed_control` for a control token,
:meth:`~response_templates.ResponseParser.feed` for text from ordinary tokens). In text from ordinary
tokens, :class:`ControlTokens` finds each complete spelling of a control token and the parser puts a
mark before its last character in the text its delimiters are matched against, so no delimiter that
contains the spelling can match there; the marks are taken out again, by position, of everything the
parser hands back. Nothing is inserted into or deleted from what the model wrote: a U+FDD2 that the
model wrote itself is kept (the position of each mark is known, so only marks are removed).

>>> controls = ControlTokens(["<|im_end|>", "<tool_call>"])
>>> marked, marks, tail = controls.mark("", "Type <|im_")
>>> marked, marks
('Type <|im_', [])
>>> marked, marks, tail = controls.mark(tail, "end|> to stop.")
>>> marked.replace(MARK, "^"), marks
('end|^> to stop.', [4])
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

__all__ = ["MARK", "ControlTokens"]

#: The mark put before the last character of a spelled-out control token (a Unicode noncharacter). It
#: only ever appears in the parser's own buffer, at positions the parser records, and never in output.
MARK = "\ufdd2"


class ControlTokens:
    """The spellings of a tokenizer's control tokens, and the finder of their spelled-out occurrences.

    ``spellings`` are the control tokens' texts; one-character ones are left out (a mark between the
    characters of a one-character token is not possible, and such tokens are ordinary text anyway).

    :meth:`mark` reads text from ordinary tokens as it streams, with a ``tail`` (the last characters of
    that text before, returned by the previous call) so that a spelling split across tokens is found
    when its last character comes: the mark goes before that character, which is in the new text, so
    nothing already read has to change.
    """

    __slots__ = ("_finder", "_keep", "_last", "spellings")

    def __init__(self, spellings: Iterable[str]) -> None:
        if isinstance(spellings, str):
            raise TypeError("control tokens are a collection of strings, not one string")
        kept = sorted({s for s in spellings if isinstance(s, str) and len(s) > 1}, key=lambda s: (-len(s), s))
        #: The control tokens' texts, longest first.
        self.spellings: tuple[str, ...] = tuple(kept)
        self._finder: re.Pattern[str] | None = re.compile("|".join(map(re.escape, kept))) if kept else None
        self._keep = max((len(s) for s in kept), default=1) - 1
        # The spellings' last characters: a text with none of them cannot end a spelling.
        last = sorted({s[-1] for s in kept})
        self._last: re.Pattern[str] | None = (
            re.compile("[" + "".join(map(re.escape, last)) + "]") if last else None
        )

    def __bool__(self) -> bool:
        return self._finder is not None

    def __repr__(self) -> str:
        return f"ControlTokens({list(self.spellings)!r})"

    def mark(self, tail: str, text: str) -> tuple[str, list[int], str]:
        """``text`` (from ordinary tokens, following ``tail``) with a :data:`MARK` before the last character
        of every control-token spelling that ends in it; the marks' indexes in the returned text; and the
        tail to pass with the next text."""
        finder = self._finder
        if finder is None or not text:
            return text, [], ""
        joined = tail + text
        keep = self._keep
        new_tail = joined[-keep:] if keep else ""
        assert self._last is not None
        if self._last.search(text) is None:
            return text, [], new_tail
        offset = len(tail)
        cuts: list[int] = []
        search_from = 0
        while True:
            found = finder.search(joined, search_from)
            if found is None:
                break
            end = found.end()
            if end > offset:
                cuts.append(end - 1 - offset)  # before the spelling's last character, an index in text
            search_from = end
        if not cuts:
            return text, [], new_tail
        pieces: list[str] = []
        marks: list[int] = []
        last = 0
        for cut in cuts:
            pieces.append(text[last:cut])
            marks.append(cut + len(marks))
            pieces.append(MARK)
            last = cut
        pieces.append(text[last:])
        return "".join(pieces), marks, new_tail

    def mark_pieces(self, pieces: Sequence[tuple[str, bool]]) -> tuple[str, list[int]]:
        """A whole text given as pieces ``(text, is_control)``: the marked text and its marks' indexes."""
        out: list[str] = []
        marks: list[int] = []
        size = 0
        tail = ""
        for text, control in pieces:
            if control:
                tail = ""
                out.append(text)
                size += len(text)
                continue
            marked, at, tail = self.mark(tail, text)
            marks.extend(size + i for i in at)
            out.append(marked)
            size += len(marked)
        return "".join(out), marks


#: How a tokenizer passed to the core (``ResponseParser(..., tokenizer=)``, ``parse_response(...,
#: tokenizer=)``: transformers 5.25's call shapes) is read. The core never imports the tokenizer
#: integration: the package's ``__init__`` plugs it in here, as an object with ``reader(tokenizer, prefix,
#: control_tokens)`` and ``parse(tokenizer, output, **options)`` that imports :mod:`response_templates.hf`
#: only when called. None: no integration (the core used on its own).
tokenizer_ring: Any = None


def tokenizer_integration() -> Any:
    """The plugged-in tokenizer integration (see :data:`tokenizer_ring`), or a clear error."""
    if tokenizer_ring is None:
        raise RuntimeError(
            "a tokenizer was passed, but no tokenizer integration is plugged in: import response_templates "
            "(the package), or use response_templates.hf"
        )
    return tokenizer_ring
