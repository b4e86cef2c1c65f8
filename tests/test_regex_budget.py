"""The regex budget bounds one search, one feed call and one stream (RegexBudget, issue 12 hole 1), with
allowances that grow with the text and count only the searches' own CPU time (issue 28, item 2).

No timed assertions: each test asserts the typed error and which budget ran out, or the meter's
bookkeeping driven by hand or by fake clocks.
"""

from __future__ import annotations

import json
import math
import random
import re
from typing import Any

import pytest

import response_templates as rt
from response_templates.matching import RegexMeter
from response_templates.wire import ChatCompletionsAdapter

ANCHOR = "<A>"
SLOW = {
    "start_anchor": ANCHOR,
    "fields": {"x": {"open_pattern": "(?:a|aa)+c", "close": "</x>"}, "content": {}},
}


def test_default_budget_values() -> None:
    """The documented defaults: per-search from the template, 5 s per call, 30 s per stream, each as much
    again per million characters."""
    assert rt.RegexBudget() == rt.RegexBudget(
        per_search=None, per_feed=5.0, per_stream=30.0, per_chars=1_000_000
    )


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
    assert "per-search regex budget (0.05 s plus 0.05 s per 1,000,000 characters" in str(info.value)


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
    assert meter.chars == len("hi <x1>body</x> bye")
    assert meter.spent >= 0
    assert meter.stream_left == pytest.approx(30.0 * (1 + meter.chars / 1e6) - meter.spent)


def test_meter_gives_the_smallest_remaining_budget() -> None:
    meter = RegexMeter(rt.RegexBudget(per_search=1.0, per_feed=0.5, per_stream=2.0, per_chars=None))
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
        meter.run(lambda text, pos, timeout: None, "", 0)  # nothing left: the search is not even started
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


# -- issue 28, item 2: budgets that follow the work and count only the searches' own CPU time ----------
#
# The tests below replace the clocks the budget could read (the thread's CPU clock, and the wall clock
# an older meter read) by fake ones, so that they time nothing: every search costs exactly ``tick``
# seconds of CPU time, a loaded machine adds ``stolen`` seconds of wall time to each, and the work
# around the searches (the parser's routing, a wire adapter, the caller) costs ``outside`` seconds of
# both between two pieces. Only the searches' CPU time may be charged.


class FakeClocks:
    def __init__(self) -> None:
        self.tick = 0.0
        self.stolen = 0.0
        self.cpu_now = 0.0
        self.wall_now = 0.0

    def cpu(self) -> float:
        now = self.cpu_now
        self.cpu_now += self.tick  # read before and after a search: ``tick`` per search
        return now

    def wall(self) -> float:
        now = self.wall_now
        self.wall_now += self.tick + self.stolen
        return now

    def outside(self, seconds: float) -> None:
        """Time passes outside the searches (the caller's own work: CPU and wall time)."""
        self.cpu_now += seconds
        self.wall_now += seconds


@pytest.fixture
def clocks(monkeypatch: pytest.MonkeyPatch) -> FakeClocks:
    from response_templates.language import model
    from response_templates.matching import budget

    fake = FakeClocks()
    monkeypatch.setattr(budget, "thread_time", fake.cpu, raising=False)
    monkeypatch.setattr(budget, "process_time", fake.cpu, raising=False)
    for module in (budget, model):  # what a meter reading wall time would read
        monkeypatch.setattr(module, "perf_counter", fake.wall, raising=False)
        monkeypatch.setattr(module, "monotonic", fake.wall, raising=False)
    return fake


_WORDS = (  # noqa: SIM905 (a word list)
    "the a of to and in is that it for on with as be this are by we or from at which can not then so "
    "because user weather forecast city tool call function argument result value check wait let me think"
).split()
_CALL_ARGS = ({"city": "Paris", "days": 3}, {"city": "Zürich", "days": 1}, {"city": "Oslo", "days": 7})


def _prose(rng: random.Random, size: int, near: tuple[str, ...]) -> str:
    """Words, and now and then a near miss: text that starts like a delimiter of the template but is none."""
    words: list[str] = []
    n = 0
    while n < size:
        word = rng.choice(near) if rng.random() < 0.05 else rng.choice(_WORDS)
        words.append(word + ("\n" if rng.random() < 0.05 else ""))
        n += len(words[-1]) + 1
    return " ".join(words)


