"""Hostile model outputs on every library template (issue 12): runs of cut delimiters, unclosed
regions, deep JSON, huge integers, lone surrogates, NUL and control characters, invalid UTF-8 bytes.

Each output is fed whole, one character at a time (the big ones: in random chunks of up to 4 KB) and in
random chunks; ``hostile_inputs.check_output`` then asserts that only documented typed errors came out,
that no character was lost (each is in a ``region_chunk`` or is a delimiter an event stands for), and
that every chunking gave the same message, errors and events (docs/spec.md 4.12, 9.1, 9.6).

The templates are the library's, loaded with a regex budget of 0.1 s per search instead of 1 s so that a
slow pattern costs CI little: a ``PatternTimeoutError`` is a documented error (its stream is not compared
across chunkings, since whether a search times out depends on the machine).
"""

from __future__ import annotations

import random
from functools import cache, lru_cache
from typing import Any

import pytest
from hostile_inputs import (
    CONTROLS,
    SURROGATES,
    TINY,
    HostileOutput,
    check_output,
    hostile_outputs,
    profile_sizes,
    prompts,
    template_words,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import response_templates as rt
from hypothesis_profiles import examples

NAMES = rt.templates.names()
#: Seconds one delimiter search may take in these tests (see the module docstring).
TEST_REGEX_TIMEOUT = 0.1

#: Findings of this suite that are not fixed yet: (template, output label) -> reason. Each is a strict
#: xfail, so the mark must go once the behaviour is fixed.
KNOWN: dict[tuple[str, str], str] = {}


@cache
def template(name: str) -> rt.ResponseTemplate:
    return rt.load_template(rt.templates.get(name).to_dict(), regex_timeout=TEST_REGEX_TIMEOUT)


@lru_cache(maxsize=2)
def outputs(name: str) -> dict[str, HostileOutput]:
    return {o.label: o for o in hostile_outputs(name, profile_sizes())}


def _cases() -> list[Any]:
    cases = []
    for name in NAMES:
        for output in hostile_outputs(name, TINY):  # the labels do not depend on the sizes
            marks = []
            if (name, output.label) in KNOWN:
                marks.append(pytest.mark.xfail(strict=True, reason=KNOWN[(name, output.label)]))
            cases.append(pytest.param(name, output.label, id=f"{name}|{output.label}", marks=marks))
    return cases


@pytest.mark.parametrize(("name", "label"), _cases())
def test_hostile_output(name: str, label: str) -> None:
    failures = check_output(name, template(name), prompts(name)[0], outputs(name)[label])
    assert not failures, "\n".join(map(str, failures))


def test_every_template_gets_every_kind_of_hostile_output() -> None:
    """The generator covers what issue 12 lists, for every template (so a template whose delimiters it
    cannot sample would show up here, not silently get fewer checks)."""
    kinds = ("run ", "big run ", "unclosed ", "deep json", "huge integer", "surrogates", "controls")
    for name in NAMES:
        labels = [o.label for o in hostile_outputs(name, TINY)]
        explicit = any(f.open is not None for f in rt.templates.get(name).fields)
        wanted = [k for k in kinds if explicit or k != "unclosed "]
        missing = [k for k in wanted if not any(label.startswith(k) for label in labels)]
        assert not missing, (name, missing)
        assert any(isinstance(o.text, bytes) for o in hostile_outputs(name, TINY)), name
        assert len(template_words(name)) >= 2, name


def test_the_lossless_check_can_fail() -> None:
    """``lost_text`` catches a dropped character and a dropped delimiter."""
    from hostile_inputs import lost_text, run_stream

    t = template("qwen3")
    text = "<think>why</think>ok<tool_call>[1]</tool_call>"
    res = run_stream(t, "", [text])
    assert res.stream is not None
    assert lost_text(t, res.stream, res.events) is None
    chunk = next(i for i, e in enumerate(res.events) if e["type"] == "region_chunk")
    dropped = [dict(e) for e in res.events]
    dropped[chunk]["text"] = dropped[chunk]["text"][1:]
    assert lost_text(t, res.stream, dropped) is not None
    assert lost_text(t, res.stream + "<think>", res.events) is not None
    assert lost_text(t, "x" + res.stream, res.events) is not None


def test_the_chunking_check_can_fail() -> None:
    """``check_output`` compares chunkings: a template whose result depends on the chunking is caught."""
    from hostile_inputs import StreamResult

    a, b = StreamResult(message={"content": "a"}), StreamResult(message={"content": "b"})
    assert a.key() != b.key()
    nan = StreamResult(message={"x": float("nan")})
    assert nan.key() == StreamResult(message={"x": float("nan")}).key()


# ------------------------------------------------------------------------ random hostile outputs

_ATOMS = (
    *SURROGATES,
    *CONTROLS,
    "[" * 600,
    "{" * 3,
    '{"a": ' * 40,
    "9" * 4400,
    "-1e99999",
    '"\\ud800"',
    '"',
    "\\",
    "\n",
    " ",
    "é",
    "東",
    "\U0001f642",
)


@settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(NAMES), st.data(), st.integers(0, 2**32 - 1))
def test_random_hostile_outputs(name: str, data: Any, seed: int) -> None:
    """Random mixes of the template's delimiters, their cuts and hostile atoms: the same checks."""
    words = template_words(name)
    cut = st.sampled_from(words).flatmap(lambda w: st.integers(1, max(1, len(w) - 1)).map(lambda k: w[:k]))
    piece = st.one_of(st.sampled_from(words), cut, st.sampled_from(_ATOMS), st.text(max_size=4))
    text = "".join(data.draw(st.lists(piece, max_size=24)))
    prefix = data.draw(st.sampled_from(prompts(name)))
    rng = random.Random(seed)
    output = HostileOutput("random", text)
    failures = check_output(name, template(name), prefix, output, seed=rng.randrange(1 << 30))
    assert not failures, "\n".join(map(str, failures))


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(NAMES), st.binary(max_size=40), st.data())
def test_random_bytes(name: str, junk: bytes, data: Any) -> None:
    """Delimiters as UTF-8 with random bytes between them: typed errors only, in every chunking."""
    words = data.draw(st.lists(st.sampled_from(template_words(name)), max_size=8))
    raw = b"".join(w.encode("utf-8", "surrogatepass") + junk[: data.draw(st.integers(0, 8))] for w in words)
    failures = check_output(name, template(name), prompts(name)[0], HostileOutput("bytes", raw + junk))
    assert not [f for f in failures if f.kind == "untyped"], "\n".join(map(str, failures))
