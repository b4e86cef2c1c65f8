"""Hostile outputs on every library template: time per MB and peak memory per stream (issue 12).

For each library template, the hostile outputs of ``tests/hostile/hostile_inputs.py`` that are fed whole
and in big chunks (runs of a cut delimiter such as ``<function=`` repeated, 100,000-deep JSON, ...) are
first timed at a small size; the ``--worst`` slowest per template are then measured at ``--size``:

Times are CPU seconds of the measuring process (``time.process_time``), so that a shared, loaded
machine does not inflate them; the reference is timed the same way in its child process.

* ``whole``: ``parse_response`` on the whole text, in seconds per MB;
* ``1-char`` and ``16-char``: a ``ResponseParser`` fed the text in chunks of 1 and 16 characters, then
  finalized, in seconds per MB (a run that passes ``--budget`` seconds stops early and is marked ``*``:
  its figure is the cost of the part fed);
* ``peak KB``: the peak of memory allocated while a parser reads the whole text in 16-character chunks
  (``tracemalloc``, measured in a separate run);
* ``ref whole`` / ``ref 16``: the reference (transformers ``utils.chat_parsing``) on the same text and
  template, where it can load the template, run in a child process with a time cap per input
  (``timeout``), or the error it raised.

Typed errors of ours (``PatternTimeoutError`` from a slow pattern, a ``ParseError``) end a run the way
they end a stream: they are counted in the ``outcome`` column, not hidden.

Usage::

    python benchmarks/bench_hostile.py                       # every template, 256 KB (~15-25 min)
    python benchmarks/bench_hostile.py --templates qwen3-coder,hermes --size 1m
    python benchmarks/bench_hostile.py --quick               # 8 templates, 16 KB, no reference
    python benchmarks/bench_hostile.py --json results.json
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import tracemalloc
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

ROOT = Path(__file__).resolve().parents[1]
for extra in (ROOT / "tests", ROOT / "tests" / "hostile"):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

import hostile_inputs  # noqa: E402

import response_templates as rt  # noqa: E402
from _common import KB, fmt_num, format_table, parse_size  # noqa: E402

MB = KB * KB
QUICK_TEMPLATES = (
    "qwen3",
    "qwen3-coder",
    "hermes-lenient",
    "gpt-oss",
    "inkling",
    "mistral-v3",
    "glm-4.5",
    "minimax-m1",
)


@dataclass
class Row:
    template: str
    label: str
    chars: int
    whole: float | None = None  # seconds per MB
    one: float | None = None
    one_capped: bool = False
    sixteen: float | None = None
    sixteen_capped: bool = False
    peak_kb: float | None = None
    outcome: str = ""
    ref_whole: str = "-"
    ref_sixteen: str = "-"


def _outcome(exc: BaseException | None) -> str:
    return "ok" if exc is None else type(exc).__name__


def time_whole(template: rt.ResponseTemplate, prefix: str, text: str) -> tuple[float, BaseException | None]:
    t0 = time.process_time()
    try:
        rt.parse_response(text, template, prefix=prefix)
        error = None
    except rt.ResponseTemplateError as exc:
        error = exc
    return time.process_time() - t0, error


def time_stream(
    template: rt.ResponseTemplate, prefix: str, text: str, size: int, budget: float
) -> tuple[float, int, BaseException | None]:
    """Seconds to feed ``text`` in ``size``-char chunks and finalize; (seconds, chars fed, first error).
    Stops after ``budget`` seconds; a typed error is recorded and the stream goes on."""
    error: BaseException | None = None
    t0 = time.process_time()
    parser = rt.ResponseParser(template, prefix=prefix)
    fed = 0
    for i in range(0, len(text), size):
        try:
            parser.feed(text[i : i + size])
        except rt.ResponseTemplateError as exc:
            error = error or exc
        fed = min(len(text), i + size)
        if (i // size) % 256 == 0 and time.process_time() - t0 > budget:
            break
    if fed >= len(text):
        try:
            parser.finalize()
        except rt.ResponseTemplateError as exc:
            error = error or exc
    return time.process_time() - t0, fed, error


def peak_memory(template: rt.ResponseTemplate, prefix: str, text: str, budget: float) -> float:
    """Peak KB allocated while one parser reads ``text`` in 16-character chunks."""
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        time_stream(template, prefix, text, 16, budget)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak / KB


# ------------------------------------------------------------------------------------------ reference

_REF_CHILD = r"""
import json, sys, time
data = json.load(open(sys.argv[1]))
out = {}
try:
    from transformers.utils.chat_parsing import ResponseParser, parse_response
    from transformers.utils.chat_parsing.response_templates import load_response_template
    template = load_response_template(data["template"])
except Exception as exc:
    print(json.dumps({"whole": "cannot load: " + type(exc).__name__, "sixteen": "-"}))
    sys.exit(0)
text, prefix, mb = data["text"], data["prefix"], len(data["text"]) / (1024 * 1024)
for mode in ("whole", "sixteen"):
    t0 = time.process_time()
    try:
        if mode == "whole":
            parse_response(text, template, prefix=prefix)
        else:
            p = ResponseParser(template, prefix=prefix)
            for i in range(0, len(text), 16):
                p.feed(text[i:i + 16])
            p.finalize()
        out[mode] = "%.4g" % ((time.process_time() - t0) / mb)
    except Exception as exc:
        out[mode] = type(exc).__name__
    print(json.dumps(out), flush=True)
