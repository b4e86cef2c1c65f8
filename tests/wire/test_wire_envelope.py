"""The wire adapters with a JSON envelope (extension ``json-envelope``, the ``generic-json`` family): the
text and the calls a routed region holds are sent when it closes, so the client gets the message the
parser reads, under every protocol and every chunking (they used to be dropped: an empty answer)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import response_templates as rt
from response_templates import library
from response_templates.wire import (
    AnthropicMessagesAdapter,
    ChatCompletionsAdapter,
    ResponsesAdapter,
    run_stream,
)

TEMPLATE = library.family("generic-json").template_dict()
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
            },
        },
    }
]
OUTPUTS = [
    "Hello, world!",
    '{\n  "response": "Hello, world!\\nWhat\'s up?"\n}',
    '{"tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris", "days": "3"}, "id": "c1"}], "content": ""}',
    '{"content": "Checking.", "tool_call": {"name": "get_weather", "arguments": {"city": "Oslo"}}}',
    '{"tool_calls": [{"name": "get_weather", "arguments": {"city": "A"}}, {"name": "get_weather", "arguments": {}}]}',
]


def served(adapter_class: Any, text: str, pieces: list[str]) -> tuple[str, list[tuple[str, Any]]]:
    """(content, [(name, arguments)]) of the adapter's final answer."""
    parser = rt.ResponseParser(TEMPLATE, prefix="", tools=TOOLS)
    adapter = adapter_class(TEMPLATE, tools=TOOLS, seed=0)
    list(run_stream(parser, adapter, pieces))
    final = adapter.final()
    if adapter_class is ChatCompletionsAdapter:
        message = final["choices"][0]["message"]
        calls = [
            (c["function"]["name"], json.loads(c["function"]["arguments"]))
            for c in message.get("tool_calls") or []
        ]
        return message.get("content") or "", calls
    if adapter_class is AnthropicMessagesAdapter:
        blocks = final["content"]
        text_ = "".join(b["text"] for b in blocks if b["type"] == "text")
        return text_, [(b["name"], b["input"]) for b in blocks if b["type"] == "tool_use"]
    items = final["output"]
    text_ = "".join(c["text"] for i in items if i["type"] == "message" for c in i["content"])
    return text_, [(i["name"], json.loads(i["arguments"])) for i in items if i["type"] == "function_call"]


def parsed(text: str) -> tuple[str, list[tuple[str, Any]]]:
    message = rt.parse_response(text, TEMPLATE, prefix="", tools=TOOLS)
    calls = [(c["function"]["name"], c["function"]["arguments"]) for c in message.get("tool_calls") or []]
    return message.get("content") or "", calls


ADAPTERS = [ChatCompletionsAdapter, AnthropicMessagesAdapter, ResponsesAdapter]


@pytest.mark.parametrize("adapter_class", ADAPTERS, ids=lambda a: a.__name__)
@pytest.mark.parametrize("text", OUTPUTS)
def test_the_envelope_is_sent_as_parsed(adapter_class: Any, text: str) -> None:
    want = parsed(text)
    assert want != ("", [])
    assert served(adapter_class, text, [text]) == want


@given(
    st.sampled_from(OUTPUTS), st.lists(st.integers(1, 7), min_size=1, max_size=40), st.sampled_from(ADAPTERS)
)
def test_any_chunking(text: str, sizes: list[int], adapter_class: Any) -> None:
    pieces, pos = [], 0
    for size in sizes * (len(text) // max(1, sum(sizes)) + 1):
        if pos >= len(text):
            break
        pieces.append(text[pos : pos + size])
        pos += size
    assert served(adapter_class, text, pieces) == parsed(text)


def test_the_arguments_are_typed_by_the_tools() -> None:
    _, calls = served(ChatCompletionsAdapter, OUTPUTS[2], [OUTPUTS[2]])
    assert calls == [("get_weather", {"city": "Paris", "days": 3})]
