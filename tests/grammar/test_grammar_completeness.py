"""Completeness: the ``auto`` grammar of a family accepts the recorded real outputs it must accept.

The recorded outputs are those of ``tests/data/model_output_samples.jsonl`` and
``tests/data/family_samples/*.jsonl`` that our parser reads exactly as their source expects (the samples
``tests/library/test_library_samples.py`` passes). Each is tokenized with a BPE tokenizer that has the
grammar's special tokens, fed to llguidance's matcher for
``grammar.build(family, tools=<the sample's tools>, tool_choice="auto", prefix=<the sample's prompt>)``,
and must be accepted whole.

An output *counts* when it is complete and correct (``grammar_harness.incompleteness``): its calls are
valid for its tools, and no region is still open where it ends (a truncated generation, or the turn's
stop token written inside a region, which the template reads as its close but a grammar never writes).
The counted outputs the grammar does not accept are listed in ``tests/data/grammar_exceptions.json``,
each with a kind and a reason:

* ``rejected``: the grammar deliberately writes fewer spellings than the template reads (the reason
  says which);
* ``grammar-bug``: the grammar should accept the output and does not (listed so that the suite stays
  green meanwhile; the reason says where it lies).

The list is exact both ways: an unlisted rejection fails, and so does a listed sample that is accepted
or that does not count. The grammar built without special tokens (every delimiter spelled as text,
through a tokenizer that has none) must accept the same samples, except those listed under
``plain_text``. The figures (per family and in all) are :func:`completeness_by_family`, printed by
``benchmarks/bench_grammar.py --completeness`` and quoted in docs/grammar.md.
"""

from __future__ import annotations

import json
from collections import Counter
from functools import cache
from pathlib import Path
from typing import Any

import grammar_harness as gh
import pytest

from response_templates import grammar
from response_templates import library as rt_library

EXCEPTIONS_FILE = Path(__file__).resolve().parents[1] / "data" / "grammar_exceptions.json"
KINDS = ("rejected", "grammar-bug")

#: Floors of the figures (see test_completeness_does_not_regress).
FLOOR_ACCEPTED = 803
FLOOR_FAMILIES = 84

#: The least share of its counted outputs every family's grammar accepts (docs/grammar.md).
TARGET = 0.95


def load_grammar_exceptions() -> dict[str, dict[str, str]]:
    data = json.loads(EXCEPTIONS_FILE.read_text(encoding="utf-8"))
    return dict(data["exceptions"])


@cache
def compiled_families() -> frozenset[str]:
    return frozenset(name for name, cov in grammar.coverage().items() if cov.compiles)


@cache
def verdicts() -> dict[str, tuple[gh.SampleCase, bool, str]]:
    """Sample id -> (case, accepted, why not) for every case of a compiled family."""
    return {i: (case, ok, why) for i, (case, ok, why, _) in _verdicts().items()}


@cache
def _verdicts() -> dict[str, tuple[gh.SampleCase, bool, str, bool]]:
    """As :func:`verdicts`, plus whether the grammar built without special tokens accepts the sample
    through a tokenizer without them (a model whose delimiters are plain text)."""
    cases, _ = gh.sample_cases()
    out: dict[str, tuple[gh.SampleCase, bool, str, bool]] = {}
    for case in cases:
        if case.family not in compiled_families():
            continue
        kwargs: dict[str, Any] = {"tools": case.tools or [], "tool_choice": "auto", "prefix": case.prefix}
        g, engine = gh.build_with_tokens(grammar, case.family, **kwargs)
        ok, why = engine.accepts(g.lark, case.raw)
        plain = grammar.build(case.family, **kwargs)
        plain_ok = gh.engine_for(()).accepts(plain.lark, case.raw)[0]
        out[case.id] = (case, ok, why, plain_ok)
    return out


def load_plain_text_exceptions() -> dict[str, str]:
    data = json.loads(EXCEPTIONS_FILE.read_text(encoding="utf-8"))
    return dict(data.get("plain_text", {}))


