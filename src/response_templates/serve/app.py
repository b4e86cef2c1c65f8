"""The Starlette app: ``/v1/chat/completions``, ``/v1/responses`` and ``/v1/messages`` over an upstream.

Each request is read (:mod:`.requests`), rendered with the model's chat template (:mod:`.prompts`),
sent upstream as a completion (:mod:`.upstream`), and the upstream's text is parsed with the response
template and written in the API's own protocol by the wire adapters, streamed or whole. At most
``max_concurrency`` requests generate at once and ``max_queue`` wait for a slot; a client that goes away
closes the upstream request.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import anyio
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from ..errors import AnchorNotFoundError, ResponseTemplateError
from ..parser import ResponseParser
from ..wire import (
    AnthropicMessagesAdapter,
    ChatCompletionsAdapter,
    ResponsesAdapter,
    WireAdapter,
    arun_stream,
)
from .config import ServeConfig
from .prompts import render_prompt, upstream_prompt
from .requests import API, Generation, RequestError, read_request
from .upstream import Upstream, UpstreamError, completion_payload, grammar_fields

__all__ = ["Limiter", "Overloaded", "create_app", "error_body"]

# ------------------------------------------------------------------------------------------- errors

#: The error ``type`` of each status, in OpenAI's and in Anthropic's vocabulary.
_OPENAI_TYPES = {400: "invalid_request_error", 429: "rate_limit_error", 503: "server_error", 504: "timeout"}
_ANTHROPIC_TYPES = {
    400: "invalid_request_error",
    429: "rate_limit_error",
    503: "overloaded_error",
    504: "timeout_error",
}


def error_body(api: API, status: int, message: str, param: str | None = None) -> dict[str, Any]:
    """The error object of ``api``: OpenAI's ``{"error": {...}}`` or Anthropic's ``{"type": "error", ...}``."""
    if api == "messages":
        return {
            "type": "error",
            "error": {"type": _ANTHROPIC_TYPES.get(status, "api_error"), "message": message},
        }
    kind = _OPENAI_TYPES.get(status, "upstream_error" if status in (502, 504) else "server_error")
    return {"error": {"message": message, "type": kind, "param": param, "code": None}}


def _error(api: API, status: int, message: str, param: str | None = None) -> JSONResponse:
    return JSONResponse(error_body(api, status, message, param), status_code=status)


def _stream_error(api: API, status: int, message: str) -> str:
    """An error after the stream started, as the API's SDK reads one (it raises on it)."""
    body = error_body(api, status, message)
    if api == "chat":
        return f"data: {json.dumps(body)}\n\n"
    if api == "responses":
        return f"event: error\ndata: {json.dumps({'type': 'error', **body, 'message': message})}\n\n"
    return f"event: error\ndata: {json.dumps(body)}\n\n"


# ---------------------------------------------------------------------------------------- admission


class Overloaded(Exception):
    """No slot for the request: ``status`` 429 (the queue is full) or 503 (it waited too long)."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.message = message
        self.status = status


class Limiter:
    """At most ``active`` requests at once; up to ``queue`` more wait, at most ``timeout`` seconds."""

    def __init__(self, active: int, queue: int, timeout: float) -> None:
        if active < 1 or queue < 0:
            raise ValueError("max_concurrency must be at least 1 and max_queue at least 0")
        self._slots = asyncio.Semaphore(active)
        self.active = active
        self.queue = queue
        self.timeout = timeout
        self.waiting = 0

    async def acquire(self) -> None:
        if self._slots.locked() and self.waiting >= self.queue:
            raise Overloaded(
                f"too many requests: {self.active} are generating and {self.waiting} waiting", 429
            )
        self.waiting += 1
        try:
            await asyncio.wait_for(self._slots.acquire(), self.timeout)
        except asyncio.TimeoutError:
            raise Overloaded(f"no free slot within {self.timeout:g} s", 503) from None
        finally:
            self.waiting -= 1

    def release(self) -> None:
        self._slots.release()


# --------------------------------------------------------------------------------------- responses


class _EventStream(Response):
    """Server-sent events from ``body``; the client going away cancels it, and ``close`` runs in any case.

    Unlike Starlette's ``StreamingResponse``, the body's generator is always closed (``aclose``) before
    ``close`` runs, whatever ASGI version the server speaks, so the upstream request ends with the client's.
    """

    media_type = "text/event-stream"

    def __init__(self, body: AsyncIterator[str], close: Callable[[], Awaitable[None]]) -> None:
        self.body_stream = body
        self.close = close
        self.status_code = 200
        self.background = None
        self.init_headers({"cache-control": "no-cache", "x-accel-buffering": "no"})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            async with anyio.create_task_group() as group:

                async def watch() -> None:
                    while (await receive())["type"] != "http.disconnect":
                        pass
                    group.cancel_scope.cancel()

                group.start_soon(watch)
                try:
                    await send({"type": "http.response.start", "status": 200, "headers": self.raw_headers})
                    async for text in self.body_stream:
                        await send({"type": "http.response.body", "body": text.encode(), "more_body": True})
                    await send({"type": "http.response.body", "body": b"", "more_body": False})
                except OSError:  # the client went away while we wrote
                    pass
                group.cancel_scope.cancel()
        finally:
            with anyio.CancelScope(shield=True):
                aclose = getattr(self.body_stream, "aclose", None)
                if aclose is not None:
                    await aclose()
                await self.close()


async def _until_disconnect(request: Request) -> None:
    while (await request.receive())["type"] != "http.disconnect":
        pass


# ------------------------------------------------------------------------------------------ the app


@dataclass
class _State:
    config: ServeConfig
    upstream: Upstream
    limiter: Limiter


def _adapter(config: ServeConfig, generation: Generation, tools: list[dict[str, Any]]) -> WireAdapter:
    model = generation.model or config.model
    if generation.api == "chat":
        return ChatCompletionsAdapter(
            config.template,
            tools=tools or None,
            model=model,
            include_usage=generation.include_usage,
            reasoning_key=config.reasoning_key,
        )
    if generation.api == "responses":
        return ResponsesAdapter(
            config.template, tools=tools or None, model=model, response_fields=generation.echo
        )
    return AnthropicMessagesAdapter(config.template, tools=tools or None, model=model)


async def _relay(
    api: API, pieces: AsyncIterator[Any], parser: ResponseParser, adapter: WireAdapter
) -> AsyncIterator[str]:
    """The SSE text of the stream; an upstream failure after the start is the API's error event."""
    try:
        async for text in arun_stream(parser, adapter, pieces, sse=True):
            yield text
    except UpstreamError as exc:
        yield _stream_error(api, exc.status, exc.message)


