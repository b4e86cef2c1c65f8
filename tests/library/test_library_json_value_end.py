"""Library families that end a tool-call region where its JSON value ends (extension json-value-end, E3):
MiniMax-M1 (one JSON object per line), xLAM (a bare JSON array) and Mistral v3 (``[TOOL_CALLS] [...]``).

For each: the whole text and any chunking give the same message and events, text after the JSON is
content (docs/spec.md: nothing the model wrote is silently lost), and the closing markers are swallowed.
"""

from __future__ import annotations

import pytest

from library_checks import call as _call
from library_checks import parse_every_way
from response_templates import library

# ---------------------------------------------------------------------------------------------- metadata


@pytest.mark.parametrize(
    ("name", "uses", "extensions"),
    [
        ("minimax-m1", ("E3",), ("json-value-end",)),
        ("xlam", ("E3", "E8"), ("json-value-end", "into")),
        ("mistral-v3", ("E3", "E9"), ("json-value-end", "optional-placeholders")),
    ],
)
def test_families_declare_json_value_end(
    name: str, uses: tuple[str, ...], extensions: tuple[str, ...]
) -> None:
    fam = library.family(name)
    assert fam.status == "supported" and fam.has_template
    assert fam.uses == uses and not fam.needs and "E3" not in fam.would_use
    assert set(fam.template().extensions) == set(extensions)
    assert any(f.close_json for f in fam.template().fields)


# --------------------------------------------------------------------------------------------- MiniMax-M1


def test_minimax_m1_reads_one_call_per_line_and_swallows_the_markers() -> None:
    text = (
        "<think>\nI will look both up.\n</think>\n"
        "Let me check. <tool_calls>\n"
        '{"name": "get_weather", "arguments": {"city": "Boston"}}\n'
        '{"name": "get_time", "arguments": {"tz": "EST"}}\n'
        "</tool_calls><end_of_sentence>"
    )
    assert parse_every_way("minimax-m1", text) == {
        "role": "assistant",
        "reasoning_content": "I will look both up.",
        "content": "Let me check.",
        "tool_calls": [_call("get_weather", city="Boston"), _call("get_time", tz="EST")],
    }


def test_minimax_m1_string_arguments_cannot_end_a_call() -> None:
    tricky = '}\n{"name": "x"}\n</tool_calls> <end_of_sentence>'
    text = (
        "<tool_calls>\n"
        '{"name": "f", "arguments": {"s": "}\\n{\\"name\\": \\"x\\"}\\n</tool_calls> <end_of_sentence>"}}\n'
        '{"arguments": {}, "name": "g"}\n'
        "</tool_calls>"
    )
    assert parse_every_way("minimax-m1", text) == {
        "role": "assistant",
        "tool_calls": [_call("f", s=tricky), _call("g")],
    }


def test_minimax_m1_text_after_the_section_is_content() -> None:
    text = '<tool_calls>\n{"name": "f", "arguments": {}}\n</tool_calls>\nI asked for the weather.<end_of_sentence>'
    assert parse_every_way("minimax-m1", text) == {
        "role": "assistant",
        "content": "I asked for the weather.",
        "tool_calls": [_call("f")],
    }


def test_minimax_m1_cut_off_section_and_plain_json_in_the_answer() -> None:
    # The stream ends before </tool_calls>: the call is complete, nothing else to read.
    cut = '<tool_calls>\n{"name": "f", "arguments": {"a": 1}}'
    assert parse_every_way("minimax-m1", cut) == {"role": "assistant", "tool_calls": [_call("f", a=1)]}
    # JSON in the answer, outside a <tool_calls> section, stays content.
    plain = 'Use {"name": "f", "arguments": {}} to call it.<end_of_sentence>'
    assert parse_every_way("minimax-m1", plain) == {
        "role": "assistant",
        "content": 'Use {"name": "f", "arguments": {}} to call it.',
    }
    # A <tool_calls> section inside the reasoning stays reasoning (regions do not nest).
    thinking = '<think>maybe <tool_calls>\n{"name": "f", "arguments": {}}\n</tool_calls></think>No.'
    assert parse_every_way("minimax-m1", thinking) == {
        "role": "assistant",
        "reasoning_content": 'maybe <tool_calls>\n{"name": "f", "arguments": {}}\n</tool_calls>',
        "content": "No.",
    }


