"""What ``bench_engines_vllm.py`` and ``bench_engines_sglang.py`` share: serving each recorded output
through an engine's own chat serving with each parser, judging and timing it, and the report.

Not a test module and not part of the package; the scripts import it as ``_engine_bench``.
"""

from __future__ import annotations

import json
import logging
import os
import statistics
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from _common import format_table


def quiet() -> None:
    """Silence the engines' deprecation warnings and logs (and ours), which would drown the table."""
    warnings.simplefilter("ignore")
    logging.disable(logging.WARNING)
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")


def serve_timed(srv: Any, case: Any, stream: bool) -> tuple[dict[str, Any], float]:
    """The client's message for ``case`` through ``srv`` (an error dict if the serving raised or answered
    with an error), and the time it took."""
    start = time.perf_counter()
    try:
        got = srv.run(case, stream=stream)
    except Exception as exc:  # a parser that raises out of the serving code: the client gets an error
        got = {"error": f"{type(exc).__name__}: {exc}"}
    elapsed = time.perf_counter() - start
    if not isinstance(got, dict):  # an engine's error response object
        got = {"error": str(getattr(got, "error", got))}
    return got, elapsed


def run_family(
    row: dict[str, Any],
    cases: Sequence[Any],
    servers: Mapping[str, Any],
    *,
    repeat: int,
    tokens_of: Callable[[Any], int],
    same: Callable[[Any, Any], bool],
) -> dict[str, Any]:
    """Fill ``row`` for one family: for each server but ``"none"`` (the no-parser baseline), how many of
    ``cases`` (documented differences left out) the client gets right whole and streamed, and the
    streamed cost per token above the baseline (median over the outputs of the best of ``repeat`` runs).
    ``same(got, ours)`` says whether a served message is our own parse."""
    judged = [case for case in cases if case.kind != "difference"]
    row["outputs"] = len(judged)
    row["differences"] = len(cases) - len(judged)
    times: dict[str, list[float]] = {name: [] for name in servers}
    for name in servers:
        row[name] = {"whole": 0, "streamed": 0}
    for case in judged:
        n = tokens_of(case) or 1
        for name, srv in servers.items():
            if name == "none":
                continue
            for stream in (False, True):
                got, _ = serve_timed(srv, case, stream)
                ours = same(got, case.ours)
                row[name]["streamed" if stream else "whole"] += (ours and case.ours_right) or case.right(got)
                if name == "ours" and not ours:
                    row.setdefault("ours_differs", []).append(case.id)
        for name, srv in servers.items():
            times[name].append(min(serve_timed(srv, case, True)[1] for _ in range(repeat)) / n)
    base = statistics.median(times["none"]) if times.get("none") else 0.0
    for name in servers:
        if name != "none" and times[name]:
            row[name]["us_per_token"] = max(0.0, (statistics.median(times[name]) - base) * 1e6)
    return row


def report(rows: Sequence[dict[str, Any]], engine: str, key: str, json_path: Path | None) -> None:
    """Print the per-family table and the totals; ``key`` is the rows' key of the engine's own parsers
    (its ``{key}_parsers`` entry names them, ``{key}_error`` says why they did not start)."""
    table = []
    total = dict.fromkeys(("n", "ours_w", "ours_s", "cov_n", "cov_ours_w", "cov_ours_s", "e_w", "e_s"), 0)
    for r in rows:
        ours, theirs = r["ours"], r.get(key)
        total["n"] += r["outputs"]
        total["ours_w"] += ours["whole"]
        total["ours_s"] += ours["streamed"]
        if theirs is not None:
            total["cov_n"] += r["outputs"]
            total["cov_ours_w"] += ours["whole"]
            total["cov_ours_s"] += ours["streamed"]
            total["e_w"] += theirs["whole"]
            total["e_s"] += theirs["streamed"]
        pair = r[f"{key}_parsers"]
        label = "-" if pair is None else " + ".join(p for p in pair if p)
        if f"{key}_error" in r:
            label += " (fails at start-up)"
        table.append(
            [
                r["family"],
                str(r["outputs"]),
                f"{ours['whole']} / {ours['streamed']}",
                f"{ours.get('us_per_token', 0):.0f}",
                label,
                "-" if theirs is None else f"{theirs['whole']} / {theirs['streamed']}",
                "-" if theirs is None else f"{theirs.get('us_per_token', 0):.0f}",
            ]
        )
    headers = [
        "family",
        "outputs judged",
        "ours right (whole / streamed)",
        "ours µs/token",
        f"{engine} parser",
        f"{engine} right",
        f"{engine} µs/token",
    ]
    print(format_table(headers, table, "lrrrlrr"))
    print()
    print(
        f"all families: ours {total['ours_w']}/{total['n']} whole, {total['ours_s']}/{total['n']} streamed; "
        f"where {engine} has a parser ({total['cov_n']} outputs): ours {total['cov_ours_w']} / "
        f"{total['cov_ours_s']}, {engine} {total['e_w']} / {total['e_s']}; families without a {engine} "
        f"parser: {sum(1 for r in rows if r[f'{key}_parsers'] is None)}; left out as documented "
        f"differences: {sum(r['differences'] for r in rows)} outputs"
    )
    for r in rows:
        if f"{key}_error" in r:
            print(
                f"{engine}'s parser for {r['family']} fails at start-up: {r[f'{key}_error'].splitlines()[0]}"
            )
    ours_cost = [r["ours"]["us_per_token"] for r in rows if "us_per_token" in r["ours"]]
    theirs_cost = [r[key]["us_per_token"] for r in rows if "us_per_token" in r.get(key, {})]
    if ours_cost and theirs_cost:
        print(
            f"parser cost per token above no parser (median over families): ours "
            f"{statistics.median(ours_cost):.0f} µs, {engine}'s {statistics.median(theirs_cost):.0f} µs"
        )
    differs = {r["family"]: r["ours_differs"] for r in rows if r.get("ours_differs")}
    if differs:
        print(f"served differently from our own parse: {differs}")
    if json_path is not None:
        json_path.write_text(json.dumps(list(rows), indent=1), encoding="utf-8")