async def _handle(request: Request, api: API) -> Response:
    state: _State = request.app.state.serve
    config = state.config
    try:
        body = json.loads(await request.body())
    except ValueError:
        return _error(api, 400, "the request body is not valid JSON")
    try:
        generation = read_request(api, body)
        prompt = render_prompt(config, generation)
        tools = generation.tools if generation.tool_choice != "none" else []
        try:
            parser = ResponseParser(config.template, prefix=prompt, tools=tools or None)
        except AnchorNotFoundError as exc:
            message = f"the response template does not fit the chat template's prompt: {exc}"
            return _error(api, 500, message)
        except ResponseTemplateError as exc:  # a tool the parser cannot read
            raise RequestError(f"invalid tools: {exc}", "tools") from None
        grammar = grammar_fields(config, generation, prompt)
        adapter = _adapter(config, generation, tools)
    except RequestError as exc:
        return _error(api, 400, exc.message, exc.param)
    payload = completion_payload(config, generation, upstream_prompt(config, prompt), grammar)
    try:
        await state.limiter.acquire()
    except Overloaded as exc:
        return _error(api, exc.status, exc.message)
    try:
        opened = await state.upstream.open(payload)
    except UpstreamError as exc:
        state.limiter.release()
        return _error(api, exc.status, exc.message)
    except BaseException:
        state.limiter.release()
        raise

    async def close() -> None:
        await opened.aclose()
        state.limiter.release()

    if generation.stream:
        return _EventStream(_relay(api, opened.pieces(), parser, adapter), close)
    failure: UpstreamError | None = None
    finished = False
    try:
        async with anyio.create_task_group() as group:

            async def watch() -> None:  # a client that leaves ends the upstream request too
                await _until_disconnect(request)
                group.cancel_scope.cancel()

            group.start_soon(watch)
            try:
                async for _ in arun_stream(parser, adapter, opened.pieces()):
                    pass
                finished = True
            except UpstreamError as exc:
                failure = exc
            group.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            await close()
    if failure is not None:
        return _error(api, failure.status, failure.message)
    if not finished:  # the client went away: nobody reads this
        return Response(status_code=499)
    return JSONResponse(adapter.final())


async def _chat(request: Request) -> Response:
    return await _handle(request, "chat")


async def _responses(request: Request) -> Response:
    return await _handle(request, "responses")


async def _messages(request: Request) -> Response:
    return await _handle(request, "messages")


async def _models(request: Request) -> Response:
    config: ServeConfig = request.app.state.serve.config
    return JSONResponse(
        {
            "object": "list",
            "data": [{"id": config.model, "object": "model", "created": 0, "owned_by": "upstream"}],
        }
    )


def create_app(config: ServeConfig) -> Starlette:
    """The server for ``config``: the three APIs, ``GET /v1/models``; the upstream client lives with the app."""
    upstream = Upstream(config.upstream, timeout=config.timeout, max_connections=config.max_concurrency + 4)
    limiter = Limiter(config.max_concurrency, config.max_queue, config.timeout)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            yield
        finally:
            await upstream.aclose()

    app = Starlette(
        routes=[
            Route("/v1/chat/completions", _chat, methods=["POST"]),
            Route("/v1/responses", _responses, methods=["POST"]),
            Route("/v1/messages", _messages, methods=["POST"]),
            Route("/v1/models", _models, methods=["GET"]),
        ],
        lifespan=lifespan,
    )
    app.state.serve = _State(config, upstream, limiter)
    return app