def long_output(family: str, size: int) -> tuple[str, str]:
    """(prompt, a valid output of about ``size`` characters): reasoning, three tool calls, an answer."""
    rng = random.Random(f"{family}-{size}")
    if family == "qwen3":
        near = ("<", "</th", "<think", "<tool", "</tool_call", "<|im", "a < b")
        calls = "".join(
            f'<tool_call>\n{{"name": "get_weather", "arguments": {json.dumps(a)}}}\n</tool_call>\n'
            for a in _CALL_ARGS
        )
        reasoning, answer = _prose(rng, size * 3 // 5, near), _prose(rng, size * 2 // 5, near)
        return "<|im_start|>assistant\n", f"<think>\n{reasoning}\n</think>\n\n{calls}{answer}<|im_end|>"
    assert family == "gpt-oss"
    near = ("<", "<|", "<|chan", "<|end", "<|start", "<|message", "to=", "|>", "<|ret")
    calls = "".join(
        "<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>"
        f"{json.dumps(a)}<|call|>"
        for a in _CALL_ARGS
    )
    reasoning, answer = _prose(rng, size * 3 // 5, near), _prose(rng, size * 2 // 5, near)
    return "<|start|>assistant", (
        f"<|channel|>analysis<|message|>{reasoning}<|end|>{calls}"
        f"<|start|>assistant<|channel|>final<|message|>{answer}<|return|>"
    )


def stream(
    family: str, prompt: str, text: str, path: str, clocks: FakeClocks | None = None, chunk: int = 4
) -> tuple[Any, Any]:
    """Stream ``text`` in ``chunk``-character pieces through ``parser.feed`` or a wire adapter's ``step``;
    (the message, the parser's meter). Between two pieces the caller works for 10 s."""
    template = rt.templates.get(family)
    parser = rt.ResponseParser(template, prefix=prompt)
    adapter = ChatCompletionsAdapter(template, completion_id="c", created=0)
    adapter.feed(parser.initial_events)
    for i in range(0, len(text), chunk):
        piece = text[i : i + chunk]
        if path == "step":
            adapter.step(parser, piece)
        else:
            adapter.feed(parser.feed(piece))
        if clocks is not None:
            clocks.outside(10.0)
    message, events = parser.finalize()
    adapter.feed(events)
    return message, parser._meter


def _searches(family: str, prompt: str, text: str) -> int:
    return int(stream(family, prompt, text, "feed")[1].searches)


@pytest.mark.pure_python("the test replaces the budget's clock, a module global of the Python sources")
@pytest.mark.parametrize("family", ["qwen3", "gpt-oss"])
def test_a_long_valid_stream_on_a_slow_loaded_machine_completes(family: str, clocks: FakeClocks) -> None:
    """A 600 KB valid output, streamed in 4-character pieces through ``parser.feed`` and through a wire
    adapter's ``step``, on a machine where its searches take 40 s of CPU time in all (more than the
    fixed 30 s per stream: the allowance grows with the text, 30 s per million characters), where the
    load adds a second of wall time to every search, and where the caller works 10 s between two pieces
    (none of which is regex time): it completes with the default budget, charged exactly its searches'
    CPU time."""
    prompt, text = long_output(family, 600_000)
    expected = rt.parse_response(text, rt.templates.get(family), prefix=prompt)
    assert len(expected["tool_calls"]) == 3 and expected["content"]
    n = _searches(family, prompt, text)
    clocks.tick, clocks.stolen = 40.0 / n, 1.0
    for path in ("feed", "step"):
        message, meter = stream(family, prompt, text, path, clocks)
        assert message == expected
        assert meter.searches == n
        assert meter.spent == pytest.approx(40.0)
        assert meter.chars == len(text)


@pytest.mark.pure_python("the test replaces the budget's clock, a module global of the Python sources")
def test_a_stream_slower_than_its_allowance_is_still_stopped(clocks: FakeClocks) -> None:
    """The allowance follows the text, it is not unlimited: a 300 KB stream whose searches would take
    80 s in all (more than 30 s plus 30 s per million characters) is stopped by the stream's budget,
    once it has spent what the fixed 30 s and the text read so far allow."""
    prompt, text = long_output("qwen3", 300_000)
    clocks.tick = 80.0 / _searches("qwen3", prompt, text)
    parser = rt.ResponseParser(rt.templates.get("qwen3"), prefix=prompt)
    with pytest.raises(rt.PatternTimeoutError) as info:
        for i in range(0, len(text), 4):
            parser.feed(text[i : i + 4])
        parser.finalize()
    meter = parser._meter
    assert info.value.budget == "per_stream"
    # stopped when the allowance grown by the text read so far was used up, not at the fixed 30 s
    allowance = 30.0 * (1 + meter.chars / 1e6)
    assert 100_000 < meter.chars < len(text)
    assert allowance - 1e-6 <= meter.spent < allowance + clocks.tick


@pytest.mark.pure_python("the test replaces the budget's clock, a module global of the Python sources")
def test_step_and_feed_charge_the_same(clocks: FakeClocks) -> None:
    """The same input through ``parser.feed`` and through ``adapter.step``: the same searches, charged the
    same, and only their CPU time (not the wall time a load adds, nor the adapter's and caller's work)."""
    prompt, text = long_output("qwen3", 100_000)
    clocks.tick, clocks.stolen = 0.001, 0.5
    fed = stream("qwen3", prompt, text, "feed", clocks)[1]
    stepped = stream("qwen3", prompt, text, "step", clocks)[1]
    assert fed.searches == stepped.searches > 100
    assert fed.spent == pytest.approx(stepped.spent) == pytest.approx(fed.searches * 0.001)


def _exhausted(
    budget: rt.RegexBudget, template: dict[str, Any] = SLOW, piece: str = "a"
) -> rt.PatternTimeoutError:
    parser = rt.ResponseParser(template, prefix=ANCHOR, regex_budget=budget)
    with pytest.raises(rt.PatternTimeoutError) as info:
        for _ in range(5000):
            parser.feed(piece)
    return info.value


def test_budget_errors_carry_no_timings() -> None:
    """A budget that runs out says which pattern, which budget and how to raise it, never a measured
    time: two runs that spent different amounts give the same text (batch outputs do not depend on the
    machine or on -j)."""
    budget = rt.RegexBudget(per_search=10.0, per_feed=None, per_stream=0.2)
    first, second = _exhausted(budget), _exhausted(budget)
    assert first.budget == second.budget == "per_stream"
    assert str(first) == str(second)
    assert (
        "(?:a|aa)+c" in str(first) and "per-stream" in str(first) and "RegexBudget(per_stream=" in str(first)
    )
    # only the configured bounds are written (0.2 s, plus 0.2 s per million characters): no measured time
    assert re.findall(r"\d[\d.,]*", str(first)) == ["0.2", "0.2", "1,000,000"]
    one = rt.load_template(SLOW, regex_timeout=0.05)
    errors = []
    for _ in range(2):
        with pytest.raises(rt.PatternTimeoutError) as info:
            rt.ResponseParser(one, prefix=ANCHOR).feed("a" * 40)
        errors.append(str(info.value))
    assert errors[0] == errors[1]
    assert re.findall(r"\d[\d.,]*", errors[0]) == ["0.05", "0.05", "1,000,000"]


@pytest.mark.pure_python("the test replaces the budget's clock, a module global of the Python sources")
def test_budget_error_text_does_not_depend_on_the_time_spent(clocks: FakeClocks) -> None:
    """The same exhaustion on a fast and on a slow machine (fake clocks): one error text."""
    budget = rt.RegexBudget(per_search=10.0, per_feed=None, per_stream=1.0)
    cheap = {
        "start_anchor": ANCHOR,
        "fields": {"x": {"open_pattern": r"<x\d+>", "close": "</x>"}, "content": {}},
    }
    texts = []
    for tick in (0.01, 0.03):  # every search costs 10 ms, then 30 ms: the budget runs out at other searches
        clocks.tick = tick
        error = _exhausted(budget, cheap, "<x ")
        assert (error.budget, error.field, error.key) == ("per_stream", "x", "open_pattern")
        texts.append(str(error))
    assert texts[0] == texts[1]


def test_the_allowances_grow_with_the_text() -> None:
    """Each bound is so many seconds plus as many per ``per_chars`` characters of the text it covers: the
    text a search may read, the text a call looks at, and all the text the stream has read."""
    meter = RegexMeter(rt.RegexBudget(per_search=1.0, per_feed=2.0, per_stream=10.0, per_chars=1000))
    assert meter.timeout() == 1.0 and meter.timeout(500) == pytest.approx(1.5)
    meter.read_prompt(1000)  # the constructor's search of a 1000-character prompt
    assert (meter.feed_left, meter.stream_left, meter.chars) == (4.0, 20.0, 1000)
    meter.start_feed(3000, 3000)  # a call that looks at 3000 characters of output
    assert (meter.feed_left, meter.stream_left, meter.chars) == (8.0, 50.0, 4000)
    meter.charge(7.0)
    meter.start_feed(10, 3000)  # text held back and looked at again grows the call's budget, not the stream's
    assert meter.feed_left == pytest.approx(2.02) and meter.stream_left == pytest.approx(43.0)
    fixed = RegexMeter(rt.RegexBudget(per_search=1.0, per_feed=2.0, per_stream=10.0, per_chars=None))
    fixed.start_feed(10**9, 10**9)
    assert (fixed.timeout(10**9), fixed.feed_left, fixed.stream_left) == (1.0, 2.0, 10.0)
    unbounded = RegexMeter(rt.RegexBudget(per_feed=None, per_stream=None))
    unbounded.start_feed(10**6, 10**6)
    assert math.isinf(unbounded.feed_left) and math.isinf(unbounded.stream_left)


@pytest.mark.parametrize("bad", [0, -5, 1.5, True, "1000"])
def test_per_chars_is_checked(bad: object) -> None:
    with pytest.raises(rt.ResponseTemplateError, match="per_chars"):
        rt.RegexBudget(per_chars=bad)  # type: ignore[arg-type]


def test_a_search_of_the_prompt_grows_the_stream_budget() -> None:
    """The constructor's start_anchor_pattern search reads the prompt: the stream's allowance counts it."""
    template = {"start_anchor_pattern": r"<A\d>", "fields": {"content": {}}}
    parser = rt.ResponseParser(template, prefix="x" * 5000 + "<A1>")
    assert parser._meter.chars == 5004 and parser._meter.searches == 1
