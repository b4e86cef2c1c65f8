"""Smoke test for benchmarks/bench_tokens.py: it imports, trains its tokenizers, and a tiny run is exact
(streamed text == decode, streamed message == parse of the whole). No timing assertions."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytest.importorskip("tokenizers")

BENCH_DIR = Path(__file__).resolve().parents[2] / "benchmarks"
if str(BENCH_DIR) not in sys.path:
    sys.path.insert(0, str(BENCH_DIR))

import bench_tokens  # noqa: E402


def test_tiny_run_is_exact_and_renders(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bench_tokens, "NAIVE_FULL_LIMIT", 100)
    monkeypatch.setattr(bench_tokens, "NAIVE_SAMPLES", 3)
    monkeypatch.setattr(bench_tokens, "corpus_and_ids", _small_corpus_and_ids)
    rows = bench_tokens.run(["byte_level", "sp"], [60, 300], reps=1, log=lambda _: None)
    assert [(r.kind, r.tokens) for r in rows] == [
        ("byte_level", 60),
        ("byte_level", 300),
        ("sp", 60),
        ("sp", 300),
    ]
    assert all(r.exact and r.same_message for r in rows)
    assert [r.naive_sampled for r in rows] == [False, True, False, True]
    table = bench_tokens.render(rows, [60, 300])
    assert "naive/ours" in table and "streamed text == decode()" in table
    assert bench_tokens._tokens("10k") == 10_000 and bench_tokens._tokens("1500") == 1500


def _small_corpus_and_ids(kind: str, max_tokens: int) -> tuple[object, list[int]]:
    corpus = [bench_tokens.generate_chatml_output(4000, seed=s) for s in range(2)]
    tok = bench_tokens.build_tokenizer(kind, corpus)
    ids = bench_tokens.encode(tok, bench_tokens.generate_chatml_output(8000, seed=5))
    assert len(ids) >= max_tokens
    return tok, ids


def _small_tokenizer(kind: str) -> object:
    return bench_tokens.build_tokenizer(
        kind, [bench_tokens.generate_chatml_output(4000, seed=s) for s in range(2)]
    )


@pytest.fixture
def small_tokenizers(monkeypatch: pytest.MonkeyPatch) -> None:
    why_not = bench_tokens.reference_available()
    if why_not is not None:
        pytest.skip(why_not)
    monkeypatch.setattr(bench_tokens, "trained_tokenizer", _small_tokenizer)


@pytest.mark.parametrize("kind", bench_tokens.KINDS)
def test_spelled_output_spells_control_tokens_with_ordinary_ids(kind: str) -> None:
    from response_templates.hf import control_token_ids

    tok = _small_tokenizer(kind)
    controls = control_token_ids(tok)
    extra = {"<unk>"} if kind == "sp" else set()
    assert set(controls.values()) == {*bench_tokens.SPECIAL_TOKENS, *bench_tokens.MARKERS, *extra}
    for marker in ("<|im_end|>", "</think>", "<tool_call>", "<|im_start|>"):
        ids = bench_tokens.spell(tok, marker)
        assert len(ids) == len(marker) and not set(ids) & set(controls)
        assert bench_tokens.decode(tok, ids) == marker
    ids, spelled = bench_tokens.spelled_output(tok, 6 * 1024)
    text = bench_tokens.decode(tok, ids)
    assert spelled == {
        "reasoning_content": {"<|im_end|>": 2, "</think>": 2, "<tool_call>": 0},
        "content": {"<|im_end|>": 1, "</think>": 0, "<tool_call>": 1},
    }
    assert text.count("<|im_end|>") == 4 and text.count("</think>") == 3  # the real ones too
    assert [controls[i] for i in ids if i in controls].count("<|im_end|>") == 1  # only the last is an id
    assert "\ufdd2" not in text and 5000 < len(text) < 7500


def test_reference_comparison_same_messages_and_renders(small_tokenizers: None) -> None:
    rows = bench_tokens.run_reference(["byte_level", "sp"], [2048, 4096], reps=1, log=lambda _: None)
    assert [(r.kind, r.size) for r in rows] == [
        ("byte_level", 2048),
        ("byte_level", 4096),
        ("sp", 2048),
        ("sp", 4096),
    ]
    for r in rows:
        assert r.same_controls and r.same_message and r.spelled_kept, r.difference
        assert r.spelled >= 4 and r.tokens > 300
        assert min(r.stream_ours, r.stream_ref, r.whole_ours, r.whole_ref) > 0
        assert "<think>" in r.controls.values()  # a marker of the chat template, not only special tokens
    table = bench_tokens.render_reference(rows)
    assert "streamed 5.25" in table and "whole 5.25" in table
    statuses = dict((text.split(":")[0], status) for status, text in bench_tokens.reference_targets(rows))
    assert statuses["byte_level"] == statuses["sp"] == "PASS"  # the correctness line (timing lines vary)
    assert "byte_level fed one id at a time" in statuses and "sp whole" in statuses


def test_reading_spelled_tokens_as_text_is_caught(small_tokenizers: None) -> None:
    """The check can fail: read as text (no control tokens), the spelled </think> ends the reasoning."""
    from response_templates.hf import parse_response

    tok = _small_tokenizer("byte_level")
    ids, spelled = bench_tokens.spelled_output(tok, 2048)
    prompt = bench_tokens.encode(tok, bench_tokens.CHATML_PREFIX)
    as_ids = parse_response(tok, ids, prefix=prompt, template=bench_tokens.CHATML_TEMPLATE)
    as_text = parse_response(
        tok, ids, prefix=prompt, template=bench_tokens.CHATML_TEMPLATE, control_tokens=(), errors="keep"
    )
    assert bench_tokens._spelled_kept(as_ids, spelled)
    assert as_text["reasoning_content"] in as_ids["reasoning_content"]  # cut at the first spelled </think>
    assert not bench_tokens._spelled_kept(as_text, spelled)


def test_main_prints_both_tables(small_tokenizers: None, capsys: pytest.CaptureFixture[str]) -> None:
    bench_tokens.main(["--no-tokens", "--kinds", "byte_level", "--ref-sizes", "2kb,3kb", "--ref-reps", "1"])
    out = capsys.readouterr().out
    assert "ours against transformers" in out and "ours/5.25" in out
    assert "PASS  byte_level: same control tokens" in out
