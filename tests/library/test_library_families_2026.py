"""The 2026 families that peers read (issue 11): lookup by model id, detection by chat-template markers,
and the corner cases each format documents (the recorded outputs are in tests/data/family_samples/)."""

from __future__ import annotations

from typing import Any

import pytest

import response_templates as rt
from response_templates import library

# ---------------------------------------------------------------------------------------- model ids


@pytest.mark.parametrize(
    ("model_id", "family"),
    [
        ("meta-models/Muse-Glimmer-30B", "muse-glimmer"),
        ("MBZUAI-IFM/K2-Horizon-7B", "k2-horizon"),
        ("inclusionAI/Ling-3.0-flash", "ling-3"),
        ("deepseek-ai/DeepSeek-V4.1", "deepseek-v4.1"),
        ("deepseek-ai/DeepSeek-V4-Flash", "deepseek-v4"),  # the older family keeps its ids
        ("ai-sage/GigaChat3.5-10B-A1.8B", "gigachat3.5"),
        ("ai-sage/GigaChat3.1-10B-A1.8B", "gigachat3"),
        ("upstage/Solar-Open2-250B", "solar-open-2"),
        ("upstage/Solar-Open-100B", "solar-open"),
        ("Qwen/Qwen3.8-35B-A3B", "qwen3-coder"),
    ],
)
def test_model_ids(model_id: str, family: str) -> None:
    assert library.family_for_model(model_id).name == family


# -------------------------------------------------------------------- detection by chat-template markers

# Fragments written the way each family's chat template writes its markers (no real template of these
# families is in tests/data/chat_templates/); each must be detected as its family.
FRAGMENTS = {
    "k2-horizon": (
        "{{- '<|ifm|im_start|>' + message.role + '\\n' + message.content + '<|ifm|im_end|>' -}}"
        "{%- set think = 'ifm|think_fast' if reasoning_effort == 'medium' else 'ifm|think' -%}"
        "{{- '<ifm|tool_calls><ifm|tool_call>' + tc.name + '\\n' -}}"
        "{{- '<ifm|arg_key>' + k + '</ifm|arg_key><ifm|arg_value>' + v + '</ifm|arg_value>' -}}"
        "{%- if add_generation_prompt -%}{{- '<|ifm|im_start|>assistant\\n<' + think + '>\\n' -}}{%- endif -%}"
    ),
    "ling-3": (
        "{{- '<role>HUMAN</role>' + message.content + '<|role_end|>' -}}"
        "{{- '<tool_call>' + tc.name + '<arg_key>' + k + '</arg_key>\\n<arg_value>' + v + '</arg_value>' -}}"
        "{%- if add_generation_prompt -%}{{- '<role>ASSISTANT</role>\\n<think>' -}}{%- endif -%}"
    ),
    "deepseek-v4.1": (
        "{{- '<｜User｜>' + message.content -}}"
        "{{- '\\n\\n<｜DSML｜ calls>\\n<｜DSML｜ invoke name=\"' + tc.name + '\">\\n' -}}"
        "{{- '<｜DSML｜ parameter name=\"' + k + '\" string=\"true\">' + v + '</｜DSML｜ parameter>' -}}"
        "{%- if add_generation_prompt -%}{{- '<｜Assistant｜><think>' -}}{%- endif -%}"
    ),
    "gigachat3.5": (
        "{%- set add_tokens = namespace(role_sep='<|role_sep|>\\n', message_sep='<|message_sep|>\\n\\n') -%}"
        "{{- message.role + add_tokens.role_sep + message.content + add_tokens.message_sep -}}"
        "{{- '<｜GCML｜tool_calls>\\n<｜GCML｜invoke name=\"' + name + '\">\\n</｜GCML｜invoke>\\n</｜GCML｜tool_calls>' -}}"
        "{%- if add_generation_prompt -%}{{- 'assistant' + add_tokens.role_sep -}}{%- endif -%}"
    ),
    "solar-open-2": (
        "{{- '<|im:start|>' + message.role + '<|im:content|>' + message.content + '<|im:end|>\\n' -}}"
        "{{- '<|tool_call:start|>' + tc.name + '\\n<|tool_arg:start|>' + k + '<|tool_arg:value|>' + v -}}"
        "{%- if add_generation_prompt -%}{{- '<|im:start|>assistant<|im:content|><|think:start|>' -}}{%- endif -%}"
    ),
}


@pytest.mark.parametrize("family", sorted(FRAGMENTS))
def test_detected_by_markers(family: str) -> None:
    assert library.detect_family(FRAGMENTS[family]).name == family
    assert rt.templates.detect(FRAGMENTS[family]).fields is library.family(family).template().fields


# ------------------------------------------------------------------------------ documented corner cases


def _parse(family: str, raw: str, prefix: str | None = None, tools: Any = None) -> dict[str, Any]:
    fam = library.family(family)
    message: dict[str, Any] = rt.parse_response(
        raw, fam.template(), prefix=prefix if prefix is not None else fam.generation_prompt, tools=tools
    )
    return message


