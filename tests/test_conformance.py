"""Differential conformance suite: ``response_templates`` against the reference implementation.

Every case in ``tests/conformance/cases.py`` is parsed by the reference
(``transformers.utils.chat_parsing``, a test-only dependency) and by ours:

* plain cases: both give the same message (compared with value types: ``1`` is not ``1.0`` or
  ``True``) or both raise; ours raises a ``ResponseTemplateError`` (a ``ValueError``);
* ``difference`` cases: ours gives the case's ``expected`` result and the reference gives something
  else (another message, or an exception that is not a ``ValueError``), so every documented
  difference is real;
* ``events_difference`` cases: the messages agree and the events differ by a documented difference;
* ``pending`` cases: disagreements docs/spec.md does not list yet; their reference comparison is a strict
  ``xfail`` until the difference is documented or ours changes (see ``docs/differences.md``).

Where the messages agree, the region_open/region_close events (with values) must agree too.

Every case where ours produces a message is also streamed through ``ResponseParser``: whole, one
character at a time and in three seeded random chunkings. All must give the same message, the same
sequence of ``region_open``/``region_close`` events (with values) and, per region, chunk texts that
concatenate to the same string.
"""

from __future__ import annotations

import copy
import logging
import math
import random
from typing import Any

import pytest

import response_templates as rt

try:  # tests/ is on sys.path when pytest imports this file (rootdir-relative imports need the repo root)
    from conformance.cases import CASES, Case, Raises
except ImportError:  # pragma: no cover
    from tests.conformance.cases import CASES, Case, Raises

reference = pytest.importorskip("transformers.utils.chat_parsing")

logging.getLogger("transformers").setLevel(logging.ERROR)
logging.getLogger("transformers.utils.chat_parsing").setLevel(logging.ERROR)


def _params(cases: list[Case]) -> list:
    return [
        pytest.param(
            c, id=c.id, marks=[pytest.mark.xfail(strict=True, reason=c.pending)] if c.pending else []
        )
        for c in cases
    ]


# ------------------------------------------------------------------------------------------------
# helpers
# ------------------------------------------------------------------------------------------------


