"""Literal delimiters in the export for vLLM (``export.literal``; docs/grammar.md, "Beside vLLM's own
template grammar").

Everywhere: the listed families' exports for vLLM are spelled literally (and only theirs, only for vLLM,
only by default). In the engines' venv (``make test-vllm``): each listed spelling loses nothing, measured
as ``benchmarks/bench_grammar.py --against vllm`` measures it (vLLM's own parser reads every recorded
output of the family as with the lenient spelling, and vLLM's ``required`` grammar, which the literal
spelling lets it derive, accepts at least as many recorded outputs with calls as ours), and every family
whose spelling would lose nothing is listed.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import response_templates as rt
from response_templates.export.literal import FOR_VLLM, literal_candidates

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("family", sorted(FOR_VLLM))
def test_a_listed_family_is_exported_literally_for_vllm(family: str) -> None:
    result = rt.templates.export(family, target="vllm")
    lenient = rt.templates.export(family, target="vllm", literal=False)
    for field, key, before, after in FOR_VLLM[family]:
        # the lenient spelling is still the library's (else the listed change is stale)
        assert lenient.template["fields"][field][key] == before
        assert result.template["fields"][field][key] == after
        assert after in literal_candidates(before)
    notes = [n for n in result.notes if "spelled literally" in n]
    assert len(notes) == len(FOR_VLLM[family])
    assert not [n for n in lenient.notes if "spelled literally" in n]


def test_only_vllm_and_only_the_listed_families() -> None:
    family = sorted(FOR_VLLM)[0]
    for target in ("transformers", "sglang"):
        assert not [n for n in rt.templates.export(family, target=target).notes if "spelled literally" in n]
    # a family not listed keeps its lenient spelling
    thinking = rt.templates.export("qwen3", target="vllm").template["fields"]["thinking"]
    assert thinking["open_pattern"].endswith("(?:\\s*<think>)?")


def test_the_command_line_keeps_the_lenient_spelling_on_request() -> None:
    family = sorted(FOR_VLLM)[0]
    field, key, before, after = FOR_VLLM[family][0]
    runs = {
        flag: subprocess.run(
            [sys.executable, "-m", "response_templates", "export", family, "--for", "vllm", *flag],
            capture_output=True,
            text=True,
            check=True,
        )
        for flag in ((), ("--lenient",))
    }
    assert json.loads(runs[()].stdout)["fields"][field][key] == after
    assert "spelled literally" in runs[()].stderr
    assert json.loads(runs[("--lenient",)].stdout)["fields"][field][key] == before


# ------------------------------------------------------------------------------ with vLLM (make test-vllm)


@pytest.fixture(scope="module")
def against_vllm() -> tuple[Any, list[Any]]:
    pytest.importorskip("vllm")
    pytest.importorskip("xgrammar")
    for p in (ROOT / "benchmarks", ROOT / "tests" / "grammar"):
        if str(p) not in sys.path:
            sys.path.insert(0, str(p))
    import grammar_harness as gh

    import _grammar_vs_vllm as bench

    cases, _ = gh.sample_cases()
    return bench, cases


@pytest.mark.parametrize("family", sorted(FOR_VLLM))
def test_a_listed_spelling_loses_nothing_and_vllm_derives_its_grammar(
    family: str, against_vllm: tuple[Any, list[Any]]
) -> None:
    bench, cases = against_vllm
    import grammar_harness as gh
    import vllm_grammar_harness as vh

    lit = bench.literal_row(family, cases)
    assert lit.loses_nothing, lit
    # the default export is the literal one, and vLLM's beam parser derives its required grammar from it
    prompt = rt.library.family(family).generation_prompt
    assert vh.beam_tag(vh.exported(family), gh.WALK_TOOLS, "required", prefix=prompt).tag is not None


def test_every_family_whose_literal_spelling_loses_nothing_is_listed(
    against_vllm: tuple[Any, list[Any]],
) -> None:
    bench, cases = against_vllm
    missing = []
    for fam in rt.library.families():
        if fam.name in FOR_VLLM:
            continue
        lit = bench.literal_row(fam.name, cases)
        if lit.loses_nothing:
            missing.append((fam.name, lit.changes))
    assert not missing, f"add to export.literal.FOR_VLLM: {missing}"
