"""The opt-in ``hermes-lenient`` library template: the drifted tool-call syntaxes llama.cpp accepts for
Hermes-format models, each a field feeding ``tool_calls`` (extension ``into``), and the price of it."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

import response_templates as rt
from library_checks import random_pieces
from response_templates import library
from response_templates.wire import ChatCompletionsAdapter, run_stream

CHAT_TEMPLATES = Path(__file__).resolve().parents[1] / "data" / "chat_templates"
PROMPT = "<|im_start|>user\nWeather?<|im_end|>\n<|im_start|>assistant\n"
ARGS = {"city": "Paris", "days": 2}
CALL = {"type": "function", "function": {"name": "get_weather", "arguments": ARGS}}
JSON_CALL = '{"name": "get_weather", "arguments": {"city": "Paris", "days": 2}}'

SYNTAXES = {
    "tool_call": f"<tool_call>\n{JSON_CALL}\n</tool_call>",
    "function=": '<function=get_weather>{"city": "Paris", "days": 2}</function>',
    "function name": '<function name="get_weather">\n{"city": "Paris", "days": 2}\n</function>',
    "tool": f"<tool>\n  {JSON_CALL}\n</tool>",
    "tools": f"<tools>{JSON_CALL}</tools>",
    "response": f"<response>\n{JSON_CALL}\n</response>",
    "json": f"<json>{JSON_CALL}</json>",
    "JSON": f"<JSON>{JSON_CALL}</JSON>",
    "xml": f"<xml>\n{JSON_CALL}\n</xml>",
    "function_call": f"<function_call> {JSON_CALL} </function_call>",
    "fence": f"```\n{JSON_CALL}\n```",
    "json fence": f"```json\n{JSON_CALL}\n```",
    "xml fence with response": f"```xml\n<response>\n{JSON_CALL}\n</response>\n```",
    "json fence with function_call": f"```json\n<function_call> {JSON_CALL} </function_call>\n```",
    "bare": JSON_CALL,
}


def lenient() -> rt.ResponseTemplate:
    return rt.templates.get("hermes-lenient")


def stream(template: rt.ResponseTemplate, pieces: list[str]) -> dict:
    parser = rt.ResponseParser(template, prefix=PROMPT)
    for piece in pieces:
        parser.feed(piece)
    return parser.finalize()[0]


@pytest.mark.parametrize("syntax", list(SYNTAXES))
def test_each_syntax_is_a_call_with_text_around_it(syntax: str) -> None:
    text = f"Let me check. {SYNTAXES[syntax]} Done.<|im_end|>"
    expected = {"role": "assistant", "content": "Let me check.  Done.", "tool_calls": [CALL]}
    assert rt.parse_response(text, lenient(), prefix=PROMPT) == expected
    pieces = random_pieces(text, random.Random(syntax), 5)
    assert stream(lenient(), list(text)) == expected
    assert stream(lenient(), pieces) == expected


@pytest.mark.parametrize("syntax", [s for s in SYNTAXES if s != "tool_call"])
def test_the_default_hermes_template_reads_only_the_trained_syntax(syntax: str) -> None:
    message = rt.parse_response(SYNTAXES[syntax], rt.templates.get("hermes"), prefix=PROMPT)
    assert "tool_calls" not in message and message["content"]


def test_several_syntaxes_in_one_reply_keep_stream_order() -> None:
    text = (
        '<function=a>{}</function>\n<tool_call>{"name": "b", "arguments": {}}</tool_call>\n'
        '```json\n{"name": "c", "arguments": {}}\n```\n{"name": "d", "arguments": {}}'
    )
    message = rt.parse_response(text, lenient(), prefix=PROMPT)
    assert [c["function"]["name"] for c in message["tool_calls"]] == ["a", "b", "c", "d"]
    assert "content" not in message


def test_the_documented_false_positive() -> None:
    """A JSON object with a "name" key in an answer is read as a call: the reason the template is opt-in."""
    text = 'Here is the record: {"name": "Ada", "born": 1815}'
    message = rt.parse_response(text, lenient(), prefix=PROMPT)
    assert message["tool_calls"] == [{"type": "function", "function": {"name": "Ada", "born": 1815}}]
    plain = rt.parse_response(text, rt.templates.get("hermes"), prefix=PROMPT)
    assert plain["content"] == text


def test_it_is_never_chosen_by_model_id_or_chat_template() -> None:
    fam = library.family("hermes-lenient")
    assert not fam.models and not fam.markers and not fam.fingerprints and not fam.chat_templates
    assert library.family_for_model("NousResearch/Hermes-3-Llama-3.1-8B").name == "hermes"


@pytest.mark.parametrize(
    "name",
    [
        "NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use.jinja",
        "NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja",
        "Qwen-Qwen2.5-7B-Instruct.jinja",
    ],
)
def test_round_trip_with_the_hermes_chat_templates(name: str) -> None:
    chat_template = (CHAT_TEMPLATES / name).read_text(encoding="utf-8")
    hermes = library.family("hermes")
    report = rt.verify.round_trip(chat_template, lenient(), **hermes.round_trip_options())
    known = hermes.known_round_trip_issues(name)
    failing = {c.case for c in report.failures()}
    assert failing <= set(known) or "*" in known, report.details()


def test_lenient_calls_stream_as_tool_calls() -> None:
    adapter = ChatCompletionsAdapter(lenient(), seed=1)
    parser = rt.ResponseParser(lenient(), prefix=PROMPT)
    list(run_stream(parser, adapter, list(SYNTAXES["json fence"] + SYNTAXES["function="])))
    calls = adapter.final()["choices"][0]["message"]["tool_calls"]
    assert [c["function"]["name"] for c in calls] == ["get_weather", "get_weather"]
    assert all(c["function"]["arguments"] == '{"city": "Paris", "days": 2}' for c in calls)
