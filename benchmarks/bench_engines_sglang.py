"""Our SGLang plugin beside SGLang 0.5.23's own per-family detectors, inside SGLang's own chat serving.

Every recorded output of every library family (``tests/library_samples.py``) is served by SGLang's
``OpenAIServingChat`` with a tokenizer-manager stand-in that replays it as SGLang's detokenized text
(``tests/engines/sglang_harness.py``), once whole and once streamed (one token per step), with

* **ours**: ``--tool-call-parser response_templates --reasoning-parser response_templates``;
* **SGLang's**: the detector pair SGLang names for that family (:data:`SGLANG_PARSERS`; ``-`` where it has
  none), under the same flags a user would pass;
* **none**: no parser at all, the baseline whose time is subtracted: what remains is the parsers' cost.

Right means what the client receives equals the recorded expected message, by the library judge's rule
(``Case.right``), or equals our own parse where the judge accepts that. SGLang makes tool-call ids
itself (random, or ``functions.NAME:N`` for its ``kimi_k2`` parser), so an expected model-written id is
only met by that parser. Cost is the serving time per generated token above the no-parser baseline,
streamed, in µs (median of the family's outputs, best of ``--repeat`` runs). Needs the SGLang venv
(``make .venv-sglang/.installed``), then::

    .venv-sglang/bin/python benchmarks/bench_engines_sglang.py                 # every family
    .venv-sglang/bin/python benchmarks/bench_engines_sglang.py --families qwen3,kimi-k2 --json out.json
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

#: SGLang 0.5.23's own detectors per library family, ``(tool-call parser, reasoning parser)``, as its
#: registries name them (``None``: SGLang has none for that part).
SGLANG_PARSERS: dict[str, tuple[str | None, str | None]] = {
    "apertus": ("apertus2509", "apertus2509"),
    "cohere-command-a-reasoning": ("cohere_command4", "cohere_command4"),
    "deepseek-r1": ("deepseekv3", "deepseek-r1"),
    "deepseek-v3": ("deepseekv3", None),
    "deepseek-v3.1": ("deepseekv31", "deepseek-v3"),
    "deepseek-v3.2": ("deepseekv32", "deepseek-v3"),
    "deepseek-v4": ("deepseekv4", "deepseek-v4"),
    "deepseek-v4.1": ("deepseekv41", "deepseek-v41"),
    "dots": ("dots", "dots"),
    "gemma-4": ("gemma4", "gemma4"),
    "gigachat3": ("gigachat3", None),
    "gigachat3.5": ("gigachat35", "gigachat35"),
    "glm-4.5": ("glm45", "glm45"),
    "glm-4.7": ("glm47", "glm45"),
    "granite-4.2": ("qwen3_coder", "granite_thinking_parser"),
    "gpt-oss": ("gpt-oss", "gpt-oss"),
    "hermes": ("hermes", None),
    "hunyuan-a13b": ("hunyuan", "hunyuan"),
    "inkling": ("inkling", "inkling"),
    "internlm2": ("interns1", None),
    "iquest-coder": ("iquest_q1", "iquest_q1"),
    "k2-horizon": ("k2_horizon", "k2_horizon"),
    "kimi-k1.5": (None, "kimi"),
    "kimi-k2": ("kimi_k2", "kimi_k2"),
    "kimi-k2-instruct": ("kimi_k2", None),
    "kimi-k3": ("kimi_k3", "kimi_k3"),
    "lfm2": ("lfm2", None),
    "ling-3": ("ling3", "ling3"),
    "llama-3-json": ("llama3", None),
    "mimo-v2-flash": ("mimo", "mimo"),
    "minicpm5": ("minicpm5", None),
    "minimax-m1": (None, "minimax"),
    "minimax-m2": ("minimax-m2", "minimax-append-think"),
    "minimax-m3": ("minimax-m3", "minimax-m3"),
    "mistral-v3": ("mistral", None),
    "mistral-v11": ("mistral", "mistral"),
    "mistral-v11-call-id": ("mistral", "mistral"),
    "muse-glimmer": ("muse", "muse"),
    "nemotron-3-nano": ("qwen3_coder", "nemotron_3"),
    "pythonic": ("pythonic", None),
    "qwen3": ("qwen25", "qwen3"),
    "qwen3-coder": ("qwen3_coder", "qwen3"),
    "qwen3-coder-instruct": ("qwen3_coder", None),
    "qwen3-instruct-2507": ("qwen25", None),
    "step-3": ("step3", "step3"),
    "step-3.5": ("step3p5", "step3p5"),
    "trinity": ("trinity", None),
}


def run_family(family: str, repeat: int) -> dict[str, Any]:
    import sglang_harness as H

    from response_templates.engines import sglang as plugin
    from response_templates.engines.common import TEMPLATE_ENV

    os.environ[TEMPLATE_ENV] = family
    pair = SGLANG_PARSERS.get(family)
    names: dict[str, tuple[str | None, str | None]] = {
        "none": (None, None),
        "ours": (plugin.NAME, plugin.NAME),
    }
    if pair is not None:
        names["sglang"] = pair
    row: dict[str, Any] = {"family": family, "sglang_parsers": pair}
    servers: dict[str, Any] = {}
    for name, (tool, reasoning) in names.items():
        try:
            servers[name] = H.server(family, tool_parser=tool, reasoning_parser=reasoning)
            servers[name].manager.chunk = 1
        except Exception as exc:
            row[f"{name}_error"] = f"{type(exc).__name__}: {exc}"
    tokenizer = H.hf_tokenizer(family)
    return run_family_rows(
        row,
        H.cases(family),
        servers,
        repeat=repeat,
        tokens_of=lambda case: len(tokenizer.encode(case.raw, add_special_tokens=False)),
        same=lambda got, ours: H.without_ids(got) == H.without_ids(ours),  # SGLang names every call
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--families", help="comma-separated library families (default: all with outputs)")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per output (the best counts)")
    parser.add_argument("--json", type=Path, help="also write the rows as JSON")
    args = parser.parse_args(argv)
    quiet()
    import sglang_harness as H

    from response_templates.engines import sglang as plugin

    plugin.register()
    families = args.families.split(",") if args.families else H.families_with_samples()
    report([run_family(f, args.repeat) for f in families], "SGLang", "sglang", args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
