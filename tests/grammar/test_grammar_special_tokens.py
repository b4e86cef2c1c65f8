"""Special tokens as tokens: with ``build(..., special_tokens=...)``, a delimiter that is a special token of
the tokenizer is that token in both forms (an xgrammar ``token`` format, an llguidance ``<[id]>``), and
free text never holds it, neither as the token nor spelled in ordinary tokens.

The structure checks run everywhere; the token-level checks drive both forms over a BPE tokenizer trained
with the delimiters as special tokens (``grammar_harness``), and need xgrammar for the structural tag
(``.venv-vllm/bin/python -m pytest -p no:xdist tests/grammar/test_grammar_special_tokens.py``).
"""

from __future__ import annotations

import json
from typing import Any

import grammar_harness as gh
import pytest

from response_templates import grammar

WEATHER: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
            "additionalProperties": False,
        },
    },
}
TOOLS = [WEATHER]
QWEN_TOKENS = {"<tool_call>": 7, "</tool_call>": 8, "<think>": 9, "</think>": 10}
CALL = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'


#: Every format object of a kind in a structural tag, depth first.
find = gh.tag_formats


def strings(node: Any) -> list[str]:
    if isinstance(node, str):
        return [node]
    if isinstance(node, dict):
        return [s for k, v in node.items() if k not in ("json_schema", "excludes") for s in strings(v)]
    if isinstance(node, list):
        return [s for v in node for s in strings(v)]
    return []


# ------------------------------------------------------------------------------------------- structure


@pytest.mark.parametrize("family", ["qwen3", "qwen3-coder", "deepseek-v3.1", "kimi-k2", "mistral-v11"])
def test_without_special_tokens_in_the_grammar_the_tag_is_unchanged(family: str) -> None:
    plain = grammar.build(family, tools=TOOLS, tool_choice="auto")
    # tokens the grammar never writes (the turn's end) change nothing
    other = grammar.build(family, tools=TOOLS, tool_choice="auto", special_tokens={"<|rt_unused|>": 3})
    assert json.dumps(other.structural_tag) == json.dumps(plain.structural_tag)
    assert not find(plain.structural_tag, "token")


@pytest.mark.parametrize("tool_choice", ["auto", "required", "none", "get_weather"])
def test_a_special_token_delimiter_is_a_token_format(tool_choice: str) -> None:
    g = grammar.build("qwen3", tools=TOOLS, tool_choice=tool_choice, special_tokens=QWEN_TOKENS)
    tag = g.structural_tag
    written = {f["token"] for f in find(tag, "token")}
    assert written <= set(QWEN_TOKENS.values()) and 10 in written  # at least the reasoning closer
    if tool_choice != "none":
        assert {7, 8} <= written
    # no delimiter is written as text, and no tag is triggered by the text of one
    assert not [s for s in strings(tag) if any(t in s for t in QWEN_TOKENS)]
    assert not [f for f in find(tag, "triggered_tags") if set(f["triggers"]) & set(QWEN_TOKENS)]
    # free text holds none of them: excluded by their text, which keeps out the token too
    for text in find(tag, "any_text"):
        assert {t for t in QWEN_TOKENS if t in written_tokens(tag)} <= set(text["excludes"])


def written_tokens(tag: Any) -> set[str]:
    by_id = {i: t for t, i in QWEN_TOKENS.items()}
    return {by_id[f["token"]] for f in find(tag, "token")}


def test_a_token_without_an_id_is_named_by_its_text() -> None:
    tag = grammar.build(
        "qwen3", tools=TOOLS, tool_choice="required", special_tokens=["<tool_call>"]
    ).structural_tag
    assert {f["token"] for f in find(tag, "token")} == {"<tool_call>"}


def test_a_call_object_is_written_in_both_key_orders() -> None:
    """xgrammar reads an ``anyOf`` of objects by its first branch's key order only: the tag writes the
    choice as an ``or`` of JSON schemas (Mistral's list of calls, ``"arguments"`` before ``"name"`` too)."""
    tag = grammar.build("mistral-v3", tools=TOOLS, tool_choice="required").structural_tag
    orders = [list(f["json_schema"]["properties"])[:1] for f in find(tag, "json_schema")]
    assert ["name"] in orders and ["arguments"] in orders


# ------------------------------------------------------------------------------- tokens, in both forms


def _spelled(engine: gh.Engine, text: str) -> list[int]:
    """``text`` in ordinary tokens only, one character at a time (never a special token)."""
    return [i for ch in text for i in engine.encode(ch)]


def _lark_accepts(engine: gh.Engine, lark: str, ids: list[int]) -> bool:
    m = engine.matcher(lark)
    return all(m.consume_token(i) for i in ids) and m.is_accepting()


def _tag_accepts(xe: Any, compiled: Any, ids: list[int]) -> bool:
    import xgrammar as xgr

    m = xgr.GrammarMatcher(compiled)
    return all(m.accept_token(i) for i in ids) and m.accept_token(xe.eos)


def _both(tool_choice: str) -> tuple[Any, gh.Engine, Any, Any]:
    pytest.importorskip("xgrammar")
    pytest.importorskip("transformers")
    import xgrammar_harness as xh

    g, engine = gh.build_with_tokens(
        grammar, "qwen3", tools=TOOLS, tool_choice=tool_choice, reasoning="forbidden"
    )
    assert find(g.structural_tag, "token"), "the harness declares the delimiters as special tokens"
    xe = xh.xengine_for(engine)
    return g, engine, xe, xe.compile(g.structural_tag)


def test_a_forced_call_opens_with_the_token_not_its_spelling() -> None:
    g, engine, xe, compiled = _both("required")
    tokens = engine.encode(CALL)
    opener = engine.tokenizer.token_to_id("<tool_call>")
    assert tokens[0] == opener  # the tokenizer reads the delimiter as its special token
    spelled = _spelled(engine, "<tool_call>") + tokens[1:]
    assert _lark_accepts(engine, g.lark, tokens) and _tag_accepts(xe, compiled, tokens)
    assert not _lark_accepts(engine, g.lark, spelled)
    assert not _tag_accepts(xe, compiled, spelled)
    # the closer likewise
    closer = engine.tokenizer.token_to_id("</tool_call>")
    assert tokens[-1] == closer
    spelled_end = tokens[:-1] + _spelled(engine, "</tool_call>")
    assert not _lark_accepts(engine, g.lark, spelled_end)
    assert not _tag_accepts(xe, compiled, spelled_end)


def test_free_text_holds_no_special_token_delimiter() -> None:
    g, engine, xe, compiled = _both("auto")
    words = _spelled(engine, "Sure, ")
    call = engine.encode(CALL)
    assert _lark_accepts(engine, g.lark, words + call) and _tag_accepts(xe, compiled, words + call)
    # the closer as a token in the content, or the opener spelled out: neither form takes it
    for stray in ([engine.tokenizer.token_to_id("</tool_call>")], _spelled(engine, "<tool_call> x")):
        assert not _lark_accepts(engine, g.lark, words + stray)
        assert not _tag_accepts(xe, compiled, words + stray)


def test_the_mask_offers_the_token_where_a_call_starts() -> None:
    _, engine, xe, compiled = _both("required")
    import xgrammar as xgr

    allowed = set(xe.allowed(xgr.GrammarMatcher(compiled)).tolist())
    assert engine.tokenizer.token_to_id("<tool_call>") in allowed
    assert not allowed & set(engine.encode("<"))  # the spelling's first piece is not offered
