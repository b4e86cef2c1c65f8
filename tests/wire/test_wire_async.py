"""``arun_stream`` (async engines), ``StreamEnd`` (finish reason and usage known only at the end) and
``stream_options.include_usage``, checked against the sync ``run_stream`` and the official SDKs."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterable
from typing import Any

import anthropic
import httpx2
import openai
import pytest

import response_templates as rt
from response_templates.wire import StreamEnd, Usage, WireAdapter, arun_stream, run_stream
from toolstream_fixtures import FAMILIES, chunkings
from wire_checks import PROTOCOLS, USAGE, comparable, make_adapter

FAMILY_NAMES = ["qwen3", "kimi-k2", "mistral-pre-v11"]


async def engine(pieces: Iterable[str], end: StreamEnd | None) -> AsyncIterator[str | StreamEnd]:
    """A model server's generation: text pieces as they are decoded, then why it stopped."""
    for piece in pieces:
        await asyncio.sleep(0)
        yield piece
    if end is not None:
        yield end


def collect(parser: rt.ResponseParser, adapter: WireAdapter, pieces: Any, **kw: Any) -> list[Any]:
    async def main() -> list[Any]:
        return [chunk async for chunk in arun_stream(parser, adapter, pieces, **kw)]

    return asyncio.run(main())


def family(name: str) -> tuple:
    assert name in FAMILIES, sorted(FAMILIES)
    return FAMILIES[name]


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("name", FAMILY_NAMES)
@pytest.mark.parametrize("reason", ["stop", "length"])
def test_async_with_the_end_given_last_equals_sync_with_the_end_given_first(
    protocol: str, name: str, reason: str
) -> None:
    template, prompt, output, tools = family(name)
    for label, pieces in chunkings(output):
        sync_adapter = make_adapter(protocol, template, tools)
        sync = list(
            run_stream(
                rt.ResponseParser(template, prefix=prompt, tools=tools),
                sync_adapter,
                pieces,
                finish_reason=reason,
                usage=USAGE,
                sse=True,
            )
        )
        async_adapter = make_adapter(protocol, template, tools)
        parser = rt.ResponseParser(template, prefix=prompt, tools=tools)
        out = collect(parser, async_adapter, engine(pieces, StreamEnd(reason, USAGE)), sse=True)
        assert out == sync, label
        assert async_adapter.final() == sync_adapter.final()
        assert async_adapter.finish_reason == reason and async_adapter.usage == USAGE


def test_sync_run_stream_takes_the_end_last_too() -> None:
    template, prompt, output, tools = family("qwen3")
    adapter = make_adapter("chat", template, tools)
    parser = rt.ResponseParser(template, prefix=prompt, tools=tools)
    chunks = list(run_stream(parser, adapter, [*list(output), StreamEnd("length", USAGE)]))
    assert chunks[-2]["choices"][0]["finish_reason"] == "length"  # overrides the default "stop"
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["completion_tokens"] == 40


def test_a_plain_iterable_works_with_arun_stream() -> None:
    template, prompt, output, tools = family("qwen3")
    adapter = make_adapter("anthropic", template, tools)
    out = collect(rt.ResponseParser(template, prefix=prompt, tools=tools), adapter, [output, StreamEnd()])
    assert out[-1] == {"type": "message_stop"}
    assert adapter.final()["stop_reason"] == "tool_use"


@pytest.mark.parametrize("run_async", [False, True])
def test_text_after_stream_end_is_an_error(run_async: bool) -> None:
    template, prompt, output, tools = family("qwen3")
    adapter = make_adapter("chat", template, tools)
    parser = rt.ResponseParser(template, prefix=prompt, tools=tools)
    pieces = [output[:10], StreamEnd(), output[10:]]
    with pytest.raises(ValueError, match="StreamEnd must be the last item"):
        if run_async:
            collect(parser, adapter, engine(pieces, None))
        else:
            list(run_stream(parser, adapter, pieces))


def test_a_consumer_that_stops_early_closes_the_engine() -> None:
    """The client went away: the server closes the stream, and the engine hears of it (to abort)."""
    template, prompt, output, tools = family("qwen3")
    closed = []

    async def tracked() -> AsyncIterator[str | StreamEnd]:
        try:
            for char in output:
                yield char
            yield StreamEnd()
        finally:
            closed.append(True)

    async def main() -> int:
        adapter = make_adapter("chat", template, tools)
        stream = arun_stream(rt.ResponseParser(template, prefix=prompt, tools=tools), adapter, tracked())
        seen = 0
        async for _ in stream:
            seen += 1
            if seen == 3:
                break
        await stream.aclose()  # what a server does when the response is cancelled
        return seen

    assert asyncio.run(main()) == 3
    assert closed == [True]


# ---------------------------------------------------------------------------------------- include_usage


