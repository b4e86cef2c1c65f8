"""Batch parsing of recorded generations: records/s and peak memory, every way the library offers.

Run: python benchmarks/bench_batch.py [--records N] [--workers N] [--only NAME,...] [--no-reference]

Generates N Qwen3-style records (default 100,000, about 2 KB each: a prompt, then reasoning, content and
0-2 tool calls in the output), writes them as JSON lines and parses them end to end (read, parse, write
one JSON line per record) with:

* ``parse_response`` in a loop (what a user writes by hand today), and the reference implementation
  (transformers 5.25's ``parse_response``) in the same loop, for the ratio;
* ``rt.parse_batch`` with ``workers=1`` and ``workers=N``;
* the command line, ``response-templates parse --jsonl ... -j 1`` and ``-j N`` (process start included),
  and N independent ``-j 1`` runs at once on 1/N of the file each: the machine's ceiling for N processes;
* Hugging Face ``datasets`` (``Dataset.map(ColumnParser, batched=True, num_proc=1|N)``) and Ray Data
  (``map_batches(ColumnParser, concurrency=N)`` on a local ``ray.init(num_cpus=N)``), when installed.

Besides records/s (wall clock), each row gives records per CPU second of all its processes: on a machine
shared with other work, wall-clock rates fall with the load while the CPU figure mostly holds, and the
records/s one core gives is about that figure. Each way runs in its own process, so its peak memory (max RSS of the main process, and the largest of
its worker processes) is its own. Times are wall-clock seconds of the parsing run; the engines' start-up
(``ray.init``, loading the JSON into Arrow) is reported apart.
"""

from __future__ import annotations

import argparse
import atexit
import itertools
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common

MODEL = "Qwen/Qwen3-8B"
SYSTEM = "You are a helpful assistant. Answer briefly; call tools when the question needs live data."
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather for a city.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
                "required": ["city"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "search",
            "description": "Search the web.",
            "parameters": {"type": "object", "properties": {"query": {"type": "string"}}},
        },
    },
]
WORDS = [
    "the",
    "model",
    "should",
    "check",
    "weather",
    "first",
    "then",
    "answer",
    "user",
    "question",
    "about",
    "city",
    "plan",
    "travel",
    "data",
    "result",
    "because",
    "tool",
    "call",
    "needs",
    "argument",
    "value",
    "maybe",
    "consider",
    "whether",
    "days",
    "forecast",
]
CITIES = ["Paris", "Oslo", "Lima", "Tokyo", "Nairobi", "Quito", "Hanoi", "Perth"]


