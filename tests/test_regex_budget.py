"""The regex budget bounds one search, one feed call and one stream (RegexBudget, issue 12 hole 1).

No timed assertions: each test asserts the typed error and which budget ran out, or the meter's
bookkeeping driven by hand.
"""

from __future__ import annotations

import math

import pytest

import response_templates as rt
from response_templates.matching import RegexMeter

ANCHOR = "<A>"
SLOW = {
    "start_anchor": ANCHOR,
    "fields": {"x": {"open_pattern": "(?:a|aa)+c", "close": "</x>"}, "content": {}},
}


def test_default_budget_values() -> None:
    """The documented defaults: per-search from the template, 5 s per call, 30 s per stream."""
    assert rt.RegexBudget() == rt.RegexBudget(per_search=None, per_feed=5.0, per_stream=30.0)


def test_stream_budget_stops_a_stream_of_small_feeds() -> None:
    """The issue's case: 'a' fed one character at a time; each search is under its own bound, the stream is not."""
    budget = rt.RegexBudget(per_search=10.0, per_feed=None, per_stream=0.3)
    parser = rt.ResponseParser(SLOW, prefix=ANCHOR, regex_budget=budget)
    with pytest.raises(rt.PatternTimeoutError) as info:
        for _ in range(500):  # 40 feeds reach several seconds per search: the budget must stop it first
            parser.feed("a")
    error = info.value
    assert isinstance(error, rt.TemplateError)
    assert error.budget == "per_stream"
    assert (error.field, error.key) == ("x", "open_pattern")
    assert "per-stream" in str(error) and "(?:a|aa)+c" in str(error)


def test_feed_budget_bounds_one_call() -> None:
    """One feed call may not spend more than per_feed in regex searches, whatever per_search allows."""
    budget = rt.RegexBudget(per_search=30.0, per_feed=0.05, per_stream=None)
    parser = rt.ResponseParser(SLOW, prefix=ANCHOR, regex_budget=budget)
    with pytest.raises(rt.PatternTimeoutError) as info:
        parser.feed("a" * 40)
    assert info.value.budget == "per_feed"
    assert "per-feed" in str(info.value)


def test_per_search_budget_is_the_template_timeout() -> None:
    template = rt.load_template(SLOW, regex_timeout=0.05)
    parser = rt.ResponseParser(template, prefix=ANCHOR)
    with pytest.raises(rt.PatternTimeoutError) as info:
        parser.feed("a" * 40)
    assert info.value.budget == "per_search"
    assert "0.05 s per-search budget" in str(info.value)


def test_parse_response_counts() -> None:
    budget = rt.RegexBudget(per_search=30.0, per_feed=0.05)
    with pytest.raises(rt.PatternTimeoutError) as info:
        # (with the "c" every match ends with in the text; without it, nothing would be searched)
        rt.parse_response("a" * 40 + "bc", SLOW, prefix=ANCHOR, regex_budget=budget)
    assert info.value.budget == "per_feed"


def test_anchor_search_of_the_prefix_counts() -> None:
    """cut_prefix (the start_anchor_pattern search of the prompt) is charged to the same budget."""
    template = {"start_anchor_pattern": "(?:a|aa)+c", "fields": {"content": {}}}
    budget = rt.RegexBudget(per_search=30.0, per_feed=0.05)
    with pytest.raises(rt.PatternTimeoutError) as info:
        rt.ResponseParser(template, prefix="a" * 40, regex_budget=budget)
    assert info.value.budget == "per_feed"
    assert (info.value.field, info.value.key) == (None, "start_anchor_pattern")


def test_every_search_is_metered() -> None:
    """A parse charges its searches to the parser's meter (the bookkeeping the budgets rest on)."""
    template = {
        "start_anchor": ANCHOR,
        "fields": {"x": {"open_pattern": r"<x\d>", "close": "</x>"}, "content": {}},
    }
    parser = rt.ResponseParser(template, prefix=ANCHOR)
    for ch in "hi <x1>body</x> bye":
        parser.feed(ch)
    parser.finalize()
    meter = parser._meter
    assert meter.searches > 0
    assert meter.spent >= 0 and meter.stream_left == pytest.approx(30.0 - meter.spent)


def test_meter_gives_the_smallest_remaining_budget() -> None:
    meter = RegexMeter(rt.RegexBudget(per_search=1.0, per_feed=0.5, per_stream=2.0))
    assert (meter.timeout(), meter.kind) == (0.5, "per_feed")
    meter.charge(0.4)
    assert meter.timeout() == pytest.approx(0.1) and meter.kind == "per_feed"
    meter.start_feed()
    assert (meter.timeout(), meter.kind) == (0.5, "per_feed")
    for _ in range(3):
        meter.charge(0.5)
        meter.start_feed()
    assert meter.timeout() == pytest.approx(0.1) and meter.kind == "per_stream"
    meter.charge(0.2)
    with pytest.raises(TimeoutError):
        meter.run(lambda timeout: None)  # nothing left: the search is not even started
    assert meter.searches == 5


def test_meter_without_feed_or_stream_bounds() -> None:
    meter = RegexMeter(rt.RegexBudget(per_feed=None, per_stream=None), per_search=0.25)
    assert (meter.timeout(), meter.kind) == (0.25, "per_search")
    assert math.isinf(meter.feed_left) and math.isinf(meter.stream_left)


@pytest.mark.pure_python("a budget of another type than a number raises TypeError at the typed signature")
@pytest.mark.parametrize("bad", [0, -1, "1", True, math.nan])
def test_budget_values_are_checked(bad: object) -> None:
    with pytest.raises(rt.ResponseTemplateError):
        rt.RegexBudget(per_feed=bad)  # type: ignore[arg-type]


def test_infinite_budget_means_unbounded() -> None:
    assert rt.RegexBudget(per_stream=math.inf).per_stream is None


def test_literal_searches_are_not_charged() -> None:
    """Only regex searches spend the budget: literal alternations are linear, so they are not timed."""
    template = {"start_anchor": ANCHOR, "fields": {"x": {"open": "<x>", "close": "</x>"}, "content": {}}}
    parser = rt.ResponseParser(template, prefix=ANCHOR, regex_budget=rt.RegexBudget(per_stream=1e-9))
    for ch in "hi <x>body</x> bye <x":
        parser.feed(ch)
    message, _ = parser.finalize()
    assert message == {"x": "body", "content": "hi  bye <x"}
    assert parser._meter.searches == 0
    assert rt.parse_response(
        "a<x>b</x>", template, prefix="", regex_budget=rt.RegexBudget(per_stream=1e-9)
    ) == {
        "x": "b",
        "content": "a",
    }
