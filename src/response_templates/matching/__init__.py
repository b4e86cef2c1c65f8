"""Internal: delimiter matching with exact streaming hold-back (docs/spec.md, section 4).

The parser must never commit a delimiter match that more input could change: not a literal that a
longer literal of the same list could still extend (``STOP`` / ``STOPPED``), not a regex whose optional
suffix could still match (``</invoke>(?:\\s*</minimax:tool_call>)?``), not a ``$`` that holds only
because the buffer happens to end in a newline, not a lookahead that ran off the end of the buffer.

For every delimiter this module answers one question about the text seen so far: *where is the first
position from which the outcome is still undecided, and is there a match before it?* A match that
starts before the undecided position is final: every continuation of the stream yields the same match
(same span, same captures).

* **Literals** (and literal lists): the undecided position is the start of the longest suffix of the
  buffer that is a proper prefix of one of the literals. All literals watched in one parser state share
  one combined matcher (Python's own ``re``: a plain alternation of literals is linear, so it is neither
  timed nor charged), so a chunk costs one C-level search plus, rarely, a short suffix check.
* **Regexes**: the leftmost-first match comes from a normal search. The undecided position comes from
  a *probe*: the pattern wrapped as ``(?>(?:P))(?=[\\s\\S])(?!)`` and searched with the ``regex``
  module's partial matching. The atomic group makes the engine explore, at each start position, exactly
  the paths that a normal search explores up to and including the one that succeeds; the tail then
  reads one character past that match and rejects it, so the probe can only report a *partial* match:
  the first position at which one of those paths, or the winning match itself, reached the end of the
  buffer. (A never-matching branch and a lookahead for the first characters only speed the probe up,
  see patterns.compile_pattern.) End-of-input assertions (``$``, ``\\Z``, ``\\b``, ``\\B``, ``\\m``, ``\\M``) are
  rewritten into equivalent lookarounds that read a character, so that they, too, register as touching
  the end of the buffer. A regex whose every match contains one of a few literal texts
  (``required_literals``) is neither searched nor probed where they are all absent (:meth:`Delimiter.find_regex`), and no
  delimiter probes past the earliest match the scan has found.

Work per call is proportional to the text searched (the unrouted tail of the buffer), which the parser
keeps short, and does not grow with the number of delimiters: many regex delimiters that start with
literal text are looked up by it (:class:`_PrefixIndex`). Every regex search is charged to a
:class:`RegexMeter`, which bounds one search, one parser call and one stream (:class:`RegexBudget`), so
that a catastrophically backtracking pattern from an untrusted template fails with
:class:`PatternTimeoutError` instead of hanging.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import regex

from ..errors import PatternTimeoutError, TemplateError
from .budget import DEFAULT_REGEX_BUDGET, RegexBudget, RegexMeter
from .patterns import (
    FLAGS,
    compile_pattern,
    regex_first_chars,
    regex_literal_prefix,
    regex_literal_suffix,
    regex_required_literals,
    rewrite_end_assertions,
)

__all__ = [
    "DEFAULT_REGEX_BUDGET",
    "FLAGS",
    "Delimiter",
    "Match",
    "RegexBudget",
    "RegexMeter",
    "WatchSet",
    "compile_pattern",
    "regex_literal_prefix",
    "regex_literal_suffix",
    "rewrite_end_assertions",
]

_INF: Final = 1 << 62
# A regex match this close to the search start is confirmed by probing each start position up to it.
_PROBE_GAP: Final = 32
# Up to this many characters, a delimiter's undecided position where its required suffix is absent comes
# from the pattern's own partial search: several times cheaper than the probe on short text, but it looks
# for the required literal before every start position, so on long text the (linear) probe is used.
_SHORT_PARTIAL: Final = 256


def _char_class(chars: Sequence[str]) -> re.Pattern[str]:
    """A pattern that finds any of ``chars`` (none when empty). The standard library's engine: a class of
    literal characters needs no partial matching or timeout, and it costs a third of ``regex`` per call,
    which matters where every streamed chunk is searched."""
    return re.compile("[" + "".join(re.escape(c) for c in chars) + "]" if chars else "(?!)")


class Match:
    """A final delimiter match: span in the buffer and its named captures (a plain, cheap record)."""

    __slots__ = ("captures", "delimiter", "end", "start")

    def __init__(self, start: int, end: int, captures: dict[str, str], delimiter: Delimiter) -> None:
        self.start = start
        self.end = end
        self.captures = captures
        self.delimiter = delimiter

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Match):
            return NotImplemented
        return (self.start, self.end, self.captures, self.delimiter) == (
            other.start,
            other.end,
            other.captures,
            other.delimiter,
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Match(start={self.start}, end={self.end}, captures={self.captures}, delimiter={self.delimiter!r})"


@dataclass(frozen=True, eq=False)
class Delimiter:
    """One delimiter of a template: the open or close of one field (or the start anchor).

    ``kind`` is ``"open"`` or ``"close"``; ``literals`` is set for literal delimiters, ``pattern`` and
    ``probe`` for regex ones. ``source`` is what the template said, for messages.
    """

    field: str
    kind: str
    source: str | list[str]
    literals: tuple[str, ...] | None = None
    pattern: Any = None
    probe: Any = None
    lookbehind: bool = False
    group_names: frozenset[str] = frozenset()
    #: Regex delimiters: the characters every match starts at (None: unknown); see regex_first_chars.
    first_chars: str | None = None
    #: Regex delimiters: literal texts one of which every match contains (() if none is known); see
    #: regex_required_literals. The check: ``required_one`` when there is one (``str.find``), else
    #: ``required``, a search for any of them (stdlib ``re``: an alternation of literals), or neither.
    required_literals: tuple[str, ...] = ()
    required_one: str = ""
    required: Any = None
    #: Regex delimiters with known ``first_chars``: a search for any of them (stdlib ``re``), else None.
    first_re: Any = None

    @classmethod
    def literal(cls, value: Any, *, field: str, kind: str, key: str) -> Delimiter:
        if kind == "anchor":
            field_for_errors: str | None = None
        else:
            field_for_errors = field
        items: list[Any]  # template data: each item is checked below
        if isinstance(value, str):
            items = [value]
        elif isinstance(value, list):
            if not value:
                raise TemplateError("must list at least one literal", field=field_for_errors, key=key)
            items = value
        else:
            raise TemplateError(
                f"must be a string or a list of strings, got {type(value).__name__}",
                field=field_for_errors,
                key=key,
            )
        for item in items:
            if not isinstance(item, str):
                raise TemplateError(
                    f"must contain only strings, found {type(item).__name__} {item!r}",
                    field=field_for_errors,
                    key=key,
                )
            if item == "":
                raise TemplateError("literals must not be empty strings", field=field_for_errors, key=key)
        literals = tuple(dict.fromkeys(items))
        escaped = "|".join(regex.escape(s) for s in sorted(literals, key=len, reverse=True))
        return cls(
            field=field, kind=kind, source=value, literals=literals, pattern=regex.compile(escaped, FLAGS)
        )

    @classmethod
    def regex(cls, source: Any, *, field: str, kind: str, key: str) -> Delimiter:
        search, probe, lookbehind = compile_pattern(
            source, field=field if kind != "anchor" else None, key=key
        )
        required = regex_required_literals(source)
        first = regex_first_chars(source)
        return cls(
            field=field,
            kind=kind,
            source=source,
            pattern=search,
            probe=probe,
            lookbehind=lookbehind,
            group_names=frozenset(search.groupindex),
            first_chars=first,
            required_literals=required,
            required_one=required[0] if len(required) == 1 else "",
            required=re.compile("|".join(map(re.escape, required))) if len(required) > 1 else None,
            first_re=_char_class(first) if first else None,
        )

    @property
    def is_literal(self) -> bool:
        return self.literals is not None

    def describe(self) -> str:
        return f"{self.kind} of field {self.field!r} ({self.source!r})"

    def matches_empty_anywhere(self, *, line_ends: bool = True) -> bool:
        """Whether the delimiter matches the empty string in the middle of ordinary text.

        Such a delimiter would fire at almost every position. Zero-width matches that need a context
        (``^``, a lookahead such as ``(?=\\{)``) are fine: the parser guarantees progress (docs/spec.md,
        rule 4.13). With ``line_ends`` a zero-width match between two newlines (where ``$`` matches
        before a final newline, and ``(?=\\n)`` anywhere) counts too; without it, only a zero-width match
        between two characters that are not newlines does, so ``$`` and ``(?=\\n)`` pass while ``x*``
        does not.

        >>> d = Delimiter.regex(r"<\\|im_end\\|>\\s*|$", field="content", kind="close", key="close_pattern")
        >>> d.matches_empty_anywhere(), d.matches_empty_anywhere(line_ends=False)
        (True, False)
        >>> Delimiter.regex("x*", field="c", kind="close", key="close_pattern").matches_empty_anywhere(line_ends=False)
        True
        """
        if self.literals is not None:
            return False
        probes = ("ab", "a b", "<>", "{}", "12", *(("\n\n",) if line_ends else ()))
        return any((m := self.pattern.match(text, 1)) is not None and m.end() == 1 for text in probes)

    # -- regex helpers ------------------------------------------------------------------------------

    def _timeout_error(self, meter: RegexMeter) -> PatternTimeoutError:
        anchor = self.kind == "anchor"
        return meter.error(
            f"regex {self.source!r}",
            field=None if anchor else self.field,
            key="start_anchor_pattern" if anchor else f"{self.kind}_pattern",
        )

    def search(self, text: str, pos: int, meter: RegexMeter) -> Any:
        try:
            return meter.run(self.pattern.search, text, pos)
        except TimeoutError:
            raise self._timeout_error(meter) from None

    def may_match(self, text: str, pos: int) -> bool:
        """False when ``text`` holds none of the required literals from ``pos`` on: no match there."""
        one = self.required_one
        if one:
            return text.find(one, pos) >= 0
        required = self.required
        return required is None or required.search(text, pos) is not None

    def find_regex(
        self,
        text: str,
        pos: int,
        final: bool,
        skip_empty_at: int,
        meter: RegexMeter,
        memo: dict[Any, tuple[int, Any]] | None = None,
        limit: int = _INF,
        below: int = _INF,
    ) -> tuple[Any, int]:
        """Leftmost-first match of a regex delimiter from ``pos`` and the undecided position.

        ``limit`` is where the scan already has a match of another delimiter: only undecided positions up
        to it matter then (later ones cannot change which match wins), so only they are probed; an
        undecided position after ``limit`` may be reported as none. ``below`` is where text is already
        held back (by the delimiters scanned before): the scan keeps the earliest undecided position, so
        one at or after ``below`` may be reported as none too, and nothing is searched for it when
        ``below`` is ``pos`` and no match is possible (a header that several patterns could still open
        costs one partial search, not one per pattern).

        A zero-width match at ``skip_empty_at`` is not allowed (the previous boundary was zero-width at
        the same place); the search then resumes one character later. ``memo`` (see :meth:`WatchSet.scan`)
        remembers earlier searches of the same text. Every search is charged to ``meter``.

        A text that holds none of the literal texts one of which every match contains
        (``required_literals``) holds no match: nothing is searched then (only probed, for the undecided
        position), and on short text the undecided position is where the pattern's
        partial match starts (with no complete match in the text, the probe and the partial search agree;
        tests/test_required_literals.py checks it for every delimiter of the library). Not searching
        matters beyond the search's own length: a pattern such as ``function<sep>(?P<name>[^\\n]+)\\n``
        tries every copy of its prefix in a text without a newline to the end of the text (quadratic in
        one search), while its probe stops at the first copy, which reaches the end of the buffer.
        """
        absent = False
        if (self.required_one or self.required is not None) and not _memo_required(self, text, pos, memo):
            if final or below <= pos:
                return None, _INF
            if len(text) - pos <= _SHORT_PARTIAL:
                try:
                    partial = meter.run(self.pattern.search, text, pos, partial=True)
                except TimeoutError:
                    raise self._timeout_error(meter) from None
                return None, _INF if partial is None else partial.start()
            if self.first_re is not None:
                return None, self._first_partial(text, pos, min(limit + 1, below), meter, memo)
            absent = True
        while True:
            try:
                m = None if absent else _memo_search(self.pattern, self, text, pos, meter, memo)
                undecided = _INF
                if not final:
                    last = m.start() if m is not None and m.start() < limit else limit
                    if last - pos <= _PROBE_GAP:
                        # Only start positions up to the match (this one's or the scan's) matter; a near
                        # one is checked at each of them instead of probing the rest of the text.
                        probe_match = self.probe.match
                        for start in range(pos, min(last + 1, below)):
                            if meter.run(probe_match, text, start, partial=True) is not None:
                                undecided = start
                                break
                    elif below > pos:
                        p = _memo_search(self.probe, (self, "probe"), text, pos, meter, memo, partial=True)
                        if p is not None:
                            undecided = p.start()
            except TimeoutError:
                raise self._timeout_error(meter) from None
            if m is not None and m.start() == m.end() == skip_empty_at and m.start() < undecided:
                if pos >= len(text):
                    return None, undecided
                pos = m.start() + 1
                continue
            return m, undecided

    def _first_partial(
        self, text: str, pos: int, stop: int, meter: RegexMeter, memo: dict[Any, tuple[int, Any]] | None
    ) -> int:
        """Where the probe's search from ``pos`` finds its partial match (``_INF``: none before ``stop``),
        for a text with no complete match: the first start that the probe matches partially, tried at
        ``pos``, at each first character of the pattern and at the end of the text.

        The probe's own search gives the same answer, but the ``regex`` module looks for a complete match
        at every start before it reports a partial one: where many starts run to the end of the text
        (``function<sep>(?P<name>[^\\n]+)\\n`` on a run of its prefix with no newline) that is quadratic,
        while this stops at the first.
        """
        key = (self, "first")
        if memo is not None:
            # As in _memo_search: an answer from p0 (a start, or none before the stop) holds from every
            # later position up to it, within the stop it was looked for.
            entry = memo.get(key)
            if entry is not None:
                known: tuple[int, int] = entry[1]
                if entry[0] <= pos and pos <= known[0] and stop <= known[1]:
                    return known[0]
        found_at = _INF
        n = len(text)
        probe_match = self.probe.match
        first_re = self.first_re
        try:
            if meter.run(probe_match, text, pos, partial=True) is not None:
                found_at = pos
            else:
                for found in first_re.finditer(text, pos + 1, min(stop, n)):
                    start: int = found.start()
                    if meter.run(probe_match, text, start, partial=True) is not None:
                        found_at = start
                        break
                else:
                    if pos < n < stop and meter.run(probe_match, text, n, partial=True) is not None:
                        found_at = n
        except TimeoutError:
            raise self._timeout_error(meter) from None
        if memo is not None:
            memo[key] = (pos, (found_at, stop if found_at >= _INF else _INF))
        return found_at


def _memo_search(
    pattern: Any,
    key: Any,
    text: str,
    pos: int,
    meter: RegexMeter,
    memo: dict[Any, tuple[int, Any]] | None,
    partial: bool = False,
) -> Any:
    """``pattern.search(text, pos)`` (or a ``partial`` one), reusing an earlier search of the same text.

    A search from ``p0`` that found its leftmost (partial) match at ``s``, or none, answers every later
    search of the same text from ``p0 <= pos <= s`` with the same result: whether and how a pattern
    matches at a start position does not depend on where the search began (``\\G`` is rejected at load
    time). Without this, a state visited many times in one long text would search the rest of the text
    again at each visit. The search is charged to ``meter`` (TimeoutError when the budget runs out).
    """
    if memo is not None:
        entry = memo.get(key)
        if entry is not None and entry[0] <= pos and (entry[1] is None or entry[1].start() >= pos):
            return entry[1]
    m = meter.run(pattern.search, text, pos, partial=partial)
    if memo is not None:
        memo[key] = (pos, m)
    return m


def _memo_required(d: Delimiter, text: str, pos: int, memo: dict[Any, tuple[int, Any]] | None) -> bool:
    """Whether ``text[pos:]`` holds one of the delimiter's required literals (:meth:`Delimiter.may_match`),
    with the same memo as :func:`_memo_search`: where the last look-up found the next one (or found none),
    a later look-up from a position up to it has the same answer. Without the memo, a state visited once
    per copy of a short repeated delimiter (a stop token a model loops on) looked through the rest of the
    text at each visit for a literal that is not there: quadratic."""
    key = (d, "required")
    if memo is not None:
        entry = memo.get(key)
        if entry is not None:
            known: int = entry[1]
            if entry[0] <= pos and (known < 0 or known >= pos):
                return known >= 0
    one = d.required_one
    if one:
        at = text.find(one, pos)
    else:
        found = d.required.search(text, pos)
        at = -1 if found is None else found.start()
    if memo is not None:
        memo[key] = (pos, at)
    return at >= 0


def _memo_literal(
    pattern: Any, key: Any, text: str, pos: int, memo: dict[Any, tuple[int, Any]] | None
) -> Any:
    """:func:`_memo_search` for an alternation of literals: the same memo, and no meter (it is linear)."""
    if memo is not None:
        entry = memo.get(key)
        if entry is not None and entry[0] <= pos and (entry[1] is None or entry[1].start() >= pos):
            return entry[1]
        m = pattern.search(text, pos)
        memo[key] = (pos, m)
        return m
    return pattern.search(text, pos)


# Literals up to this long keep a table of their proper prefixes for hold-back; longer ones are compared.
_SHORT_LITERAL: Final = 32
# Watch sets with at least this many regex delimiters that start with a literal index them by it.
_INDEX_AT: Final = 8


@dataclass(frozen=True, eq=False)
class _PrefixIndex:
    """Regex delimiters that start with literal text, looked up by it (see :meth:`WatchSet.scan`).

    A delimiter can match, or be undecided, at a position only if its literal prefix is there (or the
    text ends inside it), so a scan visits only the positions holding a first character of a prefix and,
    at each, tries only the delimiters whose prefix is there: with many delimiters, a few dictionary
    look-ups and a few searches instead of a search per delimiter. Every answer is still the delimiter's
    own search or probe, so the result is exactly that of searching each one.
    """

    delimiters: tuple[Delimiter, ...]
    #: (prefix length, {prefix: delimiters with that prefix, in priority order}), longest first
    tables: tuple[tuple[int, dict[str, tuple[Delimiter, ...]]], ...]
    #: every non-empty proper prefix of a literal prefix: text that ends there is undecided
    partials: frozenset[str]
    longest: int
    first_re: re.Pattern[str]
    order: dict[Delimiter, int]

    @classmethod
    def build(cls, delimiters: Sequence[Delimiter], prefixes: Sequence[str]) -> _PrefixIndex:
        by_length: dict[int, dict[str, list[Delimiter]]] = {}
        partials: set[str] = set()
        for d, prefix in zip(delimiters, prefixes, strict=True):
            by_length.setdefault(len(prefix), {}).setdefault(prefix, []).append(d)
            partials.update(prefix[:k] for k in range(1, len(prefix)))
        tables = tuple(
            (length, {k: tuple(v) for k, v in table.items()})
            for length, table in sorted(by_length.items(), reverse=True)
        )
        firsts = sorted({p[0] for p in prefixes})
        return cls(
            delimiters=tuple(delimiters),
            tables=tables,
            partials=frozenset(partials),
            longest=max(len(p) for p in prefixes),
            first_re=_char_class(firsts),
            order={d: i for i, d in enumerate(delimiters)},
        )

    def scan(
        self, text: str, pos: int, final: bool, meter: RegexMeter, undecided: int
    ) -> tuple[tuple[Any, ...] | None, int]:
        """The best match of these delimiters before ``undecided`` (a tie-break key), and the new undecided."""
        n = len(text)
        for found in self.first_re.finditer(text, pos, min(undecided, n)):
            p = found.start()
            rest = n - p
            if not final and rest < self.longest and text[p:] in self.partials:
                return None, p  # the text ends inside a delimiter's literal start
            candidates: list[Delimiter] = []
            for length, table in self.tables:
                if length <= rest:
                    ds = table.get(text[p : p + length])
                    if ds is not None:
                        candidates.extend(ds)
            if not candidates:
                continue
            if len(self.tables) > 1:
                candidates.sort(key=self.order.__getitem__)
            best: Any = None
            winner: Delimiter | None = None
            for d in candidates:
                try:
                    if not final and meter.run(d.probe.match, text, p, partial=True) is not None:
                        return None, p
                    m = meter.run(d.pattern.match, text, p)
                except TimeoutError:
                    raise d._timeout_error(meter) from None
                if m is not None and (best is None or m.end() > best.end()):
                    best, winner = m, d
            if winner is not None:
                return (p, p - best.end(), *_priority(winner), best, winner), undecided
        return None, undecided


@dataclass(frozen=True, eq=False)
class WatchSet:
    """The delimiters watched in one parser state, compiled for a fast combined scan.

    All literal delimiters share one alternation (longest first) and one hold-back check (a table of the
    proper prefixes of short literals, a comparison at each possible start for long ones); regex delimiters are searched one by one, or, when
    many start with literal text, looked up by it (:class:`_PrefixIndex`), so that a scan costs a few
    searches however many delimiters are watched. Tie-breaking follows docs/spec.md, section 4: earliest start,
    then the longer match, then an open before a close, then the field whose name sorts first.
    """

    delimiters: tuple[Delimiter, ...]
    literal_re: Any = None
    # literal text -> the delimiter that wins when that literal matches
    literal_owner: dict[str, Delimiter] = field(default_factory=dict)
    #: Every proper prefix of the short literals (at most _SHORT_LITERAL characters: a small table).
    prefixes: frozenset[str] = frozenset()
    max_prefix: int = 0
    #: The long literals, each with the characters of its proper prefixes: their hold-back is found by
    #: comparing the text's tail with the literal at each place it could start (no table of prefixes).
    long_literals: tuple[tuple[str, frozenset[str]], ...] = ()
    #: The characters a proper prefix of a literal can end with (a cheap test before the hold-back check).
    prefix_last_chars: frozenset[str] = frozenset()
    regexes: tuple[Delimiter, ...] = ()
    indexed: _PrefixIndex | None = None
    #: The characters a delimiter can start with (None: unknown, because of a regex that
    #: :func:`regex_first_chars` cannot bound). A chunk that contains none of them, arriving when nothing
    #: is held back and not at the start of the stream, cannot start or complete a delimiter.
    first_chars: str | None = None
    first_re: re.Pattern[str] | None = None
    #: Only literal delimiters (no regex): a scan is one unmetered search and the hold-back check.
    literal_only: bool = False

    @classmethod
    def build(cls, delimiters: Sequence[Delimiter], *, index_at: int = _INDEX_AT) -> WatchSet:
        owner: dict[str, Delimiter] = {}
        last_chars: set[str] = set()
        prefixes: set[str] = set()
        long_literals: list[tuple[str, frozenset[str]]] = []
        regexes = []
        for d in sorted(delimiters, key=_priority):
            if d.literals is None:
                regexes.append(d)
                continue
            for lit in d.literals:
                owner.setdefault(lit, d)
                last_chars.update(lit[:-1])
                if len(lit) <= _SHORT_LITERAL:
                    prefixes.update(lit[:k] for k in range(1, len(lit)))
                else:  # linear in the literal, not quadratic
                    long_literals.append((lit, frozenset(lit[:-1])))
        starts = {lit[0] for lit in owner}
        for d in regexes:
            starts.update(d.first_chars or "")
        unknown = any(d.first_chars is None for d in regexes)
        first_chars = None if unknown else "".join(sorted(starts))
        literal_re = None
        if owner:
            # The standard library's engine: for a plain alternation of literals it gives the same match
            # as ``regex`` (no partial matching or timeout is needed) at a smaller cost per call.
            literal_re = re.compile("|".join(re.escape(s) for s in sorted(owner, key=len, reverse=True)))
        indexed = None
        leading = {d: regex_literal_prefix(d.source) for d in regexes if isinstance(d.source, str)}
        starting = [d for d in regexes if leading.get(d)]
        if starting and len(starting) >= index_at:
            indexed = _PrefixIndex.build(starting, [leading[d] for d in starting])
            regexes = [d for d in regexes if not leading.get(d)]
        return cls(
            delimiters=tuple(delimiters),
            literal_re=literal_re,
            literal_owner=owner,
            prefixes=frozenset(prefixes),
            max_prefix=max((len(p) for p in prefixes), default=0),
            long_literals=tuple(long_literals),
            prefix_last_chars=frozenset(last_chars),
            regexes=tuple(regexes),
            indexed=indexed,
            first_chars=first_chars,
            first_re=_char_class(first_chars or ""),
            literal_only=literal_re is not None and not regexes and indexed is None,
        )

    def _literal_hold_back(self, text: str, pos: int) -> int:
        """The earliest start of a suffix of ``text[pos:]`` that is a proper prefix of a literal (or _INF)."""
        n = len(text)
        best = _INF
        for k in range(min(self.max_prefix, n - pos), 0, -1):
            if text[n - k :] in self.prefixes:
                best = n - k
                break
        last = text[-1]
        for lit, chars in self.long_literals:
            if last not in chars:
                continue
            stop = min(best, n)
            first = lit[0]
            i = text.find(first, max(pos, n - len(lit) + 1), stop)
            while i >= 0:
                if lit.startswith(text[i:]):
                    best = i
                    break
                i = text.find(first, i + 1, stop)
        return best

    def scan(
        self,
        text: str,
        pos: int,
        final: bool,
        skip_empty_at: int,
        meter: RegexMeter | float,
        memo: dict[Any, tuple[int, Any]] | None = None,
        hint: dict[WatchSet, Delimiter] | None = None,
    ) -> tuple[Match | None, int]:
        """Find the next boundary in ``text[pos:]`` that no further input can change.

        Returns ``(match, undecided)``: ``match`` is the winning final match or ``None``; ``undecided`` is
        the first position from which more input could still produce or change a match (text before it
        and before ``match`` can be routed now). With ``final`` the text is complete: nothing is
        undecided and ``undecided`` is ``len(text)``. ``memo`` (for scans of one unchanged ``text``) keeps
        each pattern's last search so that a later scan of the same text reuses it. ``meter`` is charged
        with every regex search (a number: a per-search timeout in seconds, nothing else bounded).
        ``hint`` (kept by the caller across scans, any text) only orders work: the delimiter that last
        held text back is tried first, as it usually still does when the text has grown by a token.
        """
        best: tuple[Any, ...] | None = None
        undecided = _INF
        n = len(text)
        if not isinstance(meter, RegexMeter):
            meter = RegexMeter.unlimited(meter)
        if self.literal_re is not None:
            # Not metered: an alternation of literals is searched in time linear in the text.
            m = _memo_literal(self.literal_re, self, text, pos, memo)
            if m is not None:
                d = self.literal_owner[m.group()]
                if self.literal_only:
                    # Nothing else to compare with: the literal match (if decided) is the answer.
                    if not final and text[-1] in self.prefix_last_chars:
                        undecided = self._literal_hold_back(text, pos)
                        if m.start() >= undecided:
                            return None, undecided
                    return Match(m.start(), m.end(), {}, d), n if final or undecided > n else undecided
                best = (m.start(), m.start() - m.end(), *_priority(d), m, d)
            if not final and text and text[-1] in self.prefix_last_chars:
                undecided = self._literal_hold_back(text, pos)
        if self.indexed is not None:
            found, undecided = self.indexed.scan(text, pos, final, meter, undecided)
            if found is not None and (best is None or found[:4] < best[:4]):
                best = found
        limit = _INF
        if not final and len(self.regexes) > 1:
            # The earliest match start among these delimiters (and the literals): no delimiter needs to
            # probe past it. (A zero-width match where the last boundary was is skipped, so not counted.)
            limit = best[0] if best is not None else _INF
            for d in self.regexes:
                if not (d.required_one or d.required is not None) or _memo_required(d, text, pos, memo):
                    try:
                        m = _memo_search(d.pattern, d, text, pos, meter, memo)
                    except TimeoutError:
                        raise d._timeout_error(meter) from None
                    if m is not None and m.start() < limit and not (m.start() == m.end() == skip_empty_at):
                        limit = m.start()
        # The delimiter that held text back at the last scan (``hint``) is asked first: where it still
        # does, the others need not look for text to hold back (``below``; a header that several patterns
        # could still open then costs one partial search, not one per pattern). Only the order of the work
        # depends on the hint, never the answer.
        last = hint.get(self) if hint is not None and not final else None
        early: tuple[Any, int] | None = None
        held: Delimiter | None = None  # the delimiter that holds text back from the earliest position
        if last is not None and undecided > pos:
            early = last.find_regex(text, pos, final, skip_empty_at, meter, memo, limit, undecided)
            if early[1] < undecided:
                undecided, held = early[1], last
        for d in self.regexes:
            if early is not None and d is last:
                m, u = early
            else:
                m, u = d.find_regex(text, pos, final, skip_empty_at, meter, memo, limit, undecided)
            if u < undecided:
                undecided, held = u, d
            if m is not None:
                key = (m.start(), m.start() - m.end(), *_priority(d), m, d)
                if best is None or key[:4] < best[:4]:
                    best = key
        if hint is not None and held is not None:
            hint[self] = held
        if final or undecided > n:
            undecided = n
        if best is None:
            return None, undecided
        start, m, d = best[0], best[4], best[5]
        if not final and start >= undecided:
            return None, undecided
        captures = {k: v for k, v in m.groupdict().items() if v is not None} if d.group_names else {}
        return Match(start, m.end(), captures, d), undecided


def _priority(d: Delimiter) -> tuple[int, str]:
    return (0 if d.kind == "open" else 1, d.field)
