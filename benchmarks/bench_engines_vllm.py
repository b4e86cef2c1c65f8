"""Our vLLM plugin beside vLLM 0.34's own per-family parsers, inside vLLM's own chat serving.

Every recorded output of every library family (``tests/library_samples.py``) is served by vLLM's
``OpenAIServingChat`` with an engine stand-in that replays it as token ids (``tests/engines/vllm_harness.py``),
once whole and once streamed (one id per engine step, as vLLM decodes), with

* **ours**: ``--tool-call-parser response_templates --reasoning-parser response_templates``;
* **vLLM's**: the parser pair vLLM documents for that family (:data:`VLLM_PARSERS`; ``-`` where vLLM has
  none), under the same flags a user would pass;
* **none**: no parser at all, the baseline whose time is subtracted: what remains is the parser's own cost.

Right means what the client receives equals the recorded expected message, by the library judge's rule
(``library_samples.same``; reasoning written back inline for sources whose policy keeps it). Cost is the
serving time per generated token above the no-parser baseline, streamed, in µs (median of the family's
outputs, over ``--repeat`` runs). Needs the vLLM venv: ``make .venv-vllm/.installed``, then::

    .venv-vllm/bin/python benchmarks/bench_engines_vllm.py                 # every family
    .venv-vllm/bin/python benchmarks/bench_engines_vllm.py --families qwen3,kimi-k2 --json out.json
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import sys
import time
import warnings
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "engines"), str(Path(__file__).resolve().parent)]

from _common import format_table  # noqa: E402

#: vLLM 0.34's own parsers per library family, ``(tool parser, reasoning parser)``, as vLLM's
#: documentation and the families' model cards name them (``None``: vLLM has none for that part).
VLLM_PARSERS: dict[str, tuple[str | None, str | None]] = {
    "apertus": ("apertus", None),
    "cohere-command-a-reasoning": ("cohere_command4", "cohere_command4"),
    "cohere-command-r7b": ("cohere_command3", "cohere_command3"),
    "deepseek-r1": ("deepseek_v3", "deepseek_r1"),
    "deepseek-v3": ("deepseek_v3", None),
    "deepseek-v3.1": ("deepseek_v31", "deepseek_v3"),
    "deepseek-v3.2": ("deepseek_v32", "deepseek_v3"),
    "deepseek-v4": ("deepseek_v4", "deepseek_v4"),
    "deepseek-v4.1": ("deepseek_v41", "deepseek_v41"),
    "dots": ("dots", None),
    "ernie-4.5": ("ernie45", "ernie45"),
    "gemma-4": ("gemma4", "gemma4"),
    "gigachat3": ("gigachat3", None),
    "gigachat3.5": ("gigachat3", None),
    "glm-4.5": ("glm45", "glm45"),
    "glm-4.7": ("glm47", "glm47"),
    "granite-20b-fc": ("granite-20b-fc", None),
    "granite-3": ("granite", "granite"),
    "granite-4": ("granite4", None),
    "hermes": ("hermes", None),
    "holo2": ("hermes", "holo2"),
    "hunyuan-a13b": ("hunyuan_a13b", "hunyuan_a13b"),
    "hy-v4": ("hy_v4", "hy_v4"),
    "hy3": ("hy_v3", "hy_v3"),
    "inkling": ("inkling", "inkling"),
    "internlm2": ("internlm", None),
    "jamba": ("jamba", None),
    "k2-horizon": ("k2_horizon", "k2_horizon"),
    "kimi-k2": ("kimi_k2", "kimi_k2"),
    "kimi-k2-instruct": ("kimi_k2", None),
    "kimi-k3": ("kimi_k3", "kimi_k3"),
    "lfm2": ("lfm2", None),
    "ling-3": ("ling3", "ling3"),
    "llama-3-json": ("llama3_json", None),
    "longcat": ("longcat", None),
    "mimo-v2-flash": ("mimo", "mimo"),
    "minicpm5": ("minicpm5", None),
    "minimax-m2": ("minimax_m2", "minimax_m2"),
    "minimax-m3": ("minimax_m3", "minimax_m3"),
    "mistral-v3": ("mistral", None),
    "mistral-v11": ("mistral", "mistral"),
    "mistral-v11-call-id": ("mistral", "mistral"),
    "muse-glimmer": ("muse_glimmer", "muse_glimmer"),
    "nemotron-3-nano": ("qwen3_coder", "nemotron_v3"),
    "olmo-3": ("olmo3", "olmo3"),
    "phi-4-mini": ("phi4_mini_json", None),
    "pythonic": ("pythonic", None),
    "qwen3": ("hermes", "qwen3"),
    "qwen3-coder": ("qwen3_coder", "qwen3"),
    "qwen3-coder-instruct": ("qwen3_coder", None),
    "qwen3-instruct-2507": ("hermes", None),
    "seed-oss": ("seed_oss", "seed_oss"),
    "step-3": ("step3", "step3"),
    "step-3.5": ("step3p5", "step3p5"),
    "xlam": ("xlam", None),
}


def _quiet() -> None:
    warnings.simplefilter("ignore")
    logging.disable(logging.WARNING)
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")


def _serve(srv: Any, case: Any, stream: bool) -> tuple[Any, float]:
    start = time.perf_counter()
    try:
        got = srv.run(case, stream=stream)
    except Exception as exc:  # a parser that raises: the client gets a server error
        got = {"error": f"{type(exc).__name__}: {exc}"}
    elapsed = time.perf_counter() - start
    if not isinstance(got, dict):  # an ErrorResponse
        got = {"error": str(getattr(got, "error", got))}
    return got, elapsed


def run_family(family: str, repeat: int) -> dict[str, Any]:
    import vllm_harness as H

    from response_templates.engines import vllm as plugin
    from response_templates.engines.common import TEMPLATE_ENV

    os.environ[TEMPLATE_ENV] = family
    cases = H.cases(family)
    pair = VLLM_PARSERS.get(family)
    servers: dict[str, Any] = {"none": H.server(family, tool_parser=None, reasoning_parser=None)}
    servers["ours"] = H.server(family, tool_parser=plugin.NAME, reasoning_parser=plugin.NAME)
    row: dict[str, Any] = {"family": family, "vllm_parsers": pair}
    row["outputs"] = sum(1 for case in cases if case.kind != "difference")
    if pair is not None:
        try:
            servers["vllm"] = H.server(family, tool_parser=pair[0], reasoning_parser=pair[1])
        except Exception as exc:
            row["vllm_error"] = f"{type(exc).__name__}: {exc}"
    for srv in servers.values():
        srv.engine.chunk = 1
    tokens = 0
    times: dict[str, list[float]] = {name: [] for name in servers}
    for name in servers:
        row[name] = {"whole": 0, "streamed": 0}
    row["differences"] = sum(1 for case in cases if case.kind == "difference")
    for case in cases:
        if case.kind == "difference":
            continue  # the expectation is another implementation's choice (docs/differences.md)
        n = len(servers["ours"].tokenizer.encode(case.raw, add_special_tokens=False)) or 1
        tokens += n
        for name, srv in servers.items():
            if name == "none":
                continue
            for stream in (False, True):
                got, _ = _serve(srv, case, stream)
                ok = (got == case.ours and case.ours_right) or case.right(got)
                row[name]["streamed" if stream else "whole"] += ok
                if not ok and name == "ours" and got != case.ours:
                    row.setdefault("ours_differs", []).append(case.id)
        for name, srv in servers.items():
            best = min(_serve(srv, case, True)[1] for _ in range(repeat))
            times[name].append(best / n)
    base = statistics.median(times["none"])
    for name in servers:
        if name != "none":
            row[name]["us_per_token"] = max(0.0, (statistics.median(times[name]) - base) * 1e6)
    row["tokens"] = tokens
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--families", help="comma-separated library families (default: all with outputs)")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per output (the best counts)")
    parser.add_argument("--json", type=Path, help="also write the rows as JSON")
    args = parser.parse_args(argv)
    _quiet()
    import vllm_harness as H

    from response_templates.engines import vllm as plugin

    plugin.register()
    families = (
        args.families.split(",")
        if args.families
        else [f for f in H.families_with_samples() if f != "gpt-oss"]
    )
    rows = [run_family(f, args.repeat) for f in families]

    table = []
    total = {
        "n": 0,
        "ours_w": 0,
        "ours_s": 0,
        "cov_n": 0,
        "cov_ours_w": 0,
        "cov_ours_s": 0,
        "v_w": 0,
        "v_s": 0,
    }
    for r in rows:
        ours, theirs = r["ours"], r.get("vllm")
        total["n"] += r["outputs"]
        total["ours_w"] += ours["whole"]
        total["ours_s"] += ours["streamed"]
        if theirs is not None:
            total["cov_n"] += r["outputs"]
            total["cov_ours_w"] += ours["whole"]
            total["cov_ours_s"] += ours["streamed"]
            total["v_w"] += theirs["whole"]
            total["v_s"] += theirs["streamed"]
        pair = r["vllm_parsers"]
        label = "-" if pair is None else " + ".join(p for p in pair if p)
        if "vllm_error" in r:
            label += " (fails at start-up)"
        table.append(
            [
                r["family"],
                str(r["outputs"]),
                f"{ours['whole']} / {ours['streamed']}",
                f"{ours['us_per_token']:.0f}",
                label,
                "-" if theirs is None else f"{theirs['whole']} / {theirs['streamed']}",
                "-" if theirs is None else f"{theirs['us_per_token']:.0f}",
            ]
        )
    headers = [
        "family",
        "outputs",
        "ours right (whole / streamed)",
        "ours µs/token",
        "vLLM parser",
        "vLLM right",
        "vLLM µs/token",
    ]
    print(format_table(headers, table, "lrrrlrr"))
    print()
    print(
        f"all families: ours {total['ours_w']}/{total['n']} whole, {total['ours_s']}/{total['n']} streamed; "
        f"where vLLM has a parser ({total['cov_n']} outputs): ours {total['cov_ours_w']} / {total['cov_ours_s']}, "
        f"vLLM {total['v_w']} / {total['v_s']}; families without a vLLM parser: "
        f"{sum(1 for r in rows if r['vllm_parsers'] is None)}; left out as documented differences: "
        f"{sum(r['differences'] for r in rows)} outputs"
    )
    for r in [r for r in rows if "vllm_error" in r]:
        print(f"vLLM's parser for {r['family']} fails at start-up: {r['vllm_error'].splitlines()[0]}")
    ours_cost = [r["ours"]["us_per_token"] for r in rows]
    theirs_cost = [r["vllm"]["us_per_token"] for r in rows if "vllm" in r]
    if ours_cost and theirs_cost:
        print(
            f"parser cost per token above no parser (median over families): ours {statistics.median(ours_cost):.0f} µs, "
            f"vLLM's {statistics.median(theirs_cost):.0f} µs"
        )
    differs = {r["family"]: r["ours_differs"] for r in rows if r.get("ours_differs")}
    if differs:
        print(f"served differently from our own parse: {differs}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
