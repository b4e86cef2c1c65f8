"""The token-id layer takes a library family name or a model id as its template (issue 28, item 15)."""

from __future__ import annotations

import pytest

import hf_fixtures as fx
import response_templates as rt
from response_templates import hf

pytest.importorskip("tokenizers")

PROMPT = "<|im_start|>user\nWeather in Paris?<|im_end|>\n<|im_start|>assistant\n"
OUTPUT = (
    '<think>\nUse the tool.\n</think>\n\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}'
    "\n</tool_call><|im_end|>"
)


@pytest.mark.parametrize("name", ["qwen3", "Qwen/Qwen3-8B"])
def test_parse_response_takes_a_name(name: str) -> None:
    tok = fx.raw_tokenizer()  # a bare tokenizers.Tokenizer: no response_template of its own
    expected = rt.parse_response(OUTPUT, "qwen3", prefix=PROMPT)
    message = hf.parse_response(tok, fx.encode(tok, OUTPUT), prefix=fx.encode(tok, PROMPT), template=name)
    assert message == expected
    assert message["tool_calls"][0]["function"]["arguments"] == {"city": "Paris"}


def test_the_token_parser_takes_a_model_id() -> None:
    tok = fx.raw_tokenizer()
    parser = hf.TokenResponseParser(tok, template="Qwen/Qwen3-8B", prefix=fx.encode(tok, PROMPT))
    assert parser.template.family == "qwen3"
    for token in fx.encode(tok, OUTPUT):
        parser.feed_tokens([token])
    assert parser.finalize()[0] == rt.parse_response(OUTPUT, "qwen3", prefix=PROMPT)
