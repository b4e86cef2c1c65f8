"""``bench_grammar.py --against vllm``: our grammar beside vLLM 0.34's own template grammar.

For every library family: the template exported in vLLM's vocabulary (``rt.templates.export(...,
target="vllm")``) goes through ``vllm.parser.response_template_grammar.tool_call_structural_tag`` as
vLLM's ``beam`` parser calls it (``tests/grammar/vllm_grammar_harness.py``), for ``auto`` (the content
field may answer) and ``required``; our ``grammar.build`` gives ours. Both structural tags are compiled
by the same xgrammar (``tests/grammar/xgrammar_harness.py``) over the same trained tokenizer (the
proofs' byte-level BPE with the family's special tokens), and measured alike:

* **compiles**: a tag is derived and xgrammar compiles it (else the reason, shortened);
* **completeness**: of the family's recorded outputs that our parser reads as expected and whose calls
  are valid for their tools, those the ``auto`` tag (built with the sample's tools and prompt) accepts
  whole; for ours also our Lark form in llguidance. Where the prompt leaves the reasoning open, vLLM's
  tag is judged on the text after the reasoning's closer (``beam`` applies it from there);
* **soundness**: random walks through each tag's xgrammar token masks (``auto`` and ``required``, the
  same number for both, with the proofs' walk tools and the family's plain prompt), parsed by our
  parser with the family's template and checked with ``grammar_harness.check_message``: sound walks /
  finished walks;
* **costs**: xgrammar's compile time (ms, median) and mask time per token (µs) of the ``auto`` tag (or
  the ``required`` one where only that compiles).

Also, per family, whether the export could be spelled so that vLLM's derivation takes it
(``vllm_grammar_harness.literal_spellings``: the repeated reasoning opener written once, ``\\s*`` between
tags as ``\\n?`` or nothing) while vLLM's own parser reads the family's recorded outputs exactly as with
the export as it is.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import random
import re
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from _common import fmt_num, format_table

ROOT = Path(__file__).resolve().parents[1]
for _p in (ROOT / "tests" / "grammar", ROOT / "tests"):
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))

import grammar_harness as gh  # noqa: E402
import vllm_grammar_harness as vh  # noqa: E402
import xgrammar_harness as xh  # noqa: E402

import response_templates as rt  # noqa: E402
from response_templates import grammar, library  # noqa: E402
from response_templates.export.literal import FOR_VLLM  # noqa: E402

MODES = ("auto", "required")


@dataclass
class Side:
    """One grammar's figures for one family."""

    compiles: dict[str, bool] = field(default_factory=dict)
    reasons: dict[str, str] = field(default_factory=dict)
    accepted: int = 0
    #: The ``required`` tag on the outputs with calls.
    req_accepted: int = 0
    #: Ours only: the Lark form in llguidance.
    lark_accepted: int | None = None
    sound: int = 0
    finished: int = 0
    walks: int = 0
    unsound: list[str] = field(default_factory=list)
    compile_ms: float | None = None
    mask_us: float | None = None


@dataclass
class Row:
    family: str
    counted: int = 0
    #: Of those, the outputs with calls (judged by the ``required`` tags).
    req_counted: int = 0
    ours: Side = field(default_factory=Side)
    vllm: Side = field(default_factory=Side)
    #: Could a literal spelling of the export be derived by vLLM (``required``), losing nothing?
    literal: str = ""
    literal_changes: list[str] = field(default_factory=list)
    #: With that spelling: vLLM's ``required`` tag on the outputs with calls.
    literal_req_accepted: int | None = None


def _family_tokens(family: str) -> tuple[str, ...]:
    """Token-like delimiters of a family's template (when our grammar does not compile: no tag to read
    them from); regex escapes are read as the characters they stand for."""
    fam = library.family(family)
    if not fam.has_template:
        return ()
    texts = [re.sub(r"\\(.)", r"\1", text) for text in gh._strings_of(fam.template_dict())]
    return tuple(sorted({m.group(0) for text in texts for m in gh._TOKEN_LIKE.finditer(text)}))


