"""The two forms of a grammar accept the same recorded outputs, and the comparison with vLLM's own
template grammar runs (the engines' venv: ``.venv-vllm/bin/python -m pytest -p no:xdist
tests/grammar/test_grammar_forms.py``; skipped where xgrammar, transformers or vLLM is missing).

* Forms: for every recorded sample of a compiled family, the ``auto`` grammar built as
  ``test_grammar_completeness.py`` builds it is judged by xgrammar over the structural tag and by
  llguidance over the Lark form, on the same trained tokenizer (``xgrammar_harness.completeness``). The
  samples where they disagree are listed in ``tests/data/grammar_forms_differences.json`` with the form
  that accepts and the reason; the list is exact both ways.
* vLLM: ``benchmarks/bench_grammar.py --against vllm``'s row for a few families: vLLM 0.34's
  ``tool_call_structural_tag`` (called as its ``beam`` parser calls it) beside ours, with the target of
  docs/grammar.md: we compile every family and mode theirs compiles, with completeness at least theirs.
"""

from __future__ import annotations

import json
import sys
from functools import cache
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("xgrammar")
pytest.importorskip("transformers")

import grammar_harness as gh
import xgrammar_harness as xh

ROOT = Path(__file__).resolve().parents[2]
DIFFERENCES_FILE = ROOT / "tests" / "data" / "grammar_forms_differences.json"
SIDES = ("structural_tag", "lark")


def load_differences() -> dict[str, dict[str, str]]:
    return dict(json.loads(DIFFERENCES_FILE.read_text(encoding="utf-8"))["differences"])


@cache
def verdicts() -> dict[str, xh.FormsVerdict]:
    return {v.id: v for v in xh.completeness()}


def test_differences_file_is_well_formed() -> None:
    for sample_id, entry in load_differences().items():
        assert entry.get("accepted_by") in SIDES, sample_id
        assert entry.get("family", "").strip(), sample_id
        assert entry.get("reason", "").strip(), f"{sample_id}: give a reason"


def test_xgrammar_compiles_the_structural_tag_of_every_sample() -> None:
    refused = {i: v.tag_why for i, v in verdicts().items() if v.tag is None}
    assert not refused, f"xgrammar refused our tag: {refused}"


def test_both_forms_accept_the_same_recorded_outputs() -> None:
    found = {i: ("structural_tag" if v.tag else "lark") for i, v in verdicts().items() if not v.agree}
    listed = {i: e["accepted_by"] for i, e in load_differences().items()}
    unlisted = {i: (verdicts()[i].family, side) for i, side in found.items() if listed.get(i) != side}
    stale = sorted(set(listed) - set(found))
    lines = [
        f"{i} [{fam}] accepted only by the {side}; the other: "
        + (verdicts()[i].lark_why if side == "structural_tag" else verdicts()[i].tag_why)
        for i, (fam, side) in sorted(unlisted.items())
    ]
    assert not unlisted and not stale, (
        "forms disagree and not listed in grammar_forms_differences.json:\n"
        + "\n".join(lines)
        + f"\nlisted but agreeing now (remove them): {stale}"
    )


def test_listed_differences_name_the_sample_family() -> None:
    results = verdicts()
    for sample_id, entry in load_differences().items():
        if sample_id in results:
            assert results[sample_id].family == entry["family"], sample_id


def test_the_xgrammar_walks_follow_the_mask() -> None:
    """A walk through our structural tag with xgrammar's masks ends in text the tag accepts."""
    import random

    from response_templates import grammar, library

    fam = library.family("qwen3-coder")
    g, engine = gh.build_with_tokens(
        grammar, fam.name, tools=gh.WALK_TOOLS, tool_choice="required", prefix=fam.generation_prompt
    )
    xe = xh.xengine_for(engine)
    compiled = xe.compile(g.structural_tag)
    rng = random.Random(0)
    finished = 0
    for _ in range(4):
        walk = xe.walk(compiled, rng, max_tokens=300)
        if walk.finished:
            finished += 1
            assert xe.accepts(compiled, walk.text)[0] or walk.end == "stopped", walk.text
    assert finished


#: Families whose structural tag, built with their delimiters as special tokens, is sound under xgrammar
#: (calls in JSON, XML parameters, DSML-like headers, harmony channels).
SOUND_FAMILIES = ["qwen3", "qwen3-coder", "kimi-k2", "deepseek-v3.1", "mistral-v11", "gpt-oss", "glm-4.7"]


def test_the_xgrammar_walks_are_sound_with_special_tokens() -> None:
    """Walks through the structural tag with xgrammar's masks, the delimiters special tokens: every
    finished walk parses into calls valid for the request (``xgrammar_harness.walk_soundness``)."""
    from xgrammar.structural_tag import JSONSchemaFormat

    if "excludes" not in JSONSchemaFormat.model_fields:
        pytest.skip("xgrammar before 0.2.8 lets a JSON string hold a closer (no json_schema excludes)")
    rows = xh.walk_soundness(SOUND_FAMILIES, count=6)
    assert all(r.finished and not r.refused for r in rows), [(r.family, r.refused) for r in rows]
    assert not [u for r in rows for u in r.unsound], [(r.family, r.unsound[:2]) for r in rows if r.unsound]


# ------------------------------------------------------------------------------------------------------
# Beside vLLM's own template grammar
# ------------------------------------------------------------------------------------------------------

#: functionary-v3.1 is the one family vLLM 0.34 derives a tag for (``required``); the others show the
#: comparison where it derives none (a JSON call, XML parameters, a reasoning opener only).
VLLM_FAMILIES = ["functionary-v3.1", "qwen3", "qwen3-coder", "minicpm5"]


@cache
def _bench() -> Any:
    pytest.importorskip("vllm.parser.response_template_grammar")
    path = str(ROOT / "benchmarks")
    if path not in sys.path:
        sys.path.insert(0, path)
    import _grammar_vs_vllm

    return _grammar_vs_vllm


@pytest.mark.parametrize("family", VLLM_FAMILIES)
def test_vllm_comparison_meets_the_target(family: str) -> None:
    bench = _bench()
    cases, _ = gh.sample_cases()
    row = bench.family_row(family, cases, walks=2, steps=20, reps=1)
    for mode in bench.MODES:
        if row.vllm.compiles.get(mode):
            assert row.ours.compiles.get(mode), (
                f"vLLM compiles {family} for {mode}, ours not: {row.ours.reasons}"
            )
        else:
            assert row.vllm.reasons.get(mode), f"say why vLLM derives no {mode} tag for {family}"
    if row.vllm.compiles.get("auto"):
        assert row.ours.accepted >= row.vllm.accepted
    if row.vllm.compiles.get("required"):
        assert row.ours.req_accepted >= row.vllm.req_accepted
    assert row.ours.walks and row.literal


def test_vllm_derives_the_functionary_tag() -> None:
    """A canary of the call path: vLLM 0.34 derives functionary-v3.1's ``required`` tag, and xgrammar
    compiles it; if a vLLM update changes that, the benchmark's table changes too."""
    bench = _bench()
    cases, _ = gh.sample_cases()
    row = bench.family_row("functionary-v3.1", cases, walks=2, steps=20, reps=1)
    assert row.vllm.compiles.get("required"), row.vllm.reasons
    assert row.vllm.finished and row.vllm.sound == row.vllm.finished, row.vllm.unsound
