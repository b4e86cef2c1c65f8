"""The incremental JSON scanner and the tool-call layer (``response_templates.toolstream``).

* ``JsonScanner`` against ``json.loads`` (and the ``json`` content parser for its dialect) on generated
  documents, formatted and escaped in many ways, cut into random pieces: the reported name, raw
  arguments text and canonical arguments text agree with the parse of the whole text; invalid text is
  reported invalid exactly when ``json.loads`` rejects it; each feed costs time proportional to its text.
* ``tool_call_plan`` reads where names, ids and arguments come from, for the model families' templates.
* ``ToolCallStreamer`` over the parser's events: for every chunking, the same calls, argument deltas
  that concatenate to the final arguments string, which ``json.loads`` to exactly the typed arguments of
  the parsed message; early announcement; failure, truncation and the other fallbacks.
"""

from __future__ import annotations

import json
import random
import re
import time
from typing import Any

import jiter
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import response_templates as rt
from common_templates import QWEN3_TEMPLATE
from response_templates.content import get_content_parser
from response_templates.jsonlex.canonical import strict_equal as _strict_equal
from response_templates.toolstream import (
    JsonScanner,
    ToolCallStreamer,
    arguments_text,
    call_parts,
    dumps_arguments,
    tool_call_plan,
)

_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
SETTINGS = settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))

# ------------------------------------------------------------------------------------------------------
# generated JSON documents

_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**20), 10**20),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.sampled_from(["\U0001f600", "\ud800", "a\udc00b", '\x00\x1f"\\/', "é東", "</tool_call>"]),
)
VALUES = st.recursive(
    _SCALARS,
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(st.text(max_size=5), children, max_size=4)
    ),
    max_leaves=12,
)
OBJECTS = st.dictionaries(st.text(max_size=6), VALUES, max_size=5)


def serialize(value: Any, rng: random.Random) -> str:
    """JSON text for ``value`` with random whitespace, escapes (``\\uXXXX`` in either case, surrogate
    pairs, ``\\/``) and number spellings, as different models and servers write it."""

    def ws() -> str:
        return rng.choice(["", "", " ", "\n  ", "\t"])

    if isinstance(value, dict):
        if not value:
            return "{" + ws() + "}"
        members = (
            ws() + serialize(k, rng) + ws() + ":" + ws() + serialize(v, rng) + ws() for k, v in value.items()
        )
        return "{" + ",".join(members) + "}"
    if isinstance(value, list):
        if not value:
            return "[" + ws() + "]"
        return "[" + ",".join(ws() + serialize(v, rng) + ws() for v in value) + "]"
    if isinstance(value, str):
        out = []
        for char in value:
            r = rng.random()
            if r < 0.2:
                escaped = json.dumps(char)[1:-1]  # \uXXXX (pairs for astral characters)
                if rng.random() < 0.5:
                    escaped = re.sub(r"\\u([0-9a-f]{4})", lambda m: "\\u" + m.group(1).upper(), escaped)
                out.append(escaped)
            elif char == "/" and r < 0.5:
                out.append("\\/")
            else:
                out.append(json.dumps(char, ensure_ascii=rng.random() < 0.3)[1:-1])
        return '"' + "".join(out) + '"'
    if isinstance(value, float) and value == value and abs(value) != float("inf") and rng.random() < 0.3:
        return repr(value).replace("e", "E")
    return json.dumps(value)


def pieces(text: str, rng: random.Random) -> list[str]:
    out, i = [], 0
    while i < len(text):
        n = rng.choice([1, 1, 2, 3, 5, 8, 50])
        out.append(text[i : i + n])
        i += n
    return out


def scan(scanner: JsonScanner, chunks: list[str]) -> list[dict]:
    reports = []
    for chunk in chunks:
        reports += scanner.feed(chunk)
    return reports + scanner.end()


def joined(reports: list[dict], key: str, item: int = 0) -> str:
    return "".join(r[key] for r in reports if r["type"] == "arguments" and r["item"] == item)


# ------------------------------------------------------------------------------------------------------
# JsonScanner


@SETTINGS
@given(VALUES, st.text(max_size=8), st.integers(0, 2**32), st.booleans())
def test_scanner_agrees_with_json_loads(arguments: Any, name: str, seed: int, arguments_first: bool) -> None:
    rng = random.Random(seed)
    if arguments_first:
        document = {"arguments": arguments, "name": name}
    else:
        document = {"name": name, "other": [1, {"arguments": "decoy"}], "arguments": arguments}
    text = rng.choice(["", " ", "\n"]) + serialize(document, rng) + rng.choice(["", " \n"])
    whole = json.loads(text)
    scanner = JsonScanner(name_paths=[("name",)], arguments_paths=[("arguments",)])
    reports = scan(scanner, pieces(text, rng))
    assert scanner.done and not scanner.failed
    assert [r["value"] for r in reports if r["type"] == "name"] == [whole["name"]]
    assert _strict_equal(json.loads(joined(reports, "raw")), whole["arguments"])
    assert joined(reports, "json") == dumps_arguments(whole["arguments"])
    assert [r["type"] for r in reports].count("arguments_done") == 1
    # every canonical prefix is valid partial JSON for a client (no escape is ever cut)
    assert all(
        not r["json"].endswith("\\") or r["json"].endswith("\\\\")
        for r in reports
        if r["type"] == "arguments"
    )