def _ours(family: str, tools: Any, tool_choice: str, prefix: str) -> tuple[Any, gh.Engine | None, str]:
    try:
        g, engine = gh.build_with_tokens(grammar, family, tools=tools, tool_choice=tool_choice, prefix=prefix)
    except Exception as exc:
        return None, None, vh.short(f"{type(exc).__name__}: {exc}")
    return g, engine, ""


def _median_ms(xe: xh.XEngine, tag: Any, reps: int) -> float:
    return statistics.median(xe.compile_ms(tag) for _ in range(max(reps, 1)))


def _check_walk(family: str, text: str, tool_choice: str, prefix: str) -> str:
    fam = library.family(family)
    try:
        message = rt.parse_response(text, fam.template(), prefix=prefix, tools=gh.WALK_TOOLS)
    except rt.ResponseTemplateError as exc:
        return f"does not parse ({type(exc).__name__}): {text[:160]!r}"
    problems = gh.check_message(message, gh.WALK_TOOLS, tool_choice=tool_choice)
    return f"{problems}: {text[:160]!r}" if problems else ""


def _walks(
    side: Side, family: str, xe: xh.XEngine, compiled: Any, mode: str, count: int, lead: str, prefix: str
) -> None:
    rng = random.Random(f"{family}/{mode}")
    for _ in range(count):
        walk = xe.walk(compiled, rng, max_tokens=300)
        side.walks += 1
        if not walk.finished:
            continue
        side.finished += 1
        problem = _check_walk(family, lead + walk.text, mode, prefix)
        if problem:
            side.unsound.append(f"{mode}: {problem}")
        else:
            side.sound += 1


def _vllm_accepts(xe: xh.XEngine, bt: vh.BeamTag, raw: str) -> bool:
    if bt.tag is None:
        return False
    text = bt.constrained_text(raw)
    if text is None:  # the reasoning the prompt opened never closes: the grammar never applies
        return True
    try:
        return xe.accepts(xe.compile(bt.tag), text)[0]
    except ValueError:
        return False


def literal_verdict(
    family: str, cases: Sequence[gh.SampleCase], xe: xh.XEngine
) -> tuple[str, list[str], vh.Exported | None]:
    """Whether a stricter spelling of the lenient export (``literal=False``) is derived by vLLM for
    ``required`` (with the walk tools and the plain prompt) and compiled by xgrammar while vLLM's parser
    reads every recorded output of the family as with the lenient export: ``"as is"``, ``"yes"`` (with the
    changes), ``"loses N output(s)"`` or ``"no: ..."``."""
    from vllm.parser.chat_parsing.response_parser import parse_response as vllm_parse

    ex = vh.exported(family, literal=False)
    if ex.data is None or ex.template is None:
        return "no: " + vh.short(ex.error or "no export", 80), [], None
    prompt = library.family(family).generation_prompt

    def derived(template: vh.Exported) -> str:
        """Empty when vLLM derives a tag xgrammar compiles, else why not."""
        bt = vh.beam_tag(template, gh.WALK_TOOLS, "required", prefix=prompt)
        if bt.tag is None:
            return bt.reason
        try:
            xe.compile(bt.tag)
        except ValueError as exc:
            return f"xgrammar refuses vLLM's tag: {exc}"
        return ""

    first = derived(ex)
    if not first:
        return "as is", [], None

    def read(data: Any, case: gh.SampleCase) -> Any:
        try:
            return vllm_parse(case.raw, data, prefix=case.prefix, tools=case.tools)
        except Exception as exc:
            return f"error {type(exc).__name__}"

    last = ""
    for data, changes in vh.literal_spellings(ex.data):
        variant = vh.load(family, data)
        last = derived(variant)
        if last:
            continue
        differ = [c.id for c in cases if read(ex.data, c) != read(data, c)]
        if differ:
            return f"loses {len(differ)} output(s) ({', '.join(differ[:3])})", changes, variant
        return "yes", changes, variant
    return "no: " + vh.short(last or first, 80), [], None


