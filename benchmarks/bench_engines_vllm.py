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
import os
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "engines"), str(Path(__file__).resolve().parent)]

from _engine_bench import quiet, report  # noqa: E402
from _engine_bench import run_family as run_family_rows  # noqa: E402

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
    "granite-4.2": ("granite_toolcall_parser", "granite_thinking_parser"),
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
    # vLLM 0.34's ``muse`` (alias ``musespark``, renamed from ``musespark1x``) is the Muse Spark profile.
    "muse-glimmer": ("muse_glimmer", "muse_glimmer"),
    "nemotron-3-nano": ("qwen3_coder", "nemotron_v3"),
    "olmo-3": ("olmo3", "olmo3"),
    "phi-4-mini": ("phi4_mini_json", None),
    "plamo-3": ("plamo3", "plamo3"),
    "pythonic": ("pythonic", None),
    "qwen3": ("hermes", "qwen3"),
    "qwen3-coder": ("qwen3_coder", "qwen3"),
    "qwen3-coder-instruct": ("qwen3_coder", None),
    "qwen3-instruct-2507": ("hermes", None),
    "ripple": ("ripple", "ripple"),
    "seed-oss": ("seed_oss", "seed_oss"),
    "step-3": ("step3", "step3"),
    "step-3.5": ("step3p5", "step3p5"),
    "xlam": ("xlam", None),
    "zaya1": ("zaya", "zaya"),
}


def run_family(family: str, repeat: int) -> dict[str, Any]:
    import vllm_harness as H

    from response_templates.engines import vllm as plugin
    from response_templates.engines.common import TEMPLATE_ENV

    os.environ[TEMPLATE_ENV] = family
    pair = VLLM_PARSERS.get(family)
    row: dict[str, Any] = {"family": family, "vllm_parsers": pair}
    servers: dict[str, Any] = {"none": H.server(family, tool_parser=None, reasoning_parser=None)}
    servers["ours"] = H.server(family, tool_parser=plugin.NAME, reasoning_parser=plugin.NAME)
    if pair is not None:
        try:
            servers["vllm"] = H.server(family, tool_parser=pair[0], reasoning_parser=pair[1])
        except Exception as exc:
            row["vllm_error"] = f"{type(exc).__name__}: {exc}"
    for srv in servers.values():
        srv.engine.chunk = 1
    tokenizer = servers["ours"].tokenizer
    return run_family_rows(
        row,
        H.cases(family),
        servers,
        repeat=repeat,
        tokens_of=lambda case: len(tokenizer.encode(case.raw, add_special_tokens=False)),
        same=lambda got, ours: got == ours,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--families", help="comma-separated library families (default: all with outputs)")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per output (the best counts)")
    parser.add_argument("--json", type=Path, help="also write the rows as JSON")
    args = parser.parse_args(argv)
    quiet()
    import vllm_harness as H

    from response_templates.engines import vllm as plugin

    plugin.register()
    families = (
        args.families.split(",")
        if args.families
        else [f for f in H.families_with_samples() if f != "gpt-oss"]
    )
    report([run_family(f, args.repeat) for f in families], "vLLM", "vllm", args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