def completeness_by_family() -> dict[str, tuple[int, int]]:
    """Family -> (counted outputs accepted, counted outputs), for every compiled family with samples."""
    out: dict[str, tuple[int, int]] = {}
    for case, ok, _ in verdicts().values():
        if case.incomplete:
            continue
        accepted, counted = out.get(case.family, (0, 0))
        out[case.family] = (accepted + ok, counted + 1)
    return dict(sorted(out.items()))


def completeness_counts() -> dict[str, Any]:
    """The figures docs/grammar.md quotes."""
    cases, skipped = gh.sample_cases()
    results = verdicts()
    exceptions = load_grammar_exceptions()
    kinds = Counter(exceptions[i]["kind"] for i in results if i in exceptions)
    by_family = completeness_by_family()
    left_out = Counter(case.incomplete for case, _, _ in results.values() if case.incomplete)
    return {
        "parsed samples": len(cases),
        "of compiled families": len(results),
        "left out: cut": left_out["cut"],
        "left out: invalid for their tools": left_out["invalid"],
        "left out: to built-in tools": left_out["builtin"],
        "left out: listed (malformed, a control token inside a value)": left_out["listed"],
        "counted": sum(n for _, n in by_family.values()),
        "accepted": sum(a for a, _ in by_family.values()),
        "families": len(by_family),
        f"families at {TARGET:.0%} or more": sum(a >= TARGET * n for a, n in by_family.values()),
        **{f"listed {k}": kinds[k] for k in KINDS},
        "not parsed as expected (left out)": sum(skipped.values()),
    }


def test_exceptions_file_is_well_formed() -> None:
    for sample_id, entry in load_grammar_exceptions().items():
        assert entry.get("kind") in KINDS, sample_id
        assert entry.get("reason", "").strip(), f"{sample_id}: give a reason"


def test_some_families_compile() -> None:
    assert len(compiled_families()) >= 10


def test_every_counted_output_is_accepted_or_listed() -> None:
    exceptions = load_grammar_exceptions()
    unlisted = {
        i: (case.family, why)
        for i, (case, ok, why) in verdicts().items()
        if not ok and not case.incomplete and i not in exceptions
    }
    assert not unlisted, "rejected and not listed in grammar_exceptions.json:\n" + "\n".join(
        f"{i} [{fam}]: {why}" for i, (fam, why) in sorted(unlisted.items())
    )


def test_listed_exceptions_are_still_rejected() -> None:
    """A listed sample that the grammar now accepts must leave the list (it can only shrink)."""
    results = verdicts()
    stale = [i for i in load_grammar_exceptions() if i in results and results[i][1]]
    assert not stale, f"accepted now, remove from grammar_exceptions.json: {stale}"


def test_listed_exceptions_are_counted_samples_of_compiled_families() -> None:
    results = verdicts()
    cases, _ = gh.sample_cases()
    known = {c.id for c in cases}
    for sample_id in load_grammar_exceptions():
        assert sample_id in known, f"{sample_id} is not a sample our parser reads as expected"
        assert sample_id in results, f"{sample_id}: its family no longer compiles"
        assert not results[sample_id][0].incomplete, f"{sample_id} does not count: remove it"


def test_outputs_left_out_are_cut_or_invalid() -> None:
    """What does not count is what a grammar must reject: calls invalid for their tools (the grammar
    enforces the schemas), outputs that end inside a region, and messages to built-in tools (enabled
    outside the request's tools, which are all a grammar writes calls of)."""
    for sample_id, (case, _, _) in verdicts().items():
        if case.problems:
            assert case.incomplete == "invalid", sample_id
        else:
            assert case.incomplete in ("", "cut", "builtin", "listed"), sample_id


def test_outputs_listed_as_not_counting_are_samples_the_grammar_rejects() -> None:
    """An output is listed as not counting only while the grammar rejects it (one it accepts counts)."""
    results = _verdicts()
    for sample_id in gh.load_not_counted():
        assert sample_id in results, f"{sample_id}: not a sample of a compiled family"
        assert results[sample_id][0].incomplete == "listed", sample_id
        assert not results[sample_id][1], f"{sample_id} is accepted now: remove it from 'not_counted'"