def family_row(family: str, cases: Sequence[gh.SampleCase], walks: int, steps: int, reps: int) -> Row:
    row = Row(family)
    fam = library.family(family)
    prompt = fam.generation_prompt
    ex = vh.exported(family)
    mine = [c for c in cases if c.family == family and not c.problems]
    row.counted = len(mine)
    fallback = gh.engine_for(_family_tokens(family))
    # Completeness on the recorded outputs (auto, the sample's tools and prompt).
    lark_ok = 0
    for case in mine:
        g, engine, _ = _ours(family, case.tools or [], "auto", case.prefix)
        xe = xh.xengine_for(engine or fallback)
        if g is not None:
            lark_ok += engine.accepts(g.lark, case.raw)[0] if engine is not None else 0
            with contextlib.suppress(ValueError):
                row.ours.accepted += xe.accepts(xe.compile(g.structural_tag), case.raw)[0]
        bt = vh.beam_tag(ex, case.tools or [], "auto", prefix=case.prefix)
        row.vllm.accepted += _vllm_accepts(xe, bt, case.raw)
        if not case.message.get("tool_calls") or not case.tools:
            continue
        row.req_counted += 1
        g, engine, _ = _ours(family, case.tools, "required", case.prefix)
        if g is not None:
            xe = xh.xengine_for(engine or fallback)
            with contextlib.suppress(ValueError):
                row.ours.req_accepted += xe.accepts(xe.compile(g.structural_tag), case.raw)[0]
        bt = vh.beam_tag(ex, case.tools, "required", prefix=case.prefix)
        row.vllm.req_accepted += _vllm_accepts(xe, bt, case.raw)
    row.ours.lark_accepted = lark_ok
    # Compiling, soundness and costs, with the walk tools and the plain prompt.
    for mode in MODES:
        g, engine, reason = _ours(family, gh.WALK_TOOLS, mode, prompt)
        xe = xh.xengine_for(engine or fallback)
        tags: list[tuple[Side, Any, str, str]] = []
        if g is not None:
            tags.append((row.ours, g.structural_tag, "", reason))
        else:
            row.ours.compiles[mode], row.ours.reasons[mode] = False, reason
        bt = vh.beam_tag(ex, gh.WALK_TOOLS, mode, prefix=prompt)
        if bt.tag is not None:
            tags.append((row.vllm, bt.tag, bt.reasoning_closer() if bt.gated else "", ""))
        else:
            row.vllm.compiles[mode], row.vllm.reasons[mode] = False, vh.short(bt.reason)
        for side, tag, lead, _ in tags:
            try:
                compiled = xe.compile(tag)
            except ValueError as exc:
                side.compiles[mode], side.reasons[mode] = False, vh.short(f"xgrammar: {exc}")
                continue
            side.compiles[mode] = True
            _walks(side, family, xe, compiled, mode, walks, lead, prompt)
            if side.compile_ms is None:
                side.compile_ms = _median_ms(xe, tag, reps)
                side.mask_us = xe.mask_us(compiled, steps, family)
    lit = literal_row(family, cases)
    row.literal, row.literal_changes, row.literal_req_accepted = lit.verdict, lit.changes, lit.req_accepted
    return row


@dataclass
class Literal:
    """:func:`literal_row`'s answer."""

    verdict: str
    changes: list[str]
    #: vLLM's ``required`` tag from the literal spelling: recorded outputs with calls it accepts (None
    #: when there is no literal spelling vLLM takes), and how many ours accepts, of ``req_counted``.
    req_accepted: int | None
    ours_req_accepted: int
    req_counted: int

    @property
    def loses_nothing(self) -> bool:
        """vLLM's parser reads every recorded output as before, and its grammar accepts at least as many
        of those with calls as ours: the export may be spelled so (``export.literal.FOR_VLLM``)."""
        return self.verdict == "yes" and (self.req_accepted or 0) >= self.ours_req_accepted


