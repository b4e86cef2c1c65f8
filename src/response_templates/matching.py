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
  one combined matcher, so a chunk costs one C-level search plus, rarely, a short suffix check.
* **Regexes**: the leftmost-first match comes from a normal search. The undecided position comes from
  a *probe*: the pattern wrapped as ``(?>(?:P))(?=[\\s\\S])(?!)`` and searched with the ``regex``
  module's partial matching. The atomic group makes the engine explore, at each start position, exactly
  the paths that a normal search explores up to and including the one that succeeds; the tail then
  reads one character past that match and rejects it, so the probe can only report a *partial* match:
  the first position at which one of those paths, or the winning match itself, reached the end of the
  buffer. End-of-input assertions (``$``, ``\\Z``, ``\\b``, ``\\B``, ``\\m``, ``\\M``) are
  rewritten into equivalent lookarounds that read a character, so that they, too, register as touching
  the end of the buffer.

Work per call is proportional to the text searched (the unrouted tail of the buffer), which the parser
keeps short; every regex search runs under a time budget so that a catastrophically backtracking
pattern from an untrusted template fails with :class:`PatternTimeoutError` instead of hanging.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import regex

# The parser regex_first_chars reads patterns with: `re._parser` from Python 3.11 on (`sre_parse` still
# exists there but warns), `sre_parse` before.
if sys.version_info >= (3, 11):
    # typeshed has no stub for this CPython-internal module (same contents as `sre_parse`)
    import re._parser as sre_parse  # type: ignore[import-not-found, unused-ignore]
else:  # pragma: no cover
    import sre_parse

from .errors import PatternTimeoutError, TemplateError

__all__ = [
    "FLAGS",
    "Delimiter",
    "Match",
    "WatchSet",
    "compile_pattern",
    "rewrite_end_assertions",
]

#: Flags every template regex is compiled with: DOTALL on, MULTILINE off (docs/spec.md, section 4).
FLAGS = regex.DOTALL

_INF = 1 << 62
# A regex match this close to the search start is confirmed by probing each start position up to it.
_PROBE_GAP = 32

# Replacements for the zero-width assertions whose truth at the end of the buffer can change when more
# text arrives. Each is exactly equivalent (DOTALL, no MULTILINE) but reads a character, which the
# partial matcher notices.
_END = r"(?![\s\S])"
_ASSERTION_REWRITES = {
    "$": r"(?=\n?" + _END + ")",
    r"\Z": _END,
    r"\b": r"(?:(?<=\w)(?!\w)|(?<!\w)(?=\w))",
    r"\B": r"(?:(?<=\w)(?=\w)|(?<!\w)(?!\w))",
    r"\m": r"(?<!\w)(?=\w)",
    r"\M": r"(?<=\w)(?!\w)",
}
# Appended to the atomic group of a probe: never matches, and reads one character past the match, so a
# match that ends at the end of the buffer counts as undecided. (A bare ``(?!)`` is not enough: the
# ``regex`` engine does not always report a repeat that gives up at the end of the text as partial.)
_PROBE_TAIL = r"(?=[\s\S])(?!)"
_TOUCH_END = r"(?=[\s\S]|)"
# Inline flags that would change how a pattern is read or what its anchors mean.
_FORBIDDEN_FLAGS = {"m": "MULTILINE", "x": "VERBOSE", "w": "WORD", "V": "VERSION1", "p": "POSIX"}