@SETTINGS
@given(VALUES, st.integers(0, 2**32), st.sampled_from(["cut", "insert", "delete", "replace"]))
def test_scanner_rejects_exactly_what_json_loads_rejects(value: Any, seed: int, how: str) -> None:
    rng = random.Random(seed)
    text = serialize({"name": "f", "arguments": value}, rng)
    at = rng.randrange(len(text) + 1)
    char = rng.choice('{}[],:"\\ a0-.eE\x01tnu\ud800')
    if how == "cut":
        text = text[:at]
    elif how == "insert":
        text = text[:at] + char + text[at:]
    elif how == "delete":
        text = text[:at] + text[at + 1 :]
    else:
        text = text[:at] + char + text[at + 1 :]
    try:
        json.loads(text)
        valid = True
    except ValueError:
        valid = False
    reports = scan(JsonScanner(name_paths=[("name",)], arguments_paths=[("arguments",)]), pieces(text, rng))
    errors = [r for r in reports if r["type"] == "error"]
    assert (not errors) == valid, (text, reports)
    assert len(errors) <= 1 and (not errors or reports[-1] is errors[0])


_WORDS = st.text(alphabet="abcxyz_09é", min_size=1, max_size=6)
_DIALECT_VALUES = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-999, 999), st.text(max_size=8)),
    lambda children: st.one_of(st.lists(children, max_size=3), st.dictionaries(_WORDS, children, max_size=3)),
    max_leaves=8,
)


def gemma(value: Any, rng: random.Random) -> str:
    """Gemma 4's dialect: bare keys, strings between <|"|> markers (verbatim, no escapes)."""
    if isinstance(value, dict):
        return "{" + ",".join(f"{k}:{gemma(v, rng)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(gemma(v, rng) for v in value) + "]"
    if isinstance(value, str):
        return f'<|"|>{value}<|"|>' if "<|" not in value and rng.random() < 0.8 else json.dumps(value)
    return json.dumps(value)


@SETTINGS
@given(st.dictionaries(_WORDS, _DIALECT_VALUES, max_size=4), st.integers(0, 2**32))
def test_scanner_dialect_agrees_with_the_json_content_parser(arguments: dict, seed: int) -> None:
    rng = random.Random(seed)
    parser = get_content_parser("json", "tool_calls")
    args = parser.validate({"unquoted_keys": True, "string_delims": [['<|"|>', '<|"|>']]}, "tool_calls")
    text = gemma(arguments, rng)
    expected = parser.parse(text, args)
    scanner = JsonScanner(arguments_paths=[()], unquoted_keys=True, string_delims=[['<|"|>', '<|"|>']])
    reports = scan(scanner, pieces(text, rng))
    assert not any(r["type"] == "error" for r in reports), reports
    assert joined(reports, "raw") == text
    assert joined(reports, "json") == dumps_arguments(expected)


def test_scanner_each_document_reports_every_element() -> None:
    text = '[{"name": "a", "arguments": {"x": 1}}, {"arguments": {"y": [2]}, "name": "b"}, {"name": "c"}]'
    scanner = JsonScanner(name_paths=[("name",)], arguments_paths=[("arguments",)], each=True)
    for chunks in ([text], list(text)):
        scanner = JsonScanner(name_paths=[("name",)], arguments_paths=[("arguments",)], each=True)
        reports = scan(scanner, chunks)
        assert [(r["item"], r["value"]) for r in reports if r["type"] == "name"] == [
            (0, "a"),
            (1, "b"),
            (2, "c"),
        ]
        assert joined(reports, "json", 0) == '{"x": 1}' and joined(reports, "json", 1) == '{"y": [2]}'
        assert [r["item"] for r in reports if r["type"] == "arguments_done"] == [0, 1]


def test_scanner_holds_members_for_typing() -> None:
    calls = []

    def hold(item: int, key: str, kind: str) -> Any:
        calls.append((item, key, kind))
        return int if key == "n" else None

    scanner = JsonScanner(arguments_paths=[("arguments",)], hold=hold)
    reports = scan(scanner, list('{"arguments": {"n": "42", "s": "x", "o": {"n": "1"}, "l": [1]}}'))
    canonical = [r["json"] for r in reports if r["type"] == "arguments" and r["json"]]
    assert "".join(canonical) == '{"n": 42, "s": "x", "o": {"n": "1"}, "l": [1]}'
    assert '"4' not in canonical and "42" in canonical  # held until complete, then written once
    assert calls == [(0, "n", "string"), (0, "s", "string"), (0, "l", "array")]  # only top-level members