def literal_row(family: str, cases: Sequence[gh.SampleCase]) -> Literal:
    """Could the family's export be spelled literally for vLLM's derivation, losing nothing?"""
    fallback = gh.engine_for(_family_tokens(family))
    mine = [c for c in cases if c.family == family and not c.problems]
    verdict, changes, variant = literal_verdict(family, mine, xh.xengine_for(fallback))
    lit = Literal(verdict, changes, None, 0, 0)
    if variant is None:
        return lit
    for case in mine:
        if not (case.message.get("tool_calls") and case.tools):
            continue
        lit.req_counted += 1
        g, engine, _ = _ours(family, case.tools, "required", case.prefix)
        xe = xh.xengine_for(engine or fallback)
        if g is not None:
            with contextlib.suppress(ValueError):
                lit.ours_req_accepted += xe.accepts(xe.compile(g.structural_tag), case.raw)[0]
        bt = vh.beam_tag(variant, case.tools, "required", prefix=case.prefix)
        lit.req_accepted = (lit.req_accepted or 0) + _vllm_accepts(xe, bt, case.raw)
    return lit


def _mark(side: Side) -> str:
    return "/".join(("yes" if side.compiles.get(m) else "no") for m in MODES)


def _ratio(n: int, d: int) -> str:
    return f"{n}/{d}" if d else "-"


def table(rows: Sequence[Row], markdown: bool = False) -> str:
    headers = [
        "family",
        "ours auto/req",
        "vLLM auto/req",
        "outputs",
        "ours tag",
        "ours Lark",
        "vLLM",
        "with calls",
        "ours req",
        "vLLM req",
        "ours sound",
        "vLLM sound",
        "ours ms",
        "vLLM ms",
        "ours µs",
        "vLLM µs",
        "vLLM literal export",
    ]
    cells = [
        [
            r.family,
            _mark(r.ours),
            _mark(r.vllm),
            str(r.counted),
            str(r.ours.accepted),
            str(r.ours.lark_accepted),
            str(r.vllm.accepted) if r.vllm.compiles.get("auto") else "-",
            str(r.req_counted),
            str(r.ours.req_accepted) if r.ours.compiles.get("required") else "-",
            str(r.vllm.req_accepted) if r.vllm.compiles.get("required") else "-",
            _ratio(r.ours.sound, r.ours.finished),
            _ratio(r.vllm.sound, r.vllm.finished),
            fmt_num(r.ours.compile_ms),
            fmt_num(r.vllm.compile_ms),
            fmt_num(r.ours.mask_us),
            fmt_num(r.vllm.mask_us),
            r.literal
            + ("" if r.literal_req_accepted is None else f" (req accepts {r.literal_req_accepted})")
            + (", exported so" if r.family in FOR_VLLM else ""),
        ]
        for r in rows
    ]
    if not markdown:
        return format_table(headers, cells)
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in cells]
    return "\n".join(lines)


