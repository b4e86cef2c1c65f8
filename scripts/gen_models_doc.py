"""Generate docs/models.md from the model library and the results of its checks.

Runs the sample verification (``tests/library_samples.py``), the round trip of every family against its
chat templates (``tests/data/chat_templates``) and the export check (``scripts/export_report.py``: each
family exported to transformers, vLLM and SGLang, and transformers 5.25 run on the exported template),
then writes the page. ``tests/library/test_library_docs.py``
checks that the committed page is what this script writes.

Usage::

    python scripts/gen_models_doc.py            # rewrite docs/models.md
    python scripts/gen_models_doc.py --check    # exit 1 if docs/models.md is out of date
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import export_report  # noqa: E402

import library_samples  # noqa: E402
import response_templates as rt  # noqa: E402
from response_templates import library  # noqa: E402

OUT = ROOT / "docs" / "models.md"
CHAT_TEMPLATES = ROOT / "tests" / "data" / "chat_templates"

INTRO = """\
# The model library

`response-templates` ships a response template for each model family people run, so that nobody has to
write one: look it up by model id, by the model's chat template (or tokenizer), or by name.

```pycon
>>> import response_templates as rt
>>> template = rt.templates.for_model("Qwen/Qwen3-8B")
>>> prompt = "<|im_start|>user\\nHi<|im_end|>\\n<|im_start|>assistant\\n"
>>> rt.parse_response("<think>\\nGreet.\\n</think>\\n\\nHello!<|im_end|>", template, prefix=prompt)
{'role': 'assistant', 'reasoning_content': 'Greet.', 'content': 'Hello!'}
>>> rt.templates.detect(open("tests/data/chat_templates/openai-gpt-oss-120b.jinja").read()) is rt.templates.get("gpt-oss")
True
>>> rt.templates.get("qwen-3")
Traceback (most recent call last):
...
response_templates.library.UnknownModelError: no model family called 'qwen-3' in the library; near matches: qwen3, ...

```

* `rt.templates.names()` lists the families that have a template (`names(include_unsupported=True)`: all);
  `rt.templates.get(name)` takes a family name or alias; `rt.templates.for_model(model_id)` a Hugging Face
  model id (`org/name`, a local path ending in it, or a GGUF tag such as `...-GGUF:Q4_K_M`);
  `rt.templates.detect(chat_template)` a chat template's text, a tokenizer, or a `tokenizer_config.json`
  dict. Each returns a compiled template ready for `parse_response` and `ResponseParser`; an unknown model
  raises `UnknownModelError` (a `LookupError`) that lists near matches, and a family whose format needs a
  template-language extension raises `ExtensionRequiredError`. `rt.templates.detect` also recognises
  edited forks of these chat templates by the markers and delimiters they render, and
  `rt.templates.detect_all` says how sure it is and why ([detection.md](detection.md)); an ambiguous
  match raises `AmbiguousChatTemplateError` naming the candidates.
* `response_templates.library.family(name)` gives the metadata below (models, markers, prompt variants,
  notes); each family is one JSON file in `src/response_templates/library/`.
* From the shell: `response-templates list`, `show NAME`, `detect CHAT_TEMPLATE_OR_MODEL_FOLDER...`,
  `verify CHAT_TEMPLATE [--template NAME|FILE]`, `lint NAME|FILE`, `parse --model MODEL_ID ...`.
* Pass the **prompt** (`prefix=`): many chat templates open the reasoning block themselves (the *variants*
  below), and only the prompt says so. Pass **`tools=`** for families whose argument values are raw text
  (the XML formats): values are then cast by each tool's JSON schema, exactly (a string parameter keeps
  `"03106"`, code keeps its indentation and trailing newline); without it they stay strings.