def _words(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def make_record(i: int, rng: random.Random) -> dict[str, Any]:
    """One Qwen3-style record of about 2 KB: id, prompt, output (reasoning, content, tool calls)."""
    question = f"{_words(rng, 12)} {rng.choice(CITIES)}?"
    prompt = (
        f"<|im_start|>system\n{SYSTEM}<|im_end|>\n<|im_start|>user\n{question}<|im_end|>\n"
        "<|im_start|>assistant\n"
    )
    reasoning = ". ".join(_words(rng, 15) for _ in range(rng.randint(8, 14)))
    content = ". ".join(_words(rng, 12) for _ in range(rng.randint(2, 5)))
    calls = ""
    for _ in range(rng.choice((0, 1, 1, 2))):
        if rng.random() < 0.7:
            args = {"city": rng.choice(CITIES), "days": rng.randint(1, 7)}
            name = "get_weather"
        else:
            args = {"query": _words(rng, 5)}
            name = "search"
        calls += f"\n<tool_call>\n{json.dumps({'name': name, 'arguments': args})}\n</tool_call>"
    output = f"<think>\n{reasoning}.\n</think>\n\n{content}.{calls}<|im_end|>"
    return {"id": f"r{i:07d}", "prompt": prompt, "output": output}


def write_records(path: Path, n: int, seed: int = 0) -> int:
    """Write ``n`` records as JSON lines; the file's size in bytes."""
    rng = random.Random(seed)
    with path.open("w", encoding="utf-8") as f:
        for i in range(n):
            f.write(json.dumps(make_record(i, rng), ensure_ascii=False) + "\n")
    return path.stat().st_size


def _lines(path: str) -> Iterator[dict[str, Any]]:
    with open(path, "rb") as f:
        for line in f:
            yield json.loads(line)


# ---------------------------------------------------------------------------------- the ways (children)


def run_loop(src: str, out: str, workers: int) -> int:
    import response_templates as rt

    template = rt.templates.for_model(MODEL)
    n = 0
    with open(out, "w", encoding="utf-8") as f:
        for record in _lines(src):
            try:
                message: Any = rt.parse_response(record["output"], template, prefix=record["prompt"])
                row: dict[str, Any] = {"id": record["id"], "message": message}
            except rt.ParseError as exc:
                row = {"id": record["id"], "error": str(exc)}
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
            n += 1
    return n


def run_reference(src: str, out: str, workers: int) -> int:
    from transformers.utils.chat_parsing import parse_response
    from transformers.utils.chat_parsing.response_templates import load_response_template

    import response_templates as rt

    template = load_response_template(rt.templates.get("qwen3").to_dict())
    n = 0
    with open(out, "w", encoding="utf-8") as f:
        for record in _lines(src):
            try:
                row: dict[str, Any] = {
                    "id": record["id"],
                    "message": parse_response(record["output"], template, prefix=record["prompt"]),
                }
            except ValueError as exc:
                row = {"id": record["id"], "error": str(exc)}
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
            n += 1
    return n


def run_batch(src: str, out: str, workers: int) -> int:
    import response_templates as rt

    n = 0
    with open(out, "w", encoding="utf-8") as f:
        for result in rt.parse_batch(_lines(src), model=MODEL, workers=workers):
            f.write(json.dumps(result.to_dict(), ensure_ascii=False) + "\n")
            n += 1
    return n


def _cli(src: str, out: str, workers: int) -> list[str]:
    """The command line of ``parse --jsonl src -o out -j workers``."""
    command = [sys.executable, "-m", "response_templates", "parse", "--jsonl", src, "-o", out]
    return [*command, "--model", MODEL, "-j", str(workers)]


def _count_lines(path: str) -> int:
    with open(path, "rb") as f:
        return sum(1 for _ in f)


def run_cli(src: str, out: str, workers: int) -> int:
    subprocess.run(_cli(src, out, workers), check=True, stderr=subprocess.DEVNULL)
    return _count_lines(out)


def run_cli_apart(src: str, out: str, workers: int) -> int:
    """The machine's own ceiling for ``workers`` processes: that many independent ``-j 1`` runs at once,
    each on its share of the lines (the split is start-up, not timed)."""
    share = -(-_count_lines(src) // workers)
    parts = [f"{out}.in{k}" for k in range(workers)]
    with open(src, "rb") as f:
        for part in parts:
            with open(part, "wb") as g:
                g.writelines(itertools.islice(f, share))
    _report_setup()
    runs = [subprocess.Popen(_cli(part, f"{part}.out", 1), stderr=subprocess.DEVNULL) for part in parts]
    if any(run.wait() for run in runs):
        raise RuntimeError("a -j 1 run failed")
    return sum(_count_lines(f"{part}.out") for part in parts)


def run_datasets(src: str, out: str, workers: int) -> int:
    import datasets

    import response_templates as rt

    datasets.disable_progress_bars()
    cache = tempfile.mkdtemp(prefix="bench-batch-ds-")
    ds = datasets.Dataset.from_json(src, cache_dir=cache)
    _report_setup()
    parsed = ds.map(
        rt.batch.ColumnParser(model=MODEL),
        batched=True,
        batch_size=512,
        num_proc=workers if workers > 1 else None,
        remove_columns=["prompt", "output"],
        load_from_cache_file=False,
    )
    parsed.to_json(out)
    return len(parsed)


def run_ray(src: str, out: str, workers: int) -> int:
    os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # no usage report over the network
    import ray

    import response_templates as rt

    # One more CPU slot than parser actors: with every slot held by an actor, the read and write tasks
    # would wait for ever.
    ray.init(num_cpus=workers + 1, include_dashboard=False, log_to_driver=False, configure_logging=False)
    ray.data.DataContext.get_current().enable_progress_bars = False
    _report_setup()
    ds = ray.data.read_json(src)
    parsed = ds.map_batches(
        rt.batch.ColumnParser,
        fn_constructor_kwargs={"model": MODEL, "keep_columns": ["id"]},
        batch_size=512,
        compute=ray.data.ActorPoolStrategy(size=workers),
        num_cpus=1,
        batch_format="pyarrow",
    )
    parsed.write_parquet(out)
    atexit.register(ray.shutdown)  # after the clock stops
    return sum(pq_rows(p) for p in Path(out).glob("*.parquet"))


def pq_rows(path: Path) -> int:
    import pyarrow.parquet as pq

    return int(pq.ParquetFile(path).metadata.num_rows)


WAYS: dict[str, tuple[str, Callable[[str, str, int], int], bool]] = {
    # name: (label, function, uses workers)
    "loop": ("parse_response loop", run_loop, False),
    "reference": ("transformers 5.25 parse_response loop", run_reference, False),
    "batch-1": ("rt.parse_batch, workers=1", run_batch, False),
    "batch-N": ("rt.parse_batch, workers={n}", run_batch, True),
    "cli-1": ("CLI parse --jsonl -j 1", run_cli, False),
    "cli-N": ("CLI parse --jsonl -j {n}", run_cli, True),
    "cli-apart": ("{n} CLI -j 1 runs at once, 1/{n} each", run_cli_apart, True),
    "datasets-1": ("datasets map(batched), num_proc=1", run_datasets, False),
    "datasets-N": ("datasets map(batched), num_proc={n}", run_datasets, True),
    "ray-N": ("Ray Data map_batches, concurrency={n}", run_ray, True),
}
NEEDS = {"reference": "transformers", "datasets-1": "datasets", "datasets-N": "datasets", "ray-N": "ray"}


_SETUP: dict[str, float] = {}


def _report_setup() -> None:
    """Mark the end of an engine's start-up (imports, init, loading): it is reported, not timed."""
    _SETUP["seconds"] = time.perf_counter() - _SETUP["start"]
    _SETUP["cpu"] = _cpu()


def _cpu() -> float:
    """CPU seconds (user + system) of this process and of its children that have ended."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def child(way: str, src: str, out: str, workers: int) -> None:
    import response_templates  # noqa: F401 -- imported before the clock starts, for every way

    function = WAYS[way][1]
    n_workers = workers if WAYS[way][2] else 1
    cpu_before = _cpu()
    started = _SETUP["start"] = time.perf_counter()
    n = function(src, out, n_workers)
    seconds = time.perf_counter() - started
    cpu = _cpu() - _SETUP.get("cpu", cpu_before)
    setup = _SETUP.get("seconds")
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    result = {
        "records": n,
        "seconds": seconds - (setup or 0.0),
        "cpu": cpu,
        "rss_kb": own,
        "workers_rss_kb": kids,
    }
    if setup is not None:
        result["setup"] = setup
    print(json.dumps(result), flush=True)


# ---------------------------------------------------------------------------------------------- main


def child_env() -> dict[str, str]:
    """The environment of the measured runs: bytecode caches kept, as on a user's machine (a sandbox that
    sets PYTHONDONTWRITEBYTECODE would have every CLI start compile the package again)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    # Write the caches once, before any run is timed: the first run would pay for it otherwise.
    warm = "import response_templates.cli, response_templates.batch, response_templates.templates"
    subprocess.run([sys.executable, "-c", warm], env=env, check=True)
    return env


def measure(way: str, src: Path, tmp: Path, workers: int, env: dict[str, str]) -> dict[str, Any]:
    out = tmp / f"out-{way}"
    command = [sys.executable, __file__, "--child", way, "--src", str(src), "--out", str(out)]
    proc = subprocess.run(
        [*command, "--workers", str(workers)], capture_output=True, text=True, check=False, env=env
    )
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or ["failed"])[-1]
        return {"error": tail[:120]}
    result: dict[str, Any] = {}
    for line in proc.stdout.splitlines():
        if line.startswith("{"):
            result.update(json.loads(line))
    return result