"""


def reference(template: dict[str, Any], prefix: str, text: str, timeout: float) -> tuple[str, str]:
    """(whole, 16-char) seconds per MB of the reference, an error class name, or ``timeout``."""
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump({"template": template, "prefix": prefix, "text": text}, f)
        path = f.name
    try:
        proc = subprocess.run(
            [sys.executable, "-c", _REF_CHILD, path],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode() if isinstance(exc.stdout, bytes) else exc.stdout or ""
        lines = [line for line in out.splitlines() if line.startswith("{")]
    finally:
        os.unlink(path)
    last: dict[str, str] = json.loads(lines[-1]) if lines else {}
    return last.get("whole", "timeout"), last.get("sixteen", "timeout")


# --------------------------------------------------------------------------------------------- main


def worst_outputs(name: str, sizes: hostile_inputs.Sizes, count: int) -> list[hostile_inputs.HostileOutput]:
    """The ``count`` big str outputs of ``name`` that cost most per character at a small size."""
    template = rt.templates.get(name)
    prefix = hostile_inputs.prompts(name)[0]
    probe = replace(sizes, big_run_chars=8 * KB, big_depth=4 * KB)
    scored = []
    for output in hostile_inputs.hostile_outputs(name, probe):
        if not output.big or not isinstance(output.text, str):
            continue
        seconds, _, _ = time_stream(template, prefix, output.text, 16, 2.0)
        scored.append((seconds / max(1, len(output.text)), output.label))
    chosen = {label for _, label in sorted(scored, reverse=True)[:count]}
    return [o for o in hostile_inputs.hostile_outputs(name, sizes) if o.label in chosen]


def measure(name: str, output: hostile_inputs.HostileOutput, args: argparse.Namespace) -> Row:
    template = rt.templates.get(name)
    prefix = hostile_inputs.prompts(name)[0]
    text = output.text
    assert isinstance(text, str)
    mb = len(text) / MB
    row = Row(name, output.label, len(text))
    seconds, error = time_whole(template, prefix, text)
    row.whole = seconds / mb
    outcomes = {_outcome(error)}
    for chunk, attr in ((1, "one"), (16, "sixteen")):
        seconds, fed, error = time_stream(template, prefix, text, chunk, args.budget)
        setattr(row, attr, seconds / (max(fed, 1) / MB))
        setattr(row, f"{attr}_capped", fed < len(text))
        outcomes.add(_outcome(error))
    row.peak_kb = peak_memory(template, prefix, text, args.budget)
    row.outcome = ",".join(sorted(outcomes))
    if not args.no_reference:
        row.ref_whole, row.ref_sixteen = reference(template.to_dict(), prefix, text, args.ref_timeout)
    return row


def table(rows: list[Row]) -> str:
    def cell(value: float | None, capped: bool = False) -> str:
        return "-" if value is None else fmt_num(value) + ("*" if capped else "")

    headers = ["template", "input", "KB", "whole s/MB", "1-char s/MB", "16-char s/MB", "peak KB", "outcome"]
    headers += ["ref whole", "ref 16"]
    body = [
        [
            r.template,
            r.label[:34],
            f"{r.chars / KB:.0f}",
            cell(r.whole),
            cell(r.one, r.one_capped),
            cell(r.sixteen, r.sixteen_capped),
            cell(r.peak_kb),
            r.outcome,
            r.ref_whole,
            r.ref_sixteen,
        ]
        for r in rows
    ]
    return format_table(headers, body, "llrrrrrlll")


def main(argv: list[str] | None = None) -> list[Row]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--templates", default="", help="comma-separated library names (default: all)")
    ap.add_argument("--size", default="256k", help="characters of each measured input (e.g. 64k, 1m)")
    ap.add_argument("--worst", type=int, default=2, help="inputs measured per template")
    ap.add_argument("--budget", type=float, default=10.0, help="seconds one stream may run before it stops")
    ap.add_argument("--ref-timeout", type=float, default=30.0, help="seconds the reference gets per input")
    ap.add_argument("--no-reference", action="store_true", help="skip the reference")
    ap.add_argument(
        "--quick", action="store_true", help=f"{len(QUICK_TEMPLATES)} templates, 16 KB, no reference"
    )
    ap.add_argument("--json", help="also write the rows to this JSON file")
    args = ap.parse_args(argv)
    if args.quick:
        args.templates = args.templates or ",".join(QUICK_TEMPLATES)
        args.size, args.no_reference = "16k", True
    names = [n for n in args.templates.split(",") if n] or rt.templates.names()
    size = parse_size(args.size)
    sizes = replace(hostile_inputs.CI, big_run_chars=size, big_depth=size // 2)
    rows = []
    for name in names:
        for output in worst_outputs(name, sizes, args.worst):
            rows.append(measure(name, output, args))
            print(f"  {name}: {output.label} done", file=sys.stderr, flush=True)
    print(table(rows))
    print("* the stream stopped after --budget seconds; the figure is the cost of the part fed")
    if args.json:
        Path(args.json).write_text(json.dumps([asdict(r) for r in rows], indent=1))
    return rows


if __name__ == "__main__":
    main()