def test_a_message_to_a_built_in_tool_does_not_count() -> None:
    prompt = "<|start|>assistant"
    builtin = "<|channel|>commentary to=python <|constrain|>code<|message|>print(1)"
    assert gh.incompleteness("gpt-oss", builtin, prompt, []) == "builtin"
    header = "<|start|>assistant to=container.exec<|channel|>commentary<|message|>ls"
    assert (
        gh.incompleteness("gpt-oss", "<|channel|>analysis<|message|>x<|end|>" + header, prompt, [])
        == "builtin"
    )
    function = "<|channel|>commentary to=functions.f <|constrain|>json<|message|>{}<|call|>"
    assert gh.incompleteness("gpt-oss", function, prompt, []) == ""
    llama = "<|start_header_id|>assistant<|end_header_id|>\n\n"
    assert (
        gh.incompleteness("llama-3-json", '<|python_tag|>brave_search.call(query="x")', llama, [])
        == "builtin"
    )


def test_a_cut_output_is_one_a_grammar_cannot_finish() -> None:
    """The counting rule itself: a call without its closer is cut; with it, it counts; a region closed
    only by the turn's stop token (Llama's ``<|eom_id|>``) runs to the end by design."""
    prompt = "<|im_start|>assistant\n"
    call = '<tool_call>\n{"name": "f", "arguments": {}}\n'
    assert gh.incompleteness("hermes", call + "</tool_call>", prompt, []) == ""
    assert gh.incompleteness("hermes", call, prompt, []) == "cut"
    assert gh.incompleteness("hermes", call + "<|im_end|>", prompt, []) == "cut"
    assert gh.incompleteness("hermes", "<think>\nhmm", prompt, []) == "cut"
    assert gh.incompleteness("hermes", "Hello<|im_end|>", prompt, []) == ""
    assert gh.incompleteness("hermes", call + "</tool_call>", prompt, ["bad"]) == "invalid"


def test_the_models_own_stop_token_is_the_engines_not_the_grammars() -> None:
    """A final token that ends the generation and that the template never names (Inkling's
    ``<|content_model_end_sampling|>``) is the model's stop token: it is set aside before judging."""
    inkling = rt_library.family("inkling").template_dict()
    out = "<|content_text|>Hi<|end_message|>"
    assert gh.without_unknown_stop_token(out + "<|content_model_end_sampling|>", inkling) == out
    # a token the template names stays (Qwen's <|im_end|>), and so does one that is not an ending
    qwen = rt_library.family("qwen3").template_dict()
    assert gh.without_unknown_stop_token("Hi<|im_end|>", qwen) == "Hi<|im_end|>"
    assert gh.without_unknown_stop_token("Hi<|tool_call_end|>", inkling) == "Hi<|tool_call_end|>"


def test_completeness_does_not_regress() -> None:
    """The floor of the figures docs/grammar.md quotes (raise it as the grammar improves)."""
    counts = completeness_counts()
    assert counts["accepted"] >= FLOOR_ACCEPTED, counts
    assert counts[f"families at {TARGET:.0%} or more"] >= FLOOR_FAMILIES, counts


def test_plain_text_delimiters_change_nothing() -> None:
    """Built without special tokens (a tokenizer that spells every delimiter as text), the grammar
    accepts every sample it accepts with them, except those listed under ``plain_text`` (each a bug,
    with its reason). The other way round is expected: spelled out, a delimiter may sit in free text
    (a call inside reasoning), which a special token never does."""
    listed = load_plain_text_exceptions()
    differ = {i for i, (_, ok, _, plain_ok) in _verdicts().items() if ok and not plain_ok}
    assert differ == set(listed), (
        f"differ: {sorted(differ - set(listed))}; no longer: {sorted(set(listed) - differ)}"
    )


@pytest.mark.parametrize("family", ["hermes", "qwen3-coder"])
def test_a_family_with_samples_accepts_most_of_them(family: str) -> None:
    """Guard against a vacuous pass: the large families are mostly accepted, not mostly listed."""
    if family not in compiled_families():
        pytest.skip(f"{family} does not compile: {grammar.coverage()[family].reason}")
    accepted, counted = completeness_by_family()[family]
    assert counted and accepted >= counted * 0.8