def rewrite_end_assertions(pattern: str) -> tuple[str, bool]:
    """Rewrite end-sensitive assertions of ``pattern`` into equivalent lookarounds.

    Returns the rewritten pattern and whether the original uses a lookbehind (the parser then keeps a
    window of already-routed text for it to look at). Raises ``ValueError`` for constructs whose meaning
    depends on where a search starts (``\\G``) or inline flags that the template language forbids.

    >>> rewrite_end_assertions(r"</x>$")[0]
    '</x>(?=\\\\n?(?![\\\\s\\\\S]))'
    """
    out: list[str] = []
    i, n = 0, len(pattern)
    in_class = False
    lookbehind = False
    while i < n:
        c = pattern[i]
        if c == "\\" and i + 1 < n:
            tok = pattern[i : i + 2]
            i += 2
            if not in_class:
                if tok == r"\G":
                    raise ValueError(r"'\G' depends on where a search starts; it cannot be used here")
                if tok in _ASSERTION_REWRITES:
                    out.append(_ASSERTION_REWRITES[tok])
                    continue
            out.append(tok)
            continue
        if in_class:
            if c == "]":
                in_class = False
            out.append(c)
            i += 1
            continue
        if c == "[":
            in_class = True
            out.append(c)
            i += 1
            # A ']' right after '[' or '[^' is a literal member of the set.
            if i < n and pattern[i] == "^":
                out.append("^")
                i += 1
            if i < n and pattern[i] == "]":
                out.append("]")
                i += 1
            continue
        if c == "$":
            out.append(_ASSERTION_REWRITES["$"])
            i += 1
            continue
        if c == "(" and pattern.startswith("(?", i):
            if pattern.startswith("(?#", i):  # comment group: copy verbatim up to ')'
                end = pattern.find(")", i)
                end = n if end < 0 else end + 1
                out.append(pattern[i:end])
                i = end
                continue
            if pattern.startswith(("(?<=", "(?<!"), i):
                lookbehind = True
                # A lookbehind that fails at the end of the buffer reads nothing, and the engine then
                # does not always notice that a lazy quantifier before it could still extend; an
                # always-true lookahead that reads a character makes the end of the buffer visible.
                out.append(_TOUCH_END)
            else:
                j = i + 2
                while j < n and (pattern[j].isalpha() or pattern[j] in "-0123456789"):
                    j += 1
                if j < n and pattern[j] in ":)" and j > i + 2:
                    flags = pattern[i + 2 : j].split("-", 1)[0]  # flags after '-' are turned off
                    for flag in flags:
                        if flag in _FORBIDDEN_FLAGS:
                            raise ValueError(
                                f"inline flag '{flag}' ({_FORBIDDEN_FLAGS[flag]}) is not allowed: template "
                                "regexes are always DOTALL without MULTILINE"
                            )
        out.append(c)
        i += 1
    return "".join(out), lookbehind


def compile_pattern(source: str, *, field: str | None, key: str) -> tuple[Any, Any, bool]:
    """Compile a template regex into (search pattern, probe pattern, uses lookbehind).

    Errors name the field and key.
    """
    if not isinstance(source, str):
        raise TemplateError(f"must be a regex string, got {type(source).__name__}", field=field, key=key)
    if source == "":
        raise TemplateError("must not be empty", field=field, key=key)
    try:
        regex.compile(source, FLAGS)
    except (regex.error, OverflowError, RecursionError) as exc:
        raise TemplateError(f"invalid regex {source!r}: {exc}", field=field, key=key) from None
    try:
        rewritten, lookbehind = rewrite_end_assertions(source)
    except ValueError as exc:
        raise TemplateError(f"regex {source!r}: {exc}", field=field, key=key) from None
    try:
        search = regex.compile(rewritten, FLAGS)
        probe = regex.compile(f"(?>(?:{rewritten})){_PROBE_TAIL}", FLAGS)
    except (regex.error, OverflowError, RecursionError) as exc:  # pragma: no cover - defensive
        raise TemplateError(
            f"regex {source!r} cannot be used for streaming: {exc}", field=field, key=key
        ) from None
    return search, probe, lookbehind


# The first characters a regex can match at, for the parser's fast path. Read with Python's own regex
# parser (the patterns are `regex` patterns; anything it does not read the same way gives "unknown").
_MAX_FIRST = 256