def test_scanner_surrogate_escapes_split_anywhere() -> None:
    text = '{"arguments": {"e": "\\ud83d\\ude00 \\ud83d x \\udc00 \\ud83d\\u0041"}}'
    expected = json.loads(text)["arguments"]
    for cut in range(len(text) + 1):
        scanner = JsonScanner(arguments_paths=[("arguments",)])
        reports = scan(scanner, [text[:cut], text[cut:]])
        assert joined(reports, "json") == dumps_arguments(expected)
        assert json.loads(joined(reports, "json")) == expected
        joined(reports, "json").encode("utf-8")  # lone surrogates stay escapes: always encodable


def test_scanner_errors_carry_the_offset() -> None:
    reports = JsonScanner().feed('{"a": tru e}')
    assert reports == [{"type": "error", "message": "invalid number or literal 'tru'", "offset": 6}]
    assert JsonScanner().feed("{} x")[-1]["offset"] == 3
    scanner = JsonScanner()
    scanner.feed('{"a": "b')
    assert scanner.end()[0]["type"] == "error" and not scanner.done


def test_scanner_nesting_limit_matches_the_parser() -> None:
    deep = "[" * 513 + "]" * 513
    assert JsonScanner().feed(deep)[0]["type"] == "error"
    ok = JsonScanner()
    assert ok.feed("[" * 512 + "]" * 512) == [] and ok.done


def test_scanner_cost_per_feed_is_flat() -> None:
    """Each feed costs time proportional to its own text, never to what came before."""
    code = "".join(f'line {i}: x = "a\\tb" \\ {{}} café\n' for i in range(6000))  # ~250 KB, many escapes
    text = json.dumps({"name": "write_file", "arguments": {"path": "a.py", "content": code}})
    chunks = [text[i : i + 4] for i in range(0, len(text), 4)]
    scanner = JsonScanner(name_paths=[("name",)], arguments_paths=[("arguments",)])
    window = 4000
    timings = []
    feed = scanner.feed
    start = time.perf_counter()
    for i, chunk in enumerate(chunks):
        feed(chunk)
        if i % window == window - 1:
            now = time.perf_counter()
            timings.append(now - start)
            start = now
        # nothing grows with the position: only the escape carry and the current output are kept
        assert len(scanner._carry) < 12 and not scanner._out
        assert sum(map(len, scanner._cap)) < 16 and not scanner._tok and len(scanner._stack) <= 2
    assert scanner.done
    first, last = min(timings[:3]), min(timings[-3:])
    assert last < 3 * first, timings


# ------------------------------------------------------------------------------------------------------
# model families: templates from the research drafts, with one output each

WEATHER_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string"},
                    "days": {"type": "integer"},
                    "units": {"type": ["string", "null"]},
                    "hourly": {"type": "boolean"},
                },
            },
        },
    }
]

