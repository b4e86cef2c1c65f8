"""``rt.templates.derive``: response templates derived from chat templates, the library as the oracle.

The 70 chat templates of ``../shared/chat_templates/`` are derived one by one; for the families whose
format derivation reaches, the derived template must read the family's recorded outputs as the library's
hand-written template does; a fork with renamed markers must derive the same way; the command line and
the errors behave as docs/derive.md says.
"""

from __future__ import annotations

import json
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("jinja2")

import library_samples as ls
import response_templates as rt
from cli_runs import run
from response_templates import library
from response_templates.derivation import Derivation, derive
from response_templates.errors import DeriveError

ROOT = Path(__file__).resolve().parents[2]
CHAT_TEMPLATES = ROOT.parent / "shared" / "chat_templates"
FILES = sorted(p.name for p in CHAT_TEMPLATES.glob("*.jinja"))

pytestmark = pytest.mark.skipif(not FILES, reason="../shared/chat_templates is not available")

#: Chat templates nothing can be derived from (the template needs a variable no chat request has).
NOT_DERIVED = {"fireworks-ai-llama-3-firefunction-v2.jinja"}

#: Chat templates whose derived template reads (nearly) all the family's recorded outputs as the library
#: does (measured with benchmarks/bench_derive.py), with the share required here.
READS_ALIKE = {
    "Qwen-Qwen3-0.6B.jinja": 0.9,
    "Qwen-QwQ-32B.jinja": 0.9,
    "Bielik-11B-v3.0-Instruct.jinja": 0.9,
    "GLM-4.6.jinja": 0.9,
    "glm_4_5.jinja": 0.9,
    "StepFun3.5-Flash.jinja": 0.9,
    "MiniMax-M2.jinja": 0.9,
    "Reka-Edge.jinja": 0.9,
    "Qwen3.5-4B.jinja": 0.8,
}

RENAMES = (
    ("<think>", "<reflect>"),
    ("</think>", "</reflect>"),
    ("<tool_call>", "<invoke>"),
    ("</tool_call>", "</invoke>"),
)


def rename(value: Any) -> Any:
    if isinstance(value, str):
        for old, new in RENAMES:
            value = value.replace(old, new)
        return value
    if isinstance(value, list):
        return [rename(v) for v in value]
    if isinstance(value, dict):
        return {k: rename(v) for k, v in value.items()}
    return value


@cache
def chat_template(name: str) -> str:
    return (CHAT_TEMPLATES / name).read_text(encoding="utf-8")


@cache
def derived(name: str, renamed: bool = False) -> Derivation:
    text = chat_template(name)
    return derive(rename(text) if renamed else text)


def family_of(name: str) -> library.Family:
    return next(f for f in library.families() if name in f.chat_templates)


@lru_cache(maxsize=1)
def family_samples() -> dict[str, list[tuple[dict[str, Any], str, Any, Any]]]:
    table, exceptions = ls.load_tools(), ls.load_exceptions()
    out: dict[str, list[tuple[dict[str, Any], str, Any, Any]]] = {}
    for sample in ls.load_samples():
        verdict = ls.judge(sample, table, exceptions.get(sample["id"]))
        if verdict.status not in ("pass", "fail") or verdict.family is None or "error" in verdict.got:
            continue
        fam = library.family(verdict.family)
        prefix, _ = ls.prefix_for(sample, fam)
        tools, _ = ls.tools_for(sample, table)
        out.setdefault(fam.name, []).append((sample, prefix, tools, verdict.got))
    return out


def read_alike(template: dict[str, Any], family: str, renamed: bool) -> tuple[int, int]:
    same = total = 0
    for sample, prefix, tools, want in family_samples().get(family, []):
        raw = sample["raw"]
        if renamed:
            raw, prefix, want = rename(raw), rename(prefix), rename(want)
        total += 1
        try:
            got = rt.parse_response(raw, template, prefix=prefix, tools=tools)
        except rt.ResponseTemplateError:
            continue
        same += ls.normalize(got) == ls.normalize(want)
    return same, total


# ----------------------------------------------------------------------------------- every chat template


@pytest.mark.parametrize("name", FILES)
def test_a_loadable_template_is_derived(name: str) -> None:
    if name in NOT_DERIVED:
        with pytest.raises(DeriveError, match="cannot derive"):
            derived(name)
        return
    d = derived(name)
    rt.load_template(d.template)
    assert 0.0 <= d.confidence <= 1.0
    assert all(isinstance(w, str) for w in d.warnings)
    assert any(e["probe"] == "self-check" for e in d.evidence)


def test_at_least_90_percent_of_the_chat_templates_derive() -> None:
    ok = sum(name not in NOT_DERIVED for name in FILES)
    assert ok >= 0.9 * len(FILES)


@pytest.mark.parametrize("name", sorted(READS_ALIKE))
def test_the_derived_template_reads_the_familys_outputs_as_the_library_does(name: str) -> None:
    same, total = read_alike(derived(name).template, family_of(name).name, renamed=False)
    assert total and same >= READS_ALIKE[name] * total, f"{same}/{total}"


