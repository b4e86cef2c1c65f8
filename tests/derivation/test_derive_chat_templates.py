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
from marker_renames import rename
from response_templates import library
from response_templates.derivation import Derivation, derive
from response_templates.errors import DeriveError

ROOT = Path(__file__).resolve().parents[2]
CHAT_TEMPLATES = ROOT.parent / "shared" / "chat_templates"
FILES = sorted(p.name for p in CHAT_TEMPLATES.glob("*.jinja"))

pytestmark = pytest.mark.skipif(not FILES, reason="../shared/chat_templates is not available")

#: Chat templates nothing can be derived from (none since Firefunction v2's ``functions`` is supplied).
NOT_DERIVED: set[str] = set()

#: Chat templates whose derived template reads (nearly) all the family's recorded outputs as the library
#: does (measured with benchmarks/bench_derive.py, 2026-12-07), with the share required here.
READS_ALIKE = {
    "Bielik-11B-v3.0-Instruct.jinja": 0.95,
    "Cohere2MoE.jinja": 0.95,
    "CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja": 0.95,
    "GLM-4.6.jinja": 0.95,
    "GLM-4.7-Flash.jinja": 0.95,
    "Kimi-K2-Thinking.jinja": 0.95,
    "LFM2.5-8B-A1B.jinja": 0.95,
    "MiniMax-M2.jinja": 0.95,
    "MiniMax-M3.jinja": 0.95,
    "NVIDIA-Nemotron-3-Nano-30B-A3B-BF16.jinja": 0.95,
    "NVIDIA-Nemotron-Nano-v2.jinja": 0.95,
    "Qwen-QwQ-32B.jinja": 0.95,
    "Qwen-Qwen3-0.6B.jinja": 0.95,
    "Qwen3.5-4B.jinja": 0.95,
    "StepFun3.5-Flash.jinja": 0.95,
    "deepseek-ai-DeepSeek-R1-Distill-Llama-8B.jinja": 0.95,
    "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja": 0.95,
    "deepseek-ai-DeepSeek-V3.2.jinja": 0.95,
    "gemma4.jinja": 0.95,
    "glm_4_5.jinja": 0.95,
    "google-gemma-4-31B-it-interleaved.jinja": 0.95,
    "google-gemma-4-31B-it.jinja": 0.95,
    "llama-cpp-deepseek-r1.jinja": 0.95,
    "meetkai-functionary-medium-v3.1.jinja": 0.95,
    "openbmb-MiniCPM5-1B.jinja": 0.95,
    "poolside-Laguna-S-2.1.jinja": 0.95,
    "poolside-Laguna-XS-2.1.jinja": 0.95,
    "poolside-Laguna-XS.2.jinja": 0.95,
    "stepfun-ai-Step-3.5-Flash.jinja": 0.95,
    "unsloth-Apriel-1.5.jinja": 0.95,
    # harmony-style channels
    "openai-gpt-oss-120b.jinja": 0.95,
    # the end-of-sequence token guessed by rule where the template writes eos_token
    "Mistral-Small-3.2-24B-Instruct-2506.jinja": 0.95,
    "mistralai-Ministral-3-14B-Reasoning-2512.jinja": 0.95,
    "mistralai-Mistral-Nemo-Instruct-2407.jinja": 0.95,
    # the header's last marker written again
    "CohereForAI-c4ai-command-r-plus-tool_use.jinja": 0.95,
    # a variable no chat request has (``functions``), supplied
    "fireworks-ai-llama-3-firefunction-v2.jinja": 0.95,
    # 22/36: Devstral's template shows no [THINK] reasoning
    "unsloth-mistral-Devstral-Small-2507.jinja": 0.6,
    # 9/12: markers read off the system prompt's prose; "Here is my thought process:" is not shown
    "ibm-granite-granite-3.3-2B-Instruct.jinja": 0.75,
    # the answer's closer by the naming rule ([BEGIN X] -> [END X])
    "Apriel-1.6-15b-Thinker-fixed.jinja": 0.95,
    # 13/16: the built-in tools' calls; raw code after <|python_tag|> is not shown
    "meta-llama-Llama-3.1-8B-Instruct.jinja": 0.8,
    "meta-llama-Llama-3.3-70B-Instruct.jinja": 0.8,
    # reasoning rendered from the template's own content blocks
    "Apertus-8B-Instruct.jinja": 0.95,
    # 4/5: the call marker the prompt ends with; raw python code is not shown
    "meetkai-functionary-medium-v3.2.jinja": 0.8,
    # a plain-tag call inside open reasoning stays reasoning text, as Reka's library template reads it
    "Reka-Edge.jinja": 0.95,
}