HERMES = QWEN3_TEMPLATE
QWEN3_CODER = {
    "defaults": {"role": "assistant"},
    "start_anchor": "<|im_start|>assistant\n",
    "fields": {
        "reasoning_content": {"open": "<think>", "close_pattern": "</think>|(?=<tool_call>)"},
        "tool_calls": {
            "open_pattern": "(?:<tool_call>\\s*)?<function=(?P<name>[^>\\n]+)>",
            "close_pattern": "</function>(?:\\s*</tool_call>)?",
            "repeats": True,
            "content": "xml-inline",
            "content_args": {
                "tag_pattern": "<parameter=(?P<key>[^>\\n]+)>\\n?(?P<value>.*?)\\n?</parameter>"
            },
            "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}},
        },
        "content": {"close": "<|im_end|>"},
    },
}
DEEPSEEK_V31 = {
    "defaults": {"role": "assistant"},
    "start_anchor": "<｜Assistant｜>",
    "fields": {
        "reasoning_content": {"open_pattern": "<think>|^(?=</think>)", "close": "</think>"},
        "tool_calls": {
            "open_pattern": "(?:<｜tool▁calls▁begin｜>\\s*)?<｜tool▁call▁begin｜>(?P<name>[^<\\n]+?)<｜tool▁sep｜>",
            "close_pattern": "\\s*<｜tool▁call▁end｜>(?:\\s*<｜tool▁calls▁end｜>)?",
            "repeats": True,
            "content": "json",
            "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}},
        },
        "content": {"close": "<｜end▁of▁sentence｜>"},
    },
}
KIMI_K2 = {
    "defaults": {"role": "assistant"},
    "start_anchor": "<|im_assistant|>assistant<|im_middle|>",
    "fields": {
        "reasoning_content": {
            "open": "<think>",
            "close_pattern": "</think>|(?=<\\|tool_calls?_section_begin\\|>|<\\|tool_call_begin\\|>)",
        },
        "tool_calls": {
            "open_pattern": "(?:<\\|tool_calls?_section_begin\\|>\\s*)?<\\|tool_call_begin\\|>\\s*"
            "(?P<id>(?:functions\\.)?(?P<name>[\\w.\\-]+?)(?::\\d+)?)\\s*<\\|tool_call_argument_begin\\|>",
            "close_pattern": "\\s*<\\|tool_call_end\\|>(?:\\s*<\\|tool_calls?_section_end\\|>)?|(?=<\\|tool_call_begin\\|>)",
            "repeats": True,
            "content": "json",
            "transform": {
                "type": "function",
                "id": "{id}",
                "function": {"name": "{name}", "arguments": "{content}"},
            },
        },
        "content": {"close": "<|im_end|>"},
    },
}
GEMMA_4 = {
    "defaults": {"role": "assistant"},
    "start_anchor": ["<|turn>model\n", "<tool_response|>"],
    "fields": {
        "reasoning_content": {"open_pattern": "<\\|channel>thought\\n?", "close": "<channel|>"},
        "tool_calls": {
            "open_pattern": "<\\|tool_call>call:(?P<name>[\\w.-]+)",
            "close": "<tool_call|>",
            "repeats": True,
            "content": "json",
            "content_args": {"unquoted_keys": True, "string_delims": [['<|"|>', '<|"|>']]},
            "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}},
        },
        "content": {"close": ["<turn|>", "<|tool_response>", "<eos>"]},
    },
}
MISTRAL_PRE_V11 = {
    "defaults": {"role": "assistant"},
    "start_anchor": "[/INST]",
    "fields": {
        "tool_calls": {
            "open": "[TOOL_CALLS]",
            "close": "</s>",
            "content": "json",
            "transform_each": True,
            "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{arguments}"}},
        },
        "content": {"close": "</s>"},
    },
}
GPT_OSS = {
    "defaults": {"role": "assistant"},
    "start_anchor": "<|start|>assistant",
    "fields": {
        "reasoning_content": {
            "open_pattern": "(?:<\\|start\\|>assistant)?<\\|channel\\|>analysis<\\|message\\|>",
            "close": "<|end|>",
            "repeats": True,
            "join": "\n",
        },
        "content": {
            "open_pattern": "(?:<\\|start\\|>assistant)?<\\|channel\\|>(?:final|commentary)"
            "(?:\\s*(?:<\\|constrain\\|>)?\\s*[\\w-]+)?\\s*<\\|message\\|>",
            "close": ["<|end|>", "<|return|>"],
            "repeats": True,
            "join": "\n",
        },
        "tool_calls": {
            "open_pattern": "(?:<\\|start\\|>assistant)?(?: to=functions\\.(?P<name>[^\\s<]+)\\s*<\\|channel\\|>"
            "(?:commentary|analysis)|<\\|channel\\|>(?:commentary|analysis) to=functions\\.(?P<name>[^\\s<]+))"
            "(?:\\s*(?:<\\|constrain\\|>)?\\s*[\\w-]+)?\\s*<\\|message\\|>",
            "close": ["<|call|>", "<|end|>"],
            "repeats": True,
            "content": "json",
            "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}},
        },
    },
}

