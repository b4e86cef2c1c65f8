"""The proof machinery (grammar_harness) on a hand-written Lark grammar: a Hermes-style format with one
special token, so that the harness itself is shown to accept, reject, walk and check as it claims before
the proofs lean on it."""

from __future__ import annotations

import json
import random

import grammar_harness as gh

import response_templates as rt

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}},
                "required": ["city"],
                "additionalProperties": False,
            },
        },
    },
    {"type": "function", "function": {"name": "ping", "parameters": {"type": "object", "properties": {}}}},
]


def _call_schema(tool: dict) -> str:  # type: ignore[type-arg]
    fn = tool["function"]
    return json.dumps(
        {
            "type": "object",
            "properties": {"name": {"const": fn["name"]}, "arguments": fn["parameters"]},
            "required": ["name", "arguments"],
            "additionalProperties": False,
        }
    )


#: ``<tool_call>`` is a special token; ``</tool_call>`` is text (spelled with ordinary tokens).
HAND_LARK = f"""
start: TEXT? call*
call: <tool_call> "\\n" body "\\n</tool_call>"
body: weather | ping
weather: %json {_call_schema(TOOLS[0])}
ping: %json {_call_schema(TOOLS[1])}
TEXT: /[^<]+/
"""

#: Hermes-style template reading the same format (a prefix-free start anchor).
TEMPLATE = {
    "start_anchor": "<|im_start|>assistant\n",
    "fields": {
        "tool_calls": {
            "open": "<tool_call>",
            "close": "</tool_call>",
            "repeats": True,
            "content": "json",
            "transform": {"type": "function", "function": "{content}"},
        },
        "content": {},
    },
}


def test_special_tokens_are_read_from_the_grammar() -> None:
    assert gh.special_tokens_of_lark(HAND_LARK) == ["<tool_call>"]
    lark = 'a: <|im_end|> "<|x|>" /<|y|>/ %json {"const": "<|z|>"} // <|c|>\nb: <[12]> <think>'
    assert gh.special_tokens_of_lark(lark) == ["<|im_end|>", "<think>"]


def test_tokenizer_has_the_special_tokens_as_single_tokens() -> None:
    engine = gh.engine_for(("<tool_call>",))
    ids = engine.encode('Hi<tool_call>\n{"name": "ping"}\n</tool_call>')
    assert engine.tokenizer.token_to_id("<tool_call>") in ids
    assert engine.tokenizer.token_to_id("</tool_call>") is None  # text, not a token
    assert engine.ll.is_special_token(engine.tokenizer.token_to_id("<tool_call>"))
    assert engine.decode(ids) == 'Hi<tool_call>\n{"name": "ping"}\n</tool_call>'


def test_accepts_and_rejects() -> None:
    engine = gh.engine_for_lark(HAND_LARK)
    good = (
        'Sure.<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "days": 2}}\n</tool_call>'
    )
    assert engine.accepts(HAND_LARK, good) == (True, "")
    assert engine.accepts(HAND_LARK, "just text")[0]
    for bad in (
        good.replace('"days": 2', '"days": 0'),  # minimum
        good.replace("get_weather", "get_time"),  # undeclared
        good.replace("</tool_call>", ""),  # unfinished: a prefix only
        "text <b>",  # TEXT excludes "<"
    ):
        ok, why = engine.accepts(HAND_LARK, bad)
        assert not ok and why, bad


def test_special_token_is_required_where_the_grammar_names_it() -> None:
    """Text spelling of a special token is not the token: the harness must tell them apart."""
    engine = gh.engine_for_lark(HAND_LARK)
    text = '<tool_call>\n{"name": "ping", "arguments": {}}\n</tool_call>'
    assert engine.accepts(HAND_LARK, text)[0]
    spelled = [t for piece in ("<", "tool_call>") for t in engine.encode(piece)]
    m = engine.matcher(HAND_LARK)
    assert not m.consume_tokens(spelled)


def test_random_walks_stay_in_the_grammar_and_parse() -> None:
    engine = gh.engine_for_lark(HAND_LARK)
    rng = random.Random(7)
    walks = [engine.walk(HAND_LARK, rng) for _ in range(40)]
    finished = [w for w in walks if w.finished]
    assert len(finished) >= 30
    with_calls = 0
    for w in finished:
        assert engine.accepts(HAND_LARK, w.text)[0], w.text
        message = rt.parse_response(w.text, TEMPLATE, prefix="", tools=TOOLS)
        assert gh.check_message(message, TOOLS) == [], w.text
        with_calls += bool(message.get("tool_calls"))
    assert with_calls >= 5


def test_check_message_finds_each_violation() -> None:
    call = {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "P"}}}
    assert gh.check_message({"tool_calls": [call]}, TOOLS) == []
    bad_args = {"type": "function", "function": {"name": "get_weather", "arguments": {"days": 0}}}
    assert len(gh.check_message({"tool_calls": [bad_args]}, TOOLS)) == 1
    other = {"type": "function", "function": {"name": "nope", "arguments": {}}}
    assert "undeclared" in gh.check_message({"tool_calls": [other]}, TOOLS)[0]
    assert gh.check_message({"content": "x"}, TOOLS, tool_choice="required")
    assert gh.check_message({"tool_calls": [call]}, TOOLS, tool_choice="none")
    ping = {"type": "function", "function": {"name": "ping", "arguments": {}}}
    assert gh.check_message({"tool_calls": [call]}, TOOLS, tool_choice="ping")
    named = {"type": "function", "function": {"name": "ping"}}
    assert gh.check_message({"tool_calls": [ping]}, TOOLS, tool_choice=named) == []
    assert gh.check_message({"tool_calls": [ping, ping]}, TOOLS, parallel_tool_calls=False)
    assert gh.check_message({"tool_calls": [ping, ping]}, TOOLS) == []
