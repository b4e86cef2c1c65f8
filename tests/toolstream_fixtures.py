"""Shared by the tool-streaming, JSON-lexer and wire tests: generated JSON documents (``VALUES``,
``OBJECTS``, ``serialize``), random chunking (``pieces``, ``chunkings``) and the model families' templates,
each with one output (``FAMILIES``)."""

from __future__ import annotations

import json
import random
import re
from typing import Any

from hypothesis import strategies as st

import response_templates as rt
from common_templates import QWEN3_TEMPLATE

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
