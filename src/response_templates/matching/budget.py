"""Internal: regex time budgets (docs/spec.md 12.3): :class:`RegexBudget` says how long regex searches
may take per search, per parser call and per stream; :class:`RegexMeter` charges every search of one
parser to it and raises :class:`~response_templates.PatternTimeoutError` when a bound runs out.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from time import perf_counter
from typing import Any, Final

from ..errors import PatternTimeoutError, ResponseTemplateError

__all__ = ["DEFAULT_REGEX_BUDGET", "RegexBudget", "RegexMeter"]


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
DEFAULT_REGEX_BUDGET: Final = RegexBudget()

_BUDGET_NAMES: Final = {"per_search": "per-search", "per_feed": "per-feed", "per_stream": "per-stream"}


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
