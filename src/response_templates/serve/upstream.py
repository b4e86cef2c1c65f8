"""The upstream: an engine that continues a prompt over OpenAI's completions protocol.

``POST {upstream}/completions`` with ``prompt`` and ``stream: true``; the answer is server-sent events,
each a ``text_completion`` chunk with ``choices[0].text`` and, at the end, ``finish_reason`` and
(``stream_options.include_usage``) a chunk with ``usage``, then ``data: [DONE]``. A JSON answer (an
upstream that does not stream) is read too. :meth:`UpstreamStream.pieces` yields the text pieces, then a
:class:`~response_templates.wire.StreamEnd` with the finish reason and usage, as ``arun_stream`` reads them.
Closing the stream closes the HTTP response, which ends the upstream's generation.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import anyio
import httpx2

from ..errors import ResponseTemplateError
from ..wire import StreamEnd, Usage
from .config import ServeConfig
from .requests import Generation, RequestError

__all__ = ["Upstream", "UpstreamError", "UpstreamStream", "completion_payload", "grammar_fields"]


class UpstreamError(Exception):
    """The upstream failed: ``status`` is the HTTP status to answer with (502 or 504, or the upstream's 4xx)."""

    def __init__(self, message: str, status: int = 502) -> None:
        super().__init__(message)
        self.message = message
        self.status = status


def grammar_fields(config: ServeConfig, generation: Generation, prompt: str) -> dict[str, Any]:
    """The completion fields that force the request's tool choice upstream (``{}`` when nothing is forced).

    vLLM: ``structured_outputs.structural_tag``; SGLang: ``response_format`` (a structural tag); llama.cpp
    (built with llguidance): ``grammar``, our Lark grammar. A plain OpenAI upstream has no grammar
    parameter: a forced tool choice is then a :class:`RequestError`.
    """
    if not generation.forced_tool:
        return {}
    if config.upstream_kind == "openai":
        raise RequestError(
            "tool_choice forces a tool call, but the upstream (--upstream-kind openai) has no grammar "
            "parameter to enforce it; serve with --upstream-kind vllm, sglang or llama.cpp, or send "
            "tool_choice 'auto'",
            "tool_choice",
        )
    from ..grammar import build

    try:
        grammar = build(
            config.template,
            tools=generation.tools,
            tool_choice=generation.tool_choice,
            parallel_tool_calls=generation.parallel_tool_calls,
            prefix=prompt,
            special_tokens=config.special_tokens or None,
        )
    except ResponseTemplateError as exc:  # GrammarError, or a tool schema the grammar refuses
        raise RequestError(f"tool_choice cannot be enforced for this model: {exc}", "tool_choice") from None
    if config.upstream_kind == "vllm":
        return {"structured_outputs": {"structural_tag": json.dumps(grammar.structural_tag)}}
    if config.upstream_kind == "sglang":
        return {"response_format": grammar.structural_tag}
    return {"grammar": grammar.lark}  # llama.cpp: a grammar starting with %llguidance goes to llguidance


def completion_payload(
    config: ServeConfig, generation: Generation, prompt: str, grammar: dict[str, Any]
) -> dict[str, Any]:
    """The body of ``POST {upstream}/completions`` for ``generation``."""
    payload: dict[str, Any] = {
        "model": config.model,
        "prompt": prompt,
        "stream": True,
        "stream_options": {"include_usage": True},
        "max_tokens": generation.max_tokens or config.default_max_tokens,
        **generation.sampling,
    }
    if config.upstream_kind in ("vllm", "sglang"):
        payload["skip_special_tokens"] = False  # the delimiters of many templates are special tokens
    payload.update(grammar)
    return payload


def _usage(value: Any) -> Usage | None:
    if not isinstance(value, dict):
        return None
    prompt, completion = value.get("prompt_tokens"), value.get("completion_tokens")
    if not isinstance(prompt, int) or not isinstance(completion, int):
        return None
    details = value.get("prompt_tokens_details")
    cached = details.get("cached_tokens") if isinstance(details, dict) else None
    return Usage(prompt, completion, cached_tokens=cached if isinstance(cached, int) else None)


def _finish(reason: Any) -> str:
    return "length" if reason == "length" else "stop"


def _error_message(data: Any) -> str | None:
    if isinstance(data, dict) and data.get("error") is not None:
        error = data["error"]
        return str(error.get("message") if isinstance(error, dict) else error)
    return None


class UpstreamStream:
    """One upstream completion being received; :meth:`pieces` once, :meth:`aclose` always."""

    def __init__(self, response: httpx2.Response, timeout: float) -> None:
        self.response = response
        self.timeout = timeout

    async def pieces(self) -> AsyncIterator[str | StreamEnd]:
        """The text pieces, then the :class:`StreamEnd`; :class:`UpstreamError` if the upstream fails."""
        reason: Any = None
        usage: Usage | None = None
        chunks = 0
        try:
            if "json" in self.response.headers.get("content-type", "") and "event-stream" not in (
                self.response.headers.get("content-type", "")
            ):
                data = json.loads(await self.response.aread())
                choice = (data.get("choices") or [{}])[0] if isinstance(data, dict) else {}
                text = choice.get("text") or ""
                if text:
                    yield text
                yield StreamEnd(
                    _finish(choice.get("finish_reason")), _usage(data.get("usage")) or Usage(0, 1)
                )
                return
            done = False
            async for line in self.response.aiter_lines():
                if not line.startswith("data:"):
                    continue
                data_text = line[5:].strip()
                if data_text == "[DONE]":
                    done = True
                    break
                try:
                    data = json.loads(data_text)
                except ValueError:
                    raise UpstreamError(
                        f"the upstream sent an event that is not JSON: {data_text[:200]!r}"
                    ) from None
                message = _error_message(data)
                if message is not None:
                    raise UpstreamError(f"the upstream failed: {message}")
                usage = _usage(data.get("usage")) or usage
                for choice in data.get("choices") or []:
                    text = choice.get("text")
                    if text:
                        chunks += 1
                        yield text
                    if choice.get("finish_reason") is not None:
                        reason = choice["finish_reason"]
            if not done and reason is None:
                raise UpstreamError(
                    "the upstream's stream ended before the completion did (no finish_reason)"
                )
            # An upstream that reports no usage: the chunks it sent stand for the tokens.
            yield StreamEnd(_finish(reason), usage or Usage(0, chunks))
        except httpx2.TimeoutException:
            raise UpstreamError(f"the upstream sent nothing for {self.timeout:g} s", 504) from None
        except httpx2.HTTPError as exc:
            raise UpstreamError(f"the upstream connection failed: {exc}") from None
        finally:
            await self.aclose()

    async def aclose(self) -> None:
        """Close the HTTP response (the upstream sees its client go away and stops generating)."""
        if not self.response.is_closed:
            with anyio.CancelScope(shield=True):
                await self.response.aclose()


class Upstream:
    """An async client for ``POST {url}/completions`` (one connection pool for the server's lifetime)."""

    def __init__(self, url: str, *, timeout: float, max_connections: int = 64) -> None:
        self.url = url.rstrip("/") + "/completions"
        self.timeout = timeout
        self.client = httpx2.AsyncClient(
            timeout=httpx2.Timeout(timeout),
            limits=httpx2.Limits(max_connections=max_connections),
            trust_env=False,
        )

    async def open(self, payload: dict[str, Any]) -> UpstreamStream:
        """Send the request and wait for the answer's status; :class:`UpstreamError` if it is not 200."""
        request = self.client.build_request("POST", self.url, json=payload)
        try:
            response = await self.client.send(request, stream=True)
        except httpx2.TimeoutException:
            raise UpstreamError(f"the upstream did not answer within {self.timeout:g} s", 504) from None
        except httpx2.HTTPError as exc:
            raise UpstreamError(f"cannot reach the upstream {self.url}: {exc}") from None
        if response.status_code != 200:
            try:
                body = (await response.aread()).decode("utf-8", "replace")
            finally:
                await response.aclose()
            try:
                message = _error_message(json.loads(body)) or body
            except ValueError:
                message = body
            status = 400 if response.status_code in (400, 413, 422) else 502  # the request's fault, or ours
            raise UpstreamError(f"the upstream answered {response.status_code}: {message[:1000]}", status)
        return UpstreamStream(response, self.timeout)

    async def aclose(self) -> None:
        await self.client.aclose()