# Over 80 lines with its docstring and examples; the walk over the parsed pattern is about 60 lines, kept
# in one piece because its two inner functions recurse into each other.
def regex_first_chars(source: str) -> str | None:
    """The characters that every match of ``source`` starts at, or None when that is not a small known set.

    A match starting at position ``p`` (zero-width or not) needs ``text[p]`` to be one of them, so a chunk
    with none of them cannot contain the start of a match -- except at the very start of the stream, where
    a ``^`` branch may match (the parser never takes its fast path there). None for anything this analysis
    cannot bound: a pattern that can match the empty string anywhere, ``$`` and word boundaries, ``.``,
    classes such as ``\\s`` or negated sets at the start, case-insensitive parts, backreferences, or a
    pattern that Python's ``re`` parser does not read.

    >>> regex_first_chars(r"(?:<tool_call>\\s*)?<function=(?P<name>[^>]+)>")
    '<'
    >>> regex_first_chars(r"<think>|^\\s*(?=</think>)")  # a ^ branch matches only at the start
    '<'
    >>> regex_first_chars(r"\\s*</think>") is None
    True
    """
    try:
        parsed = sre_parse.parse(source, re.DOTALL)
    except Exception:  # any syntax Python's parser does not share with `regex`
        return None
    if parsed.state.flags & re.IGNORECASE:
        return None
    consts = sre_parse

    def seq(items: Any) -> tuple[set[str] | None, bool]:
        acc: set[str] = set()
        for op, av in items:
            first, nullable = item(op, av)
            if first is None:
                return None, True
            acc |= first
            if not nullable:
                return acc, False
        return acc, True

    def item(op: Any, av: Any) -> tuple[set[str] | None, bool]:
        if op is consts.LITERAL:
            return {chr(av)}, False
        if op is consts.IN:
            chars: set[str] = set()
            for kind, value in av:
                if kind is consts.LITERAL:
                    chars.add(chr(value))
                elif kind is consts.RANGE and value[1] - value[0] < _MAX_FIRST:
                    chars.update(chr(c) for c in range(value[0], value[1] + 1))
                else:
                    return None, True
            return chars, False
        if op is consts.BRANCH:
            union: set[str] = set()
            any_nullable = False
            for branch in av[1]:
                first, nullable = seq(branch)
                if first is None:
                    return None, True
                union |= first
                any_nullable = any_nullable or nullable
            return union, any_nullable
        if op is consts.SUBPATTERN:
            if av[1] & re.IGNORECASE:
                return None, True
            return seq(av[3])
        if op in (consts.MAX_REPEAT, consts.MIN_REPEAT, getattr(consts, "POSSESSIVE_REPEAT", None)):
            first, nullable = seq(av[2])
            return first, nullable or av[0] == 0
        if op is getattr(consts, "ATOMIC_GROUP", None):
            return seq(av)
        if op is consts.ASSERT:
            if av[0] < 0:
                return set(), True  # a lookbehind constrains earlier text only
            first, nullable = seq(av[1])
            if first is None or nullable:
                return set(), True
            return first, False  # zero-width, but the character at the match position is one of these
        if op is consts.ASSERT_NOT:
            return set(), True
        if op is consts.AT and av in (consts.AT_BEGINNING, consts.AT_BEGINNING_STRING):
            return set(), False  # matches only at the start of the stream, which the fast path never skips
        return None, True

    first, nullable = seq(parsed)
    if first is None or nullable or not first or len(first) > _MAX_FIRST:
        return None
    return "".join(sorted(first))


