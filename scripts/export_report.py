"""Export every library family to each target and check the export where it is consumed.

For each family with a template and each target (transformers 5.25, vLLM, SGLang) this script exports the
template (``rt.templates.export``), then runs **transformers 5.25's own parser**
(``transformers.utils.chat_parsing.parse_response``; the engines vendor a fork of its 5.23 version, and
their exports keep to that vocabulary) with the exported template on the family's recorded outputs, and
counts the samples that it reads the same as we do with our template: the same message (values and their types; the engines' ``thinking`` read back as
``reasoning_content``), or both refusing the output. Prompts and tools per sample follow
``tests/library_samples.py``. ``scripts/gen_models_doc.py`` puts the result in docs/models.md.

Usage::

    python scripts/export_report.py                  # the table, one line per family
    python scripts/export_report.py --family qwen3   # also every sample read differently
    python scripts/export_report.py --samples ../shared/research/model_output_samples.jsonl

Needs transformers 5.25 (a test-only dependency of this project).
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT / "tests") not in sys.path:
    sys.path.insert(0, str(ROOT / "tests"))

import library_samples  # noqa: E402
import response_templates as rt  # noqa: E402
from response_templates import library  # noqa: E402
from response_templates.export import ENGINE_RENAMES, TARGETS, ExportError, ExportResult, export  # noqa: E402

__all__ = [
    "ORACLE",
    "TARGETS",
    "TARGET_TITLES",
    "FamilyReport",
    "Sample",
    "TargetResult",
    "family_report",
    "load_samples",
    "main",
    "report",
    "strict_equal",
    "totals",
]

#: What the proof runs: the reference parser (the engines vendor a fork of its 5.23 version).
ORACLE = "transformers 5.25"
TARGET_TITLES = {"transformers": "transformers", "vllm": "vLLM", "sglang": "SGLang"}


@cache
def _reference() -> Any:
    """transformers' parse_response (imported once; its anchor-not-found log lines silenced)."""
    try:
        from transformers.utils import chat_parsing
    except ImportError as exc:  # pragma: no cover - the dev environment has it
        raise SystemExit(f"export_report needs transformers 5.25 (a test dependency): {exc}") from None
    logging.getLogger("transformers.utils.chat_parsing").setLevel(logging.ERROR)
    return chat_parsing.parse_response


@dataclass(frozen=True)
class Sample:
    """One recorded output with the prompt and tools it is parsed with."""

    id: str
    raw: str
    prefix: str
    tools: list[Any] | None


@dataclass
class TargetResult:
    """One family exported to one target, and how the target reads the family's samples."""

    target: str
    #: ``exportable``, ``exportable with warnings`` or ``not exportable``.
    verdict: str
    #: Why not exportable (the error), or the warnings.
    reasons: list[str] = field(default_factory=list)
    same: int = 0
    total: int = 0
    #: Sample ids read differently, with both readings.
    differing: list[tuple[str, Any, Any]] = field(default_factory=list)


@dataclass
class FamilyReport:
    name: str
    results: dict[str, TargetResult]