#: The benchmark's floor: chat templates (of 70) whose derived template reads >=95% of the family's
#: outputs as the library does, on the real and on the renamed run (42 measured on 2026-12-07).
BENCH_FLOOR = 42


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
    assert d.template["start_anchor"][0] == "<|im_start|>assistant\n"
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
    assert fields["tool_calls"]["open_pattern"].startswith("<invoke>")
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
    fields = d.template["fields"]
    calls = fields.get("tool_calls") or fields["call_blocks"]  # several syntaxes feed tool_calls
    assert calls["content"] == content
    assert d.confidence >= 0.75


def test_a_python_call_list_also_reads_the_json_list() -> None:
    d = derived("LFM2.5-8B-A1B.jinja")
    fields = d.template["fields"]
    assert fields["call_blocks"]["into"] == fields["json_calls"]["into"] == "tool_calls"
    prefix = "<|im_start|>assistant\n"
    for out in (
        "<|tool_call_start|>[f(x=1)]<|tool_call_end|>",
        '<|tool_call_start|>[{"name": "f", "arguments": {"x": 1}}]<|tool_call_end|>',
    ):
        message = rt.parse_response(out, d.template, prefix=prefix)
        assert message["tool_calls"][0]["function"] == {"name": "f", "arguments": {"x": 1}}


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


# ------------------------------------------------------------------------------ syntaxes and leniencies


def parse(name: str, out: str, prefix: str) -> dict[str, Any]:
    message = rt.parse_response(out, derived(name).template, prefix=prefix)
    assert isinstance(message, dict)
    return message


def test_a_json_array_in_a_wrapper_is_one_list_of_calls() -> None:
    d = derived("NVIDIA-Nemotron-Nano-v2.jinja")
    calls = d.template["fields"]["tool_calls"]
    assert calls["transform_each"] and calls["open_pattern"].startswith("<TOOLCALL>")
    out = '<TOOLCALL>[{"name": "f", "arguments": {"x": 1}}, {"name": "g", "arguments": {}}]</TOOLCALL>'
    message = parse("NVIDIA-Nemotron-Nano-v2.jinja", out, "<SPECIAL_11>Assistant\n")
    assert [c["function"]["name"] for c in message["tool_calls"]] == ["f", "g"]
    assert "content" not in message


def test_a_call_id_the_template_writes_may_be_left_out() -> None:
    d = derived("mistralai-Mistral-Nemo-Instruct-2407.jinja")
    assert "optional-placeholders" in d.template["extensions"]
    with_id = parse(
        "mistralai-Mistral-Nemo-Instruct-2407.jinja",
        '[TOOL_CALLS][{"name": "f", "arguments": {}, "id": "abcdefghi"}]',
        "[/INST]",
    )
    without = parse(
        "mistralai-Mistral-Nemo-Instruct-2407.jinja",
        '[TOOL_CALLS][{"name": "f", "arguments": {}}]',
        "[/INST]",
    )
    assert with_id["tool_calls"][0]["id"] == "abcdefghi"
    assert "id" not in without["tool_calls"][0]


def test_the_turn_after_a_tool_result_is_anchored() -> None:
    d = derived("mistralai-Mistral-Nemo-Instruct-2407.jinja")
    assert d.template["start_anchor"] == ["[/INST]", "[/TOOL_RESULTS]"]
    assert any(e["found"] == "start anchor after a tool result" for e in d.evidence)


def test_a_turn_without_an_end_marker_ends_where_the_next_turn_starts() -> None:
    d = derived("GLM-4.7-Flash.jinja")
    assert "<|user|>" in d.template["fields"]["content"]["close"]
    message = parse("GLM-4.7-Flash.jinja", "</think>Hello!<|user|>", "<|assistant|><think>")
    assert message["content"] == "Hello!"


