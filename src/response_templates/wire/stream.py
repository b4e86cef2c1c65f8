"""Driving a parser and an adapter over a model's output: :func:`run_stream` and :func:`arun_stream`.

An engine learns why it stopped and how many tokens it used only at the end of a generation, so the
model output may end with a :class:`StreamEnd` that carries them: the pieces of text (or bytes), then
``StreamEnd(finish_reason, usage)``. Both functions also take ``finish_reason=`` and ``usage=`` up front,
for an engine that knows them before the stream starts; a ``StreamEnd`` overrides them.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from ..errors import ParseError
from ..parser import ResponseParser
from ._base import Chunk, Usage, WireAdapter

__all__ = ["StreamEnd", "arun_stream", "run_stream"]


@dataclass(frozen=True)
class StreamEnd:
    """The last item of a model output: why the engine stopped, and its token counts.

    ``finish_reason`` is ``"stop"`` (end of sequence, a stop string) or ``"length"`` (the token limit);
    ``usage`` is optional.

    >>> StreamEnd("length", Usage(prompt_tokens=12, completion_tokens=100))
    StreamEnd(finish_reason='length', usage=Usage(prompt_tokens=12, completion_tokens=100, reasoning_tokens=None, cached_tokens=None))
    """

    finish_reason: str = "stop"
    usage: Usage | None = None


#: One item of a model output: a piece of text (or UTF-8 bytes), or the final :class:`StreamEnd`.
Piece = str | bytes | StreamEnd


class _Driver:
    """The shared loop body: one parser, one adapter, the end of the stream given once."""

    def __init__(
        self, parser: ResponseParser, adapter: WireAdapter, finish_reason: str, usage: Usage | None, sse: bool
    ) -> None:
        self.parser = parser
        self.adapter = adapter
        self.end = StreamEnd(finish_reason, usage)
        self.ended = False
        self.sse = sse

    def out(self, chunks: list[Chunk]) -> list[Any]:
        if not self.sse:
            return list(chunks)
        return [self.adapter.encode(chunks)] if chunks else []

    def start(self) -> list[Any]:
        return self.out(self.adapter.feed(self.parser.initial_events))

    def piece(self, piece: Piece) -> list[Any]:
        if self.ended:
            raise ValueError("the model output goes on after its StreamEnd: StreamEnd must be the last item")
        if isinstance(piece, StreamEnd):
            self.end = piece
            self.ended = True
            return []
        try:
            chunks = self.adapter.step(self.parser, piece)
        except ParseError as exc:  # the parser stays usable; the adapter ends a failed call cleanly
            chunks = self.adapter.feed(exc.events or [])
        return self.out(chunks)

    def finish(self) -> list[Any]:
        try:
            _, final_events = self.parser.finalize()
        except ParseError as exc:
            final_events = exc.events or []
        end = self.end
        out = self.out(self.adapter.finish(final_events, finish_reason=end.finish_reason, usage=end.usage))
        if self.sse and self.adapter.sse_terminator:
            out.append(self.adapter.sse_terminator)
        return out


def run_stream(
    parser: ResponseParser,
    adapter: WireAdapter,
    pieces: Iterable[Piece],
    *,
    finish_reason: str = "stop",
    usage: Usage | None = None,
    sse: bool = False,
) -> Iterator[Any]:
    """Drive ``parser`` and ``adapter`` over the model output ``pieces``; yield the stream chunks.

    ``pieces`` are text (or bytes), optionally ending with a :class:`StreamEnd` that gives the finish
    reason and usage the engine only knows at the end (they override ``finish_reason=`` and ``usage=``).
    A :class:`~response_templates.ParseError` from the parser (a region that does not parse) does not
    stop the stream: the events it carries are translated and the stream goes on (the adapter ends a call
    that was already announced as incomplete, its arguments closed to valid JSON, or, when the end of the
    output cut it off, left as they were sent; see ``adapter.errors``).
    With ``sse=True`` the chunks come as server-sent-event text, ending with the protocol's terminator.
    """
    driver = _Driver(parser, adapter, finish_reason, usage, sse)
    yield from driver.start()
    for piece in pieces:
        yield from driver.piece(piece)
    yield from driver.finish()


async def arun_stream(
    parser: ResponseParser,
    adapter: WireAdapter,
    pieces: AsyncIterable[Piece] | Iterable[Piece],
    *,
    finish_reason: str = "stop",
    usage: Usage | None = None,
    sse: bool = False,
) -> AsyncIterator[Any]:
    """:func:`run_stream` for an async engine: ``async for`` over its output, yield the stream chunks.

    ``pieces`` is an async iterable (or a plain one) of text pieces, ending with a :class:`StreamEnd`
    once the engine knows why it stopped and how many tokens it used. If the consumer stops early (the
    client went away and the server closes this generator), an async generator of pieces is closed
    (``aclose()``), so that an engine can abort the request in its ``finally``.

    >>> import asyncio
    >>> import response_templates as rt
    >>> from response_templates.wire import ChatCompletionsAdapter, StreamEnd, Usage, arun_stream
    >>> template = {"start_anchor": "<|assistant|>", "fields": {"content": {}}}
    >>> async def engine():
    ...     for token in ["Hel", "lo", "!"]:
    ...         yield token
    ...     yield StreamEnd("length", Usage(prompt_tokens=5, completion_tokens=3))
    >>> async def serve():
    ...     adapter = ChatCompletionsAdapter(template, include_usage=True)
    ...     return [c async for c in arun_stream(rt.ResponseParser(template, prefix=""), adapter, engine())]
    >>> chunks = asyncio.run(serve())
    >>> [(c["choices"][0]["delta"], c["choices"][0]["finish_reason"]) for c in chunks if c["choices"]]
    ... # doctest: +NORMALIZE_WHITESPACE
    [({'role': 'assistant', 'content': ''}, None), ({'content': 'Hel'}, None), ({'content': 'lo'}, None),
     ({'content': '!'}, None), ({}, 'length')]
    >>> chunks[-1]["choices"], chunks[-1]["usage"]["total_tokens"]
    ([], 8)
    """
    driver = _Driver(parser, adapter, finish_reason, usage, sse)
    for item in driver.start():
        yield item
    if isinstance(pieces, AsyncIterable):
        iterator = aiter(pieces)
        try:
            async for piece in iterator:
                for item in driver.piece(piece):
                    yield item
        finally:
            close = getattr(iterator, "aclose", None)
            if close is not None:
                await close()
    else:
        for piece in pieces:
            for item in driver.piece(piece):
                yield item
    for item in driver.finish():
        yield item