#: name -> (template, prompt, output, tools)
FAMILIES: dict[str, tuple[dict, str, str, list | None]] = {
    "qwen3": (
        HERMES,
        "<|im_start|>user\nWeather?<|im_end|>\n<|im_start|>assistant\n",
        "<think>\nThe user wants weather in Paris and Tokyo.\n</think>\n\nLet me check both cities.\n<tool_call>\n"
        '{"name": "get_weather", "arguments": {"city": "Paris", "days": "3", "hourly": "true", "units": null}}'
        "\n</tool_call>\n<tool_call>\n"
        '{"name": "get_weather", "arguments": {"city": "Tokyo", "note": "caf\\u00e9 \\ud83d\\ude00 \\"q\\" \\/"}}'
        "\n</tool_call><|im_end|>",
        WEATHER_TOOLS,
    ),
    "qwen3-coder": (
        QWEN3_CODER,
        "<|im_start|>user\nWeather?<|im_end|>\n<|im_start|>assistant\n<think>\n",
        "Two cities.\n<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n<parameter=days>\n"
        "3\n</parameter>\n</function>\n</tool_call>\n<tool_call>\n<function=get_weather>\n<parameter=city>\nTokyo\n"
        "</parameter>\n</function>\n</tool_call><|im_end|>",
        WEATHER_TOOLS,
    ),
    "deepseek-v3.1": (
        DEEPSEEK_V31,
        "<｜User｜>Weather?<｜Assistant｜><think>",
        "Check Paris.</think>Checking.<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>"
        '{"city": "Paris", "days": 2}<｜tool▁call▁end｜><｜tool▁calls▁end｜><｜end▁of▁sentence｜>',
        WEATHER_TOOLS,
    ),
    "kimi-k2": (
        KIMI_K2,
        "<|im_user|>user<|im_middle|>Weather?<|im_end|><|im_assistant|>assistant<|im_middle|>",
        "<think>Two calls.</think>Sure.<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0"
        '<|tool_call_argument_begin|>{"city": "Paris"}<|tool_call_end|><|tool_call_begin|>functions.get_weather:1'
        '<|tool_call_argument_begin|>{"city": "Tokyo", "days": 2}<|tool_call_end|><|tool_calls_section_end|><|im_end|>',
        None,
    ),
    "gemma-4": (
        GEMMA_4,
        "<|turn>user\nConfigure<turn|>\n<|turn>model\n",
        '<|channel>thought\nNeed config.<channel|>Setting it.<|tool_call>call:set_config{config:{theme:<|"|>dark '
        '"blue"<|"|>,count:3},tags:[<|"|>a<|"|>,<|"|>b\\c<|"|>]}<tool_call|><|tool_call>call:toggle{enabled:true}'
        "<tool_call|><turn|>",
        None,
    ),
    "mistral-pre-v11": (
        MISTRAL_PRE_V11,
        "[INST]Weather and time?[/INST]",
        '[TOOL_CALLS] [{"name": "get_weather", "arguments": {"city": "Paris"}}, '
        '{"name": "get_time", "arguments": {"tz": "Asia/Tokyo"}}]</s>',
        None,
    ),
    "gpt-oss": (
        GPT_OSS,
        "<|start|>user<|message|>Weather?<|end|><|start|>assistant",
        "<|channel|>analysis<|message|>Need the weather.<|end|><|start|>assistant<|channel|>commentary "
        'to=functions.get_weather <|constrain|>json<|message|>{"city": "Paris", "days": 3}<|call|>',
        WEATHER_TOOLS,
    ),
    "no-tool-calls": (
        HERMES,
        "<|im_start|>assistant\n",
        "<think>\nEasy.\n</think>\n\n  Hello there!  \n\n<|im_end|>",
        None,
    ),
    "kimi-k2-interleaved": (  # extension interleaved: a call inside the reasoning, which resumes after it
        rt.templates.get("kimi-k2").to_dict(),
        "<|im_user|>user<|im_middle|>Weather?<|im_end|><|im_assistant|>assistant<|im_middle|>",
        "<think>I'm thinking.<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0"
        '<|tool_call_argument_begin|>{"city": "Paris"}<|tool_call_end|><|tool_calls_section_end|> Still '
        "thinking.</think>Done.<|im_end|>",
        None,
    ),
    "llama-3.1-builtin": (  # extension into: built-in calls in Python syntax feed tool_calls
        rt.templates.get("llama-3.1-builtin").to_dict(),
        "<|start_header_id|>user<|end_header_id|>\n\nSearch<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n",
        '<|python_tag|>brave_search.call(query="weather in Paris")<|eom_id|>',
        None,
    ),
    "cohere-r7b-wrapped": (  # into the implicit field: the answer inside an optional wrapper
        rt.templates.get("cohere-command-r7b").to_dict(),
        "<|START_OF_TURN_TOKEN|><|USER_TOKEN|>Hi<|END_OF_TURN_TOKEN|><|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>",
        "<|START_THINKING|>Greet them.<|END_THINKING|><|START_RESPONSE|>Hello there!<|END_RESPONSE|>"
        "<|END_OF_TURN_TOKEN|>",
        None,
    ),
    "text-around-calls": (
        HERMES,
        "<|im_start|>assistant\n",
        'Before.\n<tool_call>{"name": "f", "arguments": {}}</tool_call>\n\n<tool_call>'
        '{"name": "g", "arguments": {"a": [1, 2.5e3, null]}}</tool_call>\n After. <|im_end|>',
        None,
    ),
}


def chunkings(text: str) -> list[tuple[str, list[str]]]:
    out = [("whole", [text]), ("1-char", list(text))]
    for k in range(2):
        rng = random.Random(f"{text[:20]}/{k}")
        out.append((f"random-{k}", pieces(text, rng)))
    return out


def stream_calls(
    template: dict, prompt: str, chunks: list[str], tools: Any = None, *, truncated: bool = False, **kw: Any
) -> tuple[list[dict], ToolCallStreamer, dict | None]:
    parser = rt.ResponseParser(template, prefix=prompt, tools=tools)
    streamer = ToolCallStreamer(template, tools=tools, **kw)
    events = streamer.feed(parser.initial_events)
    for chunk in chunks:
        try:
            events += streamer.feed(parser.feed(chunk))
        except rt.ParseError as exc:
            events += streamer.feed(exc.events or [])
    try:
        message, final = parser.finalize()
    except rt.ParseError as exc:
        message, final = None, exc.events or []
    events += streamer.finish(final, truncated=truncated)
    return events, streamer, message