@dataclass(frozen=True, slots=True)
class Match:
    """A final delimiter match: span in the buffer and its named captures."""

    start: int
    end: int
    captures: dict[str, str]
    delimiter: Delimiter


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

    @classmethod
    def literal(cls, value: Any, *, field: str, kind: str, key: str) -> Delimiter:
        if kind == "anchor":
            field_for_errors: str | None = None
        else:
            field_for_errors = field
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
        return cls(
            field=field,
            kind=kind,
            source=source,
            pattern=search,
            probe=probe,
            lookbehind=lookbehind,
            group_names=frozenset(search.groupindex),
            first_chars=regex_first_chars(source),
        )

    @property
    def is_literal(self) -> bool:
        return self.literals is not None

    def describe(self) -> str:
        return f"{self.kind} of field {self.field!r} ({self.source!r})"

    def matches_empty_anywhere(self) -> bool:
        """Whether the delimiter matches the empty string in the middle of ordinary text.

        Such a delimiter would fire at almost every position. Zero-width matches that need a context
        (``^``, ``$``, a lookahead such as ``(?=\\{)``) are fine: the parser guarantees progress.
        """
        if self.literals is not None:
            return False
        probes = ("ab", "a b", "\n\n", "<>", "{}", "12")
        return any((m := self.pattern.match(text, 1)) is not None and m.end() == 1 for text in probes)

    # -- regex helpers ------------------------------------------------------------------------------

    def _timeout_error(self, timeout: float) -> PatternTimeoutError:
        return PatternTimeoutError(
            f"regex {self.source!r} ran longer than its {timeout:g} s budget (catastrophic backtracking?); "
            "simplify the pattern or raise regex_timeout",
            field=self.field if self.kind != "anchor" else None,
            key=f"{self.kind}_pattern" if self.kind != "anchor" else "start_anchor_pattern",
        )

    def search(self, text: str, pos: int, timeout: float) -> Any:
        try:
            return self.pattern.search(text, pos, timeout=timeout)
        except TimeoutError:
            raise self._timeout_error(timeout) from None

    def find_regex(
        self,
        text: str,
        pos: int,
        final: bool,
        skip_empty_at: int,
        timeout: float,
        memo: dict[Any, tuple[int, Any]] | None = None,
    ) -> tuple[Any, int]:
        """Leftmost-first match of a regex delimiter from ``pos`` and the undecided position.

        A zero-width match at ``skip_empty_at`` is not allowed (the previous boundary was zero-width at
        the same place); the search then resumes one character later. ``memo`` (see :meth:`WatchSet.scan`)
        remembers earlier searches of the same text.
        """
        while True:
            try:
                m = _memo_search(self.pattern, self, text, pos, timeout, memo)
                undecided = _INF
                if not final:
                    if m is not None and m.start() - pos <= _PROBE_GAP:
                        # Only start positions up to the match matter; a near match is checked at each
                        # of them instead of probing the rest of the text.
                        probe_match = self.probe.match
                        for start in range(pos, m.start() + 1):
                            if probe_match(text, start, partial=True, timeout=timeout) is not None:
                                undecided = start
                                break
                    else:
                        p = _memo_search(self.probe, (self, "probe"), text, pos, timeout, memo, partial=True)
                        if p is not None:
                            undecided = p.start()
            except TimeoutError:
                raise self._timeout_error(timeout) from None
            if m is not None and m.start() == m.end() == skip_empty_at and m.start() < undecided:
                if pos >= len(text):
                    return None, undecided
                pos = m.start() + 1
                continue
            return m, undecided


def _memo_search(
    pattern: Any,
    key: Any,
    text: str,
    pos: int,
    timeout: float,
    memo: dict[Any, tuple[int, Any]] | None,
    partial: bool = False,
) -> Any:
    """``pattern.search(text, pos)`` (or a ``partial`` one), reusing an earlier search of the same text.

    A search from ``p0`` that found its leftmost (partial) match at ``s``, or none, answers every later
    search of the same text from ``p0 <= pos <= s`` with the same result: whether and how a pattern
    matches at a start position does not depend on where the search began (``\\G`` is rejected at load
    time). Without this, a state visited many times in one long text would search the rest of the text
    again at each visit.
    """
    if memo is not None:
        entry = memo.get(key)
        if entry is not None and entry[0] <= pos and (entry[1] is None or entry[1].start() >= pos):
            return entry[1]
    m = pattern.search(text, pos, partial=partial, timeout=timeout)
    if memo is not None:
        memo[key] = (pos, m)
    return m


