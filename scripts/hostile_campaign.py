"""A large random campaign of hostile inputs, outside CI (issue 12; docs/safety.md).

Each input is one of:

* ``output``: a library template, one of its prompts and a random hostile output (its delimiters, cuts
  of them, surrogates, control characters, deep JSON, huge numbers), checked by
  ``tests/hostile/hostile_inputs.check_output``: fed whole, one character at a time and in random chunks,
  typed errors only, nothing lost, the same result in every chunking;
* ``generated``: one of the suite's own hostile outputs of a template, at random sizes (runs of a cut
  delimiter up to 20,000 characters, JSON up to 20,000 deep), with the same checks;
* ``bytes``: the template's delimiters as UTF-8 with random bytes between them (typed errors only, the
  same error classes in every chunking);
* ``mutated``: a library template with random type mutations, loaded (a typed error or a template), then
  linted and used to parse a hostile output (typed errors only);
* ``catastrophic``: a catastrophic pattern in one of the pattern-taking keys (typed errors only).

It prints the inputs tried and the failures by class (``untyped``, ``lost``, ``chunking``, with the
exception class for ``untyped``) and the first examples of each, with the date and commit.

Usage::

    nice -n 10 python scripts/hostile_campaign.py --inputs 50000 --seed 1 --workers 2 --time-limit 600
    python scripts/hostile_campaign.py --inputs 200 --seed 3 --workers 1      # a quick look
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import multiprocessing
import random
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
for extra in (ROOT / "tests", ROOT / "tests" / "hostile"):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

import hostile_inputs as h  # noqa: E402

import response_templates as rt  # noqa: E402
import response_templates.content as content_pkg  # noqa: E402

KINDS = ("output", "output", "output", "generated", "bytes", "mutated", "mutated", "catastrophic")
#: Seconds a delimiter search may take (as in the suite): a slow pattern costs the campaign little.
REGEX_TIMEOUT = 0.1
ATOMS = (
    *h.SURROGATES,
    *h.CONTROLS,
    "[" * 600,
    '{"a": ' * 30,
    "9" * 4400,
    "-1e99999",
    '"',
    "\\",
    "\n",
    " ",
    "é",
)

_TEMPLATES: dict[str, rt.ResponseTemplate] = {}


def template(name: str) -> rt.ResponseTemplate:
    if name not in _TEMPLATES:
        _TEMPLATES[name] = rt.load_template(rt.templates.get(name).to_dict(), regex_timeout=REGEX_TIMEOUT)
    return _TEMPLATES[name]


def random_text(name: str, rng: random.Random) -> str:
    words = h.template_words(name)
    pieces = []
    for _ in range(rng.randint(0, 30)):
        r = rng.random()
        if r < 0.45:
            pieces.append(rng.choice(words))
        elif r < 0.7:
            w = rng.choice(words)
            pieces.append(w[: rng.randint(1, max(1, len(w) - 1))] * rng.choice((1, 1, 2, 50)))
        elif r < 0.9:
            pieces.append(rng.choice(ATOMS))
        else:
            pieces.append("".join(chr(rng.randint(0, 0x2FF)) for _ in range(rng.randint(1, 6))))
    return "".join(pieces)


def one_input(seed: int) -> tuple[str, list[tuple[str, str]]]:
    """Run input ``seed``; (kind, [(failure class, description)])."""
    rng = random.Random(seed)
    kind = rng.choice(KINDS)
    names = rt.templates.names()
    name = rng.choice(names)
    prefix = rng.choice(h.prompts(name))
    failures: list[tuple[str, str]] = []
    try:
        if kind in ("output", "generated", "bytes"):
            if kind == "output":
                output = h.HostileOutput(f"random seed {seed}", random_text(name, rng))
            elif kind == "generated":
                sizes = h.Sizes(
                    run_chars=rng.randint(40, 3000),
                    big_run_chars=rng.randint(100, 20_000),
                    depth=rng.randint(20, 1000),
                    big_depth=rng.randint(600, 20_000),
                    digits=rng.randint(50, 5000),
                )
                output = rng.choice(h.hostile_outputs(name, sizes))
            else:
                raw = b"".join(
                    w.encode("utf-8", "surrogatepass") + rng.randbytes(rng.randint(0, 3))
                    for w in rng.choices(h.template_words(name), k=rng.randint(0, 10))
                )
                output = h.HostileOutput(f"bytes seed {seed}", raw)
            for f in h.check_output(name, template(name), prefix, output, seed=seed):
                cls = f.kind if f.kind != "untyped" else "untyped " + f.detail.split(" ", 1)[0]
                failures.append((cls, str(f)[:600]))
        elif kind == "mutated":
            data = h.mutate(h.library_template_data(name), rng, rng.randint(1, 5))
            try:
                compiled = rt.load_template(data, regex_timeout=0.02)
            except rt.ResponseTemplateError:
                compiled = None
            with contextlib.suppress(rt.ResponseTemplateError):
                rt.lint(data)
            if compiled is not None:
                output = h.HostileOutput("mutated", random_text(name, rng))
                for way, chunks in h.chunkings(output, seed).items():
                    res = h.run_stream(compiled, prefix, chunks)
                    if res.untyped:
                        cls = "untyped " + res.untyped.split(" ", 1)[0]
                        failures.append(
                            (cls, f"mutated {name} seed {seed} {way}: {res.untyped} template={data!r:.300}")
                        )
        else:
            cases = list(h.catastrophic_cases())
            label, spec, pre, text = rng.choice(cases)
            try:
                compiled = rt.load_template(spec, regex_timeout=0.02)
            except rt.ResponseTemplateError:
                return kind, failures
            for way, chunks in h.chunkings(h.HostileOutput(label, text), seed).items():
                res = h.run_stream(compiled, pre, chunks)
                if res.untyped:
                    failures.append(
                        ("untyped " + res.untyped.split(" ", 1)[0], f"{label} {way}: {res.untyped}")
                    )
    except Exception as exc:  # the harness itself (or an error it did not expect) failed
        failures.append(
            (f"untyped {type(exc).__name__} (harness)", f"{kind} {name} seed {seed}: {exc!r:.300}")
        )
    return kind, failures


def _init_worker() -> None:
    content_pkg.REGEX_TIMEOUT = 0.02


def commit() -> str:
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + (" + working tree changes" if dirty else "")


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--inputs", type=int, default=50_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument(
        "--time-limit", type=float, default=600.0, help="stop starting inputs after this many seconds"
    )
    ap.add_argument("--examples", type=int, default=3, help="examples printed per failure class")
    ap.add_argument("--json", help="also write the summary to this JSON file")
    args = ap.parse_args(argv)

    started = time.monotonic()
    tried: Counter[str] = Counter()
    failures: Counter[str] = Counter()
    examples: dict[str, list[str]] = {}
    seeds = range(args.seed * 10_000_000, args.seed * 10_000_000 + args.inputs)
    stopped_early = False
    ctx = multiprocessing.get_context("fork" if sys.platform != "win32" else "spawn")
    with ctx.Pool(args.workers, initializer=_init_worker) as pool:
        for kind, found in pool.imap_unordered(one_input, seeds, chunksize=8):
            tried[kind] += 1
            for cls, detail in found:
                failures[cls] += 1
                if len(examples.setdefault(cls, [])) < args.examples:
                    examples[cls].append(detail)
            done = sum(tried.values())
            if done % 1000 == 0:
                print(f"  {done} inputs, {sum(failures.values())} failures", file=sys.stderr, flush=True)
            if time.monotonic() - started > args.time_limit:
                stopped_early = True
                pool.terminate()
                break
    summary = {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "commit": commit(),
        "seed": args.seed,
        "inputs": sum(tried.values()),
        "inputs_requested": args.inputs,
        "stopped_by_time_limit": stopped_early,
        "seconds": round(time.monotonic() - started, 1),
        "by_kind": dict(sorted(tried.items())),
        "failures": dict(sorted(failures.items())),
        "examples": examples,
    }
    print(f"hostile campaign, {summary['date']}, commit {summary['commit']}, seed {args.seed}")
    print(
        f"inputs tried: {summary['inputs']} in {summary['seconds']} s"
        + (" (time limit)" if stopped_early else "")
    )
    for kind, n in summary["by_kind"].items():
        print(f"  {kind:13s} {n}")
    print(f"failures: {sum(failures.values())}")
    for cls, n in summary["failures"].items():
        print(f"  {cls}: {n}")
        for ex in examples[cls]:
            print(f"      e.g. {ex[:400]}")
    if args.json:
        Path(args.json).write_text(json.dumps(summary, indent=1))
    return summary


if __name__ == "__main__":
    main()
