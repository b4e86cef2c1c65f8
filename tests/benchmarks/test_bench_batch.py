"""Smoke test for benchmarks/bench_batch.py: its records parse, and a tiny run prints its table. No timing
assertions."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest

BENCH_DIR = Path(__file__).resolve().parents[2] / "benchmarks"
if str(BENCH_DIR) not in sys.path:
    sys.path.insert(0, str(BENCH_DIR))

import bench_batch  # noqa: E402
import response_templates as rt  # noqa: E402


def test_generated_records_are_qwen3_style_and_parse() -> None:
    rng = random.Random(0)
    records = [bench_batch.make_record(i, rng) for i in range(200)]
    sizes = [len(r["prompt"]) + len(r["output"]) for r in records]
    assert 1500 < sum(sizes) / len(sizes) < 2600  # about 2 KB each
    results = list(rt.parse_batch(records, model=bench_batch.MODEL, tools=bench_batch.TOOLS))
    assert all(r.ok for r in results)
    messages = [r.unwrap() for r in results]
    assert all(m["reasoning_content"] and m["content"] for m in messages)
    assert any(len(m.get("tool_calls", [])) == 2 for m in messages)
    assert any("tool_calls" not in m for m in messages)


def test_tiny_run_prints_a_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert bench_batch.main(["--records", "60", "--only", "loop,batch-1,batch-N,cli-1,cli-N,cli-apart"]) == 0
    out = capsys.readouterr().out
    assert "records/s" in out and "rt.parse_batch, workers=2" in out and "CLI parse --jsonl -j 2" in out
    assert "2 CLI -j 1 runs at once, 1/2 each" in out  # the machine's ceiling for two workers
    assert "CLI -j 2 against 2 independent -j 1 runs at once" in out and "CLI -j 1, one core" in out
    assert "!" not in out  # every way parsed every record