def check_call_events(events: list[dict]) -> None:
    """Structure: indices 0, 1, 2... in order, one call at a time, deltas concatenate to the end's text."""
    current, sent, count = None, [], 0
    for event in events:
        if event["type"] == "tool_call_start":
            assert current is None and event["index"] == count
            current, sent = event["index"], []
            count += 1
        elif event["type"] == "tool_call_delta":
            assert event["index"] == current
            sent.append(event["arguments"])
            text = "".join(sent)
            if not event["whole"] and not _SURROGATE_ESCAPE.search(text):
                # streamed text: every prefix is valid partial JSON for a client (jiter rejects lone
                # surrogates even in complete JSON, so those are left out)
                jiter.from_json(text.encode(), partial_mode=True)
        else:
            assert event["index"] == current and event["arguments"] == "".join(sent)
            if event["complete"]:
                assert _strict_equal(json.loads(event["arguments"]), event["input"])
            current = None
    assert current is None


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_families_stream_the_parsed_calls_for_every_chunking(family: str) -> None:
    template, prompt, output, tools = FAMILIES[family]
    message = rt.parse_response(output, template, prefix=prompt, tools=tools)
    expected = [call_parts(c) for c in message.get("tool_calls", [])]
    reference = None
    for name, chunks in chunkings(output):
        events, streamer, streamed = stream_calls(template, prompt, chunks, tools)
        assert streamed == message
        check_call_events(events)
        ends = [e for e in events if e["type"] == "tool_call_end"]
        assert all(e["complete"] for e in ends) and not streamer.errors
        got = [(e["name"], e["id"], e["input"]) for e in ends]
        assert got == expected, name
        for end, (_, _, arguments) in zip(ends, expected, strict=True):
            assert end["arguments"] == arguments_text(arguments)  # exactly json.dumps of the typed value
        summary = [
            {k: v for k, v in e.items() if k != "whole"} for e in events if e["type"] != "tool_call_delta"
        ]
        if reference is None:
            reference = summary
        assert summary == reference, name


@pytest.mark.parametrize(
    "family", ["qwen3", "deepseek-v3.1", "kimi-k2", "gemma-4", "mistral-pre-v11", "gpt-oss"]
)
def test_json_arguments_stream_while_they_are_written(family: str) -> None:
    template, prompt, output, tools = FAMILIES[family]
    parser = rt.ResponseParser(template, prefix=prompt, tools=tools)
    streamer = ToolCallStreamer(template, tools=tools)
    streamer.feed(parser.initial_events)
    early = []
    for char in output:
        events = parser.feed(char)
        closes = any(e["type"] == "region_close" and e["field"] == "tool_calls" for e in events)
        for event in streamer.feed(events):
            if not closes:
                early.append(event["type"])
    assert "tool_call_start" in early
    assert early.count("tool_call_delta") >= 5  # argument text flows before the call's region closes


def test_plans_of_the_families() -> None:
    def plan(template: dict) -> tuple:
        p = tool_call_plan(rt.load_template(template).by_name["tool_calls"])
        return p.name, p.id, p.arguments, p.each, p.scan

    assert plan(HERMES) == (
        ("json", (("name",),)),
        None,
        ("json", (("arguments",), ("parameters",))),
        False,
        True,
    )
    assert plan(QWEN3_CODER) == (("capture", "name"), None, None, False, False)
    assert plan(DEEPSEEK_V31) == (("capture", "name"), None, ("json", ((),)), False, True)
    assert plan(KIMI_K2) == (("capture", "name"), ("capture", "id"), ("json", ((),)), False, True)
    assert plan(MISTRAL_PRE_V11) == (("json", (("name",),)), None, ("json", (("arguments",),)), True, True)
    llama = {
        "start_anchor": "x",
        "fields": {
            "tool_calls": {
                "open": "<|python_tag|>",
                "content": "json",
                "transform": {
                    "type": "function",
                    "function": {"name": "{content.name}", "arguments": "{content.parameters}"},
                },
            }
        },
    }
    assert plan(llama)[:3] == (("json", (("name",),)), None, ("json", (("parameters",),)))
    literal = {
        "start_anchor": "x",
        "fields": {
            "tool_calls": {
                "open": "<py>",
                "close": "</py>",
                "transform": {
                    "type": "function",
                    "function": {"name": "python", "arguments": {"code": "{content}"}},
                },
            }
        },
    }
    assert plan(literal)[:3] == (("literal", "python"), None, None)
    close_name = {
        "start_anchor": "x",
        "fields": {
            "tool_calls": {
                "open": "<c>",
                "close_pattern": "</c name=(?P<n>\\w+)>",
                "content": "json",
                "transform": {"function": {"name": "{n}", "arguments": "{content}"}},
            }
        },
    }
    assert plan(close_name)[:3] == (None, None, ("json", ((),)))


# ------------------------------------------------------------------------------------------------------
# fallbacks and failures