def chat_chunks(include_usage: bool | None, usage: Usage | None) -> tuple[list[dict], WireAdapter]:
    template, prompt, output, tools = family("qwen3")
    adapter = make_adapter("chat", template, tools, include_usage=include_usage)
    parser = rt.ResponseParser(template, prefix=prompt, tools=tools)
    return collect(parser, adapter, engine(list(output), StreamEnd("stop", usage))), adapter


def test_include_usage_ends_with_a_usage_chunk_and_nulls_before_it() -> None:
    chunks, adapter = chat_chunks(True, USAGE)
    *body, last = chunks
    assert last["choices"] == []
    assert last["usage"] == {
        "prompt_tokens": 20,
        "completion_tokens": 40,
        "total_tokens": 60,
        "completion_tokens_details": {"reasoning_tokens": 12},
    }
    assert all("usage" in c and c["usage"] is None for c in body)
    assert body[-1]["choices"][0]["finish_reason"] == "tool_calls"
    assert adapter.final()["usage"] == last["usage"]


def test_include_usage_false_sends_no_usage_chunk_but_the_final_object_has_it() -> None:
    chunks, adapter = chat_chunks(False, USAGE)
    assert all(c["choices"] and "usage" not in c for c in chunks)
    assert adapter.final()["usage"]["total_tokens"] == 60


def test_include_usage_by_default_follows_the_usage_given() -> None:
    with_usage, _ = chat_chunks(None, USAGE)
    without, _ = chat_chunks(None, None)
    assert with_usage[-1]["choices"] == [] and "usage" not in with_usage[0]
    assert without[-1]["choices"] and all("usage" not in c for c in without)


def test_include_usage_without_usage_is_an_error_that_says_what_to_pass() -> None:
    with pytest.raises(ValueError, match=r"include_usage=True.*usage="):
        chat_chunks(True, None)


# ------------------------------------------------------------------------------------- the official SDKs


def mock_client(body: bytes) -> httpx2.Client:
    def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=body)

    return httpx2.Client(transport=httpx2.MockTransport(handler))


def async_sse(protocol: str, end: StreamEnd, **kw: Any) -> tuple[bytes, WireAdapter]:
    template, prompt, output, tools = family("qwen3")
    adapter = make_adapter(protocol, template, tools, **kw)
    parser = rt.ResponseParser(template, prefix=prompt, tools=tools)
    body = "".join(collect(parser, adapter, engine(list(output), end), sse=True))
    return body.encode(), adapter


def test_openai_sdk_reads_the_include_usage_stream() -> None:
    body, adapter = async_sse("chat", StreamEnd("stop", USAGE), include_usage=True)
    client = openai.OpenAI(api_key="t", base_url="http://sdk.test/v1", http_client=mock_client(body))
    chunks = list(
        client.chat.completions.create(
            model="m",
            messages=[{"role": "user", "content": "hi"}],
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    assert chunks[-1].choices == [] and chunks[-1].usage is not None
    assert chunks[-1].usage.total_tokens == 60
    assert all(c.usage is None for c in chunks[:-1])
    with openai.OpenAI(
        api_key="t", base_url="http://sdk.test/v1", http_client=mock_client(body)
    ).chat.completions.stream(
        model="m", messages=[{"role": "user", "content": "hi"}], stream_options={"include_usage": True}
    ) as stream:
        for _ in stream:
            pass
        completion = stream.get_final_completion()
    assert comparable("chat", completion.to_dict()) == comparable("chat", adapter.final())
    assert completion.usage is not None and completion.usage.completion_tokens == 40


def test_openai_responses_sdk_reads_the_usage_given_at_the_end() -> None:
    body, adapter = async_sse("responses", StreamEnd("stop", USAGE))
    client = openai.OpenAI(api_key="t", base_url="http://sdk.test/v1", http_client=mock_client(body))
    with client.responses.stream(model="m", input="hi") as stream:
        for _ in stream:
            pass
        response = stream.get_final_response()
    assert comparable("responses", response.to_dict()) == comparable("responses", adapter.final())
    assert response.usage is not None and response.usage.output_tokens == 40


def test_anthropic_sdk_reads_the_finish_reason_and_usage_given_at_the_end() -> None:
    body, adapter = async_sse("anthropic", StreamEnd("length", USAGE))
    client = anthropic.Anthropic(api_key="t", base_url="http://sdk.test", http_client=mock_client(body))
    with client.messages.stream(
        model="m", max_tokens=100, messages=[{"role": "user", "content": "hi"}]
    ) as stream:
        for _ in stream:
            pass
        message = stream.get_final_message()
    assert comparable("anthropic", message.to_dict()) == comparable("anthropic", adapter.final())
    assert message.stop_reason == "max_tokens" and message.usage.output_tokens == 40
    assert json.loads(json.dumps(message.to_dict()))["usage"]["input_tokens"] == 20
