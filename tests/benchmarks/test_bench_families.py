"""Smoke test for benchmarks/bench_families.py: its outputs parse the same whole and streamed, with the
library templates, as the reference does. No timing assertions."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

BENCH_DIR = Path(__file__).resolve().parents[2] / "benchmarks"
if str(BENCH_DIR) not in sys.path:
    sys.path.insert(0, str(BENCH_DIR))

import _common  # noqa: E402
import bench_families  # noqa: E402


@pytest.mark.parametrize("name", list(bench_families.FAMILIES))
def test_generated_output_streams_like_whole_text(name: str) -> None:
    family = bench_families.FAMILIES[name]
    text = bench_families.generate(family, 3000)
    assert text == bench_families.generate(family, 3000)
    tools = bench_families._tools()
    ours = bench_families.ours(family, tools)
    assert ours.parse is not None and ours.make is not None
    whole = ours.parse(text)
    assert whole["reasoning_content"] and whole["content"] and len(whole["tool_calls"]) == 2
    assert whole["tool_calls"][0]["function"]["arguments"]["days"] == 1  # typed by tools=
    run = _common.feed_stream(ours.make, _common.chunked(text, 4))
    assert _common.first_difference(run.message, whole) is None
    ref = bench_families.reference(family, tools)
    if ref.parse is None:
        pytest.skip(ref.error or "reference unavailable")
    assert _common.first_difference(ref.parse(text), whole) is None


def test_tiny_run_prints_a_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert bench_families.main(["--sizes", "1k", "--families", "gpt-oss", "--no-reference"]) == 0
    out = capsys.readouterr().out
    assert "gpt-oss" in out and "µs per chunk" in out


def test_degenerate_table_runs(capsys: pytest.CaptureFixture[str]) -> None:
    """``--degenerate`` on one template at two small sizes: a row with both sizes and the growth column."""
    argv = ["--degenerate", "--templates", "qwen3-coder", "--sizes", "2k,4k", "--chunk", "16"]
    assert bench_families.main(argv) == 0
    out = capsys.readouterr().out
    assert "qwen3-coder" in out and "4KB/2KB" in out and "µs/KB" in out


def test_degenerate_measure_times_the_costliest_output() -> None:
    row = bench_families.measure_degenerate("inkling", [1024, 2048], chunk=8, budget=10.0)
    labels = {o.label for o in bench_families.degenerate_module().degenerate_outputs("inkling")}
    assert row.whole_label in labels and row.stream_label in labels
    assert set(row.whole) == set(row.stream) == {1024, 2048}
    assert all(outcome == "ok" for _, outcome in [*row.whole.values(), *row.stream.values()])


def test_stop_token_table_runs(capsys: pytest.CaptureFixture[str]) -> None:
    """``--degenerate --stop-tokens`` on one template at two small sizes: a row and the largest ratios."""
    argv = ["--degenerate", "--stop-tokens", "--templates", "gigachat3", "--sizes", "1k,4k", "--chunk", "64"]
    assert bench_families.main(argv) == 0
    out = capsys.readouterr().out
    assert "gigachat3" in out and "4KB/1KB" in out and "largest 4KB/1KB time ratios" in out
