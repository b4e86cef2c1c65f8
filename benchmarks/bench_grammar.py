"""Cost of the grammars ``response_templates.grammar`` builds, per library family.

For each family whose template compiles: the time to build the grammar (``grammar.build`` with three
tools, ``tool_choice="auto"``), llguidance's compile time (an ``LLMatcher`` for the Lark form) and its
mean mask time per token along a random walk, over a byte-level BPE tokenizer trained for the family
(the proofs' tokenizer: a small vocabulary, so mask times are far below a 150k-token model's; compare
rows with each other, not with a serving engine). When xgrammar is installed (``make test-grammar``'s
venv), the same for our structural tag compiled by xgrammar, and for xgrammar's own hand-written tag of
the family where it has one (``get_model_structural_tag``), side by side.

Usage::

    python benchmarks/bench_grammar.py                      # every compiled family
    python benchmarks/bench_grammar.py --families qwen3,kimi-k2 --steps 100 --json out.json
    .venv-vllm/bin/python benchmarks/bench_grammar.py --completeness [--markdown]
        # the recorded outputs each family's auto grammar accepts, Lark and structural tag side by side
    .venv-vllm/bin/python benchmarks/bench_grammar.py --against vllm [--walks 20] [--markdown]
        # every library family beside vLLM 0.34's own template grammar (benchmarks/_grammar_vs_vllm.py)
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from _common import fmt_num, format_table

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "grammar"))

import grammar_harness as gh

from response_templates import grammar, library

try:
    import xgrammar as xgr
except Exception:  # pragma: no cover - xgrammar is optional (it needs torch)
    xgr = None

#: xgrammar's hand-written styles, by our family.
XGRAMMAR_STYLES = {
    "llama-3-json": "llama",
    "qwen3": "qwen_3",
    "qwen3-coder": "qwen_3_coder",
    "kimi-k2": "kimi",
    "deepseek-r1": "deepseek_r1",
    "gpt-oss": "harmony",
    "deepseek-v3.2": "deepseek_v3_2",
    "minimax-m2": "minimax",
    "deepseek-v3.1": "deepseek_v3_1",
    "deepseek-v4": "deepseek_v4",
    "glm-4.7": "glm_4_7",
    "kimi-k3": "kimi_k3",
    "minimax-m3": "minimax_m3",
    "gemma-4": "gemma_4",
}
TOOLS = gh.WALK_TOOLS


def _median_ms(fn: Callable[[], Any], reps: int) -> float:
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


def llguidance_row(family: str, steps: int, reps: int) -> dict[str, Any]:
    prompt = library.family(family).generation_prompt
    build_ms = _median_ms(lambda: grammar.build(family, tools=TOOLS, tool_choice="auto", prefix=prompt), reps)
    g, engine = gh.build_with_tokens(grammar, family, tools=TOOLS, tool_choice="auto", prefix=prompt)
    compile_ms = _median_ms(lambda: engine.matcher(g.lark), reps)
    matcher = engine.matcher(g.lark)
    rng = random.Random(family)
    mask_times: list[float] = []
    for _ in range(steps):
        if matcher.is_stopped():
            matcher = engine.matcher(g.lark)
        t0 = time.perf_counter()
        allowed = engine.allowed(matcher)
        mask_times.append(time.perf_counter() - t0)
        choices = allowed[allowed != engine.eos] if len(allowed) > 1 else allowed
        token = int(choices[rng.randrange(len(choices))])
        if token == engine.eos or not matcher.consume_token(token):
            matcher = engine.matcher(g.lark)
    return {
        "family": family,
        "vocab": engine.vocab_size,
        "build_ms": build_ms,
        "llg_compile_ms": compile_ms,
        "llg_mask_us": statistics.mean(mask_times) * 1e6,
        "structural_tag": g.structural_tag,
    }


def _xgr_costs(tag_json: str, engine: gh.Engine, steps: int, reps: int, seed: str) -> tuple[float, float]:
    """(compile ms, mean mask µs per token) of a structural tag in xgrammar."""
    assert xgr is not None
    vocab = [
        engine.ll.decode_bytes([i]) if i != engine.eos else gh.EOS.encode() for i in range(engine.vocab_size)
    ]
    info = xgr.TokenizerInfo(vocab, xgr.VocabType.RAW, stop_token_ids=[engine.eos])

    def compile_once() -> Any:
        return xgr.GrammarCompiler(info, cache_enabled=False).compile_structural_tag(tag_json)

    compile_ms = _median_ms(compile_once, reps)
    compiled = compile_once()
    matcher = xgr.GrammarMatcher(compiled)
    bitmask = xgr.allocate_token_bitmask(1, engine.vocab_size)
    rng = random.Random(seed)
    import numpy as np

    times: list[float] = []
    for _ in range(steps):
        if matcher.is_terminated():
            matcher = xgr.GrammarMatcher(compiled)
        t0 = time.perf_counter()
        matcher.fill_next_token_bitmask(bitmask)
        times.append(time.perf_counter() - t0)
        bits = np.unpackbits(bitmask[0].numpy().view(np.uint8), bitorder="little")[: engine.vocab_size]
        allowed = [int(i) for i in np.flatnonzero(bits) if i != engine.eos] or [engine.eos]
        token = allowed[rng.randrange(len(allowed))]
        if not matcher.accept_token(token) or token == engine.eos:
            matcher = xgr.GrammarMatcher(compiled)
    return compile_ms, statistics.mean(times) * 1e6


def xgrammar_row(row: dict[str, Any], steps: int, reps: int) -> dict[str, Any]:
    if xgr is None:
        return {}
    family = row["family"]
    engine = gh.engine_for(())
    out: dict[str, Any] = {}
    try:
        out["xgr_ours_compile_ms"], out["xgr_ours_mask_us"] = _xgr_costs(
            json.dumps(row["structural_tag"]), engine, steps, reps, family
        )
    except Exception as exc:  # our tag refused by xgrammar: shown, not hidden
        out["xgr_ours_error"] = f"{type(exc).__name__}: {exc}"[:120]
    style = XGRAMMAR_STYLES.get(family)
    if style is not None:
        tag = xgr.get_model_structural_tag(style, tools=TOOLS, tool_choice="auto", reasoning="auto")
        out["xgr_builtin"] = style
        out["xgr_builtin_compile_ms"], out["xgr_builtin_mask_us"] = _xgr_costs(
            tag.model_dump_json(), engine, steps, reps, family
        )
    return out


def completeness_report(families: Sequence[str] | None, markdown: bool, json_path: str | None) -> int:
    """``--completeness``: per compiled family, the recorded outputs that count (complete, calls valid for
    their tools) and how many of them the ``auto`` grammar accepts as Lark in llguidance and, with
    xgrammar, as structural tag; then the totals, the families under the target, the outputs on which the
    two formats disagree, and the reviewed exceptions (tests/data/grammar_exceptions.json)."""
    import test_grammar_completeness as tc

    wanted = set(tc.compiled_families()) & (set(families) if families else set(tc.compiled_families()))
    cases = [c for c in gh.sample_cases()[0] if c.family in wanted and not c.incomplete]
    tag: dict[str, bool | None] = {}
    lark: dict[str, bool] = {}
    xh: Any = None
    if xgr is not None:
        import xgrammar_harness as xh
    for case in cases:
        if xh is not None:
            v = xh.judge_case(case)
            tag[case.id], lark[case.id] = v.tag, v.lark
        else:
            kwargs: dict[str, Any] = {"tools": case.tools or [], "tool_choice": "auto", "prefix": case.prefix}
            g, engine = gh.build_with_tokens(grammar, case.family, **kwargs)
            lark[case.id] = engine.accepts(g.lark, case.raw)[0]
    per: dict[str, list[int]] = {}
    for case in cases:
        row = per.setdefault(case.family, [0, 0, 0])
        row[0] += 1
        row[1] += lark[case.id]
        row[2] += bool(tag.get(case.id))
    target = tc.TARGET
    headers = ["family", "counted", "Lark (llguidance)"] + (["structural tag (xgrammar)"] if tag else [])
    table = []
    for name in sorted(per):
        n, a_lark, a_tag = per[name]
        cells = [name, str(n), f"{a_lark} ({a_lark / n:.0%})"]
        if tag:
            cells.append(f"{a_tag} ({a_tag / n:.0%})")
        table.append(cells)
    if markdown:
        print("| " + " | ".join(headers) + " |")
        print("|" + "---|" * len(headers))
        for cells in table:
            print("| " + " | ".join(cells) + " |")
    else:
        print(format_table(headers, table))
    counted = sum(r[0] for r in per.values())
    print(
        f"\ncompiled families {len(tc.compiled_families())} of {len(grammar.coverage())}; "
        f"with counted outputs {len(per)}; counted outputs {counted}"
    )
    for label, column in (("Lark (llguidance)", 1), ("structural tag (xgrammar)", 2)):
        if column == 2 and not tag:
            print("structural tag: xgrammar not installed (run with .venv-vllm/bin/python)")
            continue
        accepted = sum(r[column] for r in per.values())
        under = sorted(f"{k} {r[column]}/{r[0]}" for k, r in per.items() if r[column] < target * r[0])
        print(
            f"{label}: accepted {accepted}/{counted} ({accepted / max(counted, 1):.1%}); families at "
            f"{target:.0%} or more {len(per) - len(under)}/{len(per)}"
            + (f"; under: {', '.join(under)}" if under else "")
        )
    if tag:
        differ = sorted(i for i in lark if bool(tag.get(i)) != lark[i])
        print(
            f"outputs the two formats judge differently: {len(differ)}"
            + (f" ({', '.join(differ)})" if differ else "")
        )
    exceptions = tc.load_grammar_exceptions()
    listed = sorted(i for i in exceptions if any(c.id == i for c in cases))
    print(
        f"\nreviewed exceptions (rejected by the grammar, tests/data/grammar_exceptions.json): {len(listed)}"
    )
    for i in listed:
        print(f"  {i} [{exceptions[i]['kind']}]: {exceptions[i]['reason']}")
    if json_path:
        rows = [
            {"family": k, "counted": r[0], "lark": r[1], "tag": r[2] if tag else None} for k, r in per.items()
        ]
        Path(json_path).write_text(json.dumps(rows, indent=1), encoding="utf-8")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--families", help="comma-separated family names (default: every compiled family)")
    parser.add_argument("--steps", type=int, default=200, help="tokens per mask-time walk")
    parser.add_argument("--reps", type=int, default=5, help="repetitions of each build and compile")
    parser.add_argument("--json", help="write the rows to this file")
    parser.add_argument(
        "--against",
        choices=["vllm"],
        help="beside vLLM's own template grammar (needs vLLM 0.34 and xgrammar: run with .venv-vllm)",
    )
    parser.add_argument(
        "--walks", type=int, default=20, help="with --against: random walks per mode and grammar"
    )
    parser.add_argument("--markdown", action="store_true", help="with --against: the table in Markdown")
    parser.add_argument(
        "--completeness",
        action="store_true",
        help="the share of recorded complete outputs each family's auto grammar accepts, in both formats "
        "(the structural tag needs xgrammar: run with .venv-vllm), with the exception list",
    )
    args = parser.parse_args(argv)
    if args.completeness:
        return completeness_report(
            args.families.split(",") if args.families else None, args.markdown, args.json
        )
    if args.against == "vllm":
        import _grammar_vs_vllm

        families = args.families.split(",") if args.families else None
        return _grammar_vs_vllm.run(families, args.walks, args.steps, args.reps, args.json, args.markdown)
    compiled = sorted(name for name, cov in grammar.coverage().items() if cov.compiles)
    families = args.families.split(",") if args.families else compiled
    rows = []
    for family in families:
        row = llguidance_row(family, args.steps, args.reps)
        row.update(xgrammar_row(row, args.steps, args.reps))
        row.pop("structural_tag")
        rows.append(row)
    headers = ["family", "vocab", "build ms", "llg compile ms", "llg mask µs/token"]
    if xgr is not None:
        headers += [
            "xgr ours compile ms",
            "xgr ours mask µs",
            "xgr built-in",
            "built-in compile ms",
            "built-in mask µs",
        ]
    table = []
    for r in rows:
        cells = [
            r["family"],
            str(r["vocab"]),
            fmt_num(r["build_ms"]),
            fmt_num(r["llg_compile_ms"]),
            fmt_num(r["llg_mask_us"]),
        ]
        if xgr is not None:
            cells += [
                fmt_num(r.get("xgr_ours_compile_ms")) if "xgr_ours_error" not in r else "refused",
                fmt_num(r.get("xgr_ours_mask_us")),
                r.get("xgr_builtin", "-"),
                fmt_num(r.get("xgr_builtin_compile_ms")),
                fmt_num(r.get("xgr_builtin_mask_us")),
            ]
        table.append(cells)
    print(format_table(headers, table))
    if xgr is None:
        print("(xgrammar not installed: its columns are left out; `make test-grammar` installs it)")
    for r in rows:
        if "xgr_ours_error" in r:
            print(f"xgrammar refused our tag for {r['family']}: {r['xgr_ours_error']}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