def available(way: str) -> bool:
    module = NEEDS.get(way)
    if module is None:
        return True
    import importlib.util

    return importlib.util.find_spec(module) is not None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--only", help="comma-separated ways: " + ", ".join(WAYS))
    parser.add_argument("--no-reference", action="store_true")
    parser.add_argument("--child", choices=list(WAYS), help=argparse.SUPPRESS)
    parser.add_argument("--src", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(args.child, args.src, args.out, args.workers)
        return 0

    ways = args.only.split(",") if args.only else list(WAYS)
    unknown = [w for w in ways if w not in WAYS]
    if unknown:
        parser.error(f"unknown ways {unknown}")
    if args.no_reference:
        ways = [w for w in ways if w != "reference"]
    with tempfile.TemporaryDirectory(prefix="bench-batch-") as tmp_name:
        tmp = Path(tmp_name)
        src = tmp / "records.jsonl"
        size = write_records(src, args.records)
        print(
            f"{args.records:,} records, {size / args.records / 1024:.2f} KB each, {size / 2**20:.0f} MB; "
            f"{_common.reference_label()}; {os.cpu_count()} cores\n"
        )
        rows = []
        baseline: float | None = None
        reference: float | None = None
        rates: dict[str, tuple[float, float | None]] = {}  # way: (records/s, records per CPU-s)
        env = child_env()
        for way in ways:
            label = WAYS[way][0].format(n=args.workers)
            if not available(way):
                rows.append([label, "-", "-", "-", "-", "-", f"{NEEDS[way]} not installed"])
                continue
            r = measure(way, src, tmp, args.workers, env)
            if "error" in r:
                rows.append([label, "-", "-", "-", "-", "-", r["error"]])
                continue
            rate = r["records"] / r["seconds"]
            if way == "loop":
                baseline = rate
            if way == "reference":
                reference = rate
            note = f"+ {r['setup']:.1f} s start-up (imports, init, loading)" if "setup" in r else ""
            if r["records"] != args.records:
                note += f" ({r['records']} records!)"
            # CPU time counts the processes that ended (pool workers, the CLI); Ray's actors are not ours.
            cpu_rate = r["records"] / r["cpu"] if r.get("cpu") and not way.startswith("ray") else None
            rates[way] = (rate, cpu_rate)
            per_cpu = f"{cpu_rate:,.0f}" if cpu_rate else "-"
            rows.append(
                [
                    label,
                    f"{r['seconds']:.2f}",
                    f"{rate:,.0f}",
                    per_cpu,
                    f"{r['rss_kb'] / 1024:.0f}",
                    f"{r['workers_rss_kb'] / 1024:.0f}" if r["workers_rss_kb"] else "-",
                    note,
                ]
            )
        headers = [
            "way",
            "seconds",
            "records/s",
            "per CPU-s",
            "peak MB (main)",
            "peak MB (largest child)",
            "note",
        ]
        print(_common.format_table(headers, rows, align="lrrrrrl"))
        print(
            "\nrecords/s: wall clock; per CPU-s: records per CPU second of all the run's processes (user +"
            " system), which a machine shared with other work changes less"
        )
        if baseline and reference:
            print(f"\nparse_response loop / reference: {baseline / reference:.2f}x")
        print(target_lines(rates, args.workers))
    return 0


#: The goal of issue 13: records/s per core, end to end (the command line, reading and writing included).
TARGET_PER_CORE = 9_000


def target_lines(rates: dict[str, tuple[float, float | None]], workers: int) -> str:
    """The issue's figures: records/s per core end to end, and how the rate scales with the workers."""
    lines = [f"\ntarget: {TARGET_PER_CORE:,} records/s per core end to end, scaling close to linear"]
    if "cli-1" in rates:
        rate, per_cpu = rates["cli-1"]
        met = "met" if rate >= TARGET_PER_CORE else "short"
        cpu = f" ({per_cpu:,.0f} per CPU-s)" if per_cpu else ""
        lines.append(f"  CLI -j 1, one core: {rate:,.0f} records/s{cpu}: {met}")
    for one, many, label in [("cli-1", "cli-N", "CLI -j"), ("batch-1", "batch-N", "parse_batch workers=")]:
        if one in rates and many in rates:
            (rate1, cpu1), (rate_n, cpu_n) = rates[one], rates[many]
            per_core = f"; {cpu_n / cpu1:.0%} of one worker's records per CPU-s" if cpu1 and cpu_n else ""
            lines.append(
                f"  {label}1 -> {label}{workers}: {rate1:,.0f} -> {rate_n:,.0f} records/s, "
                f"{rate_n / rate1:.2f}x (linear: {workers}x){per_core}"
            )
    if "cli-N" in rates and "cli-apart" in rates:
        (rate_n, cpu_n), (apart, cpu_apart) = rates["cli-N"], rates["cli-apart"]
        ceiling = f"{apart / rates['cli-1'][0]:.2f}x, " if "cli-1" in rates else ""
        per_cpu = f", {cpu_n / cpu_apart:.0%} of their records per CPU-s" if cpu_n and cpu_apart else ""
        lines.append(
            f"  CLI -j {workers} against {workers} independent -j 1 runs at once (this machine's ceiling, "
            f"{ceiling}{apart:,.0f} records/s): {rate_n / apart:.0%} of their records/s{per_cpu}"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