* **What every template does alike** (`tests/library/test_library_failure_classes.py` checks it on real
  model ids and prompts rendered from the real chat templates):
  * A prompt that ends with a **tool result** and no new assistant header (DeepSeek's
    `<｜tool▁output▁end｜>`/`<｜tool▁outputs▁end｜>`, Mistral's `[/TOOL_RESULTS]`) is a start of the message
    too: the start anchor is a list and its last occurrence wins, so nothing of the earlier turn (its
    calls, its reasoning, the tool output) reaches the message.
  * A **reasoning opener the model repeats** after the prompt opened the block (`<think>\\n` in the prompt,
    `<think>` again in the output) is part of the opener, not reasoning text.
  * **End-of-turn and stop tokens** (`<|im_end|>`, `<｜end▁of▁sentence｜>`, `</s>`, ...) end every region
    they appear in, reasoning and tool calls included, so no stop token is ever part of a value, also when
    the reasoning is cut off or a tool call interrupts it.
  * **Thinking and non-thinking models of one family** map to different templates: a model whose chat
    template never opens reasoning (`*-Instruct` of a thinking family) gets a template without a reasoning
    field, so a `<think>` it writes anyway stays in the content, as peers serving it without a reasoning
    parser keep it. Each family below says which it does.

This page is generated by `scripts/gen_models_doc.py` from the library files and the results of the
checks; do not edit it by hand.
"""

LIMITS = """\
## What the seed language could not say, and how the templates cope

Most gaps are closed by the template-language extensions ([extensions.md](extensions.md)); the table's
*extensions* column says which family uses which. What remains:

* **`json` with `allow_non_json` strips the text it falls back to.** "JSON if it parses, else the exact
  text" cannot be said, so XML-argument families (Qwen3-Coder, GLM, MiniMax, Seed-OSS, DSML, Hy3, Laguna,
  MiniCPM5, Step) keep raw strings and rely on `tools=` to type them; without `tools=` a number stays
  `"3"`.
* **No field that reads and discards.** gpt-oss's built-in tools (`to=browser.*`, `to=python`) are matched
  by a field whose `transform` is `null`: the value never reaches the message, but its region events still
  stream.
* **Optional wrappers (E6)** are fields that feed `into` the implicit content field
  (`<|START_RESPONSE|>`, `<response>`, `<answer>`, `<|START_TEXT|>`): bare and wrapped answers both reach
  content, and a wrapper's close in bare text stays text.
* **Tool calls inside the reasoning (E5)** are read by the families that declare `interleaved`; `qwen3`
  (Hermes JSON) keeps such a call as reasoning text, since peers disagree whether it is a call.
* **Regex delimiters and streaming cost.** While nothing is held back, a chunk that contains none of the
  characters a watched delimiter can start with skips the scanner. For a regex the parser works those
  characters out from the pattern (`<` for `(?:<tool_call>\\s*)?<function=...>`); a regex that can start
  anywhere (`\\s*<|tool_call_end|>`, `.`, `\\w`) sends every chunk of that state through the scanner.
  `benchmarks/bench_families.py` measures the heaviest families against the reference.
"""

STATUS_TEXT = {
    "supported": "supported",
    "approximate": "approximate",
    "partial": "partial template",
    "needs-extension": "needs extension",
}


def md(text: str) -> str:
    """Escape a table cell."""
    return text.replace("|", "\\|").replace("\n", " ")


def code(text: str) -> str:
    """Inline code for a table cell (pipes escaped, backticks avoided)."""
    text = text.replace("\\n", "⏎").replace("\n", "⏎")
    if "`" in text:
        return md(text)
    return "`" + text.replace("|", "\\|") + "`"


def round_trips() -> dict[str, list[tuple[str, rt.verify.RoundTripReport, dict[str, str]]]]:
    results: dict[str, list[tuple[str, rt.verify.RoundTripReport, dict[str, str]]]] = {}
    for fam in library.families():
        if not fam.has_template:
            continue
        for name in fam.chat_templates:
            text = (CHAT_TEMPLATES / name).read_text(encoding="utf-8")
            report = rt.verify.round_trip(text, fam.template(), **fam.round_trip_options())
            results.setdefault(fam.name, []).append((name, report, fam.known_round_trip_issues(name)))
    return results


def rt_status(entries: list[tuple[str, rt.verify.RoundTripReport, dict[str, str]]]) -> str:
    if not entries:
        return "no chat template"
    cases = sum(len(r.cases) for _, r, _ in entries)
    passed = sum(sum(c.ok for c in r.cases) for _, r, _ in entries)
    known = cases - passed
    return f"{passed}/{cases}" + (f" ({known} known)" if known else "")


EXPORT_INTRO = """\
## Export

