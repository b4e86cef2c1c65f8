"""Degenerate outputs on every library template (issue 11, failure class 8): a model looping on its own
markers (``<function=`` repeated, a marker cut short, two markers in turn, a marker between words).

Every template of ``rt.templates.names()`` gets the outputs of ``tests/degenerate_outputs.py``, built
from its own markers (the quick set in CI, the full set under ``HYPOTHESIS_PROFILE=thorough``). Each output must parse or fail with a documented typed error -- never a
``PatternTimeoutError`` nor a content parser giving up on time --, lose no text, and give the same
message, errors and events whole, streamed in token-sized chunks and one character at a time, as
``parse_response`` gives.

Linear time is what these outputs are about, but tests do not time anything: the templates are loaded
with a regex budget of 0.1 s per search (ten times less than the default), so that a pattern that scans
the rest of the text from every copy of a marker (quadratic: about 1 s for 16 KB of ``<function=a``
before issue 11) runs out of it here, while a linear one needs a few milliseconds at most.
``benchmarks/bench_families.py --degenerate`` measures the time per KB at 100 KB and 1 MB.
"""

from __future__ import annotations

import os
import random
from functools import cache
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import response_templates as rt
from degenerate_outputs import KB, Degenerate, degenerate_outputs, hostile_inputs, markers
from hypothesis_profiles import examples
from library_checks import random_pieces

NAMES = rt.templates.names()
# The hostile-input helpers (tests/hostile/hostile_inputs.py, on sys.path through degenerate_outputs).
StreamResult = hostile_inputs.StreamResult
lost_text, parse_whole = hostile_inputs.lost_text, hostile_inputs.parse_whole
prompts, run_stream = hostile_inputs.prompts, hostile_inputs.run_stream
#: The full set of outputs under ``HYPOTHESIS_PROFILE=thorough``, the quick set (half as many) in CI.
FULL = os.environ.get("HYPOTHESIS_PROFILE") == "thorough"
#: Seconds one delimiter search may take here (see the module docstring).
TEST_REGEX_TIMEOUT = 0.1
#: Sizes: every output whole (and in one chunk); streamed in token-sized chunks; one character at a time.
WHOLE_SIZE = 16 * KB
STREAM_SIZE = 1 * KB
CHAR_SIZE = 256


@cache
def template(name: str) -> rt.ResponseTemplate:
    return rt.load_template(rt.templates.get(name).to_dict(), regex_timeout=TEST_REGEX_TIMEOUT)


def _gave_up(result: StreamResult) -> str | None:
    """What ran out of time in a run (a PatternTimeoutError, a content parser's regex timeout), if any."""
    for cls, field, _offset in result.errors:
        if cls == "PatternTimeoutError":
            return f"PatternTimeoutError (field {field!r})"
    message = result.message
    if isinstance(message, tuple) and "PatternTimeoutError" in message:
        return "PatternTimeoutError"
    for event in result.events:
        error = str(event.get("error") or "")
        if "ran longer than" in error:
            return f"{event.get('field')}: {error[:200]}"
    return None


def check(name: str, prefix: str, text: str, chunkings: dict[str, list[str]]) -> list[str]:
    """Every check for one output: typed errors only and none on time, nothing lost, one result."""
    t = template(name)
    problems: list[str] = []
    results = {"whole": run_stream(t, prefix, [text])} | {
        way: run_stream(t, prefix, chunks) for way, chunks in chunkings.items()
    }
    for way, result in results.items():
        if result.untyped:
            problems.append(f"{way}: untyped {result.untyped}")
            continue
        gave_up = _gave_up(result)
        if gave_up:
            problems.append(f"{way}: {gave_up}")
        if result.stream is not None and not result.template_error:
            lost = lost_text(t, result.stream, result.events)
            if lost:
                problems.append(f"{way}: lost text: {lost}")
    if problems:
        return problems
    whole = results["whole"]
    for way, result in results.items():
        if result.key() != whole.key():
            problems.append(f"{way}: differs from the whole text: {str(result.key())[:300]}")
    message, untyped = parse_whole(t, prefix, text)
    if untyped:
        problems.append(f"parse_response: untyped {untyped}")
    elif isinstance(message, tuple):
        if not isinstance(whole.message, tuple) and not whole.errors:
            problems.append(f"parse_response raised {message[1]} but the stream did not")
    elif not whole.errors and message != whole.message:
        problems.append("parse_response differs from the stream")
    return problems


def _report(name: str, failures: list[tuple[str, list[str]]]) -> str:
    return "\n".join(f"{name} / {label}: {'; '.join(p)}" for label, p in failures[:20])


def _timed_out(error: BaseException) -> bool:
    return isinstance(error, rt.PatternTimeoutError) or "ran longer than" in str(error)


