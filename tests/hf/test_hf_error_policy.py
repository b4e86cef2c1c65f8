"""The tokenizer layer takes the error policy and the anchor policy of the text parser (issue 12)."""

from __future__ import annotations

import copy
import logging
from typing import Any

import pytest

import hf_fixtures as fx
import response_templates as rt
from response_templates import hf

pytest.importorskip("tokenizers")
pytest.importorskip("transformers")

logging.getLogger("transformers").setLevel(logging.ERROR)

BAD = 'Sure.<tool_call>\n{"name": "get_weather", "arguments": {oops}}\n</tool_call>'
GOOD = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
_TOKS: dict[str, Any] = {}


def tok_of(kind: str = "byte_level") -> Any:
    if kind not in _TOKS:
        tok = fx.hf_tokenizer(kind)
        tok.response_template = copy.deepcopy(fx.QWEN3_TEMPLATE)
        _TOKS[kind] = tok
    return _TOKS[kind]


def test_parse_response_keep_with_ids() -> None:
    tok = tok_of()
    prompt = fx.prompt_ids(tok)
    ids = fx.encode(tok, BAD + GOOD + "<|im_end|>")
    with pytest.raises(rt.ParseError):
        hf.parse_response(tok, ids, prefix=prompt)
    message = hf.parse_response(tok, ids, prefix=prompt, errors="keep")
    assert isinstance(message, rt.ParsedMessage)
    assert message["content"] == BAD
    assert [c["function"]["name"] for c in message["tool_calls"]] == ["get_weather"]
    assert [e.field for e in message.errors] == ["tool_calls"]


def test_parse_response_keep_batch() -> None:
    tok = tok_of()
    prompt = fx.prompt_ids(tok)
    batch = [fx.encode(tok, "fine<|im_end|>"), fx.encode(tok, BAD + "<|im_end|>")]
    messages = hf.parse_response(tok, batch, prefix=prompt, errors="keep")
    assert isinstance(messages, list)
    assert [len(m.errors) for m in messages] == [0, 1]


@pytest.mark.parametrize("kind", fx.KINDS)
def test_streaming_parser_keep(kind: str) -> None:
    tok = tok_of(kind)
    prompt = fx.prompt_ids(tok)
    ids = fx.encode(tok, BAD + GOOD + "<|im_end|>")
    parser = hf.get_response_parser(tok, prefix=prompt, errors="keep")
    events = list(parser.initial_events)
    for tid in ids:
        events += parser.feed_tokens([tid])
    message, final = parser.finalize()
    events += final
    assert message == hf.parse_response(tok, ids, prefix=prompt, errors="keep")
    assert [e["text"] for e in events if e["type"] == "unparsed"] == [BAD[len("Sure.") :]]
    assert parser.finalized and len(parser.errors) == 1


def test_streaming_parser_finalize_always_finishes() -> None:
    tok = tok_of()
    parser = hf.get_response_parser(tok, prefix=fx.prompt_ids(tok))
    parser.feed_tokens(fx.encode(tok, "ok<tool_call>\n{bad"))
    with pytest.raises(rt.ParseError) as info:
        parser.finalize()
    assert info.value.partial_message == {"role": "assistant", "content": "ok"}
    assert parser.finalized
    with pytest.raises(rt.ParserStateError):
        parser.finalize()


def test_prompt_without_anchor() -> None:
    tok = tok_of()
    prompt = tok.decode(fx.prompt_ids(tok)).rstrip("\n")  # as if rendered without the final newline
    with pytest.raises(rt.AnchorNotFoundError, match="keep_trailing_newline"):
        hf.parse_response(tok, "hello<|im_end|>", prefix=prompt)
    with pytest.raises(rt.AnchorNotFoundError):
        hf.get_response_parser(tok, prefix=prompt)
    message = hf.parse_response(tok, "hello<|im_end|>", prefix=prompt, missing_anchor="parse")
    assert "<|im_start|>" in message["content"]
    parser = hf.get_response_parser(tok, prefix=prompt, missing_anchor="parse")
    assert not parser.anchor_found
