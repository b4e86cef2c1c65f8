"""Random walks through every compiled family's grammar, at a count too large for CI, with the totals
docs/grammar.md ("Proofs") records: walks, finished walks, walks with calls, calls, and failures (outputs
our parser does not read as a valid answer to the request), per family and setting.

Usage::

    python scripts/grammar_walks.py --walks 50            # every compiled family, every setting
    python scripts/grammar_walks.py --walks 200 --families qwen3,kimi-k2
"""

from __future__ import annotations

import argparse
import sys
import time
import zlib
from collections.abc import Sequence
from pathlib import Path

sys.path[:0] = [
    str(Path(__file__).resolve().parents[1] / "tests"),
    str(Path(__file__).resolve().parents[1] / "tests" / "grammar"),
]

import grammar_harness as gh  # noqa: E402

from response_templates import grammar  # noqa: E402


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--walks", type=int, default=50, help="walks per family and setting")
    parser.add_argument("--families", help="comma-separated family names (default: every compiled family)")
    parser.add_argument("--show", type=int, default=2, help="failures to print per family")
    args = parser.parse_args(argv)
    compiled = sorted(name for name, cov in grammar.coverage().items() if cov.compiles)
    families = args.families.split(",") if args.families else compiled
    totals = {"walks": 0, "finished": 0, "with_calls": 0, "calls": 0, "failures": 0}
    failing: dict[str, int] = {}
    t0 = time.perf_counter()
    for family in families:
        for choice, parallel in gh.WALK_MODES:
            seed = zlib.crc32(repr(("large", family, choice, parallel)).encode())
            report = gh.walk_family(family, grammar, choice, parallel, args.walks, seed)
            totals["walks"] += report.walks
            totals["finished"] += report.finished
            totals["with_calls"] += report.with_calls
            totals["calls"] += report.calls
            totals["failures"] += len(report.failures)
            if report.failures:
                failing[family] = failing.get(family, 0) + len(report.failures)
                for failure in report.failures[: args.show]:
                    print(f"{family} [{report.mode}] {failure[:300]}")
    print(
        f"{len(families)} families x {len(gh.WALK_MODES)} settings x {args.walks} walks: {totals['walks']} walks, "
        f"{totals['finished']} finished, {totals['with_calls']} with calls ({totals['calls']} calls), "
        f"{totals['failures']} failures in {len(failing)} families {sorted(failing.items())} "
        f"({time.perf_counter() - t0:.0f} s)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