def test_typing_never_sends_a_value_the_parser_changes() -> None:
    template, prompt, _, tools = FAMILIES["qwen3"]
    output = '<tool_call>{"name": "get_weather", "arguments": {"days": "3", "city": "12", "hourly": "yes"}}</tool_call>'
    for _, chunks in chunkings(output):
        events, _, message = stream_calls(template, prompt, chunks, tools)
        deltas = [e["arguments"] for e in events if e["type"] == "tool_call_delta"]
        assert "".join(deltas) == '{"days": 3, "city": "12", "hourly": "yes"}'
        assert not any('"3' in d for d in deltas)
        assert json.loads("".join(deltas)) == message["tool_calls"][0]["function"]["arguments"]


def test_arguments_before_the_name_are_sent_at_close() -> None:
    output = '<tool_call>{"arguments": {"city": "Paris"}, "name": "get_weather"}</tool_call>'
    events, _, _ = stream_calls(HERMES, "", list(output))
    assert [e["type"] for e in events] == ["tool_call_start", "tool_call_delta", "tool_call_end"]
    assert events[1] == {
        "type": "tool_call_delta",
        "index": 0,
        "arguments": '{"city": "Paris"}',
        "whole": True,
    }


def test_non_object_arguments_are_sent_whole() -> None:
    output = '<tool_call>{"name": "f", "arguments": "{\\"a\\": 1}"}</tool_call>'
    events, _, _ = stream_calls(HERMES, "", list(output))
    assert [e["type"] for e in events] == ["tool_call_start", "tool_call_delta", "tool_call_end"]
    assert events[1]["arguments"] == '{"a": 1}' and events[1]["whole"]


def test_repeated_key_still_parses_to_the_final_arguments() -> None:
    output = '<tool_call>{"name": "f", "arguments": {"a": 1, "b": 2, "a": 3}}</tool_call>'
    events, _streamer, message = stream_calls(HERMES, "", list(output))
    end = events[-1]
    assert end["complete"] and end["arguments"] == '{"a": 1, "b": 2, "a": 3}'
    assert (
        json.loads(end["arguments"]) == message["tool_calls"][0]["function"]["arguments"] == {"a": 3, "b": 2}
    )


def test_a_repeated_name_is_reported_not_papered_over() -> None:
    output = '<tool_call>{"name": "f", "name": "g", "arguments": {}}</tool_call>'
    events, streamer, _ = stream_calls(HERMES, "", list(output))
    assert events[0]["name"] == "f" and not events[-1]["complete"]
    assert "parsed call is 'g'" in events[-1]["error"] and streamer.errors


def test_invalid_json_after_the_announcement_ends_the_call_incomplete() -> None:
    output = 'Hi<tool_call>{"name": "f", "arguments": {"a": 1, oops}}</tool_call> then <tool_call>{"name": "g", "arguments": {}}</tool_call>'
    for _, chunks in chunkings(output):
        events, streamer, message = stream_calls(HERMES, "", chunks)
        check_call_events(events)
        ends = [e for e in events if e["type"] == "tool_call_end"]
        assert [(e["name"], e["complete"]) for e in ends] == [("f", False), ("g", True)]
        assert ends[0]["arguments"] == '{"a": 1' and ends[0]["input"] is None
        assert "did not parse" in ends[0]["error"] and len(streamer.errors) == 1
        assert message["tool_calls"] == [{"type": "function", "function": {"name": "g", "arguments": {}}}]


def test_a_region_that_fails_before_its_name_is_dropped() -> None:
    events, streamer, _ = stream_calls(HERMES, "", ["<tool_call>{nope}</tool_call>"])
    assert events == [] and "produced no call" in streamer.errors[0]


@pytest.mark.parametrize(
    ("cut", "sent", "untruncated"),
    [
        ('{"name": "get_weather", "arguments": {"city": "Pa', '{"city": "Pa', 1),  # inside the arguments
        ('{"name": "get_weather", "arguments": {"city": "Paris"}}', '{"city": "Paris"}', 2),  # no close
        ('{"name": "get_wea', None, 1),  # inside the name: never announced
    ],
)
def test_truncated_stream_never_completes_the_open_call(cut: str, sent: str | None, untruncated: int) -> None:
    output = '<tool_call>{"name": "f", "arguments": {}}</tool_call><tool_call>' + cut
    for _, chunks in chunkings(output):
        events, streamer, _ = stream_calls(HERMES, "", chunks, truncated=True)
        check_call_events(events)
        ends = [e for e in events if e["type"] == "tool_call_end"]
        assert ends[0]["complete"]
        assert len(ends) == (1 if sent is None else 2)
        if sent is not None:
            assert not ends[1]["complete"] and "cut off" in ends[1]["error"]
            assert ends[1]["arguments"] == sent and ends[1]["input"] is None
        assert streamer.completed == 1
    # Without truncation the end of the stream closes the region, and the call completes if it parses.
    _, streamer, _ = stream_calls(HERMES, "", [output])
    assert streamer.completed == untruncated


