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
keeps short, and does not grow with the number of delimiters: many regex delimiters that start with
literal text are looked up by it (:class:`_PrefixIndex`). Every regex search is charged to a
:class:`RegexMeter`, which bounds one search, one parser call and one stream (:class:`RegexBudget`), so
that a catastrophically backtracking pattern from an untrusted template fails with
:class:`PatternTimeoutError` instead of hanging.
"""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from time import perf_counter
from typing import Any

import regex

# The parser regex_first_chars reads patterns with: `re._parser` from Python 3.11 on (`sre_parse` still
# exists there but warns), `sre_parse` before.
if sys.version_info >= (3, 11):
    # typeshed has no stub for this CPython-internal module (same contents as `sre_parse`)
    import re._parser as sre_parse  # type: ignore[import-not-found, unused-ignore]
else:  # pragma: no cover
    import sre_parse

from .errors import PatternTimeoutError, ResponseTemplateError, TemplateError

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
    except MemoryError:
        raise TemplateError(
            f"regex {source!r} is too large to compile (out of memory)", field=field, key=key
        ) from None
    try:
        rewritten, lookbehind = rewrite_end_assertions(source)
    except ValueError as exc:
        raise TemplateError(f"regex {source!r}: {exc}", field=field, key=key) from None
    try:
        search = regex.compile(rewritten, FLAGS)
        probe = regex.compile(f"(?>(?:{rewritten})){_PROBE_TAIL}", FLAGS)
    except (regex.error, OverflowError, RecursionError, MemoryError) as exc:  # pragma: no cover
        raise TemplateError(
            f"regex {source!r} cannot be used for streaming: {exc}", field=field, key=key
        ) from None
    return search, probe, lookbehind


# ------------------------------------------------------------------------------------- regex budgets


@dataclass(frozen=True)
class RegexBudget:
    """Bounds on the time regex searches may take: per search, per ``feed`` call, per stream.

    ``per_search`` bounds one search (``None``: the template's ``regex_timeout``, 1 s by default);
    ``per_feed`` bounds the total regex time of one call (the constructor's reading of the prefix,
    one :meth:`~response_templates.ResponseParser.feed`, :meth:`~response_templates.ResponseParser.finalize`,
    or the single pass of :func:`~response_templates.parse_response`); ``per_stream`` bounds the total of
    one parser (one generation). ``None`` for ``per_feed`` or ``per_stream`` means no bound. Every search
    gets the smallest of what is left, so a stream never spends more than ``per_stream`` seconds in
    regex searches; running out raises :class:`~response_templates.PatternTimeoutError` naming the
    pattern and the budget (``error.budget``).

    >>> import response_templates as rt
    >>> rt.RegexBudget()
    RegexBudget(per_search=None, per_feed=5.0, per_stream=30.0)
    >>> rt.RegexBudget(per_feed=0.5, per_stream=None).per_feed
    0.5
    """

    per_search: float | None = None
    per_feed: float | None = 5.0
    per_stream: float | None = 30.0

    def __post_init__(self) -> None:
        for name in ("per_search", "per_feed", "per_stream"):
            value = getattr(self, name)
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
                raise ResponseTemplateError(
                    f"RegexBudget.{name} must be a positive number of seconds or None, got {value!r}"
                )
            if not math.isfinite(value):
                object.__setattr__(self, name, None)


#: The budget a parser uses when none is given.
DEFAULT_REGEX_BUDGET = RegexBudget()

_BUDGET_NAMES = {"per_search": "per-search", "per_feed": "per-feed", "per_stream": "per-stream"}


class RegexMeter:
    """What is left of a :class:`RegexBudget` in one parser: charged by every metered search.

    ``timeout()`` is the timeout for the next search (the smallest of the per-search bound and what is
    left of the feed and stream budgets); ``charge(seconds)`` records a search's time; ``start_feed()``
    refills the per-feed budget at the start of a call. ``searches`` counts the metered searches.
    """

    __slots__ = (
        "feed_left",
        "kind",
        "per_feed",
        "per_search",
        "per_stream",
        "searches",
        "spent",
        "stream_left",
    )

    def __init__(self, budget: RegexBudget | None = None, per_search: float = 1.0) -> None:
        budget = DEFAULT_REGEX_BUDGET if budget is None else budget
        self.per_search = float(budget.per_search if budget.per_search is not None else per_search)
        self.per_feed = math.inf if budget.per_feed is None else float(budget.per_feed)
        self.feed_left = self.per_feed
        self.per_stream = math.inf if budget.per_stream is None else float(budget.per_stream)
        self.stream_left = self.per_stream
        self.kind = "per_search"  # which budget the last timeout() came from
        self.searches = 0
        self.spent = 0.0  # total regex seconds of the stream

    @classmethod
    def unlimited(cls, per_search: float) -> RegexMeter:
        """A meter with only a per-search bound (for direct calls of :meth:`WatchSet.scan`)."""
        return cls(RegexBudget(per_search=per_search, per_feed=None, per_stream=None))

    def start_feed(self) -> None:
        """A new call begins: its budget is full again."""
        self.feed_left = self.per_feed

    def timeout(self) -> float:
        limit, kind = self.per_search, "per_search"
        if self.feed_left < limit:
            limit, kind = self.feed_left, "per_feed"
        if self.stream_left < limit:
            limit, kind = self.stream_left, "per_stream"
        self.kind = kind
        return limit

    def charge(self, seconds: float) -> None:
        self.searches += 1
        self.spent += seconds
        self.feed_left -= seconds
        self.stream_left -= seconds

    def error(self, what: str, *, field: str | None, key: str | None) -> PatternTimeoutError:
        """The error for a search of ``what`` (a pattern's description) that ran out of ``self.kind``."""
        kind = self.kind
        if kind == "per_search":
            message = (
                f"{what} ran longer than its {self.per_search:g} s per-search budget (catastrophic backtracking?); "
                "simplify the pattern or raise regex_timeout"
            )
        else:
            total = self.per_feed if kind == "per_feed" else self.per_stream
            scope = "of this call" if kind == "per_feed" else "of this stream"
            message = (
                f"the {_BUDGET_NAMES[kind]} regex budget ({total:g} s {scope}) ran out while {what} was "
                f"searched ({self.spent:.3g} s of regex time in the stream so far); simplify the "
                "template's patterns or raise regex_budget"
            )
        error = PatternTimeoutError(message, field=field, key=key)
        error.budget = kind
        return error

    def run(self, call: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """``call(*args, timeout=..., **kwargs)`` under the budget; TimeoutError when it runs out."""
        limit = self.timeout()
        if limit <= 0:
            raise TimeoutError
        start = perf_counter()
        try:
            return call(*args, timeout=limit, **kwargs)
        finally:
            self.charge(perf_counter() - start)


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

    def find_regex(
        self,
        text: str,
        pos: int,
        final: bool,
        skip_empty_at: int,
        meter: RegexMeter,
        memo: dict[Any, tuple[int, Any]] | None = None,
    ) -> tuple[Any, int]:
        """Leftmost-first match of a regex delimiter from ``pos`` and the undecided position.

        A zero-width match at ``skip_empty_at`` is not allowed (the previous boundary was zero-width at
        the same place); the search then resumes one character later. ``memo`` (see :meth:`WatchSet.scan`)
        remembers earlier searches of the same text. Every search is charged to ``meter``.
        """
        while True:
            try:
                m = _memo_search(self.pattern, self, text, pos, meter, memo)
                undecided = _INF
                if not final:
                    if m is not None and m.start() - pos <= _PROBE_GAP:
                        # Only start positions up to the match matter; a near match is checked at each
                        # of them instead of probing the rest of the text.
                        probe_match = self.probe.match
                        for start in range(pos, m.start() + 1):
                            if meter.run(probe_match, text, start, partial=True) is not None:
                                undecided = start
                                break
                    else:
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


# Literals up to this long keep a table of their proper prefixes for hold-back; longer ones are compared.
_SHORT_LITERAL = 32
# Watch sets with at least this many regex delimiters that start with a literal index them by it.
_INDEX_AT = 8
# Longest literal prefix the index keys on (a shorter key only admits more candidates).
_INDEX_PREFIX = 16
# Sources whose leading literals Python's parser may read differently from `regex`: fuzzy constraints
# ({e<=1} is literal text to `re`). Inline flags that `re` does not know make it fail, which gives "".
_PREFIX_UNSAFE = regex.compile(r"\{[^}0-9,]")


def regex_literal_prefix(source: str) -> str:
    """The literal text every match of ``source`` starts with (up to 16 characters), or ``""``.

    Read with Python's own regex parser, like :func:`regex_first_chars`; ``""`` for anything it does not
    read the same way as ``regex``.

    >>> regex_literal_prefix(r"<f12(?:a|b)>")
    '<f12'
    >>> regex_literal_prefix(r"(?:<tool_call>\\s*)?<function=")
    ''
    """
    if _PREFIX_UNSAFE.search(source):
        return ""
    try:
        parsed = sre_parse.parse(source, re.DOTALL)
    except Exception:  # any syntax Python's parser does not share with `regex`
        return ""
    if parsed.state.flags & re.IGNORECASE:
        return ""
    chars: list[str] = []
    items: Any = parsed  # a SubPattern: a sequence of (op, argument)
    for op, av in items:
        if op is not sre_parse.LITERAL or len(chars) >= _INDEX_PREFIX:
            break
        chars.append(chr(av))
    return "".join(chars)


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
    first_re: Any
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
            first_re=regex.compile("[" + "".join(regex.escape(c) for c in firsts) + "]"),
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
    first_re: Any = None

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
            alternation = "|".join(regex.escape(s) for s in sorted(owner, key=len, reverse=True))
            literal_re = regex.compile(alternation, FLAGS)
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
            first_re=regex.compile(
                "[" + "".join(regex.escape(c) for c in first_chars) + "]" if first_chars else "(?!)"
            ),
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
    ) -> tuple[Match | None, int]:
        """Find the next boundary in ``text[pos:]`` that no further input can change.

        Returns ``(match, undecided)``: ``match`` is the winning final match or ``None``; ``undecided`` is
        the first position from which more input could still produce or change a match (text before it
        and before ``match`` can be routed now). With ``final`` the text is complete: nothing is
        undecided and ``undecided`` is ``len(text)``. ``memo`` (for scans of one unchanged ``text``) keeps
        each pattern's last search so that a later scan of the same text reuses it. ``meter`` is charged
        with every search (a number: a per-search timeout in seconds, nothing else bounded).
        """
        if not isinstance(meter, RegexMeter):
            meter = RegexMeter.unlimited(meter)
        best: tuple[Any, ...] | None = None
        undecided = _INF
        n = len(text)
        if self.literal_re is not None:
            try:
                m = _memo_search(self.literal_re, self, text, pos, meter, memo)
                if m is not None:
                    d = self.literal_owner[m.group()]
                    best = (m.start(), m.start() - m.end(), *_priority(d), m, d)
                if not final and text and text[-1] in self.prefix_last_chars:
                    undecided = self._literal_hold_back(text, pos)
            except TimeoutError:  # pragma: no cover - literal alternations are linear
                raise self.delimiters[0]._timeout_error(meter) from None
        if self.indexed is not None:
            found, undecided = self.indexed.scan(text, pos, final, meter, undecided)
            if found is not None and (best is None or found[:4] < best[:4]):
                best = found
        for d in self.regexes:
            m, u = d.find_regex(text, pos, final, skip_empty_at, meter, memo)
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
