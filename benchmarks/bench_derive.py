"""Response templates derived from chat templates, measured against the library's hand-written ones.

For each of the 70 chat templates in ``../shared/chat_templates/`` (``--dir``): whether
``rt.templates.derive`` gives a template, its confidence, how its reasoning and tool-call markers compare
with the template of the library family the chat template belongs to (the library is only the oracle
here: ``derive`` never reads it), and how many of the family's recorded outputs (the samples the
library's harness ``tests/library_samples.py`` loads: ``tests/data/model_output_samples.jsonl`` and
``tests/data/family_samples/*.jsonl``) the derived template reads exactly as the library's template
does (the same prompt and tools; messages compared the way the harness compares them).

Then the same on a renamed fork of every chat template (``<think>`` -> ``<reflect>``, ``<tool_call>``
-> ``<invoke>``, in the chat template and in the outputs alike): the case of a new family whose markers
nobody has seen.

Prints the table and the two target figures: the share of chat templates a template is derived for
(target 90%) and the share of them whose derived template reads at least 95% of the family's outputs as
the library does (target 85%; a chat template whose family has no recorded outputs counts when the
derived template reads its own probe renders back, confidence 1). llama.cpp's autoparser is not run here.

Usage::

    python benchmarks/bench_derive.py
    python benchmarks/bench_derive.py --json out.json --only Qwen
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import library_samples as ls  # noqa: E402 -- the tests' sample harness
import response_templates as rt  # noqa: E402
from _common import format_table  # noqa: E402
from response_templates import library  # noqa: E402

CHAT_TEMPLATES = ROOT.parent / "shared" / "chat_templates"
RENAMES = (
    ("<think>", "<reflect>"),
    ("</think>", "</reflect>"),
    ("<tool_call>", "<invoke>"),
    ("</tool_call>", "</invoke>"),
)


def rename(text: str) -> str:
    for old, new in RENAMES:
        text = text.replace(old, new)
    return text


def rename_value(value: Any) -> Any:
    if isinstance(value, str):
        return rename(value)
    if isinstance(value, list):
        return [rename_value(v) for v in value]
    if isinstance(value, dict):
        return {k: rename_value(v) for k, v in value.items()}
    return value


def family_of_file() -> dict[str, str]:
    out: dict[str, str] = {}
    for fam in library.families():
        for name in fam.chat_templates:
            out.setdefault(name, fam.name)
    return out


def samples_by_family() -> dict[str, list[tuple[dict[str, Any], str, Any, Any]]]:
    """Library family -> [(sample, prefix, tools, the library's message)] for the applicable samples."""
    table = ls.load_tools()
    exceptions = ls.load_exceptions()
    out: dict[str, list[tuple[dict[str, Any], str, Any, Any]]] = {}
    for sample in ls.load_samples():
        verdict = ls.judge(sample, table, exceptions.get(sample["id"]))
        if verdict.status not in ("pass", "fail") or verdict.family is None or "error" in (verdict.got or {}):
            continue
        fam = library.family(verdict.family)
        prefix, _ = ls.prefix_for(sample, fam)
        tools, _ = ls.tools_for(sample, table)
        out.setdefault(fam.name, []).append((sample, prefix, tools, verdict.got))
    return out


def _literal_of(spec: Mapping[str, Any], key: str) -> list[str]:
    value = spec.get(key)
    if value is None:
        return []
    return [value] if isinstance(value, str) else list(value)


def marker_agreement(derived: Mapping[str, Any], lib: Mapping[str, Any], renamed: bool) -> str:
    """``same`` / ``differs`` / ``none`` for reasoning and tool calls: does the library's open pattern
    match the derived opener's text (renamed back for the fork)?"""
    import regex

    out = []
    for name in ("reasoning_content", "tool_calls"):
        d, lspec = derived["fields"].get(name), lib["fields"].get(name)
        if d is None and lspec is None:
            out.append("none")
            continue
        if d is None or lspec is None:
            out.append("missing" if d is None else "extra")
            continue
        probe = d.get("open") or d.get("open_pattern") or ""
        probe = probe if isinstance(probe, str) else probe[0]
        text = regex.sub(r"\\(.)", r"\1", regex.sub(r"\(\?[^)]*\)|\(\?P<\w+>[^)]*\)|[*?|]|\\s", "", probe))
        if renamed:
            for old, new in RENAMES:
                text = text.replace(new, old)
        pattern = lspec.get("open_pattern") or "|".join(map(regex.escape, _literal_of(lspec, "open")))
        out.append("same" if pattern and regex.search(pattern, text) else "differs")
    return "/".join(out)


def run(only: str | None) -> dict[str, Any]:
    fam_of = family_of_file()
    samples = samples_by_family()
    rows: list[dict[str, Any]] = []
    for path in sorted(CHAT_TEMPLATES.glob("*.jinja")):
        if only and only not in path.name:
            continue
        source = path.read_text(encoding="utf-8")
        family = fam_of.get(path.name)
        for renamed in (False, True):
            text = rename(source) if renamed else source
            row: dict[str, Any] = {"chat_template": path.name, "renamed": renamed, "family": family}
            try:
                d = rt.templates.derive(text)
            except rt.ResponseTemplateError as exc:
                row.update(derived=False, error=str(exc)[:120])
                rows.append(row)
                continue
            row.update(derived=True, confidence=d.confidence)
            lib = (
                library.family(family).template_dict()
                if family and library.family(family).has_template
                else None
            )
            row["markers"] = marker_agreement(d.template, lib, renamed) if lib else "no family"
            same = total = 0
            for sample, prefix, tools, got_lib in samples.get(family or "", []):
                raw = sample["raw"]
                if renamed:
                    raw, prefix, got_lib = rename(raw), rename(prefix), rename_value(got_lib)
                total += 1
                try:
                    got = rt.parse_response(raw, d.template, prefix=prefix, tools=tools)
                except rt.ResponseTemplateError:
                    continue
                same += isinstance(got, dict) and ls.normalize(got) == ls.normalize(got_lib)
            row.update(samples=total, read_same=same)
            rows.append(row)
    return {"rows": rows, "summary": {k: summarize(rows, k == "renamed") for k in ("real", "renamed")}}


def ok_row(row: Mapping[str, Any]) -> bool:
    if not row.get("derived"):
        return False
    if row["samples"]:
        return bool(row["read_same"] >= 0.95 * row["samples"])
    return bool(row["confidence"] >= 1.0)


def summarize(rows: list[dict[str, Any]], renamed: bool) -> dict[str, Any]:
    mine = [r for r in rows if r["renamed"] == renamed]
    derived = sum(bool(r.get("derived")) for r in mine)
    good = sum(ok_row(r) for r in mine)
    n = len(mine) or 1
    return {
        "chat_templates": len(mine),
        "derived": derived,
        "derived_pct": round(100 * derived / n, 1),
        "read_95": good,
        "read_95_pct": round(100 * good / n, 1),
        "samples": sum(r.get("samples", 0) for r in mine),
        "read_same": sum(r.get("read_same", 0) for r in mine),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--json", help="write the rows and the summary to this file")
    ap.add_argument("--only", help="only the chat templates whose file name contains this")
    args = ap.parse_args()
    result = run(args.only)
    table = [
        [
            r["chat_template"].removesuffix(".jinja")[:44],
            r["family"] or "-",
            "yes" if r.get("derived") else "no",
            f"{r['confidence']:.2f}" if r.get("derived") else "-",
            r.get("markers", "-"),
            f"{r['read_same']}/{r['samples']}" if r.get("derived") else "-",
        ]
        for r in result["rows"]
        if not r["renamed"]
    ]
    print(
        format_table(
            ["chat template", "family", "derived", "conf.", "reasoning/tools markers", "outputs read alike"],
            table,
        )
    )
    for key in ("real", "renamed"):
        s = result["summary"][key]
        print(
            f"{key}: derived {s['derived']}/{s['chat_templates']} ({s['derived_pct']}%, target 90%); "
            f"reading >=95% of the family's outputs as the library does: {s['read_95']}/{s['chat_templates']} "
            f"({s['read_95_pct']}%, target 85%); outputs read alike {s['read_same']}/{s['samples']}"
        )
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1, ensure_ascii=False), encoding="utf-8")


if __name__ == "__main__":
    main()
