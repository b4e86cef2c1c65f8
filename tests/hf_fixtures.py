"""Small real tokenizers for the tokenizer-integration tests, trained on the spot (no network, no weights).

* ``byte_level``: a GPT-2/Qwen-style byte-level BPE (ByteLevel pre-tokenizer and decoder).
* ``sp_llama``: a SentencePiece-style BPE with byte fallback (``<0x00>``..``<0xFF>``), Metaspace
  pre-tokenizer and the Llama 2 decoder chain (Replace, ByteFallback, Fuse, Strip one leading space).
* ``sp_metaspace``: the same model with a Metaspace decoder (Mistral / Llama with ``legacy=False``).

All of them get the ChatML special tokens of Qwen3 (``<|endoftext|>``, ``<|im_start|>``, ``<|im_end|>``)
and its reasoning and tool markers as non-special added tokens, as in Qwen3's ``tokenizer.json``. The
training text has no emoji and no CJK, so those characters split into byte pieces across tokens.
Each tokenizer is trained once per test session (a few milliseconds) and copied for each use.

The chat templates in ``tests/data`` are copies of the public Qwen3 and SmolLM3 templates.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers

from common_templates import QWEN3_TEMPLATE as QWEN3_TEMPLATE  # re-exported: fx.QWEN3_TEMPLATE

DATA = Path(__file__).resolve().parent / "data"
QWEN3_CHAT_TEMPLATE = DATA / "Qwen-Qwen3-0.6B.jinja"
SMOLLM3_CHAT_TEMPLATE = DATA / "HuggingFaceTB-SmolLM3-3B.jinja"

SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
MARKERS = ["<think>", "</think>", "<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>"]
KINDS = ("byte_level", "sp_llama", "sp_metaspace")

_CORPUS = [
    "The user wants the weather in Paris and Kyoto for the next days.",
    "Let me check the forecast first, then answer the question.",
    "Hello world, how are you today? I am fine, thanks!",
    "It's sunny; we're going out, aren't we? Don't forget the umbrella.",
    'def get_weather(city: str, days: int = 3) -> dict: return {"city": city}',
    '{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}',
    '{"name": "search_docs", "arguments": {"query": "tokenizer", "max_results": 5}}',
    "naïve café résumé Zürich über déjà-vu façade",
    "You are a helpful assistant. Answer briefly and precisely.",
    "system user assistant tool response think call function arguments",
] * 8


#: The same format written the way templates for the reference often are: leading ``\s*`` swallows the
#: whitespace between regions, and the answer also ends at ``<|endoftext|>``.
QWEN3_PATTERN_TEMPLATE: dict[str, Any] = {
    "defaults": {"role": "assistant"},
    "start_anchor": "<|im_start|>assistant\n",
    "fields": {
        "reasoning_content": {"open": "<think>", "close": "</think>"},
        "tool_calls": {
            "open_pattern": r"\s*<tool_call>",
            "close": "</tool_call>",
            "repeats": True,
            "content": "json",
            "transform": {"type": "function", "function": "{content}"},
        },
        "content": {"close_pattern": r"\s*(?:<\|im_end\|>|<\|endoftext\|>)"},
    },
}

WEATHER_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the weather forecast for a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
            "required": ["city"],
        },
    },
}

#: Model outputs (the text after the generation prompt): emoji and CJK split across byte tokens,
#: special tokens, markers, JSON with spaces before punctuation, a truncated one.
OUTPUTS: list[str] = [
    "<think>\nThe user wants the weather 🌦️ in 東京.\n</think>\n\nLet me check.\n<tool_call>\n"
    '{"name": "get_weather", "arguments": {"city": "東京", "days": "3"}}\n</tool_call><|im_end|>',
    "<think>\nEasy one .\n</think>\n\nBonjour ! 👋 こんにちは世界。 It's fine , isn't it ?<|im_end|>",
    '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>\n<tool_call>\n'
    '{"name": "get_weather", "arguments": {"city": "Kyoto", "days": 2}}\n</tool_call><|im_end|>',
    "<think>\nStill thinking about 🧭 naïve façades and",
    "Just text 🙂<|im_end|>",
    "<think>\n\n</think>\n\n  leading spaces and ✓ trailing ones  <|im_end|>",
]

MESSAGES: list[dict[str, Any]] = [
    {"role": "system", "content": "You are a helpful assistant."},
    {"role": "user", "content": "Weather in 東京 for 3 days? 🌦️"},
]


def _markers() -> list[AddedToken]:
    return [AddedToken(m, special=False, normalized=False) for m in MARKERS]


@functools.cache
def _trained(kind: str) -> str:
    """The tokenizer of ``kind`` as JSON (trained once per session)."""
    if kind == "byte_level":
        tok = Tokenizer(models.BPE())
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.decoder = decoders.ByteLevel()
        trainer = trainers.BpeTrainer(
            vocab_size=600,
            special_tokens=SPECIAL_TOKENS,
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
            show_progress=False,
        )
        tok.train_from_iterator(_CORPUS, trainer)
        tok.add_tokens(_markers())
        return tok.to_str()
    if kind in ("sp_llama", "sp_metaspace"):
        tok = Tokenizer(models.BPE(byte_fallback=True, unk_token="<unk>"))
        tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first", split=True)
        trainer = trainers.BpeTrainer(
            vocab_size=500, special_tokens=["<unk>", "<s>", "</s>"], show_progress=False
        )
        tok.train_from_iterator(_CORPUS, trainer)
        data = json.loads(tok.to_str())
        vocab = data["model"]["vocab"]
        for b in range(256):  # byte-fallback pieces are ordinary vocabulary entries, as in Llama's
            vocab.setdefault(f"<0x{b:02X}>", len(vocab))
        tok = Tokenizer.from_str(json.dumps(data))
        if kind == "sp_llama":
            tok.decoder = decoders.Sequence(
                [
                    decoders.Replace("▁", " "),
                    decoders.ByteFallback(),
                    decoders.Fuse(),
                    decoders.Strip(" ", 1, 0),
                ]
            )
        else:
            tok.decoder = decoders.Sequence(
                [
                    decoders.ByteFallback(),
                    decoders.Metaspace(replacement="▁", prepend_scheme="first", split=True),
                ]
            )
        tok.add_special_tokens(SPECIAL_TOKENS)
        tok.add_tokens(_markers())
        return tok.to_str()
    raise ValueError(kind)


def raw_tokenizer(kind: str = "byte_level") -> Tokenizer:
    """A fresh ``tokenizers.Tokenizer`` of ``kind``."""
    return Tokenizer.from_str(_trained(kind))


def hf_tokenizer(
    kind: str = "byte_level",
    *,
    chat_template: Path | None = QWEN3_CHAT_TEMPLATE,
    pad_token: str | None = "<|endoftext|>",
    **kwargs: Any,
) -> Any:
    """A fresh transformers fast tokenizer of ``kind`` with Qwen3's special tokens and chat template."""
    from transformers import PreTrainedTokenizerFast

    tok = PreTrainedTokenizerFast(
        tokenizer_object=raw_tokenizer(kind), eos_token="<|im_end|>", pad_token=pad_token, **kwargs
    )
    if chat_template is not None:
        tok.chat_template = chat_template.read_text(encoding="utf-8")
    return tok


def encode(tok: Any, text: str) -> list[int]:
    """Token ids of ``text`` without any added BOS/EOS."""
    if isinstance(tok, Tokenizer):
        return tok.encode(text, add_special_tokens=False).ids
    return list(tok.encode(text, add_special_tokens=False))


def prompt_ids(tok: Any, messages: list[dict[str, Any]] = MESSAGES, **kwargs: Any) -> list[int]:
    """``apply_chat_template(..., add_generation_prompt=True)`` as a list of ids (any transformers)."""
    out = tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=True, **kwargs)
    if hasattr(out, "keys"):
        out = out["input_ids"]
    return list(out)
