"""Per-chunk and whole-text cost of this working tree against an earlier revision, in one run.

A change that should not touch speed (a restructuring, say) is checked with this script: it exports the
given git revision into a temporary folder, then measures both code bases on the same outputs, in
alternating subprocesses (old, new, old, new, ...) so that machine noise hits both alike, and prints the
best time of each with the ratio new/old.

Workloads: the streaming ChatML output of ``bench_streaming.py`` (Qwen3 template) and the family outputs
of ``bench_families.py`` (gpt-oss, Qwen3-Coder, DeepSeek R1 and V3.2, Kimi-K2), each streamed through
``ResponseParser`` in 4-character chunks (µs per chunk) and parsed whole by ``parse_response`` (ms). Only
the public API is used, so any two revisions can be compared.

Usage::

    python benchmarks/bench_revisions.py                  # against HEAD, 2 KB and 20 KB, 5 rounds
    python benchmarks/bench_revisions.py --rev 871ea13 --sizes 2k,200k --rounds 7
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Sequence
from io import BytesIO
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CHUNK = 4


def _worker(src: str, sizes: list[int], families: list[str]) -> dict[str, float]:
    """Run in a subprocess whose ``sys.path`` starts with ``src``: time every workload once (best of 3)."""
    sys.path.insert(0, src)
    sys.path.insert(1, str(HERE))
    import response_templates as rt
    from _common import CHATML_PREFIX, CHATML_TEMPLATE, generate_chatml_output
    from bench_families import FAMILIES, generate

    work: list[tuple[str, Any, str, str]] = []
    for size in sizes:
        work.append(
            (f"qwen3-chatml/{size // 1024}KB", CHATML_TEMPLATE, CHATML_PREFIX, generate_chatml_output(size))
        )
        for name in families:
            family = FAMILIES[name]
            template = rt.templates.get(family.name)
            work.append((f"{name}/{size // 1024}KB", template, family.prefix, generate(family, size)))
    out: dict[str, float] = {}
    for label, template, prefix, text in work:
        compiled = rt.load_template(template)
        chunks = [text[i : i + CHUNK] for i in range(0, len(text), CHUNK)]
        best_stream = best_whole = float("inf")
        for _ in range(3):
            start = time.perf_counter()
            parser = rt.ResponseParser(compiled, prefix=prefix)
            for chunk in chunks:
                parser.feed(chunk)
            parser.finalize()
            best_stream = min(best_stream, (time.perf_counter() - start) / len(chunks))
            start = time.perf_counter()
            rt.parse_response(text, compiled, prefix=prefix)
            best_whole = min(best_whole, time.perf_counter() - start)
        out[f"{label} stream"] = best_stream * 1e6
        out[f"{label} whole"] = best_whole * 1e3
    return out


def _export(rev: str, into: str) -> str:
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", rev, "src"], check=True, capture_output=True
    ).stdout
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return os.path.join(into, "src")


def _run(src: str, sizes: list[int], families: list[str]) -> dict[str, float]:
    code = (
        "import json, sys; sys.path.insert(0, sys.argv[1]); import bench_revisions as b; "
        "print(json.dumps(b._worker(sys.argv[2], json.loads(sys.argv[3]), json.loads(sys.argv[4]))))"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run(
        [sys.executable, "-c", code, str(HERE), src, json.dumps(sizes), json.dumps(families)],
        check=True,
        capture_output=True,
        text=True,
        env=env,
    )
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _size(text: str) -> int:
    text = text.strip().lower()
    return int(float(text[:-1]) * 1024) if text.endswith("k") else int(text)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rev", default="HEAD", help="the revision to compare against (default HEAD)")
    ap.add_argument("--sizes", default="2k,20k", help="output sizes, e.g. 2k,20k,200k")
    ap.add_argument("--families", default="gpt-oss,qwen3-coder,deepseek-r1,deepseek-v3.2,kimi-k2")
    ap.add_argument("--rounds", type=int, default=5, help="alternating rounds per code base")
    args = ap.parse_args(argv)
    sizes = [_size(s) for s in args.sizes.split(",") if s]
    families = [f for f in args.families.split(",") if f]
    with tempfile.TemporaryDirectory() as tmp:
        old_src = _export(args.rev, tmp)
        new_src = str(ROOT / "src")
        best: dict[str, dict[str, float]] = {"old": {}, "new": {}}
        for _ in range(args.rounds):
            for side, src in (("old", old_src), ("new", new_src)):
                for key, value in _run(src, sizes, families).items():
                    best[side][key] = min(best[side].get(key, float("inf")), value)
    width = max(len(k) for k in best["new"])
    print(
        f"new = working tree, old = {args.rev}; best of {args.rounds} rounds x 3; stream: µs/chunk, whole: ms"
    )
    print(f"{'workload':<{width}}  {'old':>9}  {'new':>9}  {'new/old':>7}")
    ratios = []
    for key in best["new"]:
        old, new = best["old"].get(key), best["new"][key]
        ratio = new / old if old else float("nan")
        ratios.append(ratio)
        print(f"{key:<{width}}  {old or 0:9.3f}  {new:9.3f}  {ratio:7.2f}")
    ratios.sort()
    print(f"median new/old: {ratios[len(ratios) // 2]:.2f}   worst: {ratios[-1]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
