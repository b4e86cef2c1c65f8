"""A model looping on its stop token, on every library template, in linear work (issue 28, item 12).

A model that does not stop writes its end-of-turn token again and again (``<|im_end|>``, ``</s>``,
``<｜end▁of▁sentence｜>``, ``<|end_of_text|>`` ... repeated), or one of the template's delimiters. Such an
output once cost x8.5 to x34 the time for x4 the length (gigachat3, kimi-k2-instruct, granite-3): a parser
state visited at every copy looked through the rest of the text each time for a literal that is not
there. Every template of ``rt.templates.names()`` gets a run of each of its delimiters and stop tokens
(``degenerate_outputs.stop_token_runs``: after the prompt and inside each explicit field), at
:data:`SIZE` characters and four times as many, parsed whole, fed in one piece, and streamed in chunks
(one size of :data:`CHUNKS` per run, in turn, so that each template meets all of them); the work of the
larger may be at most :data:`MAX_GROWTH` times that of the smaller.

Nothing is timed: the work is the number of characters the delimiter matching reads, and the end finder
of json-value-end regions is handed (``tests/work_count.py``), which is deterministic, so that a rescan
shows up however fast or loaded the machine is (x16 for x4 the text where every copy rescans the rest).
``benchmarks/bench_families.py --degenerate --stop-tokens`` times the costliest runs at 25 KB and 100 KB.
"""

from __future__ import annotations

from typing import Any

import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st

import response_templates as rt
import work_count
from degenerate_outputs import Degenerate, hostile_inputs, stop_token_runs, stop_tokens
from hypothesis_profiles import examples
from response_templates import matching
from response_templates.matching import Delimiter

pytestmark = pytest.mark.pure_python("the work meter replaces attributes of the Python sources")

NAMES = rt.templates.names()
#: The smaller size (characters); the larger is four times as long. Both are above the length up to
#: which a delimiter's hold-back comes from a different search (matching._SHORT_PARTIAL), so that the
#: work per character is the same at both once it is linear.
SIZE = 512
#: x4 the text may cost at most this much more work (a rescan of the rest at every copy costs x16).
MAX_GROWTH = 5.0
#: Characters per feed in the streamed runs (a token, a few tokens, a line), one per run in turn; every
#: run is also fed in one piece (a feed that holds the whole run reads it like the whole-text parse).
CHUNKS = (4, 16, 64)


def _outputs(name: str) -> tuple[Degenerate, ...]:
    return stop_token_runs(name, after_text=False)


def _growth(template: rt.ResponseTemplate, output: Degenerate, run: Any) -> tuple[float, int, int]:
    small = work_count.work(template, lambda: run(output.text(SIZE)))
    large = work_count.work(template, lambda: run(output.text(4 * SIZE)))
    return large / max(1, small), small, large


def _check(name: str, ways: Any) -> list[str]:
    """The runs whose work grows more than :data:`MAX_GROWTH` times for x4 the text; ``ways(i)`` gives the
    ways to parse run ``i`` (label -> ``run(template, prefix, text)``)."""
    template = rt.templates.get(name)
    prefix = hostile_inputs.prompts(name)[0]
    failures = []
    for i, output in enumerate(_outputs(name)):
        for way, run in ways(i).items():
            growth, small, large = _growth(
                template, output, lambda text, run=run: run(template, prefix, text)
            )
            if growth > MAX_GROWTH:
                failures.append(
                    (growth, f"{output.label} {way}: x{growth:.1f} the work ({small:,} -> {large:,})")
                )
    failures.sort(reverse=True)
    return [f"{name} / {text}" for _, text in failures[:12]]


def _whole(i: int) -> dict[str, Any]:
    return {"whole": work_count.parse_whole}


def _streamed(i: int) -> dict[str, Any]:
    chunk = CHUNKS[i % len(CHUNKS)]
    return {
        "one feed": lambda t, p, text: work_count.parse_streamed(t, p, text, len(text)),
        f"{chunk}-char chunks": lambda t, p, text: work_count.parse_streamed(t, p, text, chunk),
    }


