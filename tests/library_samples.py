"""Judging the recorded model outputs of ``tests/data/model_output_samples.jsonl`` against the library.

Shared by ``tests/test_library_samples.py`` and ``scripts/gen_models_doc.py``. Every sample that has an
expected message and is not a partial stream is parsed with the template of its library family and
compared with the expected message, judged by docs/spec.md:

* **Which family.** The sample's ``family`` maps to a library family through the families'
  ``sample_families``; vLLM's ``mistral`` tests are split by tokenizer (``pre_v11`` cases are
  ``mistral-v3``).
* **Which prompt** (``prefix``), first rule that applies:

  1. the recorded ``context.generation_prompt`` (or ``context.prefix``);
  2. ``context.thinking_forced_open``: the family's prompt that pre-opens reasoning;
  3. a reasoning-parser test whose note says the opener may live in the prompt, whose output does not
     contain that opener and whose case does not say thinking was disabled: the family's prompt that
     pre-opens reasoning (only if the family's chat template has such a prompt);
  4. otherwise the family's plain start of turn.

* **Which tools.** ``context.tools`` names the tools the source declared: their schemas are in
  ``sample_tools.json`` (types only, written for these tests). A source that ran with tools it did not
  record (every tool-parser test does) gets schemas typed after the expected arguments; docs/spec.md,
  section 7 types argument values only with ``tools=``, so this is what the source's request would have
  provided.
* **Comparing.** ``content`` and ``reasoning_content`` are compared stripped (the ``text`` parser of
  docs/spec.md strips; llama.cpp compares whitespace-insensitively too); empty values count as absent; a
  tool call's ``id`` is compared when the expected call has one, and an empty ``id`` counts as none.
* **Not applicable**: samples whose recorded settings switch off parsing that docs/spec.md does
  (``reasoning_format: none``, ``reasoning_in_content``, ``parse_tool_calls: false``, ``json_schema``
  response mode), and samples of families that need a template-language extension.
* **Reviewed exceptions** (``sample_exceptions.json``): each failing sample is listed with a kind and a
  one-line reason. ``needs-extension`` samples exercise syntax the language cannot express yet and leave
  the denominator, like the extension families; ``source-policy`` and ``difference`` entries stay in it as
  failures. ``source-policy`` entries are checked: our message, with its reasoning written back inline the
  way the source's policy keeps it, must equal the source's expectation. ``alternative`` entries name an
  opt-in library template (``template``) that reads what the family's default template deliberately does
  not (llama.cpp's lenient Hermes wrappers, say); the sample must pass with it, and counts as a pass.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import response_templates as rt
from response_templates import library
from response_templates.verify import json_type

DATA = Path(__file__).resolve().parent / "data"
SAMPLES_FILE = DATA / "model_output_samples.jsonl"
#: Samples written here from a family's documented format or taken (as data) from peers' test suites,
#: one ``<family>.jsonl`` per library family, in the schema of ``SAMPLES_FILE``. A sample may carry its
#: tools' JSON schemas inline as ``context.tool_schemas`` (a list of tool dicts).
FAMILY_SAMPLES_DIR = DATA / "family_samples"
TOOLS_FILE = DATA / "sample_tools.json"
EXCEPTIONS_FILE = DATA / "sample_exceptions.json"

#: Recorded settings under which the source does not parse what docs/spec.md parses.
NOT_PARSED = (
    ("reasoning_format", "none", "reasoning extraction switched off (reasoning_format=none)"),
    ("reasoning_in_content", True, "reasoning kept in content (reasoning_in_content)"),
    ("parse_tool_calls", False, "tool-call parsing switched off (parse_tool_calls=false)"),
    ("json_schema", True, "JSON-schema response mode (the source unwraps fenced JSON)"),
)

EXCEPTION_KINDS = ("needs-extension", "source-policy", "alternative", "difference")


@dataclass
class Verdict:
    """The outcome for one sample."""

    id: str
    sample_family: str
    family: str | None
    #: ``pass``, ``fail``, ``not-applicable`` (see ``why``) or ``unmapped``.
    status: str
    prefix_rule: str = ""
    inferred_tools: bool = False
    why: str = ""
    got: Any = None
    expected: Any = None
    #: For ``source-policy`` exceptions: whether our message matches under the source's policy.
    policy_match: bool | None = None
    #: For ``alternative`` exceptions: whether the named opt-in library template gives the expected message.
    alternative_match: bool | None = None


def load_samples() -> list[dict[str, Any]]:
    """The research set's samples, then the per-family sample files in name order."""
    files = [SAMPLES_FILE, *sorted(FAMILY_SAMPLES_DIR.glob("*.jsonl"))]
    samples: list[dict[str, Any]] = []
    for path in files:
        with path.open(encoding="utf-8") as f:
            samples.extend(json.loads(line) for line in f if line.strip())
    return samples


