"""Internal: regex time budgets (docs/spec.md 12.3): :class:`RegexBudget` says how much regex time one
search, one parser call and one stream may take, and how these allowances grow with the text;
:class:`RegexMeter` charges every search of one parser to it and raises
:class:`~response_templates.PatternTimeoutError` when an allowance runs out.

What is counted is the CPU time of the searches themselves (``time.thread_time`` around each regex call):
not wall time, which grows with the load of the machine, and not the time spent around the searches (the
parser's routing, a wire adapter, the caller). Every allowance is a fixed amount plus as much again per
``per_chars`` characters of the text it covers, so that the budget follows the work: a long stream or a
long text gets a proportionally larger allowance, while a search that backtracks on a short text is
stopped as soon as before.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from time import thread_time
from typing import Any, Final

from ..errors import PatternTimeoutError, ResponseTemplateError

__all__ = ["DEFAULT_REGEX_BUDGET", "RegexBudget", "RegexMeter"]


@dataclass(frozen=True)
class RegexBudget:
    """Bounds on the CPU time regex searches may take: per search, per ``feed`` call, per stream.

    ``per_search`` bounds one search (``None``: the template's ``regex_timeout``, 1 s by default);
    ``per_feed`` bounds the total regex time of one call (the constructor's reading of the prefix,
    one :meth:`~response_templates.ResponseParser.feed`, :meth:`~response_templates.ResponseParser.finalize`,
    or the single pass of :func:`~response_templates.parse_response`); ``per_stream`` bounds the total of
    one parser (one generation). ``None`` for ``per_feed`` or ``per_stream`` means no bound.

    Each bound grows with the work: it is that many seconds, plus as many again per ``per_chars``
    characters (a million by default) of the text it covers: the text one search may read (from where it
    starts to the end of the buffer), the text one call looks at, the text the stream has read in all (the
    output, and the prompt when a ``start_anchor_pattern`` searches it). So a 3 MB stream may spend
    30 + 90 s in regex searches, and a search of 1 MB of text 2 s, while a search that backtracks on a few
    hundred characters is stopped after about 1 s. ``per_chars=None`` keeps every bound fixed.

    Every search gets the smallest of what is left; running out raises
    :class:`~response_templates.PatternTimeoutError` naming the pattern and the budget (``error.budget``).
    The time counted is the CPU time of the searches themselves, so neither the load of the machine nor
    the work around the searches (routing, wire adapters, the caller) uses the budget up.

    >>> import response_templates as rt
    >>> rt.RegexBudget()
    RegexBudget(per_search=None, per_feed=5.0, per_stream=30.0, per_chars=1000000)
    >>> rt.RegexBudget(per_feed=0.5, per_stream=None).per_feed
    0.5
    """

    per_search: float | None = None
    per_feed: float | None = 5.0
    per_stream: float | None = 30.0
    per_chars: int | None = 1_000_000

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
        chars = self.per_chars
        if chars is not None and (isinstance(chars, bool) or not isinstance(chars, int) or chars <= 0):
            raise ResponseTemplateError(
                f"RegexBudget.per_chars must be a positive number of characters or None, got {chars!r}"
            )


#: The budget a parser uses when none is given.
DEFAULT_REGEX_BUDGET: Final = RegexBudget()

_BUDGET_NAMES: Final = {"per_search": "per-search", "per_feed": "per-feed", "per_stream": "per-stream"}


def _rate(seconds: float, per_chars: int | None) -> float:
    """Seconds per character that a bound of ``seconds`` grows by (0 for a fixed or missing bound)."""
    if per_chars is None or math.isinf(seconds):
        return 0.0
    return seconds / per_chars


class RegexMeter:
    """What is left of a :class:`RegexBudget` in one parser: charged by every metered search.

    ``timeout(chars)`` is the timeout for the next search, which may read ``chars`` characters (the
    smallest of its per-search allowance and what is left of the call's and the stream's);
    ``charge(seconds)`` records a search's CPU time; ``start_feed(chars, end)`` begins a call that looks at
    ``chars`` characters, once the output has reached ``end`` characters; ``read_prompt(chars)`` begins
    the constructor's search of the prompt. ``searches`` counts the metered searches, ``spent`` adds up
    their time and ``chars`` the characters the stream's allowance was grown by.
    """

    __slots__ = (
        "chars",
        "feed_left",
        "feed_rate",
        "kind",
        "output_end",
        "per_chars",
        "per_feed",
        "per_search",
        "per_stream",
        "search_rate",
        "searches",
        "spent",
        "stream_left",
        "stream_rate",
    )

    def __init__(self, budget: RegexBudget | None = None, per_search: float = 1.0) -> None:
        budget = DEFAULT_REGEX_BUDGET if budget is None else budget
        self.per_search = float(budget.per_search if budget.per_search is not None else per_search)
        self.per_feed = math.inf if budget.per_feed is None else float(budget.per_feed)
        self.feed_left = self.per_feed
        self.per_stream = math.inf if budget.per_stream is None else float(budget.per_stream)
        self.stream_left = self.per_stream
        self.per_chars = budget.per_chars
        # Seconds each character adds to an allowance (0.0 when the bounds are fixed).
        self.search_rate = _rate(self.per_search, budget.per_chars)
        self.feed_rate = _rate(self.per_feed, budget.per_chars)
        self.stream_rate = _rate(self.per_stream, budget.per_chars)
        self.kind = "per_search"  # which budget the last timeout() came from
        self.searches = 0
        self.spent = 0.0  # total regex seconds of the stream
        self.chars = 0  # characters the stream's allowance has grown by
        self.output_end = 0  # how much of the output start_feed has seen

    @classmethod
    def unlimited(cls, per_search: float) -> RegexMeter:
        """A meter with only a per-search bound (for direct calls of :meth:`WatchSet.scan`)."""
        return cls(RegexBudget(per_search=per_search, per_feed=None, per_stream=None))

    def start_feed(self, chars: int = 0, end: int = 0) -> None:
        """A new call begins, which looks at ``chars`` characters: its budget is full again, and grown by
        their share. ``end``: how many characters of output the parser has been given so far; the
        stream's allowance grows by the share of those it had not counted yet."""
        self.feed_left = self.per_feed + self.feed_rate * chars if chars > 0 else self.per_feed
        new = end - self.output_end
        if new > 0:
            self.output_end = end
            self._grow(new)

    def read_prompt(self, chars: int) -> None:
        """The constructor searches the prompt (``chars`` characters): a call over that text."""
        self.feed_left = self.per_feed + self.feed_rate * chars if chars > 0 else self.per_feed
        if chars > 0:
            self._grow(chars)

    def _grow(self, chars: int) -> None:
        self.chars += chars
        if self.stream_rate:
            self.stream_left += self.stream_rate * chars

    def timeout(self, chars: int = 0) -> float:
        """The timeout of the next search, which may read ``chars`` characters; ``self.kind`` says which
        allowance it comes from."""
        limit, kind = self.per_search, "per_search"
        if chars > 0 and self.search_rate:
            limit += self.search_rate * chars
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
        """The error for a search of ``what`` (a pattern's description) that ran out of ``self.kind``.

        The text names the pattern, the budget and how to raise it, never a measured time: the same
        input and budget give the same error whatever the machine's load (batch outputs stay identical).
        """
        kind = self.kind
        if kind == "per_search":
            message = (
                f"{what} ran longer than its per-search regex budget ({self._bound(self.per_search)}; "
                "catastrophic backtracking?); simplify the pattern or raise regex_timeout "
                "(load_template) or RegexBudget(per_search=...)"
            )
        else:
            total = self.per_feed if kind == "per_feed" else self.per_stream
            scope = "of this call" if kind == "per_feed" else "of this stream"
            message = (
                f"the {_BUDGET_NAMES[kind]} regex budget {scope} ({self._bound(total)}) ran out while {what} "
                f"was searched; simplify the template's patterns or raise regex_budget="
                f"RegexBudget({kind}=...)"
            )
        error = PatternTimeoutError(message, field=field, key=key)
        error.budget = kind
        return error

    def _bound(self, seconds: float) -> str:
        """A configured bound in words (never a measured time)."""
        if self.per_chars is None:
            return f"{seconds:g} s"
        return f"{seconds:g} s plus {seconds:g} s per {self.per_chars:,} characters"

    def run(self, call: Callable[..., Any], text: str, pos: int, **kwargs: Any) -> Any:
        """``call(text, pos, timeout=..., **kwargs)`` under the budget; TimeoutError when it runs out.

        Only the call itself is timed, in the thread's CPU time."""
        limit = self.timeout(len(text) - pos)
        if limit <= 0:
            raise TimeoutError
        start = thread_time()
        try:
            return call(text, pos, timeout=limit, **kwargs)
        finally:
            self.charge(thread_time() - start)
