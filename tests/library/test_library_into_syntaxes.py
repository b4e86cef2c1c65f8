"""Library families that read a second syntax of a key through the extensions ``into`` (E8) and
``json-value-end`` (E3): Functionary v3.1 (``<|python_tag|>`` raw code), Functionary v3.2
(``>>>python`` raw code), Phi-4-mini (``<|tool_call|>…<|/tool_call|>`` beside ``functools[…]``) and
GigaChat3 / 3.1 (a call that ends where its JSON ends, the text after it being content).

For each: a realistic output (text, calls in the new syntax, an answer where the format has one) parses to
the expected message, whole, one character at a time and in random splits, with the same events; and the
wire adapters stream the calls fed through ``into`` as tool calls, not as text.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import response_templates as rt
from library_checks import call as _call
from library_checks import parse_every_way
from response_templates import library
from response_templates.wire import (
    AnthropicMessagesAdapter,
    ChatCompletionsAdapter,
    ResponsesAdapter,
    run_stream,
)

V31_PROMPT = "<|start_header_id|>assistant<|end_header_id|>\n\n"
V32_PROMPT = "<|start_header_id|>assistant<|end_header_id|>\n\n>>>"
PHI_PROMPT = "<|assistant|>"
GIGA_PROMPT = "assistant<|role_sep|>\n"
CHAT_TEMPLATES = Path(__file__).resolve().parents[1] / "data" / "chat_templates"

CODE = "import math\n\nfor n in (2, 3):\n    print(n, math.sqrt(n))  # {not JSON}; >>\n"


# ---------------------------------------------------------------------------------------------- metadata


@pytest.mark.parametrize(
    ("name", "uses", "extensions"),
    [
        ("functionary-v3.1", ("E8",), ("into",)),
        ("functionary-v3.2", ("E8",), ("into",)),
        ("phi-4-mini", ("E8",), ("into",)),
        ("gigachat3", ("E3",), ("json-value-end",)),
    ],
)
def test_families_declare_their_extensions(
    name: str, uses: tuple[str, ...], extensions: tuple[str, ...]
) -> None:
    fam = library.family(name)
    assert fam.status == "supported"
    assert tuple(fam.uses) == uses
    assert not fam.would_use and not fam.needs
    assert fam.template().extensions == extensions


# ------------------------------------------------------------------------------------------ the families

CASES: list[tuple[str, str, str, dict[str, Any]]] = [
    (
        # Functionary v3.1: a JSON call, then the python tool with raw code, ended by <|eom_id|>. Inside the
        # code, <function=…> and </function> are code.
        "functionary-v3.1",
        V31_PROMPT,
        'I will look it up and compute it.<function=get_weather>{"city": "Paris"}</function>'
        f"<|python_tag|>{CODE}s = '<function=f>{{}}</function>'<|eom_id|>",
        {
            "content": "I will look it up and compute it.",
            "tool_calls": [
                _call("get_weather", city="Paris"),
                _call("python", code=f"{CODE}s = '<function=f>{{}}</function>'"),
            ],
        },
    ),
    (
        # The python tool alone, without an end-of-turn token (the server stopped on it).
        "functionary-v3.1",
        V31_PROMPT,
        f"<|python_tag|>{CODE}",
        {"tool_calls": [_call("python", code=CODE)]},
    ),
    (
        # What the chat template writes for a python call of the history: the JSON of its arguments.
        "functionary-v3.1",
        V31_PROMPT,
        '<|python_tag|>{"code": "print(1)\\nprint(2)"}<|eom_id|>',
        {"tool_calls": [_call("python", code="print(1)\nprint(2)")]},
    ),
    (
        # Functionary v3.2: text, a JSON call, the python tool's raw code, then more text.
        "functionary-v3.2",
        V32_PROMPT,
        'all\nLet me check.>>>get_weather\n{"city": "Paris"}>>>python\n'
        f"{CODE}>>>all\nRunning both.<|eot_id|>",
        {
            "content": "Let me check.Running both.",
            "tool_calls": [_call("get_weather", city="Paris"), _call("python", code=CODE)],
        },
    ),
    (
        # The sample of llama.cpp's tests (L0325): the whole output is the python call.
        "functionary-v3.2",
        V32_PROMPT,
        "python\n# This is a program:\nprint('hey')",
        {"tool_calls": [_call("python", code="# This is a program:\nprint('hey')")]},
    ),
    (
        # A python body that is JSON {"code": …} (the chat template's rendering of such a history call).
        "functionary-v3.2",
        V32_PROMPT,
        'python\n{"code": "print(1)"}>>>python_helper\n{"x": 1}<|eom_id|>',
        {"tool_calls": [_call("python", code="print(1)"), _call("python_helper", x=1)]},
    ),
    (
        # Phi-4-mini in llama.cpp's custom template syntax: text, then one call per <|tool_call|> block.
        "phi-4-mini",
        PHI_PROMPT,
        "Let me check both cities."
        '<|tool_call|>{"name": "get_weather", "arguments": {"city": "Paris", "note": "a <|/tool"}}<|/tool_call|>'
        '<|tool_call|>{"name": "get_weather", "arguments": {"city": "Tokyo"}}<|/tool_call|><|end|>',
        {
            "content": "Let me check both cities.",
            "tool_calls": [
                _call("get_weather", city="Paris", note="a <|/tool"),
                _call("get_weather", city="Tokyo"),
            ],
        },
    ),
    (
        # The functools[…] array the model writes still works, and both syntaxes feed tool_calls in order.
        "phi-4-mini",
        PHI_PROMPT,
        '<|tool_call|>{"name": "get_time", "arguments": {}}<|/tool_call|>'
        'functools[{"name": "get_weather", "arguments": {"city": "Paris"}}, '
        '{"name": "get_weather", "arguments": {"city": "Rome"}}]<|end|>',
        {
            "tool_calls": [
                _call("get_time"),
                _call("get_weather", city="Paris"),
                _call("get_weather", city="Rome"),
            ],
        },
    ),
    (
        # GigaChat3: the call ends where its JSON ends (a brace inside a string does not end it); the text
        # after it is content, and </s> ends the turn.
        "gigachat3",
        GIGA_PROMPT,
        "Сейчас проверю погоду.<|message_sep|>\n\nfunction call<|role_sep|>\n"
        '{"name": "get_weather", "arguments": {"city": "Paris", "filter": "{\\"max\\": 5}"}}'
        "\nPlease wait for the result.</s>",
        {
            "content": "Сейчас проверю погоду.\nPlease wait for the result.",
            "tool_calls": [_call("get_weather", city="Paris", filter='{"max": 5}')],
        },
    ),
    (
        # GigaChat3.1: <|function_call|>{…}, followed by text.
        "gigachat3",
        GIGA_PROMPT,
        'Checking.<|function_call|>{"name": "get_time", "arguments": {"tz": "Europe/Moscow"}} One moment.</s>',
        {"content": "Checking. One moment.", "tool_calls": [_call("get_time", tz="Europe/Moscow")]},
    ),
]


@pytest.mark.parametrize(
    ("family", "prompt", "text", "expected"), CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)]
)
def test_realistic_outputs(family: str, prompt: str, text: str, expected: dict[str, Any]) -> None:
    assert parse_every_way(family, text, prompt) == {"role": "assistant", **expected}


def test_functionary_v31_python_tag_without_code_json_is_raw_code() -> None:
    # Only a body that starts as the object {"code": …} is read as JSON; any other code is raw text.
    text = '<|python_tag|>{"a": 1}<|eom_id|>'
    assert parse_every_way("functionary-v3.1", text, V31_PROMPT)["tool_calls"] == [
        _call("python", code='{"a": 1}')
    ]


def test_functionary_python_calls_read_back_from_the_chat_template_history() -> None:
    message = {
        "role": "assistant",
        "content": "Let me run it.",
        "tool_calls": [_call("python", code="import math\nprint(math.sqrt(2))")],
    }
    for family, arguments in (("functionary-v3.1", "object"), ("functionary-v3.2", "json-string")):
        fam = library.family(family)
        (chat_template,) = fam.chat_templates
        text = (CHAT_TEMPLATES / chat_template).read_text(encoding="utf-8")
        report = rt.verify.round_trip(text, fam.template(), [message], arguments=arguments)
        assert not report.failures(), [str(d) for c in report.failures() for d in c.differences]


# ------------------------------------------------------------------------------------------ wire adapters


def _chat_completions(template: Any, prompt: str, text: str) -> tuple[str, list[dict[str, Any]]]:
    """The content and the tool calls a Chat Completions client assembles from the streamed deltas."""
    adapter = ChatCompletionsAdapter(template, seed=1)
    content = ""
    calls: dict[int, dict[str, Any]] = {}
    for chunk in run_stream(rt.ResponseParser(template, prefix=prompt), adapter, list(text)):
        for choice in chunk["choices"]:
            delta = choice["delta"]
            content += delta.get("content") or ""
            for entry in delta.get("tool_calls") or ():
                call = calls.setdefault(entry["index"], {"name": "", "arguments": ""})
                function = entry.get("function") or {}
                call["name"] += function.get("name") or ""
                call["arguments"] += function.get("arguments") or ""
    return content, [
        {"name": c["name"], "arguments": json.loads(c["arguments"])} for _, c in sorted(calls.items())
    ]


def _final(adapter: Any, template: Any, prompt: str, text: str) -> dict[str, Any]:
    list(run_stream(rt.ResponseParser(template, prefix=prompt), adapter, list(text)))
    return adapter.final()


@pytest.mark.parametrize(
    ("family", "prompt", "text", "expected"), CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)]
)
def test_wire_adapters_stream_the_new_syntax_as_tool_calls(
    family: str, prompt: str, text: str, expected: dict[str, Any]
) -> None:
    template = library.family(family).template()
    calls = [c["function"] for c in expected["tool_calls"]]

    content, streamed = _chat_completions(template, prompt, text)
    assert streamed == calls
    assert content.strip() == expected.get("content", "")

    final = _final(AnthropicMessagesAdapter(template, seed=1), template, prompt, text)
    blocks = final["content"]
    assert [{"name": b["name"], "arguments": b["input"]} for b in blocks if b["type"] == "tool_use"] == calls
    # A block protocol trims each text block (the text before a call and the text after it) on its own.
    texts = "".join(b["text"] for b in blocks if b["type"] == "text")
    assert "".join(texts.split()) == "".join(expected.get("content", "").split())
    assert final["stop_reason"] == "tool_use"

    final = _final(ResponsesAdapter(template, seed=1), template, prompt, text)
    items = [item for item in final["output"] if item["type"] == "function_call"]
    assert [{"name": i["name"], "arguments": json.loads(i["arguments"])} for i in items] == calls


@pytest.mark.parametrize(
    ("family", "text", "content"),
    [
        (
            "lfm2",
            "<|tool_call_start|>[f(a=1)]<|tool_call_end|>ok<|tool_call_start|>[g()]<|tool_call_end|><|im_end|>",
            "ok",
        ),
        (
            "olmo-3",
            "<function_calls>f(a=1)</function_calls> x <function_calls>g()</function_calls><|im_end|>",
            "x",
        ),
        (
            "pythonic",
            "<|python_start|>[f(a=1)]<|python_end|> then <|python_start|>[g()]<|python_end|>",
            "then",
        ),
    ],
)
def test_several_call_blocks_give_one_list(family: str, text: str, content: str) -> None:
    """Python-call families: each block's calls are added to tool_calls in stream order (into, E8)."""
    message = parse_every_way(family, text)
    assert message["tool_calls"] == [_call("f", a=1), _call("g")]
    assert message["content"] == content


@pytest.mark.parametrize(
    ("text", "calls"),
    [
        (
            "<|python_tag|>import math\nprint(math.sqrt(2))<|eom_id|>",
            [_call("code_interpreter", code="import math\nprint(math.sqrt(2))")],
        ),
        (
            '<|python_tag|>code_interpreter.call(code="print(1)")<|eom_id|>',
            [_call("code_interpreter", code="print(1)")],
        ),
        ('<|python_tag|>brave_search.call(query="x")<|eom_id|>', [_call("brave_search", query="x")]),
        ('<|python_tag|>{"name": "f", "parameters": {"a": 1}}<|eom_id|>', [_call("f", a=1)]),
    ],
)
def test_llama_3_1_built_in_tools(text: str, calls: list[dict[str, Any]]) -> None:
    """Raw code for code_interpreter, Python calls for the other built-ins, JSON for custom tools."""
    assert parse_every_way("llama-3.1-builtin", text)["tool_calls"] == calls