What shipping a family's template in `tokenizer_config.json` gives the users of each implementation
([export.md](export.md)): `rt.templates.export(name, target=...)` (or `response-templates export NAME
--for TARGET`) writes the template in the target's vocabulary (for vLLM and SGLang, that of the
transformers 5.23 parser they vendor), and **transformers 5.25's own `parse_response`** then reads the
family's recorded outputs with it.
Each cell gives the verdict and how many samples the target reads the same as this library does (the same
message, values and types, or both refusing the output). *with warnings*: exported with approximations,
listed in the family's notes; *no*: the target cannot express the template (why: the field and key, and
in the notes). The engines also deliver content and reasoning as the streamed text of every region, so
whitespace stays as written and text before a tool call survives even where the reference's parsed
message drops it.
"""


def export_cell(res: export_report.TargetResult) -> str:
    if res.verdict == "not exportable":
        return "no: " + md(res.reasons[0].split(": ", 1)[0])
    verdict = "exportable" if res.verdict == "exportable" else f"with warnings ({len(res.reasons)})"
    agreement = f"{res.same}/{res.total} read the same" if res.total else "no samples"
    return f"{verdict}; {agreement}"


def export_lines(rep: export_report.FamilyReport) -> list[str]:
    """Family notes: each refusal and warning once, with the targets it concerns."""
    grouped: dict[str, list[str]] = {}
    for target, res in rep.results.items():
        title = export_report.TARGET_TITLES[target]
        if res.verdict == "not exportable":
            grouped.setdefault(f"not exportable: {res.reasons[0]}", []).append(title)
        for reason in res.reasons if res.verdict != "not exportable" else ():
            grouped.setdefault(f"approximation: {reason}", []).append(title)
    lines = [f"* Export to {', '.join(targets)}, {text}" for text, targets in grouped.items()]
    agreement = []
    for target, res in rep.results.items():
        if res.verdict != "not exportable" and res.total:
            agreement.append(f"{export_report.TARGET_TITLES[target]} {res.same} of {res.total}")
    if agreement:
        lines.append(
            f"* Samples read the same by {export_report.ORACLE} with the exported template: "
            + ", ".join(agreement)
        )
    return [md_note(line) for line in lines]


def stray_think(fam: library.Family) -> str:
    """How the family's template reads a ``<think>`` block the model writes on its own (checked by parsing)."""
    template = fam.template()
    try:
        got = rt.parse_response("<think>\nhmm\n</think>\n\nHello!", template, prefix=fam.generation_prompt)
    except rt.ResponseTemplateError:
        return "not readable by this template"
    own = "its reasoning has markers of its own: the table's *reasoning* column"
    if got.get("reasoning_content") == "hmm":
        return "read as reasoning"
    if not any(field.name == "reasoning_content" for field in template.fields):
        return "kept in the content (no reasoning field: these models do not think)"
    if "<think>" in str(got.get("content", "")):
        return f"kept in the content ({own})"
    return f"not read as reasoning ({own})"


GRAMMAR_INTRO = """\
## Grammar

Which families compile to a grammar for constrained decoding ([grammar.md](grammar.md)):
`response_templates.grammar.build(name, tools=...)` (or `response-templates grammar NAME --tools FILE`)
writes the template's call syntax as an xgrammar structural tag (vLLM, SGLang) and an llguidance Lark
grammar, with each call's arguments constrained by the tool's JSON schema. Compiled here with two tools
(string, integer, object and array parameters) and `tool_choice="auto"`; *no* gives the reason.
"""