@pytest.mark.parametrize("name", sorted(READS_ALIKE))
def test_a_renamed_fork_derives_and_reads_the_same(name: str) -> None:
    real, fork = derived(name), derived(name, renamed=True)
    assert rename(json.dumps(real.template)) == json.dumps(fork.template)
    same, total = read_alike(fork.template, family_of(name).name, renamed=True)
    assert total and same >= READS_ALIKE[name] * total, f"{same}/{total}"


# -------------------------------------------------------------------------------------- what it recognises


def test_qwen3_markers_and_pre_opened_reasoning() -> None:
    d = derived("Qwen-Qwen3-0.6B.jinja")
    fields = d.template["fields"]
    assert d.template["start_anchor"] == "<|im_start|>assistant\n"
    assert fields["reasoning_content"]["open_pattern"] == r"<think>(?:\s*<think>)?"
    assert fields["reasoning_content"]["close"][0] == "</think>"
    assert fields["content"]["close"] == ["<|im_end|>", "</think>"]
    assert d.confidence == 1.0
    out = (
        "<think>\nok\n</think>\n\nHi.\n<tool_call>\n"
        + '{"name": "f", "arguments": {"x": 1}}\n</tool_call><|im_end|>'
    )
    message = rt.parse_response(out, d.template, prefix="<|im_start|>assistant\n")
    assert message["reasoning_content"] == "ok"
    assert message["tool_calls"][0]["function"] == {"name": "f", "arguments": {"x": 1}}


def test_the_renamed_fork_has_the_renamed_markers() -> None:
    d = derived("Qwen-Qwen3-0.6B.jinja", renamed=True)
    fields = d.template["fields"]
    assert fields["reasoning_content"]["open_pattern"].startswith("<reflect>")
    assert fields["tool_calls"]["open_pattern"] == "<invoke>"
    out = (
        "<reflect>\nok\n</reflect>\n\n<invoke>\n"
        + '{"name": "f", "arguments": {"x": 1}}\n</invoke><|im_end|>'
    )
    message = rt.parse_response(out, d.template, prefix="<|im_start|>assistant\n")
    assert message["reasoning_content"] == "ok"
    assert message["tool_calls"][0]["function"]["name"] == "f"


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("Qwen3-Coder.jinja", "xml-inline"),
        ("GLM-4.6.jinja", "xml-inline"),
        ("deepseek-ai-DeepSeek-V3.1.jinja", "json"),
        ("LFM2.5-8B-A1B.jinja", "python-call-list"),
        ("meta-llama-Llama-3.2-3B-Instruct.jinja", "json"),
        ("unsloth-mistral-Devstral-Small-2507.jinja", "json"),
    ],
)
def test_the_argument_syntax_is_recognised(name: str, content: str) -> None:
    d = derived(name)
    assert d.template["fields"]["tool_calls"]["content"] == content
    assert d.confidence >= 0.75


def test_reasoning_dropped_from_history_is_warned_about() -> None:
    d = derived("deepseek-ai-DeepSeek-R1-Distill-Llama-8B.jinja")
    assert d.template["fields"]["reasoning_content"]["open_pattern"].startswith("<think>")
    assert any("drops reasoning" in w for w in d.warnings)


def test_a_template_without_tool_calls_says_so() -> None:
    d = derived("google-gemma-2-2b-it.jinja")
    assert "tool_calls" not in d.template["fields"]
    assert any("tool calls" in w for w in d.warnings)


def test_a_template_that_refuses_every_probe_raises_derive_error() -> None:
    with pytest.raises(DeriveError) as info:
        derive("{{ raise_exception('no conversations here') }}")
    assert "no conversations here" in str(info.value)
    assert info.value.where == "plain assistant turn"
    assert isinstance(info.value, rt.ResponseTemplateError)


def test_the_public_wrapper_is_the_derivation() -> None:
    d = rt.templates.derive(chat_template("Qwen-Qwen3-0.6B.jinja"))
    assert d.template == derived("Qwen-Qwen3-0.6B.jinja").template


# ------------------------------------------------------------------------------------------ command line


def test_cli_derives_from_a_file(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "derive", str(CHAT_TEMPLATES / "Qwen-Qwen3-0.6B.jinja"))
    assert code == 0
    assert json.loads(out) == derived("Qwen-Qwen3-0.6B.jinja").template
    assert "confidence 1.00" in err


def test_cli_derives_from_a_model_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = {"chat_template": chat_template("Qwen-Qwen3-0.6B.jinja"), "eos_token": "<|im_end|>"}
    (tmp_path / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    out_file = tmp_path / "derived.json"
    code, out, _ = run(capsys, "derive", str(tmp_path), "--json", "-o", str(out_file))
    assert code == 0 and out == ""
    data = json.loads(out_file.read_text(encoding="utf-8"))
    assert set(data) == {"template", "confidence", "evidence", "warnings"}
    rt.load_template(data["template"])


def test_cli_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.jinja"
    bad.write_text("{{ raise_exception('nope') }}", encoding="utf-8")
    code, _, err = run(capsys, "derive", str(bad))
    assert code == 1 and "nope" in err
    code, _, _ = run(capsys, "derive", str(tmp_path / "missing.jinja"))
    assert code == 2
