"""Extensions ``interleaved`` (E5: a region opens inside another, which resumes after it) and ``into``
the implicit field (E6: the implicit text may be written bare or inside a wrapper). docs/extensions.md."""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import response_templates as rt
from hypothesis_profiles import examples
from library_checks import random_pieces
from response_templates.errors import TemplateError
from response_templates.wire import (
    AnthropicMessagesAdapter,
    ChatCompletionsAdapter,
    ResponsesAdapter,
    run_stream,
)

ANCHOR = "<|assistant|>"


def template(extensions: list[str], tool_extra: dict[str, Any], **extra_fields: Any) -> dict[str, Any]:
    """Reasoning, JSON tool calls, more fields, and the implicit content up to <|end|>."""
    tool_calls = {"open": "<tool_call>", "close": "</tool_call>", "repeats": True, "content": "json"}
    return {
        "extensions": extensions,
        "start_anchor": ANCHOR,
        "fields": {
            "reasoning_content": {"open": "<think>", "close": "</think>"},
            "tool_calls": {**tool_calls, **tool_extra},
            **extra_fields,
            "content": {"close": "<|end|>"},
        },
    }


def interleaved(**tool_extra: Any) -> dict[str, Any]:
    return template(["interleaved"], {"within": ["reasoning_content"], **tool_extra})


def wrapped(**wrapper_extra: Any) -> dict[str, Any]:
    wrapper = {"open": "<response>", "close": ["</response>", "<|end|>"], "into": "content", **wrapper_extra}
    return template(["into"], {}, answer=wrapper)


pieces = random_pieces


def stream(template: Any, chunks: list[str], prefix: str = "") -> tuple[dict[str, Any], list[dict[str, Any]]]:
    parser = rt.ResponseParser(template, prefix=prefix)
    events = list(parser.initial_events)
    for chunk in chunks:
        events += parser.feed(chunk)
    message, final = parser.finalize()
    return message, events + final


def skeleton(events: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(e["type"], e["field"]) for e in events if e["type"] != "region_chunk"]


# ----------------------------------------------------------------------------------------- interleaved

CALL_F = '<tool_call>{"name": "f", "arguments": {"x": 1}}</tool_call>'


def test_a_call_inside_the_reasoning_is_read_and_the_reasoning_resumes() -> None:
    text = f"<think>Let me check.{CALL_F} Checked.</think>Done."
    message = rt.parse_response(text, interleaved(), prefix="")
    assert message == {
        "reasoning_content": "Let me check. Checked.",
        "tool_calls": [{"name": "f", "arguments": {"x": 1}}],
        "content": "Done.",
    }


def test_events_nest_the_inner_region_inside_the_outer_one() -> None:
    _, events = stream(interleaved(), [f"<think>a{CALL_F}b</think>c"])
    assert skeleton(events) == [
        ("region_open", "reasoning_content"),
        ("region_open", "tool_calls"),
        ("region_close", "tool_calls"),
        ("region_close", "reasoning_content"),
        ("region_open", "content"),
        ("region_close", "content"),
    ]
    chunks = [(e["field"], e["text"]) for e in events if e["type"] == "region_chunk"]
    assert chunks[0] == ("reasoning_content", "a") and ("reasoning_content", "b") in chunks
    closes = {e["field"]: e["value"] for e in events if e["type"] == "region_close"}
    assert closes["reasoning_content"] == "ab"  # the outer value is all its text, before and after


def test_several_calls_and_calls_after_the_reasoning() -> None:
    call_g = '<tool_call>{"name": "g"}</tool_call>'
    text = f"<think>1{CALL_F}2{call_g}3</think>4{call_g}"
    message = rt.parse_response(text, interleaved(), prefix="")
    assert [c["name"] for c in message["tool_calls"]] == ["f", "g", "g"]
    assert message["reasoning_content"] == "123" and message["content"] == "4"


def test_the_outer_close_is_not_watched_inside_the_inner_region() -> None:
    text = '<think>a<tool_call>{"name": "f", "arguments": {"s": "</think>"}}</tool_call>b</think>c'
    message = rt.parse_response(text, interleaved(), prefix="")
    assert message["tool_calls"][0]["arguments"] == {"s": "</think>"}
    assert message["reasoning_content"] == "ab" and message["content"] == "c"


