"""Smoke test for benchmarks/bench_revisions.py: it exports a revision, runs both code bases and prints a
row per workload with a ratio. No timing assertions."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

BENCH_DIR = Path(__file__).resolve().parents[2] / "benchmarks"
if str(BENCH_DIR) not in sys.path:
    sys.path.insert(0, str(BENCH_DIR))

import bench_revisions  # noqa: E402


def _has_git_history() -> bool:
    if shutil.which("git") is None:
        return False
    done = subprocess.run(
        ["git", "-C", str(BENCH_DIR), "rev-parse", "HEAD"], capture_output=True, text=True, check=False
    )
    return done.returncode == 0


@pytest.mark.skipif(not _has_git_history(), reason="needs a git checkout")
def test_compares_the_working_tree_with_head(capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        bench_revisions.main(["--rev", "HEAD", "--rounds", "1", "--sizes", "1k", "--families", "gpt-oss"])
        == 0
    )
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if line.startswith(("qwen3-chatml/", "gpt-oss/"))]
    assert [row.split()[0] for row in rows] == [
        "qwen3-chatml/1KB",
        "qwen3-chatml/1KB",
        "gpt-oss/1KB",
        "gpt-oss/1KB",
    ]
    assert all(len(row.split()) == 5 for row in rows)  # workload, kind, old, new, ratio
    assert "median new/old" in out
