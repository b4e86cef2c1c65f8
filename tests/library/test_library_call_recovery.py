"""Tool calls the library must not get silently wrong (issue 28, items 3 and 6).

* Qwen3-Coder XML: a parameter whose ``</parameter>`` is missing ends at the next ``<parameter=`` or at
  ``</function>`` (as vLLM and SGLang read it), instead of giving ``arguments: {}`` or swallowing the next
  parameter; text outside every parameter makes the call an error rather than vanishing.
* Kimi-K2: the function name comes from the call id only where the id holds one; an id without a name
  (``functions.:0``, a bare counter, a word) makes the call an error, never a made-up name.

Streaming gives the whole-text result for every chunking checked.
"""

from __future__ import annotations

import contextlib
import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import response_templates as rt
from hypothesis_profiles import examples
from response_templates.wire import ChatCompletionsAdapter

QWEN = ["qwen3-coder", "qwen3-coder-instruct"]
KIMI = ["kimi-k2", "kimi-k2-instruct"]

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
        },
    },
}
F = {
    "type": "function",
    "function": {
        "name": "f",
        "parameters": {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}}},
    },
}
TOOLS = [WEATHER, F]


def whole(name: str, text: str, **kw: Any) -> rt.ParsedMessage:
    return rt.parse_response(text, rt.templates.get(name), prefix="", tools=TOOLS, **kw)


def chunkings(text: str, seed: int = 0) -> list[list[str]]:
    rng = random.Random(seed)
    out = [[text], list(text)]
    for _ in range(4):
        pieces, at = [], 0
        while at < len(text):
            size = rng.randint(1, 12)
            pieces.append(text[at : at + size])
            at += size
        out.append(pieces)
    return out


def streamed(name: str, pieces: list[str], **kw: Any) -> rt.ParsedMessage:
    parser = rt.ResponseParser(rt.templates.get(name), prefix="", tools=TOOLS, **kw)
    for piece in pieces:
        with contextlib.suppress(rt.ParseError):
            parser.feed(piece)
    try:
        message, _ = parser.finalize()
    except rt.ParseError as exc:
        message = exc.partial_message
    return message


def same_everywhere(name: str, text: str, errors: str = "raise") -> rt.ParsedMessage:
    message = whole(name, text, errors=errors)
    for pieces in chunkings(text):
        got = streamed(name, pieces, errors=errors)
        assert dict(got) == dict(message), (pieces, got, message)
        assert [(e.field, e.raw) for e in got.errors] == [(e.field, e.raw) for e in message.errors]
    return message


# ---------------------------------------------------------------------------------- Qwen3-Coder XML

#: (the output without </parameter>, the same call written with every </parameter>, the arguments).
UNCLOSED = [
    (
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n<parameter=days>\n3\n</function>\n</tool_call>",
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n<parameter=days>\n3\n"
        "</parameter>\n</function>\n</tool_call>",
        ("get_weather", {"city": "Paris", "days": 3}),
    ),
    (
        "<tool_call><function=f><parameter=a>1<parameter=b>2</function></tool_call>",
        "<tool_call><function=f><parameter=a>1</parameter><parameter=b>2</parameter></function></tool_call>",
        ("f", {"a": 1, "b": "2"}),
    ),
    (  # only the first one unclosed: the next parameter is not swallowed into its value
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n<parameter=days>\n3\n</parameter>\n"
        "</function>\n</tool_call>",
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n<parameter=days>\n3\n"
        "</parameter>\n</function>\n</tool_call>",
        ("get_weather", {"city": "Paris", "days": 3}),
    ),
    (  # a multi-line value keeps its inner newlines and indentation; one framing newline each side goes
        "<tool_call>\n<function=f>\n<parameter=b>\n  line 1\n\n  line 2\n\n<parameter=a>\n7\n</function>\n"
        "</tool_call>",
        "<tool_call>\n<function=f>\n<parameter=b>\n  line 1\n\n  line 2\n\n</parameter>\n<parameter=a>\n7\n"
        "</parameter>\n</function>\n</tool_call>",
        ("f", {"b": "  line 1\n\n  line 2\n", "a": 7}),
    ),
    (  # two calls, the second without its close tags
        "Checking.\n<tool_call>\n<function=f>\n<parameter=a>\n1\n</parameter>\n</function>\n</tool_call>\n"
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nRome\n</function>\n</tool_call>",
        "Checking.\n<tool_call>\n<function=f>\n<parameter=a>\n1\n</parameter>\n</function>\n</tool_call>\n"
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nRome\n</parameter>\n</function>\n</tool_call>",
        None,
    ),
]