def test_the_end_of_the_stream_closes_the_inner_region_then_the_outer_one() -> None:
    message, events = stream(interleaved(), ['<think>a<tool_call>{"name": "f"}'])
    assert message == {"reasoning_content": "a", "tool_calls": [{"name": "f"}]}
    assert skeleton(events)[-2:] == [("region_close", "tool_calls"), ("region_close", "reasoning_content")]


def test_a_pre_opened_reasoning_block_in_the_prefix() -> None:
    message = rt.parse_response(f"a{CALL_F}b</think>c", interleaved(), prefix=f"{ANCHOR}<think>")
    assert message["reasoning_content"] == "ab" and message["content"] == "c" and message["tool_calls"]


def test_without_within_the_call_stays_reasoning_text() -> None:
    data = interleaved()
    del data["fields"]["tool_calls"]["within"]
    data["extensions"] = []
    message = rt.parse_response(f"<think>a{CALL_F}b</think>c", data, prefix="")
    assert message == {"reasoning_content": f"a{CALL_F}b", "content": "c"}


def test_a_failing_inner_region_is_reported_and_the_outer_region_resumes() -> None:
    parser = rt.ResponseParser(interleaved(), prefix="")
    with pytest.raises(rt.ParseError) as info:
        parser.feed("<think>a<tool_call>{not json</tool_call>")
    assert info.value.field == "tool_calls"
    assert skeleton(info.value.events) == [
        ("region_open", "reasoning_content"),
        ("region_open", "tool_calls"),
        ("region_close", "tool_calls"),
    ]
    parser.feed("b</think>c")
    message, _ = parser.finalize()
    assert message == {"reasoning_content": "ab", "content": "c"}


def test_a_json_value_end_region_can_open_inside() -> None:
    data = {
        "extensions": ["interleaved", "json-value-end"],
        "start_anchor": ANCHOR,
        "fields": {
            "reasoning_content": {"open": "<think>", "close": "</think>"},
            "tool_calls": {
                "open_pattern": "<call>",
                "close_json": True,
                "repeats": True,
                "content": "json",
                "within": "reasoning_content",
            },
            "content": {},
        },
    }
    text = '<think>a<call>{"name": "f", "s": "}"} b</think>c'
    for chunks in ([text], list(text)):
        message, _ = stream(data, chunks)
        assert message == {
            "reasoning_content": "a b",
            "tool_calls": [{"name": "f", "s": "}"}],
            "content": "c",
        }


@pytest.mark.parametrize(
    ("change", "key", "needle"),
    [
        ({"extensions": []}, "within", "extension 'interleaved'"),
        ({"within": ["nope"]}, "within", "not a field"),
        ({"within": ["content"]}, "within", "implicit field"),
        ({"within": ["tool_calls"]}, "within", "inside itself"),
        ({"within": []}, "within", "non-empty list"),
        ({"within": [1]}, "within", "non-empty list"),
        ({"within": ["reasoning_content", "reasoning_content"]}, "within", "more than once"),
    ],
)
def test_within_rules(change: dict[str, Any], key: str, needle: str) -> None:
    data = interleaved()
    if "extensions" in change:
        data["extensions"] = change["extensions"]
    else:
        data["fields"]["tool_calls"]["within"] = change["within"]
    with pytest.raises(TemplateError, match=needle) as info:
        rt.load_template(data)
    assert info.value.field == "tool_calls" and info.value.key == key


def test_within_rules_on_the_outer_field() -> None:
    data = interleaved()
    data["fields"]["reasoning_content"]["within"] = ["tool_calls"]
    with pytest.raises(TemplateError, match="one level deep"):
        rt.load_template(data)
    data = interleaved()
    data["extensions"].append("json-value-end")
    data["fields"]["reasoning_content"] = {"open": "<think>", "close_json": True}
    with pytest.raises(TemplateError, match="close_json"):
        rt.load_template(data)
    data = interleaved()
    data["fields"]["content"]["within"] = ["reasoning_content"]
    with pytest.raises(TemplateError, match="no open delimiter") as info:
        rt.load_template(data)
    assert info.value.field == "content"