def totals(rows: Sequence[Row]) -> dict[str, Any]:
    both = [r for r in rows if r.ours.compiles.get("auto") and r.vllm.compiles.get("auto")]
    both_req = [r for r in rows if r.ours.compiles.get("required") and r.vllm.compiles.get("required")]
    return {
        "families": len(rows),
        "ours compiles auto": sum(bool(r.ours.compiles.get("auto")) for r in rows),
        "ours compiles required": sum(bool(r.ours.compiles.get("required")) for r in rows),
        "vLLM compiles auto": sum(bool(r.vllm.compiles.get("auto")) for r in rows),
        "vLLM compiles required": sum(bool(r.vllm.compiles.get("required")) for r in rows),
        "outputs counted": sum(r.counted for r in rows),
        "ours tag accepts": sum(r.ours.accepted for r in rows),
        "ours Lark accepts": sum(r.ours.lark_accepted or 0 for r in rows),
        "vLLM accepts": sum(r.vllm.accepted for r in rows),
        "outputs with calls (required tags)": sum(r.req_counted for r in rows),
        "ours required tag accepts": sum(r.ours.req_accepted for r in rows),
        "vLLM required tag accepts": sum(r.vllm.req_accepted for r in rows),
        "ours sound / finished walks": f"{sum(r.ours.sound for r in rows)}/{sum(r.ours.finished for r in rows)}",
        "vLLM sound / finished walks": f"{sum(r.vllm.sound for r in rows)}/{sum(r.vllm.finished for r in rows)}",
        "vLLM compiles, ours not (auto)": [
            r.family for r in rows if r.vllm.compiles.get("auto") and not r.ours.compiles.get("auto")
        ],
        "vLLM compiles, ours not (required)": [
            r.family for r in rows if r.vllm.compiles.get("required") and not r.ours.compiles.get("required")
        ],
        "both compile auto, vLLM accepts more": [r.family for r in both if r.vllm.accepted > r.ours.accepted],
        "both compile required, vLLM accepts more": [
            r.family for r in both_req if r.vllm.req_accepted > r.ours.req_accepted
        ],
        "both compile required": [r.family for r in both_req],
        "exported literally for vLLM (export.literal.FOR_VLLM)": sorted(
            r.family for r in rows if r.family in FOR_VLLM
        ),
        "literal export: as is / yes / loses / no": [
            sum(r.literal == "as is" for r in rows),
            sum(r.literal == "yes" for r in rows),
            sum(r.literal.startswith("loses") for r in rows),
            sum(r.literal.startswith("no") for r in rows),
        ],
    }


def run(
    families: Sequence[str] | None, walks: int, steps: int, reps: int, json_path: str | None, markdown: bool
) -> int:
    names = list(families) if families else [f.name for f in library.families()]
    cases, _ = gh.sample_cases()
    t0 = time.perf_counter()
    rows = []
    for name in names:
        rows.append(family_row(name, cases, walks, steps, reps))
        print(f"  {name}: {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    print(
        f"vLLM {vh.VLLM_VERSION}, xgrammar {vh.XGRAMMAR_VERSION}, {datetime.date.today().isoformat()}; "
        f"{walks} walks per mode and grammar"
    )
    print(table(rows, markdown))
    print()
    for key, value in totals(rows).items():
        print(f"{key}: {value}")
    print("\nReasons vLLM derives no tag (auto; required where it differs):")
    for r in rows:
        auto, req = r.vllm.reasons.get("auto"), r.vllm.reasons.get("required")
        if auto or req:
            text = auto if req in (None, auto) else f"{auto} | required: {req}"
            print(f"  {r.family}: {text or '(auto compiles) required: ' + str(req)}")
    ours = [r for r in rows if r.ours.reasons]
    if ours:
        print("\nOur grammar does not compile:")
        for r in ours:
            print(f"  {r.family}: {'; '.join(f'{m}: {why}' for m, why in r.ours.reasons.items())}")
    changes = [r for r in rows if r.literal_changes]
    if changes:
        print("\nLiteral spellings tried (the first vLLM derives):")
        for r in changes:
            print(f"  {r.family} ({r.literal}): {'; '.join(r.literal_changes)}")
    unsound = [
        (r.family, side, u)
        for r in rows
        for side, s in (("ours", r.ours), ("vLLM", r.vllm))
        for u in s.unsound
    ]
    if unsound:
        print(f"\n{len(unsound)} unsound walks (first 3 per family and grammar):")
        seen: dict[tuple[str, str], int] = {}
        for fam, side, text in unsound:
            seen[(fam, side)] = seen.get((fam, side), 0) + 1
            if seen[(fam, side)] <= 3:
                print(f"  {fam} [{side}] {vh.short(text, 220)}")
    print(f"({time.perf_counter() - t0:.0f} s)")
    if json_path:
        Path(json_path).write_text(json.dumps([asdict(r) for r in rows], indent=1), encoding="utf-8")
    return 0
