"""``adapter.step(parser, piece)`` is ``adapter.feed(parser.feed(piece))``, and ``parser.feed_region`` is
the part of ``parser.feed`` it skips.

``step`` asks the parser whether a piece only continues the open region (``feed_region``); if so it hands
the text to the field's handler without building a parser event. These tests drive one parser and adapter
with ``step`` and a twin pair with ``feed``, over the recorded model outputs of every library family and
the tool-call fixtures, cut at random (with bytes pieces and failing regions too), and compare every
piece's chunks, the errors raised, the end of the stream, the final object and the adapter's errors.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import response_templates as rt
from hypothesis_profiles import examples
from library_checks import random_pieces
from library_samples import family_of, load_samples, load_tools, prefix_for, tools_for
from response_templates import library
from response_templates.errors import ParseError
from response_templates.wire import run_stream
from toolstream_fixtures import FAMILIES, pieces
from wire_checks import PROTOCOLS, USAGE, make_adapter

SETTINGS = settings(max_examples=examples(200), deadline=None, suppress_health_check=list(HealthCheck))


def _samples() -> list[tuple[str, str, str, Any]]:
    """(family, prefix, output, tools) of every recorded output of a library family with a template."""
    table, out = load_tools(), []
    for sample in load_samples():
        name = family_of(sample)
        if name is None or not library.family(name).has_template:
            continue
        fam = library.family(name)
        out.append((name, prefix_for(sample, fam)[0], sample["raw"], tools_for(sample, table)[0]))
    return out


SAMPLES = _samples()


def _outcome(call: Any) -> tuple[str, Any]:
    """What a call returned, or the error it raised (type, message and events)."""
    try:
        return "ok", call()
    except rt.ResponseTemplateError as exc:
        return type(exc).__name__, (str(exc), getattr(exc, "events", None))


def _run_twins(
    template: Any, prefix: str, output: str, tools: Any, protocol: str, rng: random.Random, **options: Any
) -> None:
    errors = rng.choice(["raise", "keep"])
    stepped = rt.ResponseParser(template, prefix=prefix, tools=tools, errors=errors)
    fed = rt.ResponseParser(template, prefix=prefix, tools=tools, errors=errors)
    a = make_adapter(protocol, template, tools, **options)
    b = make_adapter(protocol, template, tools, **options)
    assert a.feed(stepped.initial_events) == b.feed(fed.initial_events)
    chunked: list[Any] = random_pieces(output, rng, longest=rng.choice([3, 8, 40]))
    if rng.random() < 0.2:  # UTF-8 bytes: step falls back to feed for them, and str after a cut character
        chunked = [p.encode() if rng.random() < 0.5 else p for p in chunked]
    for piece in chunked:
        got = _outcome(lambda piece=piece: a.step(stepped, piece))
        want = _outcome(lambda piece=piece: b.feed(fed.feed(piece)))
        assert got == want, piece
        if got[0] == "ParseError":  # both go on as run_stream does
            events = got[1][1] or []
            assert a.feed(events) == b.feed(events)
    end = {"finish_reason": rng.choice(["stop", "length"])}
    if options.get("include_usage"):
        end["usage"] = USAGE
    final_a = _outcome(lambda: stepped.finalize())
    final_b = _outcome(lambda: fed.finalize())
    assert final_a == final_b
    final_events = final_a[1][1] or []  # (message, events), or (error, its events)
    assert a.finish(final_events, **end) == b.finish(final_events, **end)
    assert a.final() == b.final()
    assert a.errors == b.errors


@pytest.mark.parametrize("index", range(len(SAMPLES)), ids=[f"{s[0]}-{i}" for i, s in enumerate(SAMPLES)])
def test_step_sends_what_feed_sends_for_every_recorded_output(index: int) -> None:
    name, prefix, output, tools = SAMPLES[index]
    template = library.family(name).template()
    for seed in range(3):
        rng = random.Random(seed * 1000 + index)
        protocol = PROTOCOLS[(index + seed) % len(PROTOCOLS)]
        _run_twins(template, prefix, output, tools, protocol, rng)


@SETTINGS
@given(
    st.sampled_from(sorted(FAMILIES)),
    st.sampled_from(PROTOCOLS),
    st.integers(0, 2**32),
    st.sampled_from([{}, {"arguments": "buffered"}, {"tool_streaming": "at_close"}]),
)
def test_step_sends_what_feed_sends_for_tool_calls(
    family: str, protocol: str, seed: int, streaming: dict[str, Any]
) -> None:
    template, prompt, output, tools = FAMILIES[family]
    rng = random.Random(seed)
    if rng.random() < 0.2:
        output = output[: rng.randrange(len(output) + 1)]  # cut off: calls end incomplete
    options = {**streaming, **({"include_usage": True} if protocol == "chat" and rng.random() < 0.5 else {})}
    _run_twins(template, prompt, output, tools, protocol, rng, **options)


def test_feed_region_reads_only_what_continues_the_open_region() -> None:
    template = library.family("qwen3").template()
    parser = rt.ResponseParser(template, prefix="<|im_start|>assistant\n")
    assert parser.feed_region("Hi") is None  # no region open yet
    assert [e["type"] for e in parser.feed("<think>Hm")] == ["region_open", "region_chunk"]
    chunk = parser.feed_region(", so")
    assert chunk is not None and chunk["field"] == "reasoning_content" and chunk["type"] == "region_chunk"
    assert parser.feed_region("</think>") is None  # may start a delimiter: left for feed
    assert parser.feed_region("") is None
    assert [e["type"] for e in parser.feed("</think>OK")] == ["region_close", "region_open", "region_chunk"]
    assert parser.feed("<") == []  # held back
    assert parser.feed_region("x") is None  # text is held back: feed decides
    assert [e["text"] for e in parser.feed("x")] == ["<x"]
    message, _ = parser.finalize()
    assert (message["reasoning_content"], message["content"]) == ("Hm, so", "OK<x")
    assert parser.feed_region("late") is None  # finalized: feed raises, feed_region reads nothing


def test_run_stream_goes_on_after_a_failed_region_with_step() -> None:
    """run_stream drives the adapter with step; a region that fails mid-stream still ends its call."""
    template, prompt, _, tools = FAMILIES["qwen3"]
    output = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Par' + "is}}}\n</tool_call>"
    parser = rt.ResponseParser(template, prefix=prompt, tools=tools)
    adapter = make_adapter("chat", template, tools)
    chunks = list(run_stream(parser, adapter, pieces(output, random.Random(1))))
    twin_parser = rt.ResponseParser(template, prefix=prompt, tools=tools)
    twin = make_adapter("chat", template, tools)
    want = twin.feed(twin_parser.initial_events)
    for piece in pieces(output, random.Random(1)):
        try:
            events = twin_parser.feed(piece)
        except ParseError as exc:
            events = exc.events or []
        want += twin.feed(events)
    try:
        final_events = twin_parser.finalize()[1]
    except ParseError as exc:
        final_events = exc.events or []
    want += twin.finish(final_events)
    assert chunks == want
    assert adapter.errors and adapter.errors == twin.errors