def test_minimax_m1_generation_prompt_is_the_anchor() -> None:
    prompt = "<beginning_of_sentence>user name=User\nHi<end_of_sentence>\n<beginning_of_sentence>ai name=MiniMax AI\n"
    assert parse_every_way("minimax-m1", "Hello!<end_of_sentence>", prefix=prompt) == {
        "role": "assistant",
        "content": "Hello!",
    }


# --------------------------------------------------------------------------------------------------- xLAM


def test_xlam_bare_list_ends_where_its_json_ends() -> None:
    text = '[{"name": "f", "arguments": {"q": "a ] ``` </tool_call>"}}]\nI called f.<|im_end|>'
    assert parse_every_way("xlam", text) == {
        "role": "assistant",
        "content": "I called f.",
        "tool_calls": [_call("f", q="a ] ``` </tool_call>")],
    }


def test_xlam_tool_calls_prefix_and_trailing_text() -> None:
    text = 'Sure.[TOOL_CALLS][{"name": "f", "arguments": {}}, {"name": "g", "arguments": {"x": 2}}] Done.'
    assert parse_every_way("xlam", text) == {
        "role": "assistant",
        "content": "Sure. Done.",
        "tool_calls": [_call("f"), _call("g", x=2)],
    }


@pytest.mark.parametrize(
    ("opener", "closer"), [("```json\n", "\n```"), ("```\n", "\n```"), ("<tool_call>", "</tool_call>")]
)
def test_xlam_wrapped_list_swallows_its_closing_fence_or_tag(opener: str, closer: str) -> None:
    code = "```py\\nx = [1]\\n```"
    text = f'Here.\n{opener}[{{"name": "run", "arguments": {{"code": "{code}"}}}}]{closer}\nAfter.<|im_end|>'
    assert parse_every_way("xlam", text) == {
        "role": "assistant",
        "content": "Here.\n\nAfter.",
        "tool_calls": [_call("run", code="```py\nx = [1]\n```")],
    }


def test_xlam_code_blocks_in_the_answer_stay_content() -> None:
    text = 'A list:\n```python\nx = [1, 2]\n```\nand JSON:\n```json\n[{"a": 1}]\n```<|im_end|>'
    assert parse_every_way("xlam", text) == {"role": "assistant", "content": text.removesuffix("<|im_end|>")}


def test_xlam_llama_header_prompt() -> None:
    prompt = "<|start_header_id|>assistant<|end_header_id|>\n\n"
    text = '<think>ok</think>[{"name": "f", "arguments": {}}]<|eot_id|>'
    assert parse_every_way("xlam", text, prefix=prompt) == {
        "role": "assistant",
        "reasoning_content": "ok",
        "tool_calls": [_call("f")],
    }


# ----------------------------------------------------------------------------------------------- Mistral v3


def test_mistral_v3_text_after_the_array_is_content() -> None:
    # Sample L0747 (vLLM's trailing_data_after_json case): vLLM drops the text, docs/spec.md keeps it.
    text = (
        '[TOOL_CALLS] [{"name": "get_current_weather", "arguments":{"city": "Dallas", "state": "TX", '
        '"unit": "fahrenheit"}}]\nextra trailing data'
    )
    assert parse_every_way("mistral-v3", text) == {
        "role": "assistant",
        "content": "extra trailing data",
        "tool_calls": [_call("get_current_weather", city="Dallas", state="TX", unit="fahrenheit")],
    }


def test_mistral_v3_eos_is_swallowed_and_strings_cannot_end_the_array() -> None:
    text = 'Hello[TOOL_CALLS][{"name": "f", "arguments": {"s": "]</s>"}, "id": "a1b2c3d4e"}]</s>'
    message = parse_every_way("mistral-v3", text)
    assert message == {
        "role": "assistant",
        "content": "Hello",
        "tool_calls": [{**_call("f", s="]</s>"), "id": "a1b2c3d4e"}],
    }


def test_mistral_v3_prompt_and_plain_answer() -> None:
    prompt = "<s>[INST]Hi[/INST]"
    assert parse_every_way("mistral-v3", "Hello there!</s>", prefix=prompt) == {
        "role": "assistant",
        "content": "Hello there!",
    }