def grammar_lines() -> list[str]:
    from response_templates import grammar

    table = grammar.coverage()
    compiled = sum(c.compiles for c in table.values())
    lines = [
        GRAMMAR_INTRO,
        f"{compiled} of {len(table)} families compile.",
        "",
        "| family | compiles | why not |",
        "|---|---|---|",
    ]
    for name, cov in table.items():
        lines.append(f"| {name} | {'yes' if cov.compiles else 'no'} | {md(cov.reason or '–')} |")
    lines.append("")
    return lines


def md_note(text: str) -> str:
    """A notes bullet: one line."""
    return text.replace("\n", "⏎")


def generate() -> str:
    summary = library_samples.summarize()
    exports = export_report.report()
    export_totals = export_report.totals(exports)
    counts = summary.counts()
    per_family = summary.per_family()
    trips = round_trips()
    fams = library.families()
    by_status = Counter(f.status for f in fams)
    survey_rows = {f.formats_md for f in fams if f.formats_md}
    lines = [INTRO]

    # ------------------------------------------------------------------------------------- numbers
    judged = counts["passed"] + counts["source_policy"] + counts["alternative"]
    n_pairs = sum(len(v) for v in trips.values())
    n_ok = sum(r.ok for v in trips.values() for _, r, _ in v)
    lines += [
        "## In numbers",
        "",
        f"* **{len(fams)} library entries** cover all {len(survey_rows)} families of the research survey "
        f"(`research/formats.md`): {by_status['supported']} supported, {by_status['approximate']} approximate, "
        f"{by_status['partial']} with a partial template, {by_status['needs-extension']} that need a "
        "template-language extension (no template yet). Entries that share a format share one template "
        f"({sum(1 for f in fams if f.same_format_as)} entries point to another's).",
        f"* **Recorded outputs:** {judged} of {counts['applicable']} applicable samples "
        f"({100 * judged / counts['applicable']:.1f}%) pass judged by our spec (docs/spec.md): {counts['passed']} equal the "
        f"source's expected message, {counts['source_policy']} equal it once the source's documented policy "
        f"of keeping reasoning inline is undone (checked), {counts['alternative']} equal it with an opt-in "
        "library template that reads what the family's default deliberately does not (named per sample, "
        "checked), and "
        f"{counts['difference']} are reviewed differences. Not counted: "
        + (
            f"{counts['needs_extension']} samples that exercise syntax needing an extension, "
            if counts["needs_extension"]
            else ""
        )
        + f"{counts['not_applicable']} samples of families without a template or of runs with parsing "
        "switched off (details below).",
        f"* **Round trip:** {n_ok} of {n_pairs} (family, chat template) pairs pass every case; every failing "
        "case of the others is a reviewed known issue of the chat template (listed below).",
        "* **Export** (see [Export](#export)): "
        + "; ".join(
            f"{export_report.TARGET_TITLES[t]}: {row['exportable']} families exportable, "
            f"{row['exportable with warnings']} with warnings, {row['not exportable']} not, "
            f"{row['same']} of {row['total']} of their samples read the same by {export_report.ORACLE}"
            for t, row in export_totals.items()
        )
        + ".",
        "",
    ]

    # --------------------------------------------------------------------------------------- table
    lines += [
        "## Families",
        "",
        "Samples: passed / applicable recorded outputs of the family, judged by our spec (docs/spec.md); *by policy*: equal once "
        "the source's policy of keeping reasoning inline is undone; *opt-in*: equal with the opt-in template the "
        "exceptions list names (see [Recorded outputs](#recorded-outputs)). "
        "Round trip: passed / run cases over the family's chat templates "
        "(see [Round trip](#round-trip)). Extensions: needed for any template (**bold**), for the corner "
        "cases an approximate template does not read, or *uses*: implemented extensions the template declares "
        "(see [extensions.md](extensions.md)).",
        "",
        "| family | models | reasoning | tool calls | parallel | samples | round trip | status | extensions |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for fam in fams:
        models = ", ".join(code(m) for m in fam.models[:3]) + (" …" if len(fam.models) > 3 else "")
        if fam.same_format_as:
            models += f" (template of {fam.same_format_as})"
        passed, by_policy, by_alternative, total = per_family.get(fam.name, (0, 0, 0, 0))
        extra = [f"{by_policy} by policy"] * bool(by_policy) + [f"{by_alternative} opt-in"] * bool(
            by_alternative
        )
        samples = (f"{passed}/{total}" + (f" ({', '.join(extra)})" if extra else "")) if total else "–"
        parallel = {True: "yes", False: "no", None: "–"}[fam.parallel_calls]
        ext = (
            ", ".join(
                [f"**{e}**" for e in fam.needs]
                + [e for e in fam.would_use]
                + [f"uses {e}" for e in fam.resolved().uses]
            )
            or "–"
        )
        lines.append(
            f"| [{fam.name}](#{fam.name.replace('.', '')}) | {models or '–'} | {md(fam.reasoning) or '–'} | "
            f"{md(fam.tool_calls) or '–'} | {parallel} | {samples} | {rt_status(trips.get(fam.name, []))} | "
            f"{STATUS_TEXT[fam.status]} | {ext} |"
        )
    lines.append("")

    # ------------------------------------------------------------------------------------ extensions
    lines += [
        "## Families that need an extension",
        "",
        "These families are listed with their metadata and no template (Gemma 2/3 has a partial, plain-text "
        "one). Their samples are left out of the pass-rate denominator, with this reason. The extensions are "
        "designed in [design/extensions.md](design/extensions.md).",
        "",
        "| family | needs | why | samples left out |",
        "|---|---|---|---|",
    ]
    left_out = Counter(
        v.family for v in summary.verdicts if v.status == "not-applicable" and v.why.startswith("family")
    )
    for fam in fams:
        if fam.needs:
            why = next((n for n in fam.notes if "E" in n), fam.notes[0] if fam.notes else "")
            names = ", ".join(f"{e} ({library.EXTENSIONS[e].split(':')[0]})" for e in fam.needs)
            lines.append(f"| {fam.name} | {names} | {md(why)} | {left_out.get(fam.name, 0)} |")
    lines.append("")

    # -------------------------------------------------------------------------------------- samples
    lines += [
        "## Recorded outputs",
        "",
        "`tests/library/test_library_samples.py` parses every sample of `tests/data/model_output_samples.jsonl` (a copy "
        "of the research set: real outputs from the test suites of llama.cpp, vLLM, SGLang and transformers) "
        "that has an expected message and is not a partial stream, with the template of its family. The rules "
        "(which prompt, which tools, how messages are compared) are in `tests/library_samples.py`. In short: "
        "the recorded generation prompt is the prefix; a reasoning-parser test that assumes the opener is in "
        "an unrecorded prompt gets the family's prompt that pre-opens reasoning, if its chat template has one; "
        "text is compared stripped; tool schemas come from the source's declared tools or, when the source "
        f"did not record them, are typed after the expected arguments ({counts['inferred_tools']} of the "
        "passing samples).",
        "",
        "Not applicable:",
        "",
    ]
    for why, n in sorted(summary.not_applicable_reasons().items(), key=lambda kv: (-kv[1], kv[0])):
        lines.append(f"* {n} × {why}")
    lines += [
        "",
        "Reviewed exceptions (each one is checked by the test; a listed sample that passes fails it):",
        "",
    ]
    lines += ["| sample | family | kind | reason |", "|---|---|---|---|"]
    by_id = {v.id: v for v in summary.verdicts}
    for sample_id, entry in summary.exceptions.items():
        kind = entry["kind"] + (f" ({entry['extension']})" if entry.get("extension") else "")
        if entry.get("template"):
            kind += f" (`{entry['template']}`)"
        lines.append(f"| {sample_id} | {by_id[sample_id].family} | {kind} | {md(entry['reason'])} |")
    lines.append("")

    # ------------------------------------------------------------------------------------ round trip
    lines += [
        "## Round trip",
        "",
        "`rt.verify.round_trip(chat_template, response_template)` renders assistant messages (text, reasoning, "
        "one to three parallel tool calls whose arguments are strings, integers, floats, booleans, null, "
        "nested objects, arrays, non-ASCII text and multi-line code) through the real chat template, takes the "
        "assistant turn the template renders after the generation prompt and parses it back with the prompt as "
        "the prefix. `response-templates verify CHAT_TEMPLATE_FILE` does the same from the shell. A field the "
        "chat template does not write (reasoning dropped from history, content next to tool calls) is "
        "skipped with the reason; each family's settings (template variables per case, stop strings) and "
        "reviewed known issues are in its file under `round_trip`.",
        "",
        "| family | chat template | result | skipped fields | known issues |",
        "|---|---|---|---|---|",
    ]
    for name, entries in trips.items():
        for chat_template, report, known in entries:
            result = f"{sum(c.ok for c in report.cases)}/{len(report.cases)}"
            skipped = "; ".join(f"{k}: {v}" for k, v in report.skipped.items()) or "–"
            issues = "; ".join(f"{case}: {reason}" for case, reason in known.items()) or "–"
            lines.append(f"| {name} | `{chat_template}` | {result} | {md(skipped)} | {md(issues)} |")
    lines.append("")

    # -------------------------------------------------------------------------------------- export
    lines += [EXPORT_INTRO, "| family | transformers 5.25 | vLLM | SGLang |", "|---|---|---|---|"]
    for name, rep in exports.items():
        cells = " | ".join(export_cell(rep.results[t]) for t in export_report.TARGETS)
        lines.append(f"| [{name}](#{name.replace('.', '')}) | {cells} |")
    lines.append("")

    # ------------------------------------------------------------------------------------- grammar
    lines += grammar_lines()

    lines += [LIMITS]

    # ------------------------------------------------------------------------------------ per family
    lines += ["## Family notes", ""]
    for fam in fams:
        lines += [f"### {fam.name}", "", f"**{md(fam.title)}** — {STATUS_TEXT[fam.status]}."]
        if fam.aliases:
            lines[-1] += " Also: " + ", ".join(f"`{a}`" for a in fam.aliases) + "."
        lines.append("")
        if fam.models:
            lines.append("* Models: " + ", ".join(f"`{m}`" for m in fam.models))
        if fam.same_format_as:
            lines.append(
                f"* Template: the one of [{fam.same_format_as}](#{fam.same_format_as.replace('.', '')})"
            )
        for variant in fam.variants:
            pre = " (pre-opens reasoning)" if variant.pre_opens_reasoning else ""
            note = f": {variant.note}" if variant.note else ""
            lines.append(
                f"* Prompt, {variant.name}: {code(variant.generation_prompt) if variant.generation_prompt else '(empty)'}{pre}{note}"
            )
        lines.extend(f"* {note}" for note in fam.notes)
        if fam.has_template:
            lines.append(
                f"* A `<think>…</think>` block written without the prompt opening it: {stray_think(fam)}."
            )
        if fam.name in exports:
            lines.extend(export_lines(exports[fam.name]))
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if docs/models.md is out of date")
    args = parser.parse_args()
    text = generate()
    if args.check:
        current = OUT.read_text(encoding="utf-8") if OUT.exists() else ""
        if current != text:
            print("docs/models.md is out of date: run python scripts/gen_models_doc.py", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
