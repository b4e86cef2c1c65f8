"""Smoke test for benchmarks/bench_tool_streaming.py: its generator and both of our contenders, tiny
and untimed."""

from __future__ import annotations

import json
import sys
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parents[2] / "benchmarks"
if str(BENCH_DIR) not in sys.path:
    sys.path.insert(0, str(BENCH_DIR))

import bench_tool_streaming as bench  # noqa: E402


def test_benchmark_script_runs_and_checks_itself() -> None:
    """benchmarks/bench_tool_streaming.py: its generator and both of our contenders, tiny and untimed."""
    body, arguments = bench.make_call(3000)
    assert 2500 < len(body) < 3500 and json.loads(body)["arguments"] == arguments
    assert bench.run_scanner(body, arguments, check=True).correct
    assert bench.run_pipeline(body, arguments, check=True).correct
