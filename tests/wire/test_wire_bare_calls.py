"""The wire adapters with bare-shaped tool calls and ``tools=``: the arguments go out typed, complete.

A template whose calls are bare (``{"name": ..., "arguments": ...}``, the model's JSON without a
transform, or a transform without the ``function`` wrapper) is typed like a chat-shaped one, so every
protocol sends the typed arguments and reports no error.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

import response_templates as rt
from response_templates.wire import (
    AnthropicMessagesAdapter,
    ChatCompletionsAdapter,
    ResponsesAdapter,
    run_stream,
)

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "f",
            "parameters": {
                "type": "object",
                "properties": {"n": {"type": "integer"}, "ok": {"type": "boolean"}},
            },
        },
    }
]
TYPED = {"n": 3, "ok": True}
ANCHOR = "<|assistant|>"
TEMPLATES = {
    "model-json": (
        {"open": "<tool_call>", "close": "</tool_call>", "repeats": True, "content": "json"},
        '<tool_call>{"name": "f", "arguments": {"n": "3", "ok": "true"}}</tool_call>',
    ),
    "bare-transform": (
        {
            "open_pattern": "<call name=(?P<name>\\w+)>",
            "close": "</call>",
            "repeats": True,
            "content": "json",
            "transform": {"name": "{name}", "parameters": "{content}"},
        },
        '<call name=f>{"n": "3", "ok": "true"}</call>',
    ),
}


def run(adapter_class: Any, case: str) -> Any:
    field, text = TEMPLATES[case]
    template = {"start_anchor": ANCHOR, "fields": {"tool_calls": field, "content": {}}}
    parser = rt.ResponseParser(template, prefix="", tools=TOOLS)
    adapter = adapter_class(template, tools=TOOLS, seed=0)
    list(run_stream(parser, adapter, [text[i : i + 2] for i in range(0, len(text), 2)]))
    assert adapter.errors == []
    return adapter.final()


@pytest.mark.parametrize("case", sorted(TEMPLATES))
def test_chat_completions(case: str) -> None:
    (call,) = run(ChatCompletionsAdapter, case)["choices"][0]["message"]["tool_calls"]
    assert call["function"]["name"] == "f"
    assert json.loads(call["function"]["arguments"]) == TYPED


@pytest.mark.parametrize("case", sorted(TEMPLATES))
def test_responses(case: str) -> None:
    (item,) = [item for item in run(ResponsesAdapter, case)["output"] if item["type"] == "function_call"]
    assert item["status"] == "completed"
    assert json.loads(item["arguments"]) == TYPED


@pytest.mark.parametrize("case", sorted(TEMPLATES))
def test_anthropic(case: str) -> None:
    (block,) = [
        block for block in run(AnthropicMessagesAdapter, case)["content"] if block["type"] == "tool_use"
    ]
    assert block["input"] == TYPED
