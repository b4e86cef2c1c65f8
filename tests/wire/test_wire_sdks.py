"""The wire adapters, checked with the official clients.

Every adapter's stream is encoded as server-sent events and replayed to the official ``openai`` and
``anthropic`` SDKs' streaming helpers (``client.chat.completions.stream``, ``client.responses.stream``,
``client.messages.stream``) through an in-memory HTTP transport. For outputs of several model families
(reasoning, text, parallel calls, names in the header or in the JSON, native ids, a JSON dialect, XML
arguments, arrays of calls, no calls) and for every chunking (whole, one character at a time, random),
the object the SDK reassembles equals the adapter's non-streamed ``final()`` object, which is the same for
every chunking and agrees with ``parse_response``. Truncated and failing outputs, the protocol rules each
SDK relies on (and the failure modes documented in the research notes), and the real SDK on a loopback
HTTP server (``tests/wire/test_wire_loopback.py``) are covered too.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import anthropic
import httpx2
import jiter
import openai
import pytest

import response_templates as rt
from response_templates.toolstream import call_parts
from response_templates.wire import (
    AnthropicMessagesAdapter,
    ChatCompletionsAdapter,
    ResponsesAdapter,
    Usage,
    WireAdapter,
    run_stream,
)
from toolstream_fixtures import FAMILIES, HERMES, chunkings
from wire_checks import PROTOCOLS, USAGE, comparable, make_adapter

# ------------------------------------------------------------------------------------------------------
# running an adapter, and the SDKs


def run(
    protocol: str,
    family: tuple,
    chunks: list[str],
    *,
    finish_reason: str = "stop",
    usage: Usage | None = USAGE,
    **kw: Any,
) -> tuple[list[dict], WireAdapter]:
    template, prompt, _, tools = family
    parser = rt.ResponseParser(template, prefix=prompt, tools=tools)
    adapter = make_adapter(protocol, template, tools, **kw)
    chunks_out = list(run_stream(parser, adapter, chunks, finish_reason=finish_reason, usage=usage))
    return chunks_out, adapter


def sse(adapter: WireAdapter, chunks: list[dict]) -> bytes:
    return (adapter.encode(chunks) + adapter.sse_terminator).encode()


def mock_client(body: bytes) -> httpx2.Client:
    def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=body)

    return httpx2.Client(transport=httpx2.MockTransport(handler))


def sdk_chat(body: bytes) -> dict:
    client = openai.OpenAI(
        api_key="test", base_url="http://sdk.test/v1", http_client=mock_client(body), max_retries=0
    )
    with client.chat.completions.stream(model="m", messages=[{"role": "user", "content": "hi"}]) as stream:
        for _ in stream:
            pass
        try:
            completion = stream.get_final_completion()
        except openai.LengthFinishReasonError as exc:  # always raised for finish_reason "length"
            completion = exc.completion
    return completion.to_dict()


def sdk_responses(body: bytes) -> dict:
    client = openai.OpenAI(
        api_key="test", base_url="http://sdk.test/v1", http_client=mock_client(body), max_retries=0
    )
    terminal = None
    with client.responses.stream(model="m", input="hi") as stream:
        for event in stream:
            if event.type in ("response.completed", "response.incomplete"):
                terminal = event.response
        if terminal is not None and terminal.status == "completed":
            terminal = stream.get_final_response()
    assert terminal is not None
    return terminal.to_dict()


def sdk_anthropic(body: bytes) -> dict:
    client = anthropic.Anthropic(
        api_key="test", base_url="http://sdk.test", http_client=mock_client(body), max_retries=0
    )
    with client.messages.stream(
        model="m", max_tokens=100, messages=[{"role": "user", "content": "hi"}]
    ) as stream:
        for _ in stream:
            pass
        return stream.get_final_message().to_dict()


SDKS = {"chat": sdk_chat, "responses": sdk_responses, "anthropic": sdk_anthropic}


def check_against_sdk(protocol: str, chunks: list[dict], adapter: WireAdapter) -> dict:
    final = adapter.final()
    reassembled = SDKS[protocol](sse(adapter, chunks))
    assert comparable(protocol, reassembled) == comparable(protocol, final)
    return final


# ------------------------------------------------------------------------------------------------------
# protocol rules (what the SDKs rely on; see the research notes on protocols)


def check_chat_rules(chunks: list[dict]) -> None:
    deltas = [c["choices"][0]["delta"] for c in chunks if c["choices"]]
    assert deltas[0] == {"role": "assistant", "content": ""}
    assert sum("role" in d for d in deltas) == 1  # a second role would become "assistantassistant"
    seen: list[int] = []
    for delta in deltas:
        for entry in delta.get("tool_calls", []):
            assert "function" in entry  # the SDK asserts it
            index = entry["index"]
            if index not in seen:
                assert index == len(seen)  # contiguous from 0, one call at a time
                assert entry["id"] and entry["type"] == "function" and entry["function"]["name"]
                seen.append(index)
            else:
                assert index == seen[-1]  # no interleaving
                # "status": "incomplete" (ours, additive) on the last fragment of a call that failed
                assert set(entry) - {"status"} == {"index", "function"}
                assert set(entry["function"]) == {"arguments"}
                assert entry.get("status", "incomplete") == "incomplete"
    assert [c["choices"][0]["finish_reason"] for c in chunks if c["choices"]][:-1] == [None] * (
        len(deltas) - 1
    )
    assert chunks[-1]["choices"] == [] and "usage" in chunks[-1]  # usage last
    assert len({(c["id"], c["created"], c["model"], c["object"]) for c in chunks}) == 1


def check_responses_rules(events: list[dict]) -> None:
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    assert [e["type"] for e in events[:2]] == ["response.created", "response.in_progress"]
    assert events[-1]["type"] in ("response.completed", "response.incomplete")
    added = [e["output_index"] for e in events if e["type"] == "response.output_item.added"]
    done = [e["output_index"] for e in events if e["type"] == "response.output_item.done"]
    assert added == done == list(range(len(added)))
    open_item = None
    for event in events[2:-1]:
        if event["type"] == "response.output_item.added":
            assert open_item is None
            open_item = event["output_index"]
        elif event["type"] == "response.output_item.done":
            assert event["output_index"] == open_item
            open_item = None
        else:
            assert event["output_index"] == open_item  # items never overlap
    assert events[-1]["response"]["output"] == [
        e["item"] for e in events if e["type"] == "response.output_item.done"
    ]


def check_anthropic_rules(events: list[dict]) -> None:
    assert events[0]["type"] == "message_start"
    assert [e["type"] for e in events[-2:]] == ["message_delta", "message_stop"]
    block, count, partial = None, 0, ""
    for event in events[1:-2]:
        if event["type"] == "content_block_start":
            assert block is None and event["index"] == count
            block, partial = count, ""
            count += 1
        elif event["type"] == "content_block_delta":
            assert event["index"] == block
            if event["delta"]["type"] == "input_json_delta":
                partial += event["delta"]["partial_json"]
                jiter.from_json(partial.encode(), partial_mode=True)  # what the SDK does on every delta
        else:
            assert event["type"] == "content_block_stop" and event["index"] == block
            block = None
    assert block is None


RULES = {"chat": check_chat_rules, "responses": check_responses_rules, "anthropic": check_anthropic_rules}


# ------------------------------------------------------------------------------------------------------
# what the final objects say, compared with parse_response


def summary(protocol: str, final: dict) -> dict:
    """reasoning, content and calls (name, id, parsed arguments) of a final object."""
    if protocol == "chat":
        message = final["choices"][0]["message"]
        calls = [
            (c["function"]["name"], json.loads(c["function"]["arguments"]))
            for c in message.get("tool_calls", [])
        ]
        return {"reasoning": message.get("reasoning_content"), "content": message["content"], "calls": calls}
    if protocol == "responses":
        out = final["output"]
        return {
            "reasoning": [i["content"][0]["text"] for i in out if i["type"] == "reasoning"],
            "content": [i["content"][0]["text"] for i in out if i["type"] == "message"],
            "calls": [(i["name"], json.loads(i["arguments"])) for i in out if i["type"] == "function_call"],
        }
    blocks = final["content"]
    return {
        "reasoning": [b["thinking"] for b in blocks if b["type"] == "thinking"],
        "content": [b["text"] for b in blocks if b["type"] == "text"],
        "calls": [(b["name"], b["input"]) for b in blocks if b["type"] == "tool_use"],
    }


def expected_summary(protocol: str, message: dict) -> dict:
    calls = [call_parts(c) for c in message.get("tool_calls", [])]
    pairs = [(name, arguments) for name, _, arguments in calls]  # type: ignore[misc]
    if protocol == "chat":
        content = message.get("content") or (None if pairs else "")
        return {"reasoning": message.get("reasoning_content"), "content": content, "calls": pairs}
    return {"calls": pairs}


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_sdks_reassemble_the_final_object_for_every_chunking(family: str, protocol: str) -> None:
    template, prompt, output, tools = FAMILIES[family]
    message = rt.parse_response(output, template, prefix=prompt, tools=tools)
    reference = None
    for name, chunks in chunkings(output)[:3]:  # whole, one character at a time, random
        stream, adapter = run(protocol, FAMILIES[family], chunks)
        RULES[protocol](stream)
        final = check_against_sdk(protocol, stream, adapter)
        if reference is None:
            reference = final
            got, want = summary(protocol, final), expected_summary(protocol, message)
            assert {k: got[k] for k in want} == want
        assert final == reference, name
        assert not adapter.errors


def test_block_protocols_split_text_around_calls() -> None:
    _, _, output, _ = family = FAMILIES["text-around-calls"]
    for protocol in ("responses", "anthropic"):
        _stream, adapter = run(protocol, family, list(output))
        assert summary(protocol, adapter.final())["content"] == ["Before.", "After."]
    _, adapter = run("chat", family, list(output))
    message = rt.parse_response(output, family[0], prefix=family[1])
    assert (
        adapter.final()["choices"][0]["message"]["content"] == message["content"] == "Before.\n\n\n\n After."
    )


# ------------------------------------------------------------------------------------------------------
# golden objects: the research fixtures the SDKs were verified against (ids aside)

GOLDEN_OUTPUT = (
    "<think>\nThe user wants weather in Paris and Tokyo.\n</think>\n\nLet me check both cities.\n<tool_call>\n"
    '{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>\n<tool_call>\n'
    '{"name": "get_weather", "arguments": {"city": "Tokyo"}}\n</tool_call><|im_end|>'
)
GOLDEN_CALLS = [("get_weather", '{"city": "Paris"}'), ("get_weather", '{"city": "Tokyo"}')]
GOLDEN_CHAT = {
    "id": "chatcmpl-123",
    "object": "chat.completion",
    "created": 1767225600,
    "model": "Qwen/Qwen3-8B",
    "choices": [
        {
            "index": 0,
            "message": {
                "role": "assistant",
                "content": "Let me check both cities.",
                "reasoning_content": "The user wants weather in Paris and Tokyo.",
                "tool_calls": [
                    {"id": "call_abc", "type": "function", "function": {"name": n, "arguments": a}}
                    for n, a in GOLDEN_CALLS
                ],
            },
            "logprobs": None,
            "finish_reason": "tool_calls",
        }
    ],
    "usage": {
        "prompt_tokens": 20,
        "completion_tokens": 40,
        "total_tokens": 60,
        "completion_tokens_details": {"reasoning_tokens": 12},
    },
}
GOLDEN_RESPONSES = {
    "id": "resp_0a1b2c",
    "object": "response",
    "created_at": 1767225600,
    "status": "completed",
    "model": "Qwen/Qwen3-8B",
    "output": [
        {
            "id": "rs_01",
            "type": "reasoning",
            "summary": [],
            "content": [{"type": "reasoning_text", "text": "The user wants weather in Paris and Tokyo."}],
            "status": "completed",
        },
        {
            "id": "msg_01",
            "type": "message",
            "role": "assistant",
            "status": "completed",
            "content": [
                {
                    "type": "output_text",
                    "text": "Let me check both cities.",
                    "annotations": [],
                    "logprobs": [],
                }
            ],
        },
        *(
            {
                "id": "fc_01",
                "type": "function_call",
                "call_id": "call_abc",
                "name": n,
                "arguments": a,
                "status": "completed",
            }
            for n, a in GOLDEN_CALLS
        ),
    ],
    "parallel_tool_calls": True,
    "tool_choice": "auto",
    "tools": [],
    "error": None,
    "incomplete_details": None,
    "usage": {
        "input_tokens": 20,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 40,
        "output_tokens_details": {"reasoning_tokens": 12},
        "total_tokens": 60,
    },
}
GOLDEN_ANTHROPIC = {
    "id": "msg_01",
    "type": "message",
    "role": "assistant",
    "model": "Qwen/Qwen3-8B",
    "content": [
        {"type": "thinking", "thinking": "The user wants weather in Paris and Tokyo.", "signature": ""},
        {"type": "text", "text": "Let me check both cities."},
        *({"type": "tool_use", "id": "toolu_01", "name": n, "input": json.loads(a)} for n, a in GOLDEN_CALLS),
    ],
    "stop_reason": "tool_use",
    "stop_sequence": None,
    "usage": {"input_tokens": 20, "output_tokens": 40},
}
GOLDEN = {"chat": GOLDEN_CHAT, "responses": GOLDEN_RESPONSES, "anthropic": GOLDEN_ANTHROPIC}


def without_ids(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: without_ids(v) for k, v in value.items() if k not in ("id", "call_id")}
    if isinstance(value, list):
        return [without_ids(v) for v in value]
    return value


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_golden_objects_of_the_research_fixtures(protocol: str) -> None:
    family = (HERMES, "<|im_start|>assistant\n", GOLDEN_OUTPUT, None)
    for _, chunks in chunkings(GOLDEN_OUTPUT):
        stream, adapter = run(protocol, family, chunks)
        final = check_against_sdk(protocol, stream, adapter)
        assert without_ids(final) == without_ids(GOLDEN[protocol])


# ------------------------------------------------------------------------------------------------------
# truncated and failing output

CUT = GOLDEN_OUTPUT[: GOLDEN_OUTPUT.rindex("Tokyo")]  # inside the second call's arguments


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_truncated_output_never_claims_a_complete_call(protocol: str) -> None:
    family = (HERMES, "<|im_start|>assistant\n", CUT, None)
    reference = None
    for name, chunks in chunkings(CUT)[:3]:
        stream, adapter = run(protocol, family, chunks, finish_reason="length")
        RULES[protocol](stream)
        final = check_against_sdk(protocol, stream, adapter)
        reference = reference or final
        assert final == reference, name
    assert adapter.tool_calls.completed == 1 and adapter.errors
    if protocol == "chat":
        choice = reference["choices"][0]
        assert choice["finish_reason"] == "length"
        assert [(c["function"]["arguments"], c.get("status")) for c in choice["message"]["tool_calls"]] == [
            ('{"city": "Paris"}', None),
            ('{"city": "', "incomplete"),  # the cut call's arguments as written: no value completed
        ]
    elif protocol == "responses":
        assert reference["status"] == "incomplete"
        assert reference["incomplete_details"] == {"reason": "max_output_tokens"}
        assert [i["status"] for i in reference["output"]] == [
            "completed",
            "completed",
            "completed",
            "incomplete",
        ]
        assert reference["output"][-1]["arguments"] == '{"city": "'
    else:
        assert reference["stop_reason"] == "max_tokens"
        assert reference["content"][-1]["input"] == {}  # the SDK's partial parse of '{"city": "'


def test_truncated_after_complete_json_is_still_not_complete() -> None:
    cut = GOLDEN_OUTPUT[: GOLDEN_OUTPUT.index("</tool_call><|im_end|>")]
    family = (HERMES, "<|im_start|>assistant\n", cut, None)
    _stream, adapter = run("chat", family, list(cut), finish_reason="length")
    calls = adapter.final()["choices"][0]["message"]["tool_calls"]
    assert calls[1]["function"]["arguments"] == '{"city": "Tokyo"}'  # sent while it streamed ...
    assert adapter.tool_calls.completed == 1  # ... but not reported complete
    assert adapter.final()["choices"][0]["finish_reason"] == "length"
    _, adapter = run("chat", family, list(cut), finish_reason="stop")  # the engine stopped normally
    assert (
        adapter.tool_calls.completed == 2 and adapter.final()["choices"][0]["finish_reason"] == "tool_calls"
    )


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_call_that_fails_to_parse_does_not_break_the_stream(protocol: str) -> None:
    output = (
        'Checking.<tool_call>{"name": "get_weather", "arguments": {"city": "Paris", oops}}</tool_call>'
        'Retrying.<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call><|im_end|>'
    )
    family = (HERMES, "", output, None)
    reference = None
    for _, chunks in chunkings(output)[:3]:
        stream, adapter = run(protocol, family, chunks)
        RULES[protocol](stream)
        final = check_against_sdk(protocol, stream, adapter)
        reference = reference or final
        assert final == reference
        assert len(adapter.errors) == 1 and "did not parse" in adapter.errors[0]
    if protocol == "chat":
        calls = reference["choices"][0]["message"]["tool_calls"]
        assert [c["function"]["arguments"] for c in calls] == ['{"city": "Paris"}', '{"city": "Paris"}']
        assert reference["choices"][0]["finish_reason"] == "tool_calls"
    elif protocol == "responses":
        calls = [i for i in reference["output"] if i["type"] == "function_call"]
        assert [(c["arguments"], c["status"]) for c in calls] == [
            ('{"city": "Paris"}', "incomplete"),
            ('{"city": "Paris"}', "completed"),
        ]
    else:  # the SDK's partial parse of what was sent, then the complete call
        calls = [(b["name"], b["input"]) for b in reference["content"] if b["type"] == "tool_use"]
        assert calls == [("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Paris"})]


# ------------------------------------------------------------------------------------------------------
# options


def test_at_close_mode_matches_the_parsed_message() -> None:
    family = FAMILIES["qwen3"]
    for protocol in PROTOCOLS:
        stream, adapter = run(protocol, family, list(family[2]), tool_streaming="at_close")
        check_against_sdk(protocol, stream, adapter)
        eager_stream, eager = run(protocol, family, list(family[2]))
        assert adapter.final() == eager.final()
        assert len(stream) < len(eager_stream)  # whole calls: fewer chunks


def test_reasoning_keys() -> None:
    family = FAMILIES["qwen3"]
    for key, keys in (("reasoning", ["reasoning"]), ("both", ["reasoning_content", "reasoning"])):
        stream, adapter = run("chat", family, [family[2]], reasoning_key=key)
        message = adapter.final()["choices"][0]["message"]
        assert [k for k in message if k.startswith("reasoning")] == keys
        assert all(message[k] == "The user wants weather in Paris and Tokyo." for k in keys)
        reassembled = sdk_chat(sse(adapter, stream))["choices"][0]["message"]
        assert all(reassembled[k] == message[k] for k in keys)  # the SDK keeps unknown delta keys


def test_usage_and_finish_chunks() -> None:
    family = FAMILIES["no-tool-calls"]
    stream, adapter = run("chat", family, [family[2]], usage=None)
    assert stream[-1]["choices"][0]["finish_reason"] == "stop" and "usage" not in adapter.final()
    message = {"role": "assistant", "content": "Hello there!", "reasoning_content": "Easy."}
    assert adapter.final()["choices"][0]["message"] == message
    stream, adapter = run("chat", family, [family[2]], usage=Usage(5, 7, cached_tokens=2))
    assert stream[-1]["usage"] == {
        "prompt_tokens": 5,
        "completion_tokens": 7,
        "total_tokens": 12,
        "prompt_tokens_details": {"cached_tokens": 2},
    }
    stream, adapter = run("anthropic", family, [family[2]])
    assert stream[-2]["usage"] == {"output_tokens": 40, "input_tokens": 20}
    assert adapter.final()["stop_reason"] == "end_turn"


def test_native_ids_are_kept() -> None:
    family = FAMILIES["kimi-k2"]
    ids = ["functions.get_weather:0", "functions.get_weather:1"]
    for protocol, get in (
        ("chat", lambda f: [c["id"] for c in f["choices"][0]["message"]["tool_calls"]]),
        ("responses", lambda f: [i["call_id"] for i in f["output"] if i["type"] == "function_call"]),
        ("anthropic", lambda f: [b["id"] for b in f["content"] if b["type"] == "tool_use"]),
    ):
        _, adapter = run(protocol, family, list(family[2]))
        assert get(adapter.final()) == ids


def test_generated_ids_are_reproducible_with_a_seed() -> None:
    family = FAMILIES["qwen3"]
    whole, one_char = run("chat", family, [family[2]])[1], run("chat", family, list(family[2]))[1]
    assert whole.final() == one_char.final()  # the same ids whatever the chunking
    a = ChatCompletionsAdapter(HERMES).id
    b = ChatCompletionsAdapter(HERMES).id
    assert a != b and a.startswith("chatcmpl-") and len(a) == len("chatcmpl-") + 24


def test_sse_encoding() -> None:
    family = FAMILIES["no-tool-calls"]
    stream, adapter = run("chat", family, [family[2]])
    text = adapter.encode(stream[:1]) + adapter.sse_terminator
    assert text.startswith('data: {"id":"chatcmpl-') and text.endswith("}\n\ndata: [DONE]\n\n")
    stream, adapter = run("anthropic", family, [family[2]])
    assert adapter.encode(stream[:1]).startswith('event: message_start\ndata: {"type":"message_start"')
    assert adapter.sse_terminator == ""
    sse_text = "".join(
        run_stream(rt.ResponseParser(HERMES, prefix=""), ResponsesAdapter(HERMES), ["Hi"], sse=True)
    )
    assert sse_text.startswith("event: response.created\n") and sse_text.endswith("\n\n")


def test_fields_map_other_template_fields() -> None:
    template = copy.deepcopy(HERMES)
    template["fields"]["answer"] = template["fields"].pop("content")
    template["fields"]["calls"] = template["fields"].pop("tool_calls")
    output = 'Hi!<tool_call>{"name": "f", "arguments": {}}</tool_call>'
    adapter = ChatCompletionsAdapter(template, fields={"content": "answer", "tool_calls": "calls"}, created=0)
    list(run_stream(rt.ResponseParser(template, prefix=""), adapter, [output]))
    message = adapter.final()["choices"][0]["message"]
    assert message["content"] == "Hi!" and message["tool_calls"][0]["function"]["name"] == "f"


def test_misuse_is_reported() -> None:
    with pytest.raises(ValueError, match="reasoning_key"):
        ChatCompletionsAdapter(HERMES, reasoning_key="thinking")
    with pytest.raises(ValueError, match="tool_streaming"):
        ChatCompletionsAdapter(HERMES, tool_streaming="lazy")
    with pytest.raises(ValueError, match="unknown role"):
        ChatCompletionsAdapter(HERMES, fields={"answer": "content"})
    bad = copy.deepcopy(HERMES)
    bad["fields"]["content"]["content"] = "int"
    with pytest.raises(rt.TemplateError, match="as text"):
        AnthropicMessagesAdapter(bad)
    adapter = ResponsesAdapter(HERMES)
    with pytest.raises(rt.ParserStateError):
        adapter.final()
    with pytest.raises(ValueError, match="finish_reason"):
        adapter.finish([], finish_reason="content_filter")
    adapter.finish([])
    with pytest.raises(rt.ParserStateError):
        adapter.feed([])
    with pytest.raises(rt.ParserStateError):
        adapter.finish([])


def test_anthropic_input_is_always_an_object() -> None:
    output = '<tool_call>{"name": "shell", "arguments": "ls -la"}</tool_call><tool_call>{"name": "f", "arguments": "{\\"a\\": 1}"}</tool_call>'
    family = (HERMES, "", output, None)
    for _, chunks in chunkings(output)[:2]:
        stream, adapter = run("anthropic", family, chunks)
        check_anthropic_rules(stream)
        final = check_against_sdk("anthropic", stream, adapter)
        assert [b["input"] for b in final["content"]] == [{"value": "ls -la"}, {"a": 1}]
    _, adapter = run("chat", family, [output])
    calls = adapter.final()["choices"][0]["message"]["tool_calls"]
    assert [c["function"]["arguments"] for c in calls] == [
        '"ls -la"',
        '{"a": 1}',
    ]  # JSON text: non-JSON as a JSON string