@dataclass(frozen=True, eq=False)
class WatchSet:
    """The delimiters watched in one parser state, compiled for a fast combined scan.

    All literal delimiters share one alternation (longest first) and one table of proper prefixes; regex
    delimiters are searched one by one. Tie-breaking follows docs/spec.md, section 4: earliest start,
    then the longer match, then an open before a close, then the field whose name sorts first.
    """

    delimiters: tuple[Delimiter, ...]
    literal_re: Any = None
    # literal text -> the delimiter that wins when that literal matches
    literal_owner: dict[str, Delimiter] = field(default_factory=dict)
    prefixes: frozenset[str] = frozenset()
    prefix_last_chars: frozenset[str] = frozenset()
    max_prefix: int = 0
    regexes: tuple[Delimiter, ...] = ()
    #: The characters a delimiter can start with (None: unknown, because of a regex that
    #: :func:`regex_first_chars` cannot bound). A chunk that contains none of them, arriving when nothing
    #: is held back and not at the start of the stream, cannot start or complete a delimiter.
    first_chars: str | None = None
    first_re: Any = None

    @classmethod
    def build(cls, delimiters: Sequence[Delimiter]) -> WatchSet:
        owner: dict[str, Delimiter] = {}
        prefixes: set[str] = set()
        regexes = []
        for d in sorted(delimiters, key=_priority):
            if d.literals is None:
                regexes.append(d)
                continue
            for lit in d.literals:
                owner.setdefault(lit, d)
                for k in range(1, len(lit)):
                    prefixes.add(lit[:k])
        starts = {lit[0] for lit in owner}
        for d in regexes:
            starts.update(d.first_chars or "")
        unknown = any(d.first_chars is None for d in regexes)
        first_chars = None if unknown else "".join(sorted(starts))
        literal_re = None
        if owner:
            alternation = "|".join(regex.escape(s) for s in sorted(owner, key=len, reverse=True))
            literal_re = regex.compile(alternation, FLAGS)
        return cls(
            delimiters=tuple(delimiters),
            literal_re=literal_re,
            literal_owner=owner,
            prefixes=frozenset(prefixes),
            prefix_last_chars=frozenset(p[-1] for p in prefixes),
            max_prefix=max((len(p) for p in prefixes), default=0),
            regexes=tuple(regexes),
            first_chars=first_chars,
            first_re=regex.compile(
                "[" + "".join(regex.escape(c) for c in first_chars) + "]" if first_chars else "(?!)"
            ),
        )

    def scan(
        self,
        text: str,
        pos: int,
        final: bool,
        skip_empty_at: int,
        timeout: float,
        memo: dict[Any, tuple[int, Any]] | None = None,
    ) -> tuple[Match | None, int]:
        """Find the next boundary in ``text[pos:]`` that no further input can change.

        Returns ``(match, undecided)``: ``match`` is the winning final match or ``None``; ``undecided`` is
        the first position from which more input could still produce or change a match (text before it
        and before ``match`` can be routed now). With ``final`` the text is complete: nothing is
        undecided and ``undecided`` is ``len(text)``. ``memo`` (for scans of one unchanged ``text``) keeps
        each pattern's last search so that a later scan of the same text reuses it.
        """
        best: tuple[Any, ...] | None = None
        undecided = _INF
        n = len(text)
        if self.literal_re is not None:
            m = _memo_search(self.literal_re, self, text, pos, timeout, memo)
            if m is not None:
                d = self.literal_owner[m.group()]
                best = (m.start(), m.start() - m.end(), *_priority(d), m, d)
            if not final and text and text[-1] in self.prefix_last_chars:
                # The earliest start of a suffix that is a proper prefix of some literal.
                for k in range(min(self.max_prefix, n - pos), 0, -1):
                    if text[n - k :] in self.prefixes:
                        undecided = n - k
                        break
        for d in self.regexes:
            m, u = d.find_regex(text, pos, final, skip_empty_at, timeout, memo)
            if u < undecided:
                undecided = u
            if m is not None:
                key = (m.start(), m.start() - m.end(), *_priority(d), m, d)
                if best is None or key[:4] < best[:4]:
                    best = key
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
