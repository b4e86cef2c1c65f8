"""Smoke test for benchmarks/bench_grammar.py: a tiny run prints its table. No timing assertions."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

BENCH_DIR = Path(__file__).resolve().parents[2] / "benchmarks"
if str(BENCH_DIR) not in sys.path:
    sys.path.insert(0, str(BENCH_DIR))

import bench_grammar  # noqa: E402


def test_tiny_run_prints_a_table(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out_file = tmp_path / "rows.json"
    assert (
        bench_grammar.main(["--families", "qwen3", "--steps", "5", "--reps", "1", "--json", str(out_file)])
        == 0
    )
    out = capsys.readouterr().out
    assert "qwen3" in out and "llg mask µs/token" in out
    rows = bench_grammar.json.loads(out_file.read_text())
    assert rows[0]["family"] == "qwen3" and rows[0]["llg_compile_ms"] > 0
