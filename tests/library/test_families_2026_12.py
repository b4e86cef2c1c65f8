"""The families the field added after the library was written (issue 33): Ripple, ZAYA1, Granite 4.2, PLaMo 3.

None has a real chat template in ``tests/data/chat_templates`` (hub access was not available), so each is
detected here from a fragment that renders its markers the way vLLM 0.34's parser for it reads them; their
recorded outputs are ``tests/data/family_samples/<family>.jsonl`` (checked by the library sample tests).
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

import response_templates as rt
from library_checks import random_pieces
from response_templates import library

MODEL_IDS = [
    ("ripple", "Ricursive/Ripple-70B"),
    ("zaya1", "Zyphra/ZAYA1-8B"),
    ("zaya1", "Zyphra/ZAYA1-8B-MXFP4-Experts"),
    ("granite-4.2", "ibm-granite/granite-4.2-8b"),
    ("granite-4.2", "ibm-granite/granite-4.2-30b"),
    ("plamo-3", "pfnet/plamo-3-nict-8b-base"),
]


@pytest.mark.parametrize(("family", "model_id"), MODEL_IDS, ids=[m for _, m in MODEL_IDS])
def test_model_id_selects_the_family(family: str, model_id: str) -> None:
    assert library.family_for_model(model_id).name == family
    assert rt.templates.for_model(model_id) is library.family(family).template()


def test_granite_4_ids_keep_their_family() -> None:
    assert library.family_for_model("ibm-granite/granite-4.1-8b").name == "granite-4"
    assert library.family_for_model("ibm-granite/granite-4.0-h-small").name == "granite-4"


FRAGMENTS = [
    (
        "zaya1",
        "{{ '<|im_start|>system\\n' + system + '<|im_end|>\\n' }}<zyphra_tool_call>\\n<function={{ name }}>\\n"
        "<parameter={{ k }}>\\n{{ v }}\\n</parameter>\\n</function>\\n</zyphra_tool_call>"
        "{{ '<|im_start|>assistant\\n' }}",
    ),
    (
        "granite-4.2",
        "{%- set truncate_history_thinking = true %}{%- if tool.defer_loading %}{% endif %}"
        "{{ '<|im_start|>system\\n' }}<tool_call>\\n<function={{ name }}>\\n<parameter={{ k }}>\\n{{ v }}\\n"
        "</parameter>\\n</function>\\n</tool_call>{{ '<|im_start|>assistant\\n' }}"
        "{% if enable_thinking %}<think>\\n{% else %}<think></think>{% endif %}",
    ),
    (
        "plamo-3",
        "{{ message.role + '<|plamo:msg|>' + message.content + '<|plamo:tag|>' }}"
        "{{ '<|plamo:begin_tool_requests:plamo|><|plamo:begin_tool_request:plamo|><|plamo:begin_tool_name:plamo|>'"
        " + name + '<|plamo:end_tool_name:plamo|>' }}{% if add_generation_prompt %}{{ 'assistant<|plamo:msg|>' }}"
        "{% endif %}",
    ),
    # No marker rule of its own: a ChatML template with Hermes calls is read by hermes' fields.
    (
        "ripple",
        "{{ '<|im_start|>user\\n' + content + '<|im_end|>\\n' }}<tool_call>\\n{{ call | tojson }}\\n</tool_call>"
        "<think>\\n{{ r }}\\n</think>\\n{{ '<|im_start|>assistant\\n' }}",
    ),
]
DETECTED_AS = {"ripple": "hermes"}


@pytest.mark.parametrize(("family", "fragment"), FRAGMENTS, ids=[f for f, _ in FRAGMENTS])
def test_markers_detect_the_family(family: str, fragment: str) -> None:
    expected = library.family(DETECTED_AS.get(family, family))
    found = library.detect_family(fragment)
    assert found.resolved().name == expected.resolved().name, found.name
    if family not in DETECTED_AS:
        assert found.name == family


def test_nemotron_3_chat_template_is_not_read_as_granite_4_2() -> None:
    path = (
        Path(__file__).resolve().parents[1]
        / "data"
        / "chat_templates"
        / "NVIDIA-Nemotron-3-Nano-30B-A3B-BF16.jinja"
    )
    assert library.detect_family(path.read_text(encoding="utf-8")).name == "nemotron-3-nano"


WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}
PARIS = {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}


def _same_in_pieces(text: str, template: rt.ResponseTemplate, prefix: str) -> dict[str, Any]:
    """The message of ``text`` whole, checked to be the same when ``text`` is fed in random pieces."""
    whole = rt.parse_response(text, template, prefix=prefix, tools=[WEATHER])
    rng = random.Random(33)
    for _ in range(5):
        pieces = random_pieces(text, rng)
        parser = rt.ResponseParser(template, prefix=prefix, tools=[WEATHER])
        for piece in pieces:
            parser.feed(piece)
        assert parser.finalize()[0] == whole
    return whole


def test_ripple_plain_text_markers_after_any_prompt() -> None:
    text = '<think>\nCheck.\n</think>\nOne moment.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
    got = _same_in_pieces(text, rt.templates.get("ripple"), "Human: weather?\nAI: ")
    assert got == {
        "role": "assistant",
        "reasoning_content": "Check.",
        "content": "One moment.",
        "tool_calls": [PARIS],
    }


def test_zaya1_reads_its_own_wrapper_only() -> None:
    template = rt.templates.get("zaya1")
    call = "<zyphra_tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n</zyphra_tool_call>"
    got = _same_in_pieces(f"<think>\nGo.\n</think>\n\n{call}<|im_end|>", template, "<|im_start|>assistant\n")
    assert got == {"role": "assistant", "reasoning_content": "Go.", "tool_calls": [PARIS]}


def test_granite_4_2_pre_opened_reasoning_and_thinking_off() -> None:
    template = rt.templates.get("granite-4.2")
    call = "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>"
    on = _same_in_pieces(
        f"Weather.\n</think>\n\n{call}<|im_end|>", template, "<|im_start|>assistant\n<think>\n"
    )
    assert on == {"role": "assistant", "reasoning_content": "Weather.", "tool_calls": [PARIS]}
    off = _same_in_pieces("Plain answer.<|im_end|>", template, "<|im_start|>assistant\n<think></think>")
    assert off == {"role": "assistant", "content": "Plain answer."}


@pytest.mark.parametrize("constraint", ["<|plamo:constrain|>json<|plamo:msg|>", "<|plamo:msg|>", ""])
def test_plamo_3_arguments_with_or_without_the_json_constraint(constraint: str) -> None:
    call = (
        "<|plamo:begin_tool_requests:plamo|><|plamo:begin_tool_request:plamo|><|plamo:begin_tool_name:plamo|>"
        f"get_weather<|plamo:end_tool_name:plamo|><|plamo:begin_tool_arguments:plamo|>{constraint}"
        '{"city": "Paris"}<|plamo:end_tool_arguments:plamo|><|plamo:end_tool_request:plamo|>'
        "<|plamo:end_tool_requests:plamo|>"
    )
    text = f"<|plamo:begin_think:plamo|>Weather.<|plamo:end_think:plamo|>{call}<|plamo:tag|>"
    got = _same_in_pieces(
        text, rt.templates.get("plamo-3"), "user<|plamo:msg|>hi<|plamo:tag|>assistant<|plamo:msg|>"
    )
    assert got == {"role": "assistant", "reasoning_content": "Weather.", "tool_calls": [PARIS]}