_VOCAB = [
    "<think>",
    "</think>",
    "<tool_call>",
    "</tool_call>",
    '{"name": "f"}',
    "a",
    " ",
    "<",
    "<|end|>",
    "\n",
]


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(st.sampled_from(_VOCAB), max_size=24), st.integers(0, 2**32 - 1))
def test_interleaved_chunking_never_changes_the_result(words: list[str], seed: int) -> None:
    text = "".join(words)
    results = []
    for chunks in ([text], list(text), pieces(text, random.Random(seed))):
        try:
            message, events = stream(interleaved(), chunks)
            results.append((message, skeleton(events)))
        except rt.ParseError as exc:
            results.append(("error", exc.field))
    assert results[1] == results[0] and results[2] == results[0]


# ------------------------------------------------------------------------------ into the implicit field


@pytest.mark.parametrize(
    ("text", "content"),
    [
        ("<think>r</think><response>Hello</response>", "Hello"),
        ("<think>r</think>Hello", "Hello"),
        ("Before <response>inside</response> after<|end|>", "Before inside after"),
        ("A bare </response> stays text", "A bare </response> stays text"),
        ("<response>not <think>a region</think> here", "not <think>a region</think> here"),
        ("<response>to the end of the turn<|end|> and on", "to the end of the turn and on"),
    ],
)
def test_the_implicit_text_may_be_bare_or_wrapped(text: str, content: str) -> None:
    message = rt.parse_response(text, wrapped(), prefix="")
    assert message["content"] == content
    assert "answer" not in message


def test_the_wrapper_and_the_tool_calls_around_it() -> None:
    text = '<response>Sure.</response><tool_call>{"name": "f"}</tool_call>'
    message = rt.parse_response(text, wrapped(), prefix="")
    assert message == {"content": "Sure.", "tool_calls": [{"name": "f"}]}


def test_wrapper_events_carry_its_own_name_and_the_implicit_value() -> None:
    _, events = stream(wrapped(), ["a<response> b </response>"])
    assert skeleton(events) == [
        ("region_open", "content"),
        ("region_close", "content"),
        ("region_open", "answer"),
        ("region_close", "answer"),
    ]
    closes = [e["value"] for e in events if e["type"] == "region_close"]
    assert closes == ["a", "b"]
    assert all(not e["dirty"] for e in events if e["type"] == "region_chunk")


@pytest.mark.parametrize("key", ["content", "content_args", "transform", "repeats"])
def test_a_wrapper_is_parsed_with_the_implicit_field(key: str) -> None:
    value: Any = {"content": "json", "content_args": {}, "transform": "{content}", "repeats": True}[key]
    with pytest.raises(TemplateError, match="segment") as info:
        rt.load_template(wrapped(**{key: value}))
    assert info.value.field == "answer" and info.value.key == key


def test_a_wrapper_needs_the_into_declaration() -> None:
    data = wrapped()
    data["extensions"] = []
    with pytest.raises(TemplateError, match="extension 'into'"):
        rt.load_template(data)


def test_the_implicit_parser_applies_to_the_wrapped_text() -> None:
    data = wrapped()
    data["fields"]["content"]["content"] = "int"
    assert rt.parse_response("<response> 42 </response>", data, prefix="")["content"] == 42


_WRAP_VOCAB = ["<think>", "</think>", "<response>", "</response>", "<|end|>", "Hi", " ", "<", "\n"]


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(st.sampled_from(_WRAP_VOCAB), max_size=24), st.integers(0, 2**32 - 1))
def test_wrapper_chunking_never_changes_the_result(words: list[str], seed: int) -> None:
    text = "".join(words)

    def run(chunks: list[str]) -> tuple[dict[str, Any], list[tuple[str, str]]]:
        message, events = stream(wrapped(), chunks)
        return message, skeleton(events)

    whole = run([text])
    assert run(list(text)) == whole
    assert run(pieces(text, random.Random(seed))) == whole


# -------------------------------------------------------------------------------------- wire, library

KIMI_PROMPT = "<|im_user|>user<|im_middle|>Hi<|im_end|><|im_assistant|>assistant<|im_middle|>"
KIMI_TEXT = (
    "<think>I'm thinking.<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0"
    '<|tool_call_argument_begin|>{"city": "Paris"}<|tool_call_end|><|tool_calls_section_end|> Still '
    "thinking.</think>Done.<|im_end|>"
)


def _run_adapter(adapter: Any, template: Any, prompt: str, text: str) -> dict[str, Any]:
    parser = rt.ResponseParser(template, prefix=prompt)
    list(run_stream(parser, adapter, list(text)))
    return adapter.final()