def test_at_close_mode_sends_whole_parsed_calls_only() -> None:
    template, prompt, output, tools = FAMILIES["qwen3"]
    events, _, _message = stream_calls(template, prompt, list(output), tools, eager=False)
    assert [e["type"] for e in events] == ["tool_call_start", "tool_call_delta", "tool_call_end"] * 2
    assert all(e["whole"] for e in events if e["type"] == "tool_call_delta")
    failing = '<tool_call>{"name": "f", "arguments": {"a": 1, oops}}</tool_call>'
    events, streamer, _ = stream_calls(HERMES, "", list(failing), eager=False)
    assert events == [] and streamer.errors


def test_each_region_calls_end_one_after_another() -> None:
    template, prompt, output, _ = FAMILIES["mistral-pre-v11"]
    events, _, _ = stream_calls(template, prompt, list(output))
    kinds = [(e["type"], e["index"]) for e in events if e["type"] != "tool_call_delta"]
    assert kinds == [
        ("tool_call_start", 0),
        ("tool_call_end", 0),
        ("tool_call_start", 1),
        ("tool_call_end", 1),
    ]
    # an element whose arguments come before its name holds back itself and every later element
    output = '[TOOL_CALLS] [{"name": "a", "arguments": {}}, {"arguments": {"x": 1}, "name": "b"}, {"name": "c", "arguments": {}}]</s>'
    events, _, _message = stream_calls(template, prompt, list(output))
    check_call_events(events)
    assert [e["name"] for e in events if e["type"] == "tool_call_start"] == ["a", "b", "c"]
    assert [e["whole"] for e in events if e["type"] == "tool_call_delta"][-2:] == [True, True]


@SETTINGS
@given(st.text(alphabet="abc_", min_size=1, max_size=8), OBJECTS, st.integers(0, 2**32))
def test_any_json_call_any_chunking(name: str, arguments: dict, seed: int) -> None:
    """Random tool-call documents, formatted at random, cut at random: the call streams whole and right."""
    rng = random.Random(seed)
    body = serialize({"name": name, "arguments": arguments}, rng)
    assume(
        "</tool_call>" not in body
    )  # the close delimiter inside a string ends the region (the template's choice)
    output = f"Text <tool_call>\n{body}\n</tool_call> more"
    message = rt.parse_response(output, HERMES, prefix="")
    events, _streamer, streamed = stream_calls(HERMES, "", pieces(output, rng))
    assert streamed == message
    check_call_events(events)
    (end,) = [e for e in events if e["type"] == "tool_call_end"]
    assert end["complete"] and end["name"] == name
    assert _strict_equal(json.loads(end["arguments"]), message["tool_calls"][0]["function"]["arguments"])
    whole_events, _, _ = stream_calls(HERMES, "", [output])
    assert whole_events[-1]["arguments"] == end["arguments"]  # the same string for every chunking


def test_arguments_text_and_call_parts() -> None:
    assert arguments_text({"a": "\ud800"}) == '{"a": "\\ud800"}'
    assert arguments_text([1]) == "[1]" and arguments_text("raw") == "raw"
    assert call_parts({"function": {"name": ""}}) is None and call_parts("x") is None
    assert call_parts({"id": 7, "function": {"name": "f"}}) == ("f", "7", {})


def test_benchmark_script_runs_and_checks_itself() -> None:
    """benchmarks/bench_tool_streaming.py: its generator and both of our contenders, tiny and untimed."""
    import sys
    from pathlib import Path

    bench_dir = str(Path(__file__).resolve().parent.parent / "benchmarks")
    if bench_dir not in sys.path:
        sys.path.insert(0, bench_dir)
    import bench_tool_streaming as bench

    body, arguments = bench.make_call(3000)
    assert 2500 < len(body) < 3500 and json.loads(body)["arguments"] == arguments
    assert bench.run_scanner(body, arguments, check=True).correct
    assert bench.run_pipeline(body, arguments, check=True).correct


def test_a_call_that_is_the_models_json_keeps_its_id() -> None:
    template = {
        "start_anchor": "x",
        "fields": {
            "tool_calls": {"open": "<c>", "close": "</c>", "repeats": True, "content": "json"},
            "content": {},
        },
    }
    for _, chunks in chunkings(
        '<c>{"id": "call_7", "name": "f", "arguments": {"a": 1}}</c><c>{"name": "g", "arguments": {}}</c>'
    ):
        events, _, message = stream_calls(template, "", chunks)
        starts = [(e["name"], e["id"]) for e in events if e["type"] == "tool_call_start"]
        assert starts == [
            ("f", "call_7"),
            ("g", None),
        ]  # an id written first is kept, a missing one not awaited
        assert message["tool_calls"][0]["id"] == "call_7"
    events, _, _ = stream_calls(template, "", list('<c>{"name": "f", "arguments": {"a": 1}}</c>'))
    assert [e["type"] for e in events][:2] == ["tool_call_start", "tool_call_delta"]
    assert not events[1]["whole"]  # streamed, not held until close