@pytest.mark.parametrize("name", NAMES)
def test_stop_token_runs_whole(name: str) -> None:
    """``parse_response`` on each run: x4 the text, at most x5 the work."""
    failures = _check(name, _whole)
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("name", NAMES)
def test_stop_token_runs_streamed(name: str) -> None:
    """Each run fed in one piece then finalized, and in 4-, 16- or 64-character chunks."""
    failures = _check(name, _streamed)
    assert not failures, "\n".join(failures)


# ------------------------------------------------------------------------------- the runs and the meter


def test_every_template_has_its_stop_tokens() -> None:
    """The runs cover the usual stop tokens, each template's own end-of-turn markers (from its
    delimiters, its library file and its real chat templates) and a run inside each explicit field."""
    for name in NAMES:
        tokens = stop_tokens(name)
        assert {"<|im_end|>", "</s>", "<｜end▁of▁sentence｜>", "<eos>", "<|EOT|>"} <= set(tokens), name
        labels = [o.label for o in _outputs(name)]
        assert len(labels) == len(set(labels)), name
        assert all(label.startswith("stop ") for label in labels), name
    assert "<|end_of_text|>" in stop_tokens("granite-3")  # from its chat templates
    assert "<|message_sep|>" in stop_tokens("gigachat3")  # a delimiter
    assert "<|END_OF_TURN_TOKEN|>" in stop_tokens("cohere-command-r7b")  # round_trip.stop
    assert any(o.label == "stop '</s>' in tool_calls" for o in _outputs("gigachat3"))


def test_the_meter_counts_characters_read() -> None:
    """A search that finds nothing has read the rest of the text; one that finds a match, up to its end;
    a failed ``match``, one character."""
    counter = work_count.Counter()
    pattern = work_count.CountingPattern(regex.compile("b"), counter)
    assert pattern.search("aaaaab", 1) is not None and counter.chars == 5
    assert pattern.search("aaaaaa", 2) is None and counter.chars == 9
    assert pattern.match("aaaaaa", 0) is None and counter.chars == 10
    assert counter.calls == 3


def test_the_meter_restores_the_template() -> None:
    template = rt.templates.get("gigachat3")
    delimiters = [d for f in template.fields for d in (f.open, f.close) if d is not None]
    before = [(d.pattern, d.required_one, d.required) for d in delimiters]
    assert work_count.work(template, lambda: work_count.parse_whole(template, "", "</s>" * 8)) > 0
    after = [(d.pattern, d.required_one, d.required) for d in delimiters]
    assert before == after


def _unmemoized_required(d: Any, text: str, pos: int, memo: Any) -> bool:
    if d.required_one:
        return text.find(d.required_one, pos) >= 0
    return d.required.search(text, pos) is not None


def _whole_rest_json_end(finder: Any, buf: str, pos: int) -> int:
    return finder.feed(buf[pos:]) if pos < len(buf) else -1


@pytest.mark.parametrize(
    ("module", "name", "replacement", "unit"),
    [
        # the required-literal probe without its memo: a run of a stop token rescans the rest at each copy
        ("matching", "_memo_required", _unmemoized_required, "</s>"),
        # the JSON end finder handed the whole rest of the buffer at each call region a loop opens
        ("parser", "_feed_json_end", _whole_rest_json_end, "function call<|role_sep|>"),
    ],
)
def test_the_work_check_can_fail(
    monkeypatch: pytest.MonkeyPatch, module: str, name: str, replacement: Any, unit: str
) -> None:
    """What the parser did before issue 28 costs x10 or more the work for x4 the text on gigachat3."""
    import response_templates.parser as parser

    monkeypatch.setattr({"matching": matching, "parser": parser}[module], name, replacement)
    template = rt.templates.get("gigachat3")
    prefix = hostile_inputs.prompts("gigachat3")[0]
    growth, _, _ = _growth(
        template, Degenerate("stop", unit), lambda text: work_count.parse_whole(template, prefix, text)
    )
    assert growth > 10


