"""Streaming one large tool call: our per-chunk cost vs re-parsing the growing text, in the same run.

A code-writing tool call (``write_file`` with the file's content as a JSON string full of quotes,
backslashes, tabs, newlines and non-ASCII text) of 10 KB, 100 KB and 1 MB is fed in 4-character chunks.
Per chunk, we measure

* **ours, scanner**: ``JsonScanner.feed`` (``response_templates.toolstream``) on the call's JSON: it
  reports the tool name and the canonical argument text that grew, the job the re-parsing approaches do;
* **ours, pipeline**: the whole server path, ``ChatCompletionsAdapter.step(parser, chunk)`` on the model
  output (the call inside Qwen3's ``<tool_call>`` tags): the parser's events for the chunk, translated
  into the ``chat.completion.chunk`` dicts with the argument deltas;
* **re-parse, jiter**: ``jiter.from_json(text_so_far, partial_mode="trailing-strings")``, the partial
  parser of the openai/anthropic SDKs, on the growing text, as servers re-parse on every token;
* **re-parse, partial-json-parser**: ``partial_json_parser.loads(text_so_far)`` (vLLM's and SGLang's).

Ours is timed over the whole stream (mean µs per chunk, and the mean over its last 10%, to show that it
stays flat). A re-parse costs time proportional to the text so far, so its cost per chunk is measured *at*
the size: the mean of re-parsing the last few prefixes before the end (a lower bound on what servers pay:
they also re-serialise and diff the parsed arguments, which is not timed). Ratios are re-parse / ours.

Usage::

    python benchmarks/bench_tool_streaming.py            # 10KB, 100KB, 1MB (~1 min)
    python benchmarks/bench_tool_streaming.py --quick    # 10KB and 100KB
    python benchmarks/bench_tool_streaming.py --sizes 10k,300k --json results.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import response_templates as rt
from _common import (
    CHATML_TEMPLATE,
    KB,
    chunked,
    fmt_num,
    fmt_ratio,
    fmt_size,
    format_table,
    gc_disabled,
    parse_size,
)
from response_templates.toolstream import JsonScanner, dumps_arguments
from response_templates.wire import ChatCompletionsAdapter

DEFAULT_SIZES = (10 * KB, 100 * KB, 1024 * KB)
QUICK_SIZES = (10 * KB, 100 * KB)
CHUNK = 4
FLAT_MAX = 1.5  # ours: cost per chunk at the largest size <= 1.5x the cost at the smallest
RATIO_MIN = 20.0  # the best re-parse costs >= 20x ours (scanner) per chunk at 100 KB
RATIO_AT = 100 * KB

TEMPLATE: dict[str, Any] = CHATML_TEMPLATE  # think + JSON tool calls + implicit content
PROMPT = "<|im_start|>user\nWrite the module.<|im_end|>\n<|im_start|>assistant\n"

_LINES = (
    'def {name}(path: str, *, mode: str = "r") -> str:',
    '    """Read {name} from \\"{path}\\" (naïve café version)."""',
    '    with open(path, mode, encoding="utf-8") as f:',
    '        data = f.read().replace("\\t", "    ").split("\\n")',
    '    if not data or data[0] == "#!": raise ValueError(f"bad header in {{path!r}}: {{data[:1]}}")',
    "    pattern = r\"^\\s*(?P<key>\\w+)\\s*=\\s*'(?P<value>[^']*)'$\"  # Zürich → 東京",
    "    return '\\\\'.join(line for line in data if line.strip())",
    "",
)


def make_call(size: int, seed: int = 0) -> tuple[str, dict[str, Any]]:
    """A ``write_file`` tool call whose JSON text is about ``size`` characters."""
    rng = random.Random(f"tool-{seed}-{size}")
    lines: list[str] = []
    length = 0
    while length < size - 120:
        name = rng.choice(("load", "parse_config", "read_table", "fetch")) + f"_{rng.randint(0, 999)}"
        line = rng.choice(_LINES).format(name=name, path=f"data/{name}.txt")
        lines.append(line)
        length += len(json.dumps(line, ensure_ascii=False)) + 1
    arguments = {"path": "src/reader.py", "content": "\n".join(lines) + "\n", "overwrite": True}
    return json.dumps({"name": "write_file", "arguments": arguments}, ensure_ascii=False), arguments


# --------------------------------------------------------------------------------------------------------
# measurements


@dataclass
class OursRun:
    mean: float  # µs per chunk over the whole stream
    end: float  # µs per chunk over its last 10%
    correct: bool


def _timed_stream(feed: Callable[[str], Any], chunks: Sequence[str]) -> tuple[float, float]:
    tail = max(1, len(chunks) // 10)
    split = len(chunks) - tail
    head, last = chunks[:split], chunks[split:]
    with gc_disabled():
        t0 = time.perf_counter()
        for chunk in head:
            feed(chunk)
        t1 = time.perf_counter()
        for chunk in last:
            feed(chunk)
        t2 = time.perf_counter()
    return (t2 - t0) / len(chunks) * 1e6, (t2 - t1) / len(last) * 1e6


def best_of(run: Callable[[], OursRun], budget: float, max_reps: int = 9) -> OursRun:
    best: OursRun | None = None
    spent, reps = 0.0, 0
    while reps < max_reps and (reps < 2 or spent < budget):
        t0 = time.perf_counter()
        result = run()
        spent += time.perf_counter() - t0
        reps += 1
        if best is None or result.mean < best.mean:
            best = OursRun(result.mean, min(result.end, best.end) if best else result.end, result.correct)
        else:
            best.end = min(best.end, result.end)
    assert best is not None
    return best


def run_scanner(body: str, arguments: dict[str, Any], check: bool = False) -> OursRun:
    """Time the scanner over the call (outputs are dropped, as a server drops what it sent); with
    ``check``, keep them and verify them instead."""
    chunks = chunked(body, CHUNK)
    scanner = JsonScanner(name_paths=[("name",)], arguments_paths=[("arguments",), ("parameters",)])
    if not check:
        mean, end = _timed_stream(scanner.feed, chunks)
        return OursRun(mean, end, True)
    reports = [r for chunk in chunks for r in scanner.feed(chunk)]
    canonical = "".join(r["json"] for r in reports if r["type"] == "arguments")
    names = [r["value"] for r in reports if r["type"] == "name"]
    return OursRun(0.0, 0.0, canonical == dumps_arguments(arguments) and names == ["write_file"])


def run_pipeline(body: str, arguments: dict[str, Any], check: bool = False) -> OursRun:
    """Time parser + chat adapter (``adapter.step``) over the model output (see :func:`run_scanner` for ``check``)."""
    output = f"<tool_call>\n{body}\n</tool_call><|im_end|>"
    chunks = chunked(output, CHUNK)
    template = rt.load_template(TEMPLATE)
    parser = rt.ResponseParser(template, prefix=PROMPT)
    adapter = ChatCompletionsAdapter(template, model="bench", created=0, seed=0)
    adapter.feed(parser.initial_events)
    if not check:
        step = adapter.step
        mean, end = _timed_stream(lambda chunk: step(parser, chunk), chunks)
        return OursRun(mean, end, True)
    sent = [c for chunk in chunks for c in adapter.step(parser, chunk)]
    sent += adapter.finish(parser.finalize()[1])
    fragments = [
        call["function"].get("arguments", "")
        for chunk in sent
        if chunk["choices"]
        for call in chunk["choices"][0]["delta"].get("tool_calls", [])
    ]
    return OursRun(0.0, 0.0, "".join(fragments) == dumps_arguments(arguments))


def reparse_at(parse: Callable[[Any], Any], text: Any, size: int, count: int) -> tuple[float, Any]:
    """Mean µs of re-parsing the last ``count`` prefixes (one per chunk) of ``text[:size]``."""
    ends = [size - CHUNK * k for k in range(count - 1, -1, -1)]
    prefixes = [text[:e] for e in ends]
    result = None
    best = float("inf")
    for _ in range(3 if count > 4 else 1):
        with gc_disabled():
            t0 = time.perf_counter()
            for prefix in prefixes:
                result = parse(prefix)
            best = min(best, time.perf_counter() - t0)
    return best / count * 1e6, result


def load_jiter() -> Callable[[bytes], Any] | None:
    try:
        import jiter
    except ImportError:
        return None
    return lambda data: jiter.from_json(data, partial_mode="trailing-strings")


def load_partial_json_parser() -> Callable[[str], Any] | None:
    try:
        import partial_json_parser
    except ImportError:
        return None
    return partial_json_parser.loads


@dataclass
class Row:
    size: int
    chunks: int
    scanner: float
    scanner_end: float
    pipeline: float
    pipeline_end: float
    jiter: float | None
    pjp: float | None
    correct: bool

    @property
    def best_reparse(self) -> float | None:
        values = [v for v in (self.jiter, self.pjp) if v is not None]
        return min(values) if values else None


def run_size(size: int, args: argparse.Namespace) -> Row:
    body, arguments = make_call(size, args.seed)
    scanner = best_of(lambda: run_scanner(body, arguments), args.budget)
    pipeline = best_of(lambda: run_pipeline(body, arguments), args.budget)
    n = len(body)
    jiter_us = pjp_us = None
    correct = (
        run_scanner(body, arguments, check=True).correct and run_pipeline(body, arguments, check=True).correct
    )
    jiter_parse = load_jiter()
    if jiter_parse is not None:
        data = body.encode()
        count = max(8, min(64, (24 * 1024 * 1024) // max(n, 1)))
        jiter_us, parsed = reparse_at(jiter_parse, data, len(data), count)
        correct = correct and parsed["arguments"] == arguments
    pjp_parse = load_partial_json_parser()
    if pjp_parse is not None and not args.no_pjp:
        count = 16 if n <= 20 * KB else 4 if n <= 200 * KB else 2
        pjp_us, parsed = reparse_at(pjp_parse, body, n, count)
        correct = correct and parsed["arguments"] == arguments
    return Row(
        size=n,
        chunks=len(chunked(body, CHUNK)),
        scanner=scanner.mean,
        scanner_end=scanner.end,
        pipeline=pipeline.mean,
        pipeline_end=pipeline.end,
        jiter=jiter_us,
        pjp=pjp_us,
        correct=correct,
    )


# --------------------------------------------------------------------------------------------------------
# report


def _ratio(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None or b == 0 else a / b


def targets(rows: list[Row], sizes: list[int]) -> list[dict[str, Any]]:
    out = []
    lo = min(rows, key=lambda r: r.size)
    hi = max(rows, key=lambda r: r.size)
    for name, attr in (("scanner", "scanner_end"), ("pipeline", "pipeline_end")):
        value = _ratio(getattr(hi, attr), getattr(lo, attr)) if hi is not lo else None
        out.append(
            {
                "target": f"ours ({name}) per chunk at {fmt_size(hi.size)} / at {fmt_size(lo.size)}",
                "value": value,
                "limit": f"<= {FLAT_MAX}",
                "status": "SKIP" if value is None else "PASS" if value <= FLAT_MAX else "FAIL",
            }
        )
    at = min(rows, key=lambda r: abs(r.size - RATIO_AT))
    value = _ratio(at.best_reparse, at.scanner_end) if abs(at.size - RATIO_AT) < RATIO_AT / 4 else None
    out.append(
        {
            "target": f"best re-parse / ours (scanner) per chunk at {fmt_size(RATIO_AT)}",
            "value": value,
            "limit": f">= {RATIO_MIN}",
            "status": "SKIP" if value is None else "PASS" if value >= RATIO_MIN else "FAIL",
        }
    )
    out.append(
        {
            "target": "streamed arguments == the parsed arguments (all contenders)",
            "value": None,
            "limit": "",
            "status": "PASS" if all(r.correct for r in rows) else "FAIL",
        }
    )
    return out


def report(rows: list[Row], checks: list[dict[str, Any]], meta: dict[str, Any]) -> str:
    headers = [
        "size",
        "chunks",
        "ours scanner",
        "ours pipeline",
        "jiter re-parse",
        "pjp re-parse",
        "jiter/scanner",
        "pjp/scanner",
        "best/pipeline",
    ]
    body = []
    for r in rows:
        body.append(
            [
                fmt_size(r.size),
                f"{r.chunks:,}",
                f"{fmt_num(r.scanner)} ({fmt_num(r.scanner_end)})",
                f"{fmt_num(r.pipeline)} ({fmt_num(r.pipeline_end)})",
                fmt_num(r.jiter),
                fmt_num(r.pjp),
                fmt_ratio(_ratio(r.jiter, r.scanner_end)),
                fmt_ratio(_ratio(r.pjp, r.scanner_end)),
                fmt_ratio(_ratio(r.best_reparse, r.pipeline_end)),
            ]
        )
    lines = [
        f"bench_tool_streaming: {meta['ours']}; jiter {meta['jiter']}; partial-json-parser {meta['pjp']}",
        f"python {meta['python']} on {meta['machine']}, load average {meta['load']:.2f}; {CHUNK}-char chunks",
        "",
        "µs per chunk. ours: mean over the whole stream (mean over its last 10%);",
        "re-parse: mean of re-parsing the text so far at the end of the stream (one parse per chunk).",
        "",
        format_table(headers, body),
        "",
        "targets:",
    ]
    for t in checks:
        value = "" if t["value"] is None else f": {t['value']:.2f}"
        limit = f" ({t['limit']})" if t["limit"] else ""
        lines.append(f"  {t['status']:4}  {t['target']}{value}{limit}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="only 10KB and 100KB")
    ap.add_argument("--sizes", help="comma-separated call sizes, e.g. 10k,100k,1m (K = 1024)")
    ap.add_argument("--budget", type=float, default=1.0, help="seconds of repetitions per contender and size")
    ap.add_argument("--no-pjp", action="store_true", help="skip partial-json-parser (slow at 1MB)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", metavar="FILE", help="also write the results as JSON to FILE")
    args = ap.parse_args(argv)
    sizes = (
        [parse_size(s) for s in args.sizes.split(",") if s.strip()]
        if args.sizes
        else list(QUICK_SIZES if args.quick else DEFAULT_SIZES)
    )

    def version(module: str) -> str:
        try:
            from importlib.metadata import version as v

            return v(module)
        except Exception:
            return "unavailable"

    meta = {
        "ours": f"response_templates {rt.__version__}",
        "jiter": version("jiter"),
        "pjp": version("partial-json-parser"),
        "python": platform.python_version(),
        "machine": f"{platform.machine()} {platform.system()} ({os.cpu_count()} cpus)",
        "load": os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0,
    }
    started = time.perf_counter()
    rows = []
    for size in sizes:
        print(f"  {fmt_size(size)} ...", file=sys.stderr, flush=True)
        rows.append(run_size(size, args))
    checks = targets(rows, sizes)
    print(report(rows, checks, meta))
    print(f"\n(benchmark ran in {time.perf_counter() - started:.0f}s)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"meta": meta, "rows": [asdict(r) for r in rows], "targets": checks}, f, indent=2)
    return 1 if any(t["status"] == "FAIL" for t in checks) else 0


if __name__ == "__main__":
    sys.exit(main())
