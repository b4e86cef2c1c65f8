"""Smoke test for benchmarks/bench_hostile.py: one tiny run on two templates, with and without the
reference, prints its table. No timing assertions."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

BENCH_DIR = Path(__file__).resolve().parents[2] / "benchmarks"
if str(BENCH_DIR) not in sys.path:
    sys.path.insert(0, str(BENCH_DIR))

import bench_hostile  # noqa: E402


def test_tiny_run_prints_a_row_per_input(capsys: pytest.CaptureFixture[str]) -> None:
    rows = bench_hostile.main(
        ["--templates", "qwen3,mistral-v3", "--size", "2k", "--worst", "1", "--no-reference"]
    )
    assert [r.template for r in rows] == ["qwen3", "mistral-v3"]
    for row in rows:
        assert row.whole is not None and row.one is not None and row.sixteen is not None
        assert row.peak_kb is not None and row.peak_kb > 0
        assert row.outcome
    out = capsys.readouterr().out
    assert "16-char s/MB" in out and "qwen3" in out


def test_reference_column_runs_or_says_why() -> None:
    pytest.importorskip("transformers")
    whole, sixteen = bench_hostile.reference(
        {"start_anchor": "<A>", "fields": {"content": {}}}, "<A>", "hello " * 50, timeout=60
    )
    assert whole != "timeout" and sixteen != "timeout"
    float(whole)  # the reference loads a base template: a figure, not an error name