def test_failed_regions_keep_no_frames() -> None:
    """A region whose value fails is kept as an error without a traceback anywhere in its chain (the
    JSON decoder's error two levels down included): those frames held the parser and, through it, every
    other failed region of the call, so that a loop of call openers kept thousands of frames alive while
    it was parsed (the garbage collector's passes over them grew with the text) and in the message."""
    template = rt.templates.get("gigachat3")
    prefix = hostile_inputs.prompts("gigachat3")[0]
    message = rt.parse_response("function call<|role_sep|>" * 50, template, prefix=prefix, errors="keep")
    assert message.errors
    for error in message.errors:
        chain: list[BaseException] = [error]
        while chain:
            current = chain.pop()
            assert current.__traceback__ is None, repr(current)
            chain += [e for e in (current.__cause__, current.__context__) if e is not None]


# ------------------------------------------------------------------ the probe without a complete match


def _first_char_delimiters() -> list[Delimiter]:
    found: dict[int, Delimiter] = {}
    for name in NAMES:
        t = rt.templates.get(name)
        for watch in (t.outside, *t.inside.values()):
            for d in watch.delimiters:
                if d.literals is None and d.required_literals and d.first_chars:
                    found.setdefault(id(d), d)
    return list(found.values())


FIRST_CHAR_DELIMITERS = _first_char_delimiters()


def _near_pieces(d: Delimiter) -> list[str]:
    """The pattern's literal runs and characters (material for texts that nearly match it)."""
    assert isinstance(d.source, str)
    bare = regex.sub(r"\\(.)", r"\1", regex.sub(r"\(\?[^)]*\)|[()?*+|\[\]{}^$]", " ", d.source))
    return [*(w for w in bare.split(" ") if w), *{c for c in d.source if c.isprintable()}, " ", "\n", "x"]


@settings(max_examples=examples(300), deadline=None)
@given(st.data())
def test_a_long_text_without_the_required_literal_is_probed_start_by_start(data: st.DataObject) -> None:
    """A long text (more than matching._SHORT_PARTIAL characters) holding none of a delimiter's required
    literals: the undecided position comes from probing one start at a time (the first characters of
    the pattern), which must be where the probe's own search finds its partial match."""
    d = data.draw(st.sampled_from(FIRST_CHAR_DELIMITERS))
    unit = "".join(data.draw(st.lists(st.sampled_from(_near_pieces(d)), min_size=1, max_size=8)))
    text = unit * (1 + 2 * matching._SHORT_PARTIAL // max(1, len(unit)))
    text = text[: data.draw(st.integers(matching._SHORT_PARTIAL + 1, len(text)))]
    for literal in d.required_literals:
        text = text.replace(literal, "")
    pos = data.draw(st.integers(0, max(0, len(text) - matching._SHORT_PARTIAL - 1)))
    assert not d.may_match(text, pos)
    probe = d.probe.search(text, pos, partial=True)
    match, undecided = d.find_regex(text, pos, False, -1, matching.RegexMeter.unlimited(60.0))
    assert match is None
    assert undecided == (matching._INF if probe is None else probe.start()), (d.source, text[pos : pos + 200])


def test_such_delimiters_exist() -> None:
    assert len(FIRST_CHAR_DELIMITERS) >= 40


def test_no_long_partial_search_where_no_match_is_possible() -> None:
    """deepseek-v3 fed a run of ``function<｜tool▁sep｜>`` (its call header, whose name runs to a newline
    that never comes) in one piece: no partial search over the long text, whose cost grew with the square
    of its length (0.45 s at 100 KB, 14x the time of 25 KB) however few characters it reported."""
    template = rt.templates.get("deepseek-v3")
    prefix = hostile_inputs.prompts("deepseek-v3")[0]
    text = Degenerate("stop", "function<｜tool▁sep｜>").text(8 * 1024)
    with work_count.counting(template) as counter:
        work_count.parse_streamed(template, prefix, text, len(text))
    assert counter.calls and counter.longest_partial <= matching._SHORT_PARTIAL
