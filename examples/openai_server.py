"""An OpenAI-compatible ``/v1/chat/completions`` endpoint: Starlette, an async engine and response-templates.

Run: pip install 'response-templates[serve]'
     python examples/openai_server.py [--host 127.0.0.1] [--port 8000]
then point any OpenAI client at http://127.0.0.1:8000/v1 (streamed or not, with
``stream_options={"include_usage": True}`` for the usage chunk).

The "engine" replays a recorded Qwen3 generation (reasoning, a sentence, two parallel tool calls) in
token-sized pieces, the way an inference engine's async generator hands out decoded text: each step has
the new text, and the last one says why the generation stopped and how many tokens it used. Put your
engine in its place; the parsing, the tool-call streaming and the OpenAI wire format stay as they are.
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import AsyncIterator
from typing import Any, NamedTuple

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

import response_templates as rt
from response_templates.demo import load_demo_data, token_chunks
from response_templates.wire import ChatCompletionsAdapter, StreamEnd, Usage, arun_stream

MODEL = "Qwen/Qwen3-8B"
TEMPLATE = rt.templates.for_model(MODEL)  # the library's template for the model's family
RECORDED = load_demo_data()  # a real generation of the model, with the tools it was given


class Step(NamedTuple):
    """What the engine yields per decoding step: new text, and on the last step why it stopped."""

    text: str
    finish_reason: str | None  # "stop" or "length" on the last step
    prompt_tokens: int
    completion_tokens: int


class ReplayEngine:
    """Stands in for an inference engine: replays ``output`` token by token, whatever the prompt."""

    def __init__(self, output: str) -> None:
        self.tokens = list(token_chunks(output))

    async def generate(self, prompt: str, max_tokens: int) -> AsyncIterator[Step]:
        prompt_tokens = len(prompt) // 4
        tokens = self.tokens[:max_tokens]
        for n, token in enumerate(tokens, 1):
            await asyncio.sleep(0)  # a real engine awaits the next decoding step here
            last = n == len(tokens)
            reason = ("stop" if len(tokens) == len(self.tokens) else "length") if last else None
            yield Step(token, reason, prompt_tokens, n)


ENGINE = ReplayEngine(RECORDED.output)


def render_prompt(messages: list[dict[str, Any]]) -> str:
    """The prompt the engine continues (ChatML, as Qwen3's chat template writes it, without tools)."""
    turns = "".join(f"<|im_start|>{m['role']}\n{m.get('content') or ''}<|im_end|>\n" for m in messages)
    return turns + "<|im_start|>assistant\n"


async def model_output(prompt: str, max_tokens: int) -> AsyncIterator[str | StreamEnd]:
    """The engine's steps as arun_stream reads them: text pieces, then the end with reason and usage."""
    async for step in ENGINE.generate(prompt, max_tokens):
        yield step.text
        if step.finish_reason is not None:
            yield StreamEnd(step.finish_reason, Usage(step.prompt_tokens, step.completion_tokens))


def error(message: str, status: int = 400) -> JSONResponse:
    return JSONResponse({"error": {"message": message, "type": "invalid_request_error"}}, status_code=status)


async def chat_completions(request: Request) -> Response:
    try:
        body = await request.json()
        messages = body["messages"]
        tools = body.get("tools") or None
        prompt = render_prompt(messages)
        parser = rt.ResponseParser(TEMPLATE, prefix=prompt, tools=tools)
    except (ValueError, KeyError, TypeError) as exc:  # bad JSON, no messages, invalid tools
        return error(f"invalid request: {exc}")
    max_tokens = body.get("max_completion_tokens") or body.get("max_tokens") or 4096
    adapter = ChatCompletionsAdapter(
        TEMPLATE,
        tools=tools,
        model=body.get("model") or MODEL,
        include_usage=bool((body.get("stream_options") or {}).get("include_usage")),
    )
    stream = arun_stream(parser, adapter, model_output(prompt, max_tokens), sse=bool(body.get("stream")))
    if body.get("stream"):
        return StreamingResponse(stream, media_type="text/event-stream")
    async for _ in stream:  # the whole generation; the adapter keeps the non-streamed object
        pass
    return JSONResponse(adapter.final())


app = Starlette(routes=[Route("/v1/chat/completions", chat_completions, methods=["POST"])])


def main() -> None:
    import uvicorn

    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--host", default="127.0.0.1")
    options.add_argument("--port", type=int, default=8000)
    args = options.parse_args()
    uvicorn.run(app, host=args.host, port=args.port)


if __name__ == "__main__":
    main()