def quick_check(name: str, prefix: str, text: str) -> list[str]:
    """The cheap checks for a long output: ``parse_response``, and one ``feed`` of the whole text then
    ``finalize`` (where the parser must decide what a later chunk could still change), both with
    ``errors="keep"``: no error on time, no untyped error, the same message."""
    t = template(name)
    messages = []
    for way in ("parse_response", "feed"):
        try:
            if way == "feed":
                parser = rt.ResponseParser(t, prefix=prefix, errors="keep")
                parser.feed(text)
                message = parser.finalize()[0]
            else:
                message = rt.parse_response(text, t, prefix=prefix, errors="keep")
        except rt.ResponseTemplateError as exc:
            if _timed_out(exc):
                return [f"{way}: {type(exc).__name__}: {str(exc)[:200]}"]
            messages.append(("error", type(exc).__name__))
            continue
        except Exception as exc:
            return [f"{way}: untyped {type(exc).__name__}: {str(exc)[:200]}"]
        timed_out = [e for e in message.errors if _timed_out(e)]
        if timed_out:
            return [f"{way}: {str(timed_out[0])[:200]}"]
        messages.append(hostile_inputs.canon(message))
    if messages[0] != messages[1]:
        return ["parse_response and one feed of the whole text give different messages"]
    return []


@pytest.mark.parametrize("name", NAMES)
def test_degenerate_outputs_whole(name: str) -> None:
    """Every degenerate output of the template at 16 KB, parsed whole and fed in one chunk."""
    prefix = prompts(name)[0]
    failures = []
    for output in degenerate_outputs(name, full=FULL):
        problems = quick_check(name, prefix, output.text(WHOLE_SIZE))
        if problems:
            failures.append((output.label, problems))
    assert not failures, _report(name, failures)


@pytest.mark.parametrize("name", NAMES)
def test_degenerate_outputs_streamed(name: str) -> None:
    """Every degenerate output of the template streamed in token-sized chunks (1 to 8 characters) and,
    shorter, one character at a time: nothing lost, the same result as the whole text."""
    prefix = prompts(name)[0]
    rng = random.Random(f"degenerate-{name}")
    failures = []
    for output in degenerate_outputs(name, full=FULL):
        text = output.text(STREAM_SIZE)
        short = output.text(CHAR_SIZE)
        problems = check(name, prefix, text, {"tokens": random_pieces(text, rng, 8)})
        problems += check(name, prefix, short, {"1-char": list(short)})
        if problems:
            failures.append((output.label, problems))
    assert not failures, _report(name, failures)


def test_every_template_has_degenerate_outputs() -> None:
    """The generator finds markers in every template (so a template it cannot read shows up here)."""
    for name in NAMES:
        labels = [o.label for o in degenerate_outputs(name)]
        assert len(markers(name)) >= 2, name
        assert any(label.startswith("rep ") for label in labels), name
        assert any(label.startswith("alt ") for label in labels), name
        assert len(labels) == len(set(labels)), name


def test_outputs_reach_their_size() -> None:
    d = Degenerate("rep", "<function=", head="<tool_call>", tail=">")
    text = d.text(1000)
    assert text.startswith("<tool_call><function=<function=") and text.endswith("=>")
    assert 990 <= len(text) <= 1000
    assert Degenerate("x", "long unit").text(3) == "long unitlong unit"


def test_the_time_check_can_fail() -> None:
    """A pattern that backtracks over the copies of a marker runs out of the test's regex budget on the
    degenerate output. (``<function=[^>\\n]+>``, which scanned the rest of the text from every copy, did
    before issue 11 and again before issue 28's partial probe; it is linear now.)"""
    quadratic = {
        "start_anchor": "<|im_start|>assistant\n",
        "fields": {
            "tool_calls": {"open_pattern": "(?:<function=|<fun|ction=)+>", "close": "</function>"},
            "content": {},
        },
    }
    t = rt.load_template(quadratic, regex_timeout=TEST_REGEX_TIMEOUT)
    result = run_stream(t, "", [Degenerate("rep", "<function=").text(64 * KB)])
    assert _gave_up(result) is not None


# ------------------------------------------------------------------------------- random loops


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(NAMES), st.data())
def test_random_loops(name: str, data: Any) -> None:
    """A random unit of the template's markers, their cuts and bits of text, repeated up to 1-16 KB:
    the same checks, whole and in random chunks."""
    words = markers(name)
    cut = st.sampled_from(words).flatmap(lambda w: st.integers(1, len(w)).map(lambda k: w[:k]))
    piece = st.one_of(cut, st.sampled_from(("a", " ", "\n", "x y", '"', "{", ">", "<")))
    unit = "".join(data.draw(st.lists(piece, min_size=1, max_size=4)))
    size = data.draw(st.integers(1, 16)) * KB
    text = Degenerate("random", unit).text(size)
    prefix = data.draw(st.sampled_from(prompts(name)))
    rng = random.Random(data.draw(st.integers(0, 2**32 - 1)))
    problems = check(name, prefix, text, {"random": random_pieces(text, rng, 64)})
    assert not problems, "\n".join(problems)
