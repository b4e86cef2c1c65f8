"""``response-templates serve`` end to end: a real upstream process, our server started by the CLI, the SDKs.

The upstream (tests/serve/replay_upstream.py, a process on a free loopback port) replays a recorded Qwen3
generation over OpenAI's completions protocol and logs every request and how it ended. Two servers run
``response-templates serve`` as processes in front of it: one as for vLLM (``--upstream-kind vllm``: forced
tool choice goes upstream as a structural tag), one as for a plain OpenAI upstream with one slot and no
queue. The official ``openai`` and ``anthropic`` clients talk to them over 127.0.0.1; what they get must be
what ``rt.parse_response`` reads in the recorded output. Every process is stopped at the end; every wait is
bounded.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import openai
import pytest

import response_templates as rt
from response_templates import grammar
from response_templates.demo import load_demo_data

pytest.importorskip("uvicorn")
pytest.importorskip("starlette")

HERE = Path(__file__).resolve().parent
CHAT_TEMPLATE = HERE.parent / "data" / "Qwen-Qwen3-0.6B.jinja"
MODEL = "Qwen/Qwen3-0.6B"
DEMO = load_demo_data()
TOOLS = DEMO.tools
MESSAGES = [
    {"role": "user", "content": "Hi! Can you help me plan a trip?"},
    {"role": "assistant", "content": "Of course! Where are you going, and when?"},
    {
        "role": "user",
        "content": "Paris first, then Tokyo. What will the weather be like in both over the next 3 days?",
    },
]
RESPONSES_TOOLS = [{"type": "function", **tool["function"]} for tool in TOOLS]
ANTHROPIC_TOOLS = [
    {"name": f["name"], "description": f["description"], "input_schema": f["parameters"]}
    for f in (tool["function"] for tool in TOOLS)
]
WAIT = 30.0  # the longest any wait in this file may take, in seconds


def _stop(process: subprocess.Popen[Any]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Upstream:
    def __init__(self, url: str, log: Path) -> None:
        self.url = url
        self.log = log

    def entries(self) -> list[dict[str, Any]]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text(encoding="utf-8").splitlines() if line]

    def request(self, marker: str) -> dict[str, Any]:
        """The last request whose prompt holds ``marker``."""
        found = [e for e in self.entries() if e["event"] == "request" and marker in e["payload"]["prompt"]]
        assert found, f"no upstream request with {marker!r}"
        return found[-1]

    def ending(self, request_id: int) -> str:
        """How the request ended upstream ("done" or "closed_early"), waiting for it (bounded)."""
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            ends = [e["event"] for e in self.entries() if e["id"] == request_id and e["event"] != "request"]
            if ends:
                return ends[0]
            time.sleep(0.05)
        raise AssertionError(f"upstream request {request_id} did not end within {WAIT} s")


@pytest.fixture(scope="module")
def upstream(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Upstream]:
    log = tmp_path_factory.mktemp("upstream") / "requests.jsonl"
    process = subprocess.Popen(
        [sys.executable, str(HERE / "replay_upstream.py"), "--log", str(log)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()  # the script prints its port first
        assert line.startswith("PORT "), f"the replay upstream did not start: {line!r}"
        yield Upstream(f"http://127.0.0.1:{int(line.split()[1])}/v1", log)
    finally:
        _stop(process)
        if process.stdout is not None:
            process.stdout.close()


def _serve(upstream: Upstream, *args: str, program: list[str] | None = None) -> Iterator[str]:
    port = _free_port()
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    command = [*(program or [sys.executable, "-m", "response_templates", "serve"])]
    command += ["--upstream", upstream.url, "--model", MODEL, *args, "--port", str(port)]
    if program is None:
        command += ["--log-level", "warning"]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + WAIT
        with httpx2.Client(timeout=2.0, trust_env=False) as client:
            while True:
                assert process.poll() is None, (
                    f"serve exited: {process.stderr.read().decode() if process.stderr else ''}"
                )
                try:
                    if client.get(f"{base}/v1/models").status_code == 200:
                        break
                except httpx2.HTTPError:
                    pass
                assert time.monotonic() < deadline, "serve did not start"
                time.sleep(0.1)
        yield base
    finally:
        _stop(process)
        if process.stderr is not None:
            process.stderr.close()


@pytest.fixture(scope="module")
def vllm_server(upstream: Upstream, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """As in front of vLLM: the model folder gives the chat template, the library the response template."""
    folder = tmp_path_factory.mktemp("Qwen3-0.6B")
    (folder / "chat_template.jinja").write_text(CHAT_TEMPLATE.read_text(encoding="utf-8"), encoding="utf-8")
    (folder / "tokenizer_config.json").write_text(json.dumps({"eos_token": "<|im_end|>", "bos_token": None}))
    yield from _serve(upstream, "--model-dir", str(folder), "--upstream-kind", "vllm")


@pytest.fixture(scope="module")
def plain_server(upstream: Upstream) -> Iterator[str]:
    """As in front of a plain OpenAI completions upstream, with one slot, no queue and a 2 s timeout."""
    yield from _serve(
        upstream,
        "--chat-template",
        str(CHAT_TEMPLATE),
        "--max-concurrency",
        "1",
        "--max-queue",
        "0",
        "--timeout",
        "2",
    )


@pytest.fixture(scope="module")
def example_server(upstream: Upstream) -> Iterator[str]:
    """examples/serve_in_front_of_an_engine.py, the same server started from Python."""
    script = HERE.parent.parent / "examples" / "serve_in_front_of_an_engine.py"
    yield from _serve(upstream, "--chat-template", str(CHAT_TEMPLATE), program=[sys.executable, str(script)])


@pytest.fixture(scope="module")
def http() -> Iterator[httpx2.Client]:
    with httpx2.Client(timeout=WAIT, trust_env=False) as client:  # no proxy between us and 127.0.0.1
        yield client


def openai_client(base: str, http: httpx2.Client) -> openai.OpenAI:
    return openai.OpenAI(api_key="test", base_url=f"{base}/v1", http_client=http, max_retries=0)


def anthropic_client(base: str, http: httpx2.Client) -> anthropic.Anthropic:
    return anthropic.Anthropic(api_key="test", base_url=base, http_client=http, max_retries=0)


def messages(marker: str = "") -> list[dict[str, Any]]:
    """The recorded conversation; a marker in the last message finds the request upstream."""
    return [*MESSAGES[:-1], {"role": "user", "content": MESSAGES[-1]["content"] + marker}]


EXPECTED = rt.parse_response(DEMO.output, rt.templates.for_model(MODEL), prefix=DEMO.prompt, tools=TOOLS)
assert isinstance(EXPECTED, dict)
CALLS = [(c["function"]["name"], c["function"]["arguments"]) for c in EXPECTED["tool_calls"]]


def extra(obj: Any, key: str) -> Any:
    return (obj.model_extra or {}).get(key)


# ------------------------------------------------------------------------------------ Chat Completions


def test_the_upstream_gets_the_rendered_chat_template(
    vllm_server: str, http: httpx2.Client, upstream: Upstream
) -> None:
    openai_client(vllm_server, http).chat.completions.create(model="m", messages=MESSAGES, tools=TOOLS)
    payload = upstream.request(MESSAGES[-1]["content"])["payload"]
    assert payload["prompt"] == DEMO.prompt  # what transformers' apply_chat_template writes
    assert payload["model"] == MODEL and payload["stream"] is True
    assert payload["skip_special_tokens"] is False and payload["max_tokens"] == 4096
    assert "structured_outputs" not in payload  # tool_choice auto: nothing forced


def test_the_example_script_serves_the_same_answer(example_server: str, http: httpx2.Client) -> None:
    completion = openai_client(example_server, http).chat.completions.create(
        model="m", messages=MESSAGES, tools=TOOLS
    )
    message = completion.choices[0].message
    assert message.content == EXPECTED["content"]
    assert [(c.function.name, json.loads(c.function.arguments)) for c in message.tool_calls or []] == CALLS


def test_chat_completion_whole(vllm_server: str, http: httpx2.Client) -> None:
    completion = openai_client(vllm_server, http).chat.completions.create(
        model="m", messages=MESSAGES, tools=TOOLS
    )
    choice = completion.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert extra(choice.message, "reasoning_content") == EXPECTED["reasoning_content"]
    assert choice.message.content == EXPECTED["content"]
    calls = choice.message.tool_calls or []
    assert [(c.function.name, json.loads(c.function.arguments)) for c in calls] == CALLS  # "3" typed as 3
    assert completion.usage is not None and completion.usage.completion_tokens == len(
        list(rt.demo.token_chunks(DEMO.output.removesuffix("<|im_end|>")))
    )


def test_chat_completion_streamed_with_usage(vllm_server: str, http: httpx2.Client) -> None:
    chunks = list(
        openai_client(vllm_server, http).chat.completions.create(
            model="m", messages=MESSAGES, tools=TOOLS, stream=True, stream_options={"include_usage": True}
        )
    )
    *body, last = chunks
    assert len(body) > 20  # the upstream's pieces arrive one by one
    assert (
        "".join(extra(c.choices[0].delta, "reasoning_content") or "" for c in body)
        == EXPECTED["reasoning_content"]
    )
    assert "".join(c.choices[0].delta.content or "" for c in body) == EXPECTED["content"]
    arguments: dict[int, str] = {}
    names: dict[int, str] = {}
    for chunk in body:
        for call in chunk.choices[0].delta.tool_calls or []:
            assert call.function is not None
            if call.function.name:
                names[call.index] = call.function.name
            arguments[call.index] = arguments.get(call.index, "") + (call.function.arguments or "")
    assert [(names[i], json.loads(arguments[i])) for i in sorted(names)] == CALLS
    assert body[-1].choices[0].finish_reason == "tool_calls"
    assert last.choices == [] and last.usage is not None and last.usage.prompt_tokens == len(DEMO.prompt) // 4


def test_chat_stream_helper_without_usage(vllm_server: str, http: httpx2.Client) -> None:
    client = openai_client(vllm_server, http)
    with client.chat.completions.stream(model="m", messages=MESSAGES, tools=TOOLS) as stream:
        kinds = [event.type for event in stream]
        completion = stream.get_final_completion()
    assert kinds.count("tool_calls.function.arguments.done") == 2
    calls = completion.choices[0].message.tool_calls or []
    assert [(c.function.name, json.loads(c.function.arguments)) for c in calls] == CALLS
    assert completion.usage is None  # not asked for


def test_the_token_limit_ends_with_length(vllm_server: str, http: httpx2.Client) -> None:
    completion = openai_client(vllm_server, http).chat.completions.create(
        model="m", messages=MESSAGES, max_tokens=10
    )
    assert completion.choices[0].finish_reason == "length"
    assert completion.usage is not None and completion.usage.completion_tokens == 10
    assert completion.choices[0].message.tool_calls is None


# --------------------------------------------------------------------------------------- Responses API


def _check_response(response: Any) -> None:
    kinds = [item.type for item in response.output]
    assert kinds == ["reasoning", "message", "function_call", "function_call"]
    assert response.output[0].content[0].text == EXPECTED["reasoning_content"]
    assert response.output_text == EXPECTED["content"]
    assert [(i.name, json.loads(i.arguments)) for i in response.output[2:]] == CALLS
    assert response.status == "completed" and response.usage is not None
    assert [tool.name for tool in response.tools] == ["get_weather"]  # the request's fields, repeated


def test_responses_whole(vllm_server: str, http: httpx2.Client) -> None:
    response = openai_client(vllm_server, http).responses.create(
        model="m", input=MESSAGES, tools=RESPONSES_TOOLS
    )
    _check_response(response)


def test_responses_streamed(vllm_server: str, http: httpx2.Client, upstream: Upstream) -> None:
    client = openai_client(vllm_server, http)
    marker = " (responses stream)"
    with client.responses.stream(model="m", input=messages(marker), tools=RESPONSES_TOOLS) as stream:
        deltas = sum(1 for event in stream if event.type == "response.function_call_arguments.delta")
        response = stream.get_final_response()
    assert deltas > 2
    _check_response(response)
    assert upstream.request(marker)["payload"]["prompt"] == DEMO.prompt.replace("3 days?", "3 days?" + marker)


# ---------------------------------------------------------------------------------- Anthropic Messages


def _check_message(message: Any) -> None:
    assert [block.type for block in message.content] == ["thinking", "text", "tool_use", "tool_use"]
    assert message.content[0].thinking == EXPECTED["reasoning_content"]
    assert message.content[1].text == EXPECTED["content"]
    assert [(b.name, b.input) for b in message.content[2:]] == CALLS
    assert message.stop_reason == "tool_use" and message.usage.output_tokens > 20


def test_anthropic_messages_whole(vllm_server: str, http: httpx2.Client) -> None:
    message = anthropic_client(vllm_server, http).messages.create(
        model="m", max_tokens=1000, messages=MESSAGES, tools=ANTHROPIC_TOOLS
    )
    _check_message(message)


def test_anthropic_messages_streamed(vllm_server: str, http: httpx2.Client) -> None:
    with anthropic_client(vllm_server, http).messages.stream(
        model="m", max_tokens=1000, messages=MESSAGES, tools=ANTHROPIC_TOOLS
    ) as stream:
        snapshots = [event.snapshot for event in stream if event.type == "input_json"]
        message = stream.get_final_message()
    assert snapshots[-1] == CALLS[1][1]
    _check_message(message)


def test_anthropic_tool_results_and_system_reach_the_template(
    vllm_server: str, http: httpx2.Client, upstream: Upstream
) -> None:
    anthropic_client(vllm_server, http).messages.create(
        model="m",
        max_tokens=5,
        system="Be brief.",
        messages=[
            {"role": "user", "content": "Weather in Paris? (tool results)"},
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "Checking."},
                    {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}},
                ],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "sunny"}],
            },
        ],
        tools=ANTHROPIC_TOOLS,
    )
    prompt = upstream.request("(tool results)")["payload"]["prompt"]
    assert prompt.startswith("<|im_start|>system\nBe brief.")
    assert '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>' in prompt
    assert "<tool_response>\nsunny\n</tool_response>" in prompt
    assert prompt.endswith("<|im_start|>assistant\n")


# ------------------------------------------------------------------------------------------ bad requests


def test_bad_requests_get_a_400_in_the_api_shape(vllm_server: str, http: httpx2.Client) -> None:
    response = http.post(f"{vllm_server}/v1/chat/completions", content=b"{not json")
    assert response.status_code == 400 and response.json()["error"]["type"] == "invalid_request_error"
    response = http.post(f"{vllm_server}/v1/chat/completions", json={"model": "m"})
    assert response.status_code == 400
    assert response.json() == {
        "error": {
            "message": "'messages' must be an array",
            "type": "invalid_request_error",
            "param": "messages",
            "code": None,
        }
    }
    response = http.post(f"{vllm_server}/v1/messages", json={"model": "m", "messages": MESSAGES})
    assert response.status_code == 400
    assert response.json() == {
        "type": "error",
        "error": {"type": "invalid_request_error", "message": "'max_tokens' is required"},
    }
    with pytest.raises(openai.BadRequestError) as info:
        openai_client(vllm_server, http).chat.completions.create(
            model="m", messages=MESSAGES, tools=[{"type": "function", "function": {"description": "no name"}}]
        )
    assert info.value.param == "tools[0].function.name"
    with pytest.raises(openai.BadRequestError, match="not among the request's tools"):
        openai_client(vllm_server, http).responses.create(
            model="m", input="hi", tools=RESPONSES_TOOLS, tool_choice={"type": "function", "name": "nope"}
        )
    with pytest.raises(anthropic.BadRequestError, match="not supported"):
        anthropic_client(vllm_server, http).messages.create(
            model="m",
            max_tokens=10,
            messages=[{"role": "user", "content": [{"type": "image", "source": {}}]}],
        )


def test_an_upstream_failure_is_a_502(vllm_server: str, http: httpx2.Client) -> None:
    with pytest.raises(openai.InternalServerError, match="the engine failed") as info:
        openai_client(vllm_server, http).chat.completions.create(model="m", messages=messages(" [fail]"))
    assert info.value.status_code == 502


# ------------------------------------------------------------------------------------ forced tool choice


def test_forced_tool_choice_goes_upstream_as_a_structural_tag(
    vllm_server: str, http: httpx2.Client, upstream: Upstream
) -> None:
    marker = " (forced)"
    completion = openai_client(vllm_server, http).chat.completions.create(
        model="m", messages=messages(marker), tools=TOOLS, tool_choice="required", parallel_tool_calls=False
    )
    assert completion.choices[0].finish_reason == "tool_calls"
    options = upstream.request(marker)["payload"]["structured_outputs"]
    tag = json.loads(options["structural_tag"])
    assert tag["type"] == "structural_tag" and "get_weather" in options["structural_tag"]
    assert (
        tag
        == grammar.build(
            MODEL,
            tools=TOOLS,
            tool_choice="required",
            parallel_tool_calls=False,
            prefix=upstream.request(marker)["payload"]["prompt"],
        ).structural_tag
    )

    named = " (named)"
    anthropic_client(vllm_server, http).messages.create(
        model="m",
        max_tokens=1000,
        messages=messages(named),
        tools=ANTHROPIC_TOOLS,
        tool_choice={"type": "tool", "name": "get_weather"},
    )
    assert "structured_outputs" in upstream.request(named)["payload"]


def test_forced_tool_choice_without_a_grammar_parameter_is_refused(
    plain_server: str, http: httpx2.Client
) -> None:
    with pytest.raises(openai.BadRequestError, match="no grammar parameter") as info:
        openai_client(plain_server, http).chat.completions.create(
            model="m", messages=MESSAGES, tools=TOOLS, tool_choice="required"
        )
    assert info.value.param == "tool_choice"
    with pytest.raises(anthropic.BadRequestError, match="no grammar parameter"):
        anthropic_client(plain_server, http).messages.create(
            model="m", max_tokens=10, messages=MESSAGES, tools=ANTHROPIC_TOOLS, tool_choice={"type": "any"}
        )
    # auto works there as anywhere
    completion = openai_client(plain_server, http).chat.completions.create(
        model="m", messages=MESSAGES, tools=TOOLS
    )
    assert completion.choices[0].finish_reason == "tool_calls"


# -------------------------------------------------------------------------- client disconnects, limits


def test_a_client_leaving_a_stream_cancels_the_upstream_request(
    vllm_server: str, http: httpx2.Client, upstream: Upstream
) -> None:
    marker = " [slow] (leaves the chat stream)"
    stream = openai_client(vllm_server, http).chat.completions.create(
        model="m", messages=messages(marker), stream=True
    )
    for _, _chunk in zip(range(3), stream, strict=False):
        pass
    stream.close()
    assert upstream.ending(upstream.request(marker)["id"]) == "closed_early"

    marker = " [slow] (leaves the messages stream)"
    with anthropic_client(vllm_server, http).messages.stream(
        model="m", max_tokens=1000, messages=messages(marker)
    ) as events:
        for _, _event in zip(range(3), events, strict=False):
            pass
    assert upstream.ending(upstream.request(marker)["id"]) == "closed_early"


def test_a_client_leaving_a_whole_request_cancels_the_upstream_request(
    vllm_server: str, upstream: Upstream
) -> None:
    marker = " [slow] (gives up waiting)"
    with httpx2.Client(timeout=0.5, trust_env=False) as impatient, pytest.raises(httpx2.ReadTimeout):
        impatient.post(
            f"{vllm_server}/v1/chat/completions", json={"model": "m", "messages": messages(marker)}
        )
    assert upstream.ending(upstream.request(marker)["id"]) == "closed_early"


def test_requests_beyond_the_limit_get_a_429(
    plain_server: str, http: httpx2.Client, upstream: Upstream
) -> None:
    client = openai_client(plain_server, http)
    marker = " [slow] (holds the only slot)"
    with httpx2.Client(timeout=WAIT, trust_env=False) as other:
        first = openai_client(plain_server, other).chat.completions.create(
            model="m", messages=messages(marker), stream=True
        )
        try:
            next(iter(first))  # the request is generating: it holds the slot
            with pytest.raises(openai.RateLimitError) as info:
                client.chat.completions.create(model="m", messages=MESSAGES)
            assert info.value.status_code == 429
            with pytest.raises(anthropic.RateLimitError):
                anthropic_client(plain_server, http).messages.create(
                    model="m", max_tokens=10, messages=MESSAGES
                )
        finally:
            first.close()
    assert upstream.ending(upstream.request(marker)["id"]) == "closed_early"
    # the slot is free again once the first request ended
    deadline = time.monotonic() + WAIT
    while True:
        try:
            completion = client.chat.completions.create(model="m", messages=MESSAGES)
            break
        except openai.RateLimitError:
            assert time.monotonic() < deadline, "the slot was not released"
            time.sleep(0.05)
    assert completion.choices[0].finish_reason == "tool_calls"


def test_an_upstream_that_dies_mid_stream_is_an_error_event(vllm_server: str, http: httpx2.Client) -> None:
    stream = openai_client(vllm_server, http).chat.completions.create(
        model="m", messages=messages(" [break] (chat)"), stream=True
    )
    with pytest.raises(openai.APIError, match="ended before the completion did"):
        for _ in stream:
            pass
    with pytest.raises(anthropic.APIError, match="ended before the completion did"):  # noqa: SIM117
        with anthropic_client(vllm_server, http).messages.stream(
            model="m", max_tokens=1000, messages=messages(" [break] (messages)")
        ) as events:
            for _ in events:
                pass
    with pytest.raises(openai.APIError, match="ended before the completion did"):  # noqa: SIM117
        with openai_client(vllm_server, http).responses.stream(
            model="m", input=messages(" [break] (responses)")
        ) as events:
            for _ in events:
                pass
    with pytest.raises(openai.InternalServerError, match="ended before the completion did") as info:
        openai_client(vllm_server, http).chat.completions.create(
            model="m", messages=messages(" [break] (whole)")
        )
    assert info.value.status_code == 502


def test_an_upstream_that_does_not_answer_is_a_504(plain_server: str, http: httpx2.Client) -> None:
    with pytest.raises(openai.InternalServerError, match="did not answer within 2 s") as info:
        openai_client(plain_server, http).chat.completions.create(model="m", messages=messages(" [stall]"))
    assert info.value.status_code == 504
    assert info.value.body == {
        "message": "the upstream did not answer within 2 s",
        "type": "timeout",
        "param": None,
        "code": None,
    }
