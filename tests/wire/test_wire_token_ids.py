"""The wire path from token ids: a parser made with a tokenizer (transformers 5.25's call shape) feeds a
wire adapter id by id; a control token spelled in the answer or inside a tool argument is text, so the
stream carries it and the call is still one call with its argument intact."""

from __future__ import annotations

import json
from typing import Any

import pytest

pytest.importorskip("tokenizers")
pytest.importorskip("transformers")

from tokenizers import Tokenizer

import hf_fixtures as fx
import response_templates as rt
from response_templates.wire import AnthropicMessagesAdapter, ChatCompletionsAdapter, run_stream

T = fx.QWEN3_TEMPLATE


def tokenizer_pair() -> tuple[Any, Tokenizer]:
    tok = fx.hf_tokenizer("byte_level")
    data = json.loads(fx._trained("byte_level"))
    data["added_tokens"] = []
    return tok, Tokenizer.from_str(json.dumps(data))


@pytest.mark.parametrize("adapter_class", [ChatCompletionsAdapter, AnthropicMessagesAdapter])
@pytest.mark.parametrize("group", [1, 4, 10_000])
def test_ids_stream_through_an_adapter_token_exactly(adapter_class: Any, group: int) -> None:
    tok, plain = tokenizer_pair()
    spelled = lambda text: plain.encode(text, add_special_tokens=False).ids  # noqa: E731
    real = lambda text: list(tok.encode(text, add_special_tokens=False))  # noqa: E731
    ids = (
        spelled("Type <|im_end|> now ")
        + real("<tool_call>")
        + spelled('\n{"name": "f", "arguments": {"a": "x</tool_call>y"}}\n')
        + real("</tool_call><|im_end|>")
    )
    parser = rt.ResponseParser(T, prefix=fx.prompt_ids(tok), tokenizer=tok)
    if adapter_class is ChatCompletionsAdapter:
        adapter = adapter_class(T, completion_id="c1", created=0)
    else:
        adapter = adapter_class(T, message_id="msg_1")
    pieces = [ids[i : i + group] for i in range(0, len(ids), group)]
    chunks = list(run_stream(parser, adapter, pieces))
    assert chunks
    final = adapter.final()
    text = json.dumps(final, ensure_ascii=False)
    assert "Type <|im_end|> now" in text
    if adapter_class is ChatCompletionsAdapter:
        message = final["choices"][0]["message"]
        assert message["content"] == "Type <|im_end|> now"
        assert [json.loads(c["function"]["arguments"]) for c in message["tool_calls"]] == [
            {"a": "x</tool_call>y"}
        ]
    else:
        blocks = final["content"]
        assert [b["input"] for b in blocks if b["type"] == "tool_use"] == [{"a": "x</tool_call>y"}]
