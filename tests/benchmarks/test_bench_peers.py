"""Smoke test for benchmarks/bench_peers.py: the generated outputs, the message check and a tiny run.
No timing assertions."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

BENCH_DIR = Path(__file__).resolve().parents[2] / "benchmarks"
if str(BENCH_DIR) not in sys.path:
    sys.path.insert(0, str(BENCH_DIR))

import bench_peers  # noqa: E402


@pytest.mark.parametrize("family", bench_peers.FAMILIES)
@pytest.mark.parametrize("shape", ["2KB", "200KB args"])
def test_ours_reads_the_generated_output_right(family: str, shape: str) -> None:
    reasoning, calls, answer = bench_peers.make_case(shape)
    text = bench_peers.render(family, reasoning, calls, answer)
    if shape == "200KB args":
        assert len(calls[0][1]["code"]) >= 200 * 1024
    per_chunk, message = bench_peers.ours(family).run(bench_peers.chunked(text, 4))
    assert per_chunk > 0
    assert message == bench_peers.expected(reasoning, calls, answer)


def test_a_wrong_message_is_told_apart() -> None:
    reasoning, calls, answer = bench_peers.make_case("2KB")
    want = bench_peers.expected(reasoning, calls, answer)
    wrong = bench_peers.normalize({"reasoning_content": reasoning, "content": answer[:-1], "tool_calls": []})
    assert wrong != want


def test_js_tiktoken_ranks_become_a_tiktoken_file(tmp_path: Path) -> None:
    ranks = tmp_path / "o200k_base.js"
    ranks.write_text(
        'export default {"pat_str":"x","special_tokens":{},"bpe_ranks":"! 0 IQ== Ig==\\nx 5 Iw=="};'
    )
    out = bench_peers.tiktoken_from_js(ranks, tmp_path)
    assert out.read_text().splitlines() == ["IQ== 0", "Ig== 1", "Iw== 5"]


def test_tiny_run_prints_a_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert bench_peers.main(["--shapes", "2KB", "--families", "qwen3"]) == 0
    out = capsys.readouterr().out
    assert "qwen3" in out and "ours µs" in out
