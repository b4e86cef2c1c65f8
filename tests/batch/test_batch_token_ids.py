"""parse_batch(tokenizer=): records whose output (and prompt) are token ids are parsed as ids.

A control token matches a delimiter only where the model generated its id; spelled out in ordinary
tokens (a copy of the tokenizer without added tokens encodes it), it stays text. Results are those of
response_templates.hf.parse_response of each record, for any workers and chunk_size.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

pytest.importorskip("tokenizers")

from tokenizers import Tokenizer

import hf_fixtures as fx
import response_templates as rt
from response_templates import hf

T = fx.QWEN3_TEMPLATE


def _spelled_tokenizer() -> Tokenizer:
    data = json.loads(fx._trained("byte_level"))
    data["added_tokens"] = []
    return Tokenizer.from_str(json.dumps(data))


SPELL = _spelled_tokenizer()


def spelled(text: str) -> list[int]:
    return list(SPELL.encode(text, add_special_tokens=False).ids)


def real(tok: Any, text: str) -> list[int]:
    return fx.encode(tok, text)


@pytest.fixture(scope="module")
def tok() -> Any:
    pytest.importorskip("transformers")
    return fx.hf_tokenizer("byte_level")


def records(tok: Any) -> list[dict[str, Any]]:
    prompt = fx.prompt_ids(tok)
    spelled_end = spelled("Type <|im_end|> to stop.") + real(tok, "<|im_end|>")
    return [
        {"id": "spelled", "prompt": prompt, "output": spelled_end},
        {"id": "text-prompt", "prompt": "", "output": spelled_end},
        {"id": "real", "prompt": prompt, "output": real(tok, "<think>\nok\n</think>\n\nHi<|im_end|>")},
        {"id": "text", "prompt": "", "output": "Type <|im_end|> to stop.<|im_end|>"},
        {"id": "range", "prompt": "", "output": [*spelled_end, 10**6]},
        {"id": "bool", "prompt": "", "output": [True]},
        {"id": "ids-prompt-text-output", "prompt": prompt, "output": "Hello<|im_end|>"},
    ]


def test_spelled_control_token_stays_in_the_content(tok: Any) -> None:
    results = {r.id: r for r in rt.parse_batch(records(tok), T, tokenizer=tok)}
    assert results["spelled"].message == {"role": "assistant", "content": "Type <|im_end|> to stop."}
    assert results["text-prompt"].message == results["spelled"].message
    assert results["real"].message == {"role": "assistant", "reasoning_content": "ok", "content": "Hi"}
    assert results["ids-prompt-text-output"].message == {"role": "assistant", "content": "Hello"}
    # a text output is read as text: its spelled <|im_end|> closes the content
    assert "<|im_end|>" not in results["text"].message["content"]


def test_same_as_hf_parse_response(tok: Any) -> None:
    for record, result in zip(
        records(tok)[:3], rt.parse_batch(records(tok)[:3], T, tokenizer=tok), strict=True
    ):
        expected = hf.parse_response(tok, record["output"], prefix=record["prompt"], template=T)
        assert result.message == expected


def test_bad_ids_are_record_errors(tok: Any) -> None:
    results = {r.id: r for r in rt.parse_batch(records(tok), T, tokenizer=tok)}
    error = results["range"].error
    assert isinstance(error, rt.RecordError) and error.key == "output"
    assert "1000000" in str(error) and "vocabulary" in str(error)
    error = results["bool"].error
    assert isinstance(error, rt.RecordError) and error.key == "output" and "integers" in str(error)


def test_ids_without_tokenizer_say_to_pass_one(tok: Any) -> None:
    results = {r.id: r for r in rt.parse_batch(records(tok), T)}
    for name in ("spelled", "text-prompt", "real"):
        error = results[name].error
        assert isinstance(error, rt.RecordError)
        assert error.key in ("output", "prompt")
        assert "tokenizer" in str(error)
    assert "must be a string" in str(results["text-prompt"].error)
    assert results["text"].error is None


def test_text_reading(tok: Any) -> None:
    [result] = rt.parse_batch(records(tok)[:1], T, tokenizer=tok, control_tokens=())
    assert result.message is not None and "to stop" not in result.message.get("content", "")[:5]
    assert result.message["content"].startswith("Type ")
    assert result.message["content"] != "Type <|im_end|> to stop."


@pytest.mark.parametrize("kind", ["hf", "raw"])
def test_workers_and_chunks_give_the_same_results(tok: Any, kind: str) -> None:
    tokenizer = tok if kind == "hf" else fx.raw_tokenizer()
    data = records(tok) * 3
    one = [r.to_dict() for r in rt.parse_batch(data, T, tokenizer=tokenizer)]
    two = [r.to_dict() for r in rt.parse_batch(data, T, tokenizer=tokenizer, workers=2, chunk_size=2)]
    assert one == two
    assert one[0]["message"]["content"] == "Type <|im_end|> to stop."


def test_the_settings_of_a_worker_pickle_with_the_tokenizer(tok: Any) -> None:
    """What a spawned worker is sent once: the settings, tokenizer included (a tokenizers.Tokenizer
    pickles as its JSON text); the chunks hold records only."""
    import functools
    import pickle

    from response_templates.batch.records import RecordParser

    make = functools.partial(
        RecordParser, T, tokenizer=fx.raw_tokenizer(), prefix="", control_tokens=("<|im_end|>",)
    )
    parser = pickle.loads(pickle.dumps(make))()
    record = records(tok)[1]
    assert parser.parse(0, record).message == {"role": "assistant", "content": "Type <|im_end|> to stop."}
    assert parser.control_texts == ("<|im_end|>",)


def test_control_tokens_without_tokenizer_is_a_usage_error() -> None:
    with pytest.raises(rt.ResponseTemplateError, match="tokenizer"):
        list(rt.parse_batch([], T, control_tokens=()))