def test_a_call_marker_before_another_syntax_is_text() -> None:
    # the JSON-call marker opens a call only when JSON follows it
    out = "<tool_call>\n<function=bash>\n</function>\n</tool_call>"
    message = parse("Qwen-Qwen3-0.6B.jinja", out, "<|im_start|>assistant\n")
    assert "tool_calls" not in message and message["content"].startswith("<tool_call>")


def test_a_plain_tag_call_inside_open_reasoning_is_reasoning_text() -> None:
    # Reka writes <tool_call> as plain text: inside open reasoning it is the model thinking about a call
    d = derived("Reka-Edge.jinja")
    assert "within" not in d.template["fields"]["tool_calls"]
    out = 'Maybe <tool_call>{"name": "f", "arguments": {}}</tool_call> hmm</think><tool_call>{"name": "g", "arguments": {}}</tool_call>'
    message = parse("Reka-Edge.jinja", out, "assistant: <think>\n")
    assert message["reasoning_content"].startswith("Maybe <tool_call>")
    assert [c["function"]["name"] for c in message["tool_calls"]] == ["g"]


def test_calls_may_interrupt_open_reasoning() -> None:
    d = derived("Qwen3.5-4B.jinja")
    assert d.template["fields"]["tool_calls"]["within"] == ["reasoning_content"]
    out = "Let me look.\n<tool_call>\n<function=ls>\n<parameter=path>\n/\n</parameter>\n</function>\n</tool_call>"
    message = parse("Qwen3.5-4B.jinja", out, "<|im_start|>assistant\n<think>\n")
    assert message["reasoning_content"] == "Let me look."
    assert message["tool_calls"][0]["function"] == {"name": "ls", "arguments": {"path": "/"}}


def test_the_outer_call_marker_may_be_left_out() -> None:
    out = "<function=ls>\n<parameter=path>\n/\n</parameter>\n</function>"
    message = parse("Qwen3.5-4B.jinja", out, "<|im_start|>assistant\n<think>\n\n</think>\n\n")
    assert message["tool_calls"][0]["function"]["name"] == "ls"


def test_xml_parameters_with_attributes_that_vary_by_type() -> None:
    name = "deepseek-ai-DeepSeek-V3.2.jinja"
    out = (
        '<｜DSML｜function_calls>\n<｜DSML｜invoke name="f">\n'
        '<｜DSML｜parameter name="n" string="false">1</｜DSML｜parameter>\n'
        '<｜DSML｜parameter name="s" string="true">a b</｜DSML｜parameter>\n'
        "</｜DSML｜invoke>\n</｜DSML｜function_calls>"
    )
    message = parse(name, out, "<｜Assistant｜></think>")
    assert message["tool_calls"][0]["function"]["arguments"] == {"n": "1", "s": "a b"}


def test_closing_tags_named_after_the_argument_and_nested_values() -> None:
    d = derived("MiniMax-M3.jinja")
    assert "xml-values" in d.template["extensions"]
    p = "]<]minimax[>["
    out = (
        f'{p}<tool_call>\n{p}<invoke name="f">{p}<city>Paris{p}</city>'
        f"{p}<pair>{p}<a>1{p}</a>{p}<b>2{p}</b>{p}</pair>{p}</invoke>\n{p}</tool_call>"
    )
    message = parse("MiniMax-M3.jinja", out, "]~b]ai\n")
    assert message["tool_calls"][0]["function"]["arguments"] == {"city": "Paris", "pair": {"a": 1, "b": 2}}


def test_a_cdata_value_is_read_verbatim() -> None:
    out = '<function name="f"><param name="x"><![CDATA[a </param> b]]></param></function>'
    message = parse("openbmb-MiniCPM5-1B.jinja", out, "<|im_start|>assistant\n<think>\n\n</think>\n\n")
    assert message["tool_calls"][0]["function"]["arguments"] == {"x": "a </param> b"}


def test_the_name_as_the_key() -> None:
    d = derived("Apertus-8B-Instruct.jinja")
    assert "item-transform" in d.template["extensions"]
    out = '<|tools_prefix|>[{"f": {"x": 1}}]<|tools_suffix|>'
    message = parse("Apertus-8B-Instruct.jinja", out, "<|assistant_start|>")
    assert message["tool_calls"][0]["function"] == {"name": "f", "arguments": {"x": 1}}