def load_tools() -> dict[str, Any]:
    return json.loads(TOOLS_FILE.read_text(encoding="utf-8"))


def load_exceptions() -> dict[str, dict[str, str]]:
    data = json.loads(EXCEPTIONS_FILE.read_text(encoding="utf-8"))
    return data["exceptions"]


def family_of(sample: Mapping[str, Any]) -> str | None:
    if sample["family"] == "mistral" and "pre_v11" in sample["context"].get("case", ""):
        return "mistral-v3"
    return library.sample_family_map().get(sample["family"])


def prefix_for(sample: Mapping[str, Any], fam: library.Family) -> tuple[str, str]:
    """``(prefix, rule)`` as described in the module docstring."""
    ctx = sample["context"]
    if "generation_prompt" in ctx:
        return ctx["generation_prompt"], "recorded"
    if "prefix" in ctx:
        return ctx["prefix"], "recorded"
    pre_open = fam.pre_open_prompt()
    if pre_open is not None and ctx.get("thinking_forced_open"):
        return pre_open, "thinking-forced-open"
    if (
        pre_open is not None
        and "opener may live in the prompt" in ctx.get("note", "")
        and "thinking_disabled" not in ctx.get("case", "").lower()
    ):
        plain = fam.generation_prompt
        opener = (pre_open[len(plain) :] if pre_open.startswith(plain) else pre_open).strip()
        if opener and opener not in sample["raw"]:
            return pre_open, "assumed-pre-open"
    return fam.generation_prompt, "plain"


def tools_for(sample: Mapping[str, Any], table: Mapping[str, Any]) -> tuple[list[Any] | None, bool]:
    """``(tools, inferred)`` for a sample (see the module docstring)."""
    schemas = sample["context"].get("tool_schemas")
    if schemas:
        return list(schemas), False
    names = sample["context"].get("tools")
    if names:
        tools = [table[name] for name in names if name in table]
        if tools:
            return tools, False
    calls = sample["expected"].get("tool_calls")
    if not calls:
        return None, False
    props: dict[str, dict[str, Any]] = {}
    for call in calls:
        fn = call["function"]
        args = fn.get("arguments") or {}
        mine = props.setdefault(fn["name"], {})
        for key, value in args.items():
            mine[key] = {"type": json_type(value)}
    inferred = [
        {"type": "function", "function": {"name": n, "parameters": {"type": "object", "properties": p}}}
        for n, p in props.items()
    ]
    return inferred, True


