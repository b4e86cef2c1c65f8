"""Smoke test for benchmarks/bench_streaming.py: the module imports, its generator works, and one tiny
ours-only measurement runs and agrees with the reference. No timing assertions."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

BENCH_DIR = Path(__file__).resolve().parents[2] / "benchmarks"
if str(BENCH_DIR) not in sys.path:
    sys.path.insert(0, str(BENCH_DIR))

import _common  # noqa: E402
import bench_streaming  # noqa: E402


def test_generator_is_deterministic_and_well_formed():
    text = _common.generate_chatml_output(1500, seed=3)
    assert text == _common.generate_chatml_output(1500, seed=3)
    assert text != _common.generate_chatml_output(1500, seed=4)
    assert 1000 <= len(text) <= 2000
    assert text.startswith("<think>\n") and text.endswith("<|im_end|>")
    assert text.count("<think>") == text.count("</think>") == 1
    assert text.count("<tool_call>") == text.count("</tool_call>") >= 2
    assert "".join(_common.chunked(text, 4)) == text


def test_tiny_measurement_matches_reference():
    ours, why = bench_streaming.load_ours()
    if ours is None:
        pytest.skip(why)
    ref, why = bench_streaming.load_reference()
    if ref is None:
        pytest.skip(why)
    text = _common.generate_chatml_output(600, seed=1)

    cell, streamed = bench_streaming.measure_stream(ours, _common.chunked(text, 4), budget=None)
    assert cell.error is None, cell.error
    assert cell.value is not None and not cell.extrapolated

    expected = ref.parse(text)
    assert _common.first_difference(ours.parse(text), expected) is None
    assert _common.first_difference(streamed, expected) is None