def test_the_answer_wrapper_may_be_left_out() -> None:
    d = derived("Cohere2MoE.jinja")
    assert d.template["fields"]["content_wrapper"]["into"] == "content"
    prefix = "<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|><|START_THINKING|>"
    for out in (
        "hm<|END_THINKING|><|START_TEXT|>Hi<|END_TEXT|>",
        "hm<|END_THINKING|>Hi<|END_OF_TURN_TOKEN|>",
    ):
        message = parse("Cohere2MoE.jinja", out, prefix)
        assert (message["reasoning_content"], message["content"]) == ("hm", "Hi")


def test_a_template_that_always_writes_the_generation_prompt() -> None:
    # command-r7b appends the assistant header whatever add_generation_prompt says
    d = derived("CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja")
    assert d.template["start_anchor"] == "<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>"
    assert d.confidence == 1.0


def test_a_template_switch_that_turns_reasoning_on() -> None:
    d = derived("unsloth-Apriel-1.5.jinja")
    assert d.template["fields"]["reasoning_content"]["open_pattern"].startswith("<thinking>")
    assert any("switches" in e["probe"] for e in d.evidence)


def test_a_section_close_only_the_two_call_render_shows() -> None:
    d = derived("deepseek-ai-DeepSeek-R1-Distill-Llama-8B.jinja")
    assert "<｜tool▁calls▁end｜>" in d.template["fields"]["tool_calls"]["close_pattern"]


@pytest.mark.parametrize(
    "name",
    [
        "mistralai-Mistral-Nemo-Instruct-2407.jinja",
        "mistralai-Ministral-3-14B-Reasoning-2512.jinja",
        "Mistral-Small-3.2-24B-Instruct-2506.jinja",
    ],
)
def test_with_the_tokenizers_eos_token_the_mistral_templates_read_their_outputs(name: str) -> None:
    bare = derived(name)
    assert any("eos_token" in w for w in bare.warnings)
    d = derive(chat_template(name), special_tokens={"eos_token": "</s>"})
    assert "</s>" in d.template["fields"]["content"]["close"]
    same, total = read_alike(d.template, family_of(name).name, renamed=False)
    assert total and same >= 0.95 * total, f"{same}/{total}"


def test_the_markers_between_name_and_arguments_may_be_left_out() -> None:
    d = derive(
        chat_template("Mistral-Small-3.2-24B-Instruct-2506.jinja"), special_tokens={"eos_token": "</s>"}
    )
    for out, call_id in (
        ('[TOOL_CALLS]f[CALL_ID]abcdefghi[ARGS]{"x": 1}</s>', "abcdefghi"),
        ('[TOOL_CALLS]f[ARGS]{"x": 1}</s>', None),
        ('[TOOL_CALLS]f{"x": 1}</s>', None),
    ):
        call = rt.parse_response(out, d.template, prefix="[/INST]")["tool_calls"][0]
        assert call["function"] == {"name": "f", "arguments": {"x": 1}} and call.get("id") == call_id


def test_a_template_without_tools_loses_no_confidence_for_it() -> None:
    assert derived("google-gemma-2-2b-it.jinja").confidence == 1.0
    assert derived("LFM2-8B-A1B.jinja").confidence < 1.0  # it has tools, but renders no calls


# --------------------------------------------------------------------------------------------- benchmark


def test_the_benchmark_does_not_fall_below_its_floor(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))  # the benchmark's own helpers
    spec = importlib.util.spec_from_file_location("bench_derive", ROOT / "benchmarks" / "bench_derive.py")
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    summary = bench.run(None)["summary"]
    assert summary["real"]["read_95"] >= BENCH_FLOOR, summary["real"]
    assert summary["renamed"]["read_95"] == summary["real"]["read_95"], summary
    # the ceiling: what no derivation from the chat template alone can read (docs/derive.md)
    assert summary["real"]["read_95"] <= summary["real"]["reachable_95"] < 70, summary["real"]
    assert summary["renamed"]["reachable_95"] == summary["real"]["reachable_95"], summary