def normalize(message: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in message.items():
        if key in ("content", "reasoning_content") and isinstance(value, str):
            value = value.strip()
        if key != "role" and value in (None, "", [], {}):
            continue
        out[key] = value
    return out


def same(got: Mapping[str, Any], expected: Mapping[str, Any]) -> bool:
    ours, theirs = normalize(got), normalize(expected)
    if "tool_calls" in ours:
        calls = []
        want = theirs.get("tool_calls") or []
        for index, call in enumerate(ours["tool_calls"]):
            if isinstance(call, dict) and "id" in call:
                keep = call["id"] != "" and index < len(want) and "id" in want[index]
                if not keep:
                    call = {k: v for k, v in call.items() if k != "id"}
            calls.append(call)
        ours["tool_calls"] = calls
    return ours == theirs


def _squash(text: str) -> str:
    return "".join(text.split())


def policy_match(
    got: Mapping[str, Any], expected: Mapping[str, Any], fam: library.Family, sample: Mapping[str, Any]
) -> bool:
    """Our message equals the expectation once its reasoning is written back inline (tags included) the way
    the source's policy keeps it, ignoring whitespace; tool calls must match exactly."""
    ours, theirs = normalize(got), normalize(expected)
    reasoning = ours.pop("reasoning_content", "")
    if theirs.get("reasoning_content"):
        return False
    content = theirs.get("content", "")
    if reasoning and _squash(reasoning) not in _squash(content):
        return False
    raw_outside = _squash(content.replace(reasoning, "")) if reasoning else _squash(content)
    mine = _squash(ours.get("content", ""))
    if mine and mine not in raw_outside:
        return False
    ours.pop("content", None)
    theirs.pop("content", None)
    return same(ours, theirs)


def not_parsed_reason(sample: Mapping[str, Any]) -> str | None:
    ctx = sample["context"]
    for key, value, why in NOT_PARSED:
        if ctx.get(key) == value:
            return why
    return None


def judge(
    sample: Mapping[str, Any], table: Mapping[str, Any], exception: Mapping[str, str] | None = None
) -> Verdict:
    name = family_of(sample)
    verdict = Verdict(sample["id"], sample["family"], name, "unmapped", expected=sample["expected"])
    if name is None:
        return verdict
    fam = library.family(name)
    if not fam.has_template:
        verdict.status = "not-applicable"
        verdict.why = f"family {name} needs extension {', '.join(fam.needs)}"
        return verdict
    why = not_parsed_reason(sample)
    if why:
        verdict.status = "not-applicable"
        verdict.why = why
    prefix, verdict.prefix_rule = prefix_for(sample, fam)
    tools, verdict.inferred_tools = tools_for(sample, table)
    try:
        got = rt.parse_response(sample["raw"], fam.template(), prefix=prefix, tools=tools)
    except rt.ResponseTemplateError as exc:
        got = {"error": f"{type(exc).__name__}: {exc}"}
    verdict.got = got
    ok = "error" not in got and same(got, sample["expected"])
    if verdict.status != "not-applicable":
        verdict.status = "pass" if ok else "fail"
    if "error" not in got:
        verdict.policy_match = policy_match(got, sample["expected"], fam, sample)
    if exception is not None and exception["kind"] == "alternative":
        try:
            alt = rt.parse_response(
                sample["raw"], library.get(exception["template"]), prefix=prefix, tools=tools
            )
            verdict.alternative_match = same(alt, sample["expected"])
        except rt.ResponseTemplateError:
            verdict.alternative_match = False
    return verdict


def judge_all() -> list[Verdict]:
    table = load_tools()
    exceptions = load_exceptions()
    return [judge(sample, table, exceptions.get(sample["id"])) for sample in load_samples()]


@dataclass
class Summary:
    """The numbers the test checks and docs/models.md shows."""

    verdicts: list[Verdict]
    exceptions: dict[str, dict[str, str]]

    def applicable(self) -> Iterator[Verdict]:
        """Samples in the denominator: mapped, with a template, parsed by the source, not needing an
        extension."""
        for v in self.verdicts:
            if v.status not in ("pass", "fail"):
                continue
            entry = self.exceptions.get(v.id)
            if entry is not None and entry["kind"] == "needs-extension":
                continue
            yield v

    def counts(self) -> dict[str, int]:
        applicable = list(self.applicable())
        passed = sum(v.status == "pass" for v in applicable)
        return {
            "samples": len(self.verdicts),
            "applicable": len(applicable),
            "passed": passed,
            "inferred_tools": sum(v.inferred_tools for v in applicable if v.status == "pass"),
            "not_applicable": sum(v.status == "not-applicable" for v in self.verdicts),
            "needs_extension": sum(
                1
                for v in self.verdicts
                if v.status in ("pass", "fail")
                and self.exceptions.get(v.id, {}).get("kind") == "needs-extension"
            ),
            "source_policy": sum(
                1 for v in applicable if self.exceptions.get(v.id, {}).get("kind") == "source-policy"
            ),
            "alternative": sum(
                1 for v in applicable if self.exceptions.get(v.id, {}).get("kind") == "alternative"
            ),
            "difference": sum(
                1 for v in applicable if self.exceptions.get(v.id, {}).get("kind") == "difference"
            ),
        }

    def per_family(self) -> dict[str, tuple[int, int, int, int]]:
        """Library family -> (passed, of which by undoing a source policy, of which with an opt-in
        alternative template, applicable)."""
        passed: Counter[str] = Counter()
        policy: Counter[str] = Counter()
        alternative: Counter[str] = Counter()
        total: Counter[str] = Counter()
        for v in self.applicable():
            assert v.family is not None
            total[v.family] += 1
            kind = self.exceptions.get(v.id, {}).get("kind")
            passed[v.family] += v.status == "pass" or kind in ("source-policy", "alternative")
            policy[v.family] += kind == "source-policy"
            alternative[v.family] += kind == "alternative"
        return {name: (passed[name], policy[name], alternative[name], total[name]) for name in total}

    def not_applicable_reasons(self) -> Counter[str]:
        return Counter(v.why for v in self.verdicts if v.status == "not-applicable")


def summarize() -> Summary:
    return Summary(judge_all(), load_exceptions())