def calls(message: dict[str, Any]) -> list[tuple[str, Any]]:
    return [(c["function"]["name"], c["function"]["arguments"]) for c in message.get("tool_calls", [])]


@pytest.mark.parametrize("name", QWEN)
@pytest.mark.parametrize(("unclosed", "closed", "expected"), UNCLOSED)
def test_qwen3_coder_values_without_close_tags_are_recovered(
    name: str, unclosed: str, closed: str, expected: tuple[str, Any] | None
) -> None:
    end = "<|im_end|>"
    message = same_everywhere(name, unclosed + end)
    assert dict(message) == dict(same_everywhere(name, closed + end))  # the closed form reads as before
    if expected is not None:
        assert calls(message) == [expected]
    else:
        assert calls(message) == [("f", {"a": 1}), ("get_weather", {"city": "Rome"})]
        assert message["content"] == "Checking."


@pytest.mark.parametrize("name", QWEN)
@pytest.mark.parametrize(
    "body",
    [
        "\nI will look it up.\n<parameter=city>\nParis\n</parameter>\n",  # words before the parameters
        "\n<parameter=city>\nParis\n</parameter>\nand more\n",  # words after them
        '\n{"city": "Paris"}\n',  # arguments in another syntax
        "\n<parameter city>\nParis\n</parameter>\n",  # a malformed tag
    ],
)
def test_qwen3_coder_text_outside_the_parameters_is_an_error_not_lost(name: str, body: str) -> None:
    text = f"Sure.\n<tool_call>\n<function=get_weather>{body}</function>\n</tool_call><|im_end|>"
    with pytest.raises(rt.ParseError) as info:
        whole(name, text)
    assert info.value.field == "tool_calls" and info.value.raw == body
    kept = same_everywhere(name, text, errors="keep")
    assert "tool_calls" not in kept and body in kept["content"]
    assert [(e.field, e.raw) for e in kept.errors] == [("tool_calls", body)]


_VALUE = st.text(st.sampled_from("ab1 \n\t<>/=x"), max_size=12).filter(
    lambda v: "<parameter=" not in v and "</parameter>" not in v and "</function>" not in v
)


@settings(max_examples=examples(100), deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["a", "b", "city", "x_y"]), _VALUE, st.booleans()), min_size=1, max_size=4
    ),
    st.sampled_from(QWEN),
    st.randoms(use_true_random=False),
)
def test_qwen3_coder_every_parameter_is_read_closed_or_not(
    params: list[tuple[str, str, bool]], name: str, rng: random.Random
) -> None:
    """Each parameter, closed or not, gives its value (framing newlines aside), whatever the chunking."""
    body = "".join(
        f"\n<parameter={key}>\n{value}" + ("\n</parameter>" if closed else "")
        for key, value, closed in params
    )
    text = f"<tool_call>\n<function=g>{body}\n</function>\n</tool_call><|im_end|>"
    template = rt.templates.get(name)
    message = rt.parse_response(text, template, prefix="", errors="keep")
    expected: dict[str, str] = {}
    for key, value, _ in params:
        expected[key] = value
    if message.errors:  # a value that ends in what reads as a malformed tag, e.g. "<"
        assert text.split("<|im_end|>")[0] in message["content"]
    else:
        assert calls(message) == [("g", expected)]
    parser = rt.ResponseParser(template, prefix="", errors="keep")
    at = 0
    while at < len(text):
        size = rng.randint(1, 8)
        parser.feed(text[at : at + size])
        at += size
    got, _ = parser.finalize()
    assert dict(got) == dict(message) and len(got.errors) == len(message.errors)