def _streamed(family: str, raw: str, prefix: str) -> dict[str, Any]:
    parser = rt.ResponseParser(library.family(family).template(), prefix=prefix)
    for ch in raw:
        parser.feed(ch)
    message, _ = parser.finalize()
    return dict(message)


ATEM = '<atem:function_calls>\n<atem:invoke name="f">\n<atem:parameter name="x">1</atem:parameter>\n</atem:invoke>\n</atem:function_calls>'


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        # an invoke written inside the reasoning or the answer is text, not a call
        (f" to=self<|message|>maybe {ATEM}<|eom|><|start|>assistant to=user<|message|>no", {"calls": 0}),
        (f" to=self<|message|>r<|eom|><|start|>assistant to=user<|message|>e.g. {ATEM}<|eot|>", {"calls": 0}),
        # the same block on a tool channel is a call
        (f" to=self<|message|>r<|eom|><|start|>assistant to=f<|message|>{ATEM}<|eom|>", {"calls": 1}),
        # unframed text is kept as content
        ("plain text", {"calls": 0, "content": "plain text"}),
    ],
)
def test_muse_glimmer_channels(raw: str, expected: dict[str, Any]) -> None:
    prefix = "<|start|>user<|message|>hi<|eot|><|start|>assistant"
    message = _parse("muse-glimmer", raw, prefix)
    assert len(message.get("tool_calls", [])) == expected["calls"]
    if "content" in expected:
        assert message["content"] == expected["content"]
    assert _streamed("muse-glimmer", raw, prefix) == message


@pytest.mark.parametrize(
    ("prompt", "raw"),
    [
        ("<think>\n", "Plan.\n</ifm|think>\nDone."),
        ("<ifm|think_fast>\n", "Plan.\n</ifm|think_fast>\nDone."),
        ("<ifm|think_faster>\n", "Plan.\n</ifm|think_faster>\nDone."),
        (
            "<ifm|think_faster>\n",
            "Plan.\n</ifm|think>\nDone.",
        ),  # the 3.7B closes low effort with </ifm|think>
    ],
)
def test_k2_horizon_reasoning_tag_follows_the_effort(prompt: str, raw: str) -> None:
    prefix = "<|ifm|im_start|>assistant\n" + prompt.replace("<think>", "<ifm|think>")
    message = _parse("k2-horizon", raw, prefix)
    assert message == {"role": "assistant", "reasoning_content": "Plan.", "content": "Done."}
    assert _streamed("k2-horizon", raw, prefix) == message


def test_ling_3_call_ends_open_reasoning_and_role_end_ends_the_turn() -> None:
    raw = "Need data.<tool_call>get_weather<arg_key>city</arg_key>\n<arg_value>Rome</arg_value>\n</tool_call>Asked.<|role_end|>"
    prefix = "<role>ASSISTANT</role>\n<think>"
    message = _parse("ling-3", raw, prefix)
    assert message == {
        "role": "assistant",
        "reasoning_content": "Need data.",
        "content": "Asked.",
        "tool_calls": [
            {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Rome"}}}
        ],
    }
    assert _streamed("ling-3", raw, prefix) == message


def test_deepseek_v41_missing_parameter_close() -> None:
    raw = (
        '<｜DSML｜ calls>\n<｜DSML｜ invoke name="f">\n<｜DSML｜ parameter name="a" string="true">one\n'
        '<｜DSML｜ parameter name="b" string="false">2\n</｜DSML｜ invoke>\n</｜DSML｜ calls>'
    )
    message = _parse("deepseek-v4.1", raw, "<｜Assistant｜></think>")
    assert message["tool_calls"][0]["function"]["arguments"] == {"a": "one", "b": 2}


def test_solar_open_2_dropped_sentinels() -> None:
    raw = (
        "<|tool_call:start|>a\n<|tool_arg:start|>x<|tool_arg:value|>1<|tool_arg:start|>y<|tool_arg:value|>2"
        "<|tool_call:start|>b\n<|tool_arg:start|>z<|tool_arg:value|>3<|tool_arg:end|>\n<|tool_call:end|>"
    )
    prefix = "<|im:start|>assistant<|im:content|><|think:start|><|think:end|>"
    message = _parse("solar-open-2", raw, prefix)
    assert [(c["function"]["name"], c["function"]["arguments"]) for c in message["tool_calls"]] == [
        ("a", {"x": "1", "y": "2"}),
        ("b", {"z": "3"}),
    ]
    assert _streamed("solar-open-2", raw, prefix) == message


@pytest.mark.parametrize("call_format", ["xml", "xml_typed", "json"])
def test_k2_horizon_round_trips_each_call_format(call_format: str) -> None:
    """One template reads the three tool-call formats K2 Horizon's chat template can ask for."""
    from pathlib import Path

    fam = library.family("k2-horizon")
    text = (Path(__file__).resolve().parents[1] / "data" / "chat_templates" / "k2-horizon.jinja").read_text(
        encoding="utf-8"
    )
    report = rt.verify.round_trip(text, fam.template(), template_kwargs={"tool_call_format": call_format})
    assert report.ok, report.summary()
