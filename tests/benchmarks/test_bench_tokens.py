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