def test_block_protocols_end_the_reasoning_block_at_an_inner_call_and_start_a_new_one() -> None:
    template = rt.templates.get("kimi-k2")
    final = _run_adapter(AnthropicMessagesAdapter(template, seed=1), template, KIMI_PROMPT, KIMI_TEXT)
    assert [b["type"] for b in final["content"]] == ["thinking", "tool_use", "thinking", "text"]
    assert [b["thinking"] for b in final["content"] if b["type"] == "thinking"] == [
        "I'm thinking.",
        "Still thinking.",
    ]
    final = _run_adapter(ResponsesAdapter(template, seed=1), template, KIMI_PROMPT, KIMI_TEXT)
    assert [item["type"] for item in final["output"]] == [
        "reasoning",
        "function_call",
        "reasoning",
        "message",
    ]


def test_chat_completions_keeps_one_reasoning_string() -> None:
    template = rt.templates.get("kimi-k2")
    final = _run_adapter(ChatCompletionsAdapter(template, seed=1), template, KIMI_PROMPT, KIMI_TEXT)
    message = final["choices"][0]["message"]
    assert message["reasoning_content"] == "I'm thinking. Still thinking."
    assert message["tool_calls"][0]["id"] == "functions.get_weather:0"
    assert message["content"] == "Done."


def test_wrapped_content_streams_as_content() -> None:
    template = rt.templates.get("cohere-command-r7b")
    prompt = "<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>"
    text = (
        "<|START_THINKING|>Plan.<|END_THINKING|><|START_RESPONSE|>Hello!<|END_RESPONSE|><|END_OF_TURN_TOKEN|>"
    )
    final = _run_adapter(ChatCompletionsAdapter(template, seed=1), template, prompt, text)
    assert final["choices"][0]["message"]["content"] == "Hello!"
    final = _run_adapter(AnthropicMessagesAdapter(template, seed=1), template, prompt, text)
    assert [b.get("text") for b in final["content"] if b["type"] == "text"] == ["Hello!"]


def test_into_fed_tool_calls_stream_as_tool_calls() -> None:
    template = rt.templates.get("llama-3.1-builtin")
    prompt = "<|start_header_id|>assistant<|end_header_id|>\n\n"
    text = '<|python_tag|>brave_search.call(query="Paris")<|eom_id|>'
    final = _run_adapter(ChatCompletionsAdapter(template, seed=1), template, prompt, text)
    call = final["choices"][0]["message"]["tool_calls"][0]["function"]
    assert call == {"name": "brave_search", "arguments": '{"query": "Paris"}'}


@pytest.mark.parametrize(
    ("family", "prompt", "text", "expected"),
    [
        (
            "qwen3-coder",
            "<|im_start|>assistant\n<think>\n",
            "Check.\n<tool_call>\n<function=f>\n<parameter=x>\n1\n</parameter>\n</function>\n</tool_call>\n"
            "Checked.\n</think>\n\nDone.",
            {"reasoning_content": "Check.\n\nChecked.", "content": "Done.", "calls": ["f"]},
        ),
        (
            "glm-4.5",
            "<|assistant|>",
            "<think>a<tool_call>f\n<arg_key>x</arg_key>\n<arg_value>1</arg_value>\n</tool_call>b</think>c",
            {"reasoning_content": "ab", "content": "c", "calls": ["f"]},
        ),
        (
            "granite-3",
            "<|start_of_role|>assistant<|end_of_role|>",
            "<think>Plan.</think><response>Answer.</response><|end_of_text|>",
            {"reasoning_content": "Plan.", "content": "Answer.", "calls": []},
        ),
        (
            "ernie-4.5",
            "Assistant:",
            "<think>Plan.</think>\n<response>\nAnswer.\n</response>",
            {"reasoning_content": "Plan.", "content": "Answer.", "calls": []},
        ),
    ],
)
def test_library_families_using_them(family: str, prompt: str, text: str, expected: dict[str, Any]) -> None:
    template = rt.templates.get(family)
    whole = rt.parse_response(text, template, prefix=prompt)
    got = {
        "reasoning_content": whole.get("reasoning_content"),
        "content": whole.get("content"),
        "calls": [c["function"]["name"] for c in whole.get("tool_calls", [])],
    }
    assert got == expected
    assert stream(template, list(text), prompt)[0] == whole
