"""The wire adapters behind a real HTTP server on 127.0.0.1, read by the official SDKs' stream helpers.

The server (a thread, bound to the loopback interface, stopped at the end of the module) answers each
request by running a parser and an adapter over a model output, one character at a time, and writes every
server-sent event to the socket as soon as it is produced, so the SDKs read a genuinely incremental
stream. What they reassemble must equal the adapter's non-streamed object.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import anthropic
import httpx2
import openai
import pytest

import response_templates as rt
from response_templates.wire import run_stream
from toolstream_fixtures import FAMILIES
from wire_checks import USAGE, comparable, make_adapter

FAMILY = FAMILIES["qwen3"]  # reasoning, text, two parallel calls, typed arguments
ROUTES = {"/v1/chat/completions": "chat", "/v1/responses": "responses", "/v1/messages": "anthropic"}
FINALS: dict[str, dict] = {}  # protocol -> the adapter's final object of the last request


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"  # the body ends when the connection closes

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        protocol = ROUTES.get(self.path)
        if protocol is None:
            self.send_error(404)
            return
        template, prompt, output, tools = FAMILY
        parser = rt.ResponseParser(template, prefix=prompt, tools=tools)
        adapter = make_adapter(protocol, template, tools)
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.end_headers()
        for piece in run_stream(parser, adapter, list(output), usage=USAGE, sse=True):
            self.wfile.write(piece.encode())
            self.wfile.flush()
        FINALS[protocol] = adapter.final()

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def base_url() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def http_client() -> httpx2.Client:
    return httpx2.Client(timeout=10.0, trust_env=False)  # no proxy between us and the loopback server


def test_openai_chat_completions_stream(base_url: str) -> None:
    client = openai.OpenAI(
        api_key="test", base_url=f"{base_url}/v1", http_client=http_client(), max_retries=0
    )
    kinds = []
    with client.chat.completions.stream(model="m", messages=[{"role": "user", "content": "hi"}]) as stream:
        for event in stream:
            kinds.append(event.type)
        completion = stream.get_final_completion()
    assert kinds.count("tool_calls.function.arguments.done") == 2
    assert kinds.index("tool_calls.function.arguments.delta") < kinds.index(
        "tool_calls.function.arguments.done"
    )
    assert comparable("chat", completion.to_dict()) == comparable("chat", FINALS["chat"])
    calls = completion.choices[0].message.tool_calls
    assert [c.function.arguments for c in calls] == [
        '{"city": "Paris", "days": 3, "hourly": true, "units": null}',
        '{"city": "Tokyo", "note": "café 😀 \\"q\\" /"}',
    ]


def test_openai_responses_stream(base_url: str) -> None:
    client = openai.OpenAI(
        api_key="test", base_url=f"{base_url}/v1", http_client=http_client(), max_retries=0
    )
    with client.responses.stream(model="m", input="hi") as stream:
        deltas = sum(1 for event in stream if event.type == "response.function_call_arguments.delta")
        response = stream.get_final_response()
    assert deltas > 10  # the arguments arrived as they were written
    assert comparable("responses", response.to_dict()) == comparable("responses", FINALS["responses"])
    assert response.output_text == "Let me check both cities."


def test_anthropic_messages_stream(base_url: str) -> None:
    client = anthropic.Anthropic(api_key="test", base_url=base_url, http_client=http_client(), max_retries=0)
    with client.messages.stream(
        model="m", max_tokens=100, messages=[{"role": "user", "content": "hi"}]
    ) as stream:
        snapshots = [event.snapshot for event in stream if event.type == "input_json"]
        message = stream.get_final_message()
    assert snapshots[-1] == {"city": "Tokyo", "note": 'café 😀 "q" /'}  # partial inputs parsed along the way
    assert comparable("anthropic", message.to_dict()) == comparable("anthropic", FINALS["anthropic"])
    assert message.stop_reason == "tool_use"
