"""examples/openai_server.py, served by uvicorn on 127.0.0.1 and read by the official ``openai`` client.

The server runs in a thread for the module's tests, on a free port, and is stopped at the end; every wait
is bounded. The client must get what the recorded generation holds: reasoning, content, two tool calls
whose arguments arrive in several pieces (typed by the request's tools), the finish reason, and the usage
chunk when it asks for it.
"""

from __future__ import annotations

import importlib.util
import socket
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx2
import openai
import pytest

import response_templates as rt

uvicorn = pytest.importorskip("uvicorn")
pytest.importorskip("starlette")

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "openai_server.py"
MESSAGES = [{"role": "user", "content": "What will the weather be like in Paris and Tokyo?"}]


def load_example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("openai_server_example", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def example() -> ModuleType:
    return load_example()


@pytest.fixture(scope="module")
def client(example: ModuleType) -> Iterator[openai.OpenAI]:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))  # a free port, chosen by the system
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(example.app, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert server.started, "uvicorn did not start"
    http = httpx2.Client(timeout=20.0, trust_env=False)  # no proxy between us and the loopback server
    try:
        yield openai.OpenAI(
            api_key="test", base_url=f"http://127.0.0.1:{port}/v1", http_client=http, max_retries=0
        )
    finally:
        http.close()
        server.should_exit = True
        thread.join(timeout=20)
        sock.close()
        assert not thread.is_alive(), "uvicorn did not stop"


@pytest.fixture(scope="module")
def expected(example: ModuleType) -> dict[str, Any]:
    """The recorded generation, parsed whole with the request's tools."""
    recorded = example.RECORDED
    message = rt.parse_response(
        recorded.output, example.TEMPLATE, prefix=example.render_prompt(MESSAGES), tools=recorded.tools
    )
    assert isinstance(message, dict)
    return message


def extra(obj: Any, key: str) -> Any:
    """A key the SDK's models do not declare (``reasoning_content``)."""
    return (obj.model_extra or {}).get(key)


def test_streamed_with_usage(client: openai.OpenAI, example: ModuleType, expected: dict[str, Any]) -> None:
    chunks = list(
        client.chat.completions.create(
            model="Qwen/Qwen3-8B",
            messages=MESSAGES,
            tools=example.RECORDED.tools,
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    assert len(chunks) > 20  # the engine's pieces arrive one by one
    *body, last = chunks
    reasoning = "".join(extra(c.choices[0].delta, "reasoning_content") or "" for c in body)
    content = "".join(c.choices[0].delta.content or "" for c in body)
    assert reasoning == expected["reasoning_content"]
    assert content == expected["content"]
    fragments: dict[int, list[str]] = {}
    names = {}
    for chunk in body:
        for call in chunk.choices[0].delta.tool_calls or []:
            assert call.function is not None
            if call.function.name:
                names[call.index] = call.function.name
            fragments.setdefault(call.index, []).append(call.function.arguments or "")
    assert names == {0: "get_weather", 1: "get_weather"}
    assert all(len([f for f in pieces if f]) > 1 for pieces in fragments.values())  # streamed arguments
    arguments = ["".join(fragments[i]) for i in (0, 1)]
    assert arguments == ['{"city": "Paris", "days": 3}', '{"city": "Tokyo", "days": 3}']  # typed: "3" -> 3
    assert [c["function"]["arguments"] for c in expected["tool_calls"]] == [
        {"city": "Paris", "days": 3},
        {"city": "Tokyo", "days": 3},
    ]
    assert body[-1].choices[0].finish_reason == "tool_calls"
    assert last.choices == [] and last.usage is not None
    assert last.usage.completion_tokens == len(example.ENGINE.tokens)
    assert last.usage.total_tokens == last.usage.prompt_tokens + last.usage.completion_tokens


def test_streamed_without_usage_has_no_usage_chunk(client: openai.OpenAI) -> None:
    chunks = list(client.chat.completions.create(model="m", messages=MESSAGES, stream=True))
    assert all(c.choices and c.usage is None for c in chunks)
    assert chunks[-1].choices[0].finish_reason == "tool_calls"


def test_stream_helper_and_non_streamed_agree(client: openai.OpenAI, example: ModuleType) -> None:
    tools = example.RECORDED.tools
    with client.chat.completions.stream(
        model="m", messages=MESSAGES, tools=tools, stream_options={"include_usage": True}
    ) as stream:
        kinds = [event.type for event in stream]
        streamed = stream.get_final_completion()
    assert kinds.count("tool_calls.function.arguments.done") == 2
    whole = client.chat.completions.create(model="m", messages=MESSAGES, tools=tools)
    for completion in (streamed, whole):
        choice = completion.choices[0]
        assert choice.finish_reason == "tool_calls"
        assert extra(
            choice.message,
            "reasoning_content",
        ).startswith("The user wants a 3-day forecast")
        assert choice.message.content == "I'll check the forecast for both cities."
        assert [c.function.arguments for c in choice.message.tool_calls or []] == [
            '{"city": "Paris", "days": 3}',
            '{"city": "Tokyo", "days": 3}',
        ]
        assert completion.usage is not None and completion.usage.completion_tokens > 20


def test_the_token_limit_ends_with_length(client: openai.OpenAI) -> None:
    completion = client.chat.completions.create(model="m", messages=MESSAGES, max_tokens=10)
    assert completion.choices[0].finish_reason == "length"
    assert completion.usage is not None and completion.usage.completion_tokens == 10
    assert completion.choices[0].message.tool_calls is None


def test_a_bad_request_gets_an_openai_error(client: openai.OpenAI) -> None:
    with pytest.raises(openai.BadRequestError, match="invalid request"):
        client.chat.completions.create(model="m", messages=MESSAGES, tools=[{"type": "function"}])