def strict_equal(a: Any, b: Any) -> bool:
    """Structural equality that also compares scalar types (``1 != 1.0 != True``) and treats NaN as
    equal to NaN. Dict key order is ignored. A dict subclass (our ``ParsedMessage``) compares as a dict."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(strict_equal(a[k], b[k]) for k in a)
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(strict_equal(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(strict_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    return a == b


def run_reference(c: Case) -> tuple[str, Any]:
    try:
        return "ok", reference.parse_response(
            c.text, copy.deepcopy(c.template), prefix=c.prefix, tools=copy.deepcopy(c.tools)
        )
    except Exception as e:  # ValueError / KeyError, or get_json_schema's errors for bad callables
        return "raise", e


def run_ours(c: Case) -> tuple[str, Any]:
    try:
        return "ok", rt.parse_response(
            c.text, copy.deepcopy(c.template), prefix=c.prefix, tools=copy.deepcopy(c.tools)
        )
    except rt.ResponseTemplateError as e:
        return "raise", e


def _stream(c: Case, chunks: list[str]) -> tuple[dict, list[dict]]:
    parser = rt.ResponseParser(copy.deepcopy(c.template), prefix=c.prefix, tools=copy.deepcopy(c.tools))
    events = list(parser.initial_events)
    for chunk in chunks:
        events.extend(parser.feed(chunk))
    message, final_events = parser.finalize()
    events.extend(final_events)
    return message, events


def _structure(events: list[dict]) -> tuple[list, list]:
    """Split events into the open/close sequence and the per-region chunk texts, checking that every
    chunk belongs to the region that is currently open."""
    boundaries: list = []
    regions: list = []
    current: str | None = None
    text: list[str] = []
    for ev in events:
        kind = ev["type"]
        if kind == "region_open":
            assert current is None, f"region {ev['field']!r} opened while {current!r} is open"
            current, text = ev["field"], []
            boundaries.append(("open", ev["field"]))
        elif kind == "region_chunk":
            assert ev["field"] == current, f"chunk for {ev['field']!r} while {current!r} is open"
            assert isinstance(ev["text"], str) and ev["text"], "empty or non-string chunk"
            assert isinstance(ev["dirty"], bool)
            text.append(ev["text"])
        elif kind == "region_close":
            assert ev["field"] == current, f"close of {ev['field']!r} while {current!r} is open"
            boundaries.append(("close", ev["field"], ev["value"]))
            regions.append((ev["field"], "".join(text)))
            current = None
        else:
            raise AssertionError(f"unknown event type {kind!r}")
    assert current is None, f"region {current!r} still open after finalize"
    return boundaries, regions


def _chunkings(c: Case) -> list[tuple[str, list[str]]]:
    text = c.text
    out = [("1-char", list(text))]
    for k in range(3):
        rng = random.Random(f"{c.id}/{k}")
        chunks, i = [], 0
        while i < len(text):
            n = rng.choice((1, 2, 3, 4, 5, 7, 11, 16, 40))
            chunks.append(text[i : i + n])
            i += n
        out.append((f"random-{k}", chunks))
    return out


# ------------------------------------------------------------------------------------------------
# the tests
# ------------------------------------------------------------------------------------------------


def test_enough_cases() -> None:
    own = [c for c in CASES if c.category != "sample"]
    assert len(own) >= 200
    assert len({c.id for c in CASES}) == len(CASES)


@pytest.mark.parametrize("c", _params(CASES))
def test_against_reference(c: Case) -> None:
    ref_kind, ref = run_reference(c)
    ours_kind, ours = run_ours(c)

    if c.difference is None:
        if c.error is not None:
            assert ref_kind == "raise", f"the reference did not raise: {ref!r}"
            assert ours_kind == "raise", f"ours did not raise: {ours!r}"
            assert isinstance(ours, getattr(rt, c.error)), f"ours raised {type(ours).__name__}: {ours}"
            return
        if ref_kind == "raise":
            assert ours_kind == "raise", f"the reference raised {ref!r} but ours returned {ours!r}"
            return
        assert ours_kind == "ok", f"ours raised {type(ours).__name__}: {ours}\nreference: {ref!r}"
        assert strict_equal(ours, ref), f"\nours:      {ours!r}\nreference: {ref!r}"
        return

    # An intended difference: ours must match the stated expectation ...
    if isinstance(c.expected, Raises):
        assert ours_kind == "raise", f"ours did not raise: {ours!r}"
        assert isinstance(ours, getattr(rt, c.expected.error)), f"ours raised {type(ours).__name__}: {ours}"
        assert isinstance(ours, ValueError)
        # ... and the reference must not already behave like that (it returns, or raises a non-ValueError).
        assert ref_kind == "ok" or not isinstance(ref, ValueError), f"the reference raises too: {ref!r}"
    else:
        assert ours_kind == "ok", f"ours raised {type(ours).__name__}: {ours}"
        assert strict_equal(ours, c.expected), f"\nours:     {ours!r}\nexpected: {c.expected!r}"
        assert ref_kind == "raise" or not strict_equal(ref, c.expected), "the reference gives the same result"


@pytest.mark.parametrize("c", [pytest.param(c, id=c.id) for c in CASES if c.streams])
def test_streaming_is_chunking_invariant(c: Case) -> None:
    kind, expected = run_ours(c)
    if kind == "raise":
        pytest.skip(f"ours raises (the reference comparison covers it): {expected}")
    # A loaded template gives the same result as the dict.
    loaded = rt.load_template(copy.deepcopy(c.template))
    assert strict_equal(
        rt.parse_response(c.text, loaded, prefix=c.prefix, tools=copy.deepcopy(c.tools)), expected
    )

    whole_message, whole_events = _stream(c, [c.text])
    assert strict_equal(whole_message, expected), (
        f"\nstreamed: {whole_message!r}\nparse_response: {expected!r}"
    )
    whole_boundaries, whole_regions = _structure(whole_events)

    for name, chunks in _chunkings(c):
        message, events = _stream(c, chunks)
        assert strict_equal(message, expected), f"{name}: message differs\n{message!r}\n{expected!r}"
        boundaries, regions = _structure(events)
        assert strict_equal(boundaries, whole_boundaries), (
            f"{name}: open/close events differ\n{boundaries!r}\n{whole_boundaries!r}"
        )
        assert regions == whole_regions, f"{name}: region chunk texts differ\n{regions!r}\n{whole_regions!r}"


@pytest.mark.parametrize(
    "c", _params([c for c in CASES if c.streams and c.difference is None and not c.pending])
)
def test_events_match_reference(c: Case) -> None:
    """Where the messages agree, the region_open/region_close events (with values) agree too."""

    def events(parser_class: Any) -> list[dict]:
        parser = parser_class(copy.deepcopy(c.template), prefix=c.prefix, tools=copy.deepcopy(c.tools))
        evs = list(parser.initial_events) + parser.feed(c.text)
        evs.extend(parser.finalize()[1])
        return [e for e in evs if e["type"] != "region_chunk"]

    try:
        ref = events(reference.ResponseParser)
    except Exception:
        pytest.skip("the reference raises (covered by test_against_reference)")
    if c.events_difference is not None:
        # A documented difference in the events only: they must really differ (see docs/differences.md).
        ours_all = [
            {k: v for k, v in e.items() if k != "captures"} if e["type"] == "region_open" else e
            for e in events(rt.ResponseParser)
        ]
        assert not strict_equal(ours_all, ref), "the events agree: the difference is gone"
        return
    # Our region_open additionally carries the open delimiter's named captures (an additive key, [ours],
    # used to announce tool calls early: see docs/wire.md); the reference has no such key, so compare
    # without it. Every other key must agree.
    ours = [
        {k: v for k, v in e.items() if k != "captures"} if e["type"] == "region_open" else e
        for e in events(rt.ResponseParser)
    ]
    assert strict_equal(ours, ref), f"\nours:      {ours!r}\nreference: {ref!r}"


def test_batch_matches_single() -> None:
    """A batch (list of texts, one prefix or one per item) gives the single-text results in order."""
    picked = [c for c in CASES if c.streams and c.tools is None and c.category in ("model", "prefix")][:12]
    assert picked
    for c in picked:
        single = rt.parse_response(c.text, copy.deepcopy(c.template), prefix=c.prefix)
        batch = rt.parse_response([c.text, c.text], copy.deepcopy(c.template), prefix=c.prefix)
        assert len(batch) == 2 and all(strict_equal(b, single) for b in batch), c.id
        per_item = rt.parse_response([c.text, ""], copy.deepcopy(c.template), prefix=[c.prefix, c.prefix])
        assert strict_equal(per_item[0], single), c.id
        assert strict_equal(per_item[1], rt.parse_response("", copy.deepcopy(c.template), prefix=c.prefix)), (
            c.id
        )