# --------------------------------------------------------------------------------------- Kimi-K2 ids

#: call id -> the function name it holds, or None when it holds none.
IDS: dict[str, str | None] = {
    "functions.get_weather:0": "get_weather",
    "get_weather:0": "get_weather",  # the prefix left out
    "functions.get_weather": "get_weather",  # the counter left out
    " functions.get_weather:12 ": "get_weather",
    "functions.ns.tool-x:3": "ns.tool-x",
    "functions.mcp__portal__search-documents:0": "mcp__portal__search-documents",
    "functions.:0": None,
    "invalid": None,
    "0": None,
    ":0": None,
    "": None,
    "functions.invalid.0": None,
    "invalid.0": None,
    "functions.9lives:0": None,
    "functions..x:0": None,
    "functions.get weather:0": None,
    "functions.get_weather:": None,
}


def kimi_call(call_id: str, arguments: str = '{"city": "Paris"}') -> str:
    return f"<|tool_call_begin|>{call_id}<|tool_call_argument_begin|>{arguments}<|tool_call_end|>"


def kimi_output(*call_ids: str) -> str:
    body = "".join(kimi_call(i) for i in call_ids)
    return f"Let me check.<|tool_calls_section_begin|>{body}<|tool_calls_section_end|><|im_end|>"


@pytest.mark.parametrize("name", KIMI)
def test_kimi_k2_only_a_name_reaches_the_message(name: str) -> None:
    for call_id, function in IDS.items():
        text = kimi_output(call_id)
        if function is not None:
            message = same_everywhere(name, text)
            assert message["tool_calls"] == [
                {
                    "type": "function",
                    "id": call_id.strip(),
                    "function": {"name": function, "arguments": {"city": "Paris"}},
                }
            ], call_id
            continue
        with pytest.raises(rt.ParseError) as info:
            whole(name, text)
        assert info.value.field == "tool_calls", call_id
        kept = same_everywhere(name, text, errors="keep")
        assert "tool_calls" not in kept, (call_id, kept)
        assert kimi_call(call_id) in kept["content"] and len(kept.errors) == 1, call_id


@pytest.mark.parametrize("name", KIMI)
def test_kimi_k2_a_malformed_id_beside_good_calls(name: str) -> None:
    text = kimi_output("functions.f:0", "functions.:1", "get_weather:2")
    kept = same_everywhere(name, text, errors="keep")
    assert [(c["id"], c["function"]["name"]) for c in kept["tool_calls"]] == [
        ("functions.f:0", "f"),
        ("get_weather:2", "get_weather"),
    ]
    assert kimi_call("functions.:1") in kept["content"]
    assert [e.field for e in kept.errors] == ["tool_calls"]


@pytest.mark.parametrize("name", KIMI)
def test_kimi_k2_no_made_up_name_is_streamed_to_a_client(name: str) -> None:
    template = rt.templates.get(name)
    for call_id, function in IDS.items():
        text = kimi_output("functions.f:0", call_id)
        for pieces in chunkings(text, seed=len(call_id))[:3]:
            parser = rt.ResponseParser(template, prefix="", errors="keep")
            adapter = ChatCompletionsAdapter(template, model="m")
            chunks = adapter.feed(parser.initial_events)
            for piece in pieces:
                chunks += adapter.step(parser, piece)
            _, final_events = parser.finalize()
            chunks += adapter.finish(final_events, finish_reason="stop")
            names = [
                call["function"]["name"]
                for chunk in chunks
                for choice in chunk["choices"]
                for call in choice["delta"].get("tool_calls", [])
                if "name" in call.get("function", {})
            ]
            assert names == ["f"] + ([function] if function is not None else []), (call_id, pieces)
            message = adapter.final()["choices"][0]["message"]
            assert [c["function"]["name"] for c in message["tool_calls"]] == names