def strict_equal(a: Any, b: Any) -> bool:
    """Equal values of equal JSON types (``1``, ``1.0`` and ``True`` differ; key order does not matter)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(strict_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(strict_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return type(a) is type(b) and a == b


def load_samples(path: Path | None = None) -> dict[str, list[Sample]]:
    """The recorded outputs by library family (complete outputs only), with prompts and tools."""
    table = library_samples.load_tools()
    if path is None:
        records = library_samples.load_samples()
    else:
        with path.open(encoding="utf-8") as f:
            records = [json.loads(line) for line in f if line.strip()]
    out: dict[str, list[Sample]] = {}
    for number, record in enumerate(records):
        if record.get("partial"):
            continue
        record = {**record, "expected": record.get("expected") or {}, "context": record.get("context") or {}}
        name = library_samples.family_of(record)
        if name is None or not library.family(name).has_template:
            continue
        fam = library.family(name)
        prefix, _ = library_samples.prefix_for(record, fam)
        tools, _ = library_samples.tools_for(record, table)
        sample_id = record.get("id", f"L{number:04d}")
        out.setdefault(name, []).append(Sample(sample_id, record["raw"], prefix, tools))
    return out


def _ours(template: rt.ResponseTemplate, sample: Sample) -> Any:
    try:
        message = rt.parse_response(sample.raw, template, prefix=sample.prefix, tools=sample.tools)
        assert isinstance(message, dict)
        return dict(message)
    except rt.ResponseTemplateError as exc:
        return {"<error>": type(exc).__name__}


def _theirs(result: ExportResult, sample: Sample) -> Any:
    back = {new: old for old, new in ENGINE_RENAMES.items()} if result.target != "transformers" else {}
    try:
        message = _reference()(sample.raw, result.template, prefix=sample.prefix, tools=sample.tools)
    except Exception as exc:  # the reference raises ValueError, KeyError, TypeError, ...
        return {"<error>": type(exc).__name__}
    return {back.get(k, k): v for k, v in message.items()}


def _agrees(ours: Any, theirs: Any) -> bool:
    if "<error>" in ours or "<error>" in theirs:
        return "<error>" in ours and "<error>" in theirs
    return strict_equal(ours, theirs)


def family_report(
    fam: library.Family, samples: Sequence[Sample], targets: Sequence[str] = TARGETS
) -> FamilyReport:
    template = fam.template()
    ours = [_ours(template, s) for s in samples]
    results: dict[str, TargetResult] = {}
    cache_by_template: dict[str, tuple[int, list[tuple[str, Any, Any]]]] = {}
    for target in targets:
        try:
            exported = export(fam.name, target=target)
        except ExportError as exc:
            where = ", ".join(
                part
                for part in (
                    f"field {exc.field!r}" if exc.field else "",
                    f"key {exc.key!r}" if exc.key else "",
                )
                if part
            )
            results[target] = TargetResult(
                target, "not exportable", [f"{where}: {exc.reason}"], 0, len(samples)
            )
            continue
        renames = target != "transformers"  # the engines' names are read back (thinking -> reasoning_content)
        key = f"{renames}:{json.dumps(exported.template, sort_keys=True)}"
        if key not in cache_by_template:
            differing = []
            same = 0
            for sample, mine in zip(samples, ours, strict=True):
                theirs = _theirs(exported, sample)
                if _agrees(mine, theirs):
                    same += 1
                else:
                    differing.append((sample.id, mine, theirs))
            cache_by_template[key] = (same, differing)
        same, differing = cache_by_template[key]
        results[target] = TargetResult(
            target, exported.verdict, [str(w) for w in exported.warnings], same, len(samples), differing
        )
    return FamilyReport(fam.name, results)


def report(samples_path: Path | None = None) -> dict[str, FamilyReport]:
    """Every family with its own template (families sharing one are reported under it), by name."""
    samples = load_samples(samples_path)
    out: dict[str, FamilyReport] = {}
    for fam in library.families():
        if not fam.has_template:
            continue
        out[fam.name] = family_report(fam, samples.get(fam.name, []))
    return out


def totals(reports: Mapping[str, FamilyReport]) -> dict[str, dict[str, int]]:
    """Per target: families by verdict, and samples read the same / checked over exportable families."""
    out: dict[str, dict[str, int]] = {}
    for target in TARGETS:
        row = {"exportable": 0, "exportable with warnings": 0, "not exportable": 0, "same": 0, "total": 0}
        for rep in reports.values():
            res = rep.results[target]
            row[res.verdict] += 1
            if res.verdict != "not exportable":
                row["same"] += res.same
                row["total"] += res.total
        out[target] = row
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--samples", type=Path, help="a samples file (default: tests/data/model_output_samples.jsonl)"
    )
    parser.add_argument("--family", help="show every sample of this family read differently")
    args = parser.parse_args(argv)
    reports = report(args.samples)
    for name, rep in reports.items():
        cells = []
        for target, res in rep.results.items():
            agreement = f"{res.same}/{res.total}" if res.verdict != "not exportable" else "-"
            cells.append(f"{target}: {res.verdict} {agreement}")
        print(f"{name:28} " + " | ".join(cells))
        if args.family == name:
            for target, res in rep.results.items():
                for reason in res.reasons:
                    print(f"  {target}: {reason}")
                for sample_id, mine, theirs in res.differing:
                    print(f"  {target} {sample_id}\n    ours:   {mine!r}\n    theirs: {theirs!r}")
    for target, row in totals(reports).items():
        print(
            f"{target}: {row['exportable']} exportable, {row['exportable with warnings']} with warnings, "
            f"{row['not exportable']} not exportable; {row['same']} of {row['total']} samples read the same "
            f"by {ORACLE}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
