"""What the wire adapters share: reading the parser's events, exact text stripping, ids, usage, SSE."""

from __future__ import annotations

import random
import secrets
import string
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal, cast

from ..compiled import mypyc_attr
from ..errors import ParserStateError, TemplateError
from ..events import ParserEvent, RegionChunk, ToolCallEvent, Unparsed
from ..jsonlex.canonical import json_dumper
from ..language import ResponseTemplate, load_template
from ..parser import ResponseParser
from ..toolstream import ToolCallStreamer
from ..toolstream.streamer import ARGUMENT_MODES

__all__ = [
    "DEFAULT_FIELDS",
    "FINISH_REASONS",
    "Chunk",
    "Usage",
    "WireAdapter",
    "dumps_chunk",
    "partial_input",
]

#: One chunk of a protocol's stream (a JSON object; its shape is the protocol's).
Chunk = dict[str, Any]

#: The template fields each role is read from, unless ``fields=`` says otherwise.
DEFAULT_FIELDS: Mapping[str, str] = {
    "reasoning": "reasoning_content",
    "content": "content",
    "tool_calls": "tool_calls",
}

FINISH_REASONS: Final = ("stop", "length")

_ALPHABET: Final = string.ascii_letters + string.digits


@dataclass(frozen=True)
class Usage:
    """Token counts of one generation, given to ``finish()``; each adapter writes them its own way.

    >>> Usage(prompt_tokens=20, completion_tokens=40, reasoning_tokens=12).total_tokens
    60
    """

    prompt_tokens: int
    completion_tokens: int
    reasoning_tokens: int | None = None
    cached_tokens: int | None = None

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


class _Ids:
    """Random ids (``prefix`` + 24 letters and digits); reproducible with a seed."""

    def __init__(self, seed: int | None) -> None:
        self._rng = random.Random(seed) if seed is not None else None

    def make(self, prefix: str, length: int = 24) -> str:
        if self._rng is not None:
            return prefix + "".join(self._rng.choice(_ALPHABET) for _ in range(length))
        # One draw from the system's secure source, written in base 62: every id equally likely, as
        # when each character is drawn on its own, at a fraction of the cost.
        number = secrets.randbelow(len(_ALPHABET) ** length)
        digits = []
        for _ in range(length):
            number, digit = divmod(number, len(_ALPHABET))
            digits.append(_ALPHABET[digit])
        return prefix + "".join(digits)


class _TextPart:
    """The text of one role (reasoning or content), emitted so that it equals the parsed value exactly.

    The parsed value of a ``text`` field is stripped; its ``region_chunk`` texts are not. Leading
    whitespace is dropped until the first other character, and trailing whitespace is held back until
    more text follows, so the emitted pieces concatenate to the stripped value. The scope of the
    stripping is one region (``per_region``: explicit fields, and every block of the block-based
    protocols), or all the segments of the implicit field together (its value is their concatenation,
    stripped once).
    """

    __slots__ = ("join", "kind", "pending", "per_region", "regions", "started", "strip")

    def __init__(self, kind: str, *, strip: bool, per_region: bool, join: str | None) -> None:
        self.kind = kind
        self.strip = strip
        self.per_region = per_region
        self.join = join  # emitted between the values of two regions (a field with "join")
        self.started = False  # non-whitespace text was emitted in the current scope
        self.pending: list[str] = []  # trailing whitespace held back
        self.regions = 0

    def open(self) -> str:
        """A region opens; returns a separator to emit first (``join``), usually ``""``."""
        separator = self.join if self.join is not None and self.regions else ""
        self.regions += 1
        if self.per_region:
            self.started = False
            self.pending.clear()
        return separator

    def chunk(self, text: str) -> tuple[bool, str]:
        """Returns (whether this is the first text of the scope, the text to emit)."""
        if not self.strip:
            first = not self.started
            self.started = True
            return first, text
        first = False
        if not self.started:
            text = text.lstrip()
            if not text:
                return False, ""
            self.started = first = True
        stripped = text.rstrip()
        if not stripped:
            self.pending.append(text)
            return first, ""
        out = "".join(self.pending) + stripped if self.pending else stripped
        self.pending.clear()
        if len(stripped) < len(text):
            self.pending.append(text[len(stripped) :])
        return first, out

    def close(self) -> bool:
        """A region closes; returns whether its scope emitted any text (a block to end)."""
        started = self.started
        if self.per_region:
            self.pending.clear()
        return started


def _with_text(chunk: Mapping[str, Any], text: str) -> RegionChunk:
    """The ``region_chunk`` event of :meth:`ResponseParser.feed_region`'s ``chunk`` with ``text``."""
    return cast(RegionChunk, {**chunk, "text": text})


# Subclasses written in Python are allowed in the compiled build too (the adapters are meant to be extended).
@mypyc_attr(allow_interpreted_subclasses=True)
class WireAdapter:
    """Base class of the wire adapters: feed it the parser's events, get the protocol's stream chunks.

    Subclasses implement the ``_on_*`` hooks. See :class:`~response_templates.wire.ChatCompletionsAdapter`
    for the arguments shared by all adapters.
    """

    #: Whether reasoning and content are emitted as separate blocks, each stripped on its own (Responses,
    #: Anthropic), or as one string per role (Chat Completions).
    _blocks = True
    #: Text that ends the SSE stream after the last chunk (``data: [DONE]`` for Chat Completions).
    sse_terminator = ""

    def __init__(
        self,
        template: Mapping[str, Any] | ResponseTemplate | str,
        *,
        tools: Sequence[Mapping[str, Any] | Callable[..., Any]] | None = None,
        model: str = "",
        fields: Mapping[str, str] | None = None,
        tool_streaming: str = "eager",
        arguments: Literal["stream", "buffered"] = "stream",
        seed: int | None = None,
        created: int | None = None,
    ) -> None:
        compiled = load_template(template)
        unknown = sorted(set(fields or {}) - set(DEFAULT_FIELDS))
        if unknown:
            raise ValueError(f"fields: unknown role(s) {unknown}; the roles are {sorted(DEFAULT_FIELDS)}")
        if tool_streaming not in ("eager", "at_close"):
            raise ValueError(f"tool_streaming must be 'eager' or 'at_close', got {tool_streaming!r}")
        if arguments not in ARGUMENT_MODES:
            raise ValueError(f"arguments must be one of {ARGUMENT_MODES}, got {arguments!r}")
        roles = {**DEFAULT_FIELDS, **(fields or {})}
        self.template = compiled
        # The constant part of every chunk, for the protocols that repeat one (built on first use, and
        # again after one of the attributes it holds changes).
        self._head: Chunk | None = None
        self._id = ""
        self._model = model
        self._created = int(time.time()) if created is None else created
        self._ids = _Ids(seed)
        self._parts: dict[str, _TextPart] = {}
        for kind in ("reasoning", "content"):
            spec = compiled.by_name.get(roles[kind])
            if spec is None:
                continue
            if spec.parser.name != "text":
                raise TemplateError(
                    f"the wire adapters send the {kind} as text, but the field uses the {spec.parser.name!r} "
                    "content parser; map another field with fields=",
                    field=spec.name,
                    key="content",
                )
            per_region = self._blocks or not spec.implicit
            self._parts[spec.name] = _TextPart(
                kind,
                strip=bool(spec.content_args.get("strip", True)),
                per_region=per_region,
                join=None if self._blocks else spec.join,
            )
        for spec in compiled.fields:
            # A field that feeds 'into' a text field (a wrapper of the implicit content) streams as it.
            if spec.into is not None and spec.into in self._parts and spec.parser.name == "text":
                self._parts[spec.name] = self._parts[spec.into]
        self.tool_field = roles["tool_calls"]
        # Fields routed by a JSON envelope (extension 'json-envelope'): their value is known when the region
        # closes, as {message key: value}; the text and calls in it are sent then, whole.
        self._routed: frozenset[str] = frozenset(
            spec.name for spec in compiled.fields if spec.route is not None
        )
        self._text_keys: dict[str, str] = {roles["content"]: "content", roles["reasoning"]: "reasoning"}
        self.tool_calls = ToolCallStreamer(
            compiled,
            tools=tools,
            field=self.tool_field,
            eager=tool_streaming == "eager",
            arguments=arguments,
        )
        # The text of failed regions kept by the parser (``errors="keep"``: ``unparsed`` events) is sent
        # as content: through the content field's part when the protocol has one string of content (so
        # that the text sent equals the message's content), else as a block of its own.
        content = self._parts.get(roles["content"])
        if content is not None and not content.per_region:
            self._unparsed = content
        else:
            self._unparsed = _TextPart("content", strip=False, per_region=True, join=None)
        self._out: list[Chunk] = []
        # The fields whose region_chunk events feed() hands straight to _text_chunk or _tool_chunk (plain
        # data: a table of bound methods would make every adapter a reference cycle).
        self._text_fields: dict[str, _TextPart] = {
            name: part for name, part in self._parts.items() if name not in self.tool_calls.fields
        }
        self._tool_fields: frozenset[str] = self.tool_calls.fields
        # Block protocols and interleaved regions (extension 'interleaved'): the text part whose region is
        # open, and the one whose region a nested region (a tool call in the reasoning) interrupted.
        self._active: _TextPart | None = None
        self._interrupted: _TextPart | None = None
        self._started = False
        self._finished = False
        # finish() is translating finalize()'s events: a call that fails then is one the end of the output
        # cut off; and whether the tool-call region that just closed left such a call (its kept text is
        # then not sent again as content).
        self._ending = False
        self._cut_region = False
        self.finish_reason: str | None = None
        self.usage: Usage | None = None

    # The attributes every chunk repeats (plain properties: setting one drops the prepared constant part
    # of the chunks, which the next chunk builds again).
    @property
    def id(self) -> str:
        """The id of the stream (the ``id`` of every chunk, or of the message or response)."""
        return self._id

    @id.setter
    def id(self, value: str) -> None:
        self._id = value
        self._head = None

    @property
    def model(self) -> str:
        """The ``model`` the chunks name."""
        return self._model

    @model.setter
    def model(self, value: str) -> None:
        self._model = value
        self._head = None

    @property
    def created(self) -> int:
        """The creation timestamp the chunks carry (where the protocol has one)."""
        return self._created

    @created.setter
    def created(self, value: int) -> None:
        self._created = value
        self._head = None

    @property
    def errors(self) -> list[str]:
        """Tool calls that could not be completed, or produced nothing (see ``ToolCallStreamer.errors``)."""
        return self.tool_calls.errors

    # -- public API ------------------------------------------------------------------------------------

    def feed(self, events: Iterable[ParserEvent]) -> list[Chunk]:
        """Translate parser events (``initial_events``, then each ``feed``'s events) into stream chunks.

        The first call also returns the chunks that open the stream, so call it with
        ``parser.initial_events`` first, even when they are empty.
        """
        if self._finished:
            raise ParserStateError("feed() after finish(): one adapter follows one generation")
        out: list[Chunk] = []
        self._out = out
        if not self._started:
            self._started = True
            self._on_start()
        text_fields = self._text_fields
        tool_fields = self._tool_fields
        for event in events:
            # Most events are the region_chunk of a text or a tool-call field: straight to its handler
            # (what _event does with them), unless a text region resumes after an interruption.
            if event["type"] == "region_chunk" and self._interrupted is None:
                field = event.get("field")
                part = text_fields.get(field) if field is not None else None
                if part is not None:
                    self._text_chunk(part, event)
                    continue
                if field in tool_fields:
                    self._tool_chunk(event)
                    continue
            self._event(event, False)
        return out

    def step(self, parser: ResponseParser, piece: str | bytes | Sequence[int]) -> list[Chunk]:
        """Feed a piece of model output to ``parser`` and translate its events: the same chunks as
        ``self.feed(parser.feed(piece))``, and the same errors, at less cost per piece. A
        :class:`~response_templates.ParseError` of ``parser.feed`` reaches the caller before this adapter
        sees any of the piece's events: translate its ``events`` with :meth:`feed` (as :func:`run_stream`
        does) to go on.

        Most pieces of a long region only continue it; for those no parser event is built
        (:meth:`ResponseParser.feed_region`). Start with ``feed(parser.initial_events)`` as usual.

        >>> import response_templates as rt
        >>> from response_templates.wire import ChatCompletionsAdapter
        >>> template = {"start_anchor": "<|im_start|>assistant\\n", "fields": {"content": {"close": "<|im_end|>"}}}
        >>> parser = rt.ResponseParser(template, prefix="")
        >>> adapter = ChatCompletionsAdapter(template, completion_id="chatcmpl-1", created=0)
        >>> [c["choices"][0]["delta"] for c in adapter.feed(parser.initial_events)]
        [{'role': 'assistant', 'content': ''}]
        >>> [c["choices"][0]["delta"] for p in ("Hel", "lo", "<|im_end|>") for c in adapter.step(parser, p)]
        [{'content': 'Hel'}, {'content': 'lo'}]
        """
        if self._started and not self._finished and self._interrupted is None and type(piece) is str:
            chunk = parser.feed_region(piece)
            if chunk is not None:
                out: list[Chunk] = []
                self._out = out
                field = chunk["field"]
                part = self._text_fields.get(field)
                if part is not None:
                    if not self._text_fast(part, piece):
                        self._text_general(part, piece)
                elif field in self._tool_fields:
                    if not self._tool_fast(piece):
                        self._tool_process(_with_text(chunk, piece))
                else:
                    self._event(_with_text(chunk, piece), False)
                return out
        return self.feed(parser.feed(piece))

    def finish(
        self,
        events: Iterable[ParserEvent] = (),
        *,
        finish_reason: str = "stop",
        usage: Usage | None = None,
    ) -> list[Chunk]:
        """Translate the events of ``parser.finalize()`` and end the stream.

        ``finish_reason`` is the engine's: ``"stop"`` (end of sequence or a stop string) or ``"length"``
        (the token limit). With ``"length"`` a tool call that only the end of the stream closed is not
        reported as complete. ``usage`` adds token counts where the protocol has them.
        """
        if self._finished:
            raise ParserStateError("finish() called twice: one adapter follows one generation")
        if finish_reason not in FINISH_REASONS:
            raise ValueError(f"finish_reason must be one of {FINISH_REASONS}, got {finish_reason!r}")
        out: list[Chunk] = []
        self._out = out
        if not self._started:
            self._started = True
            self._on_start()
        truncated = finish_reason == "length"
        self._ending = True
        for event in events:
            self._event(event, truncated)
        for call_event in self.tool_calls.finish((), truncated=truncated):
            self._on_call(call_event)
        self.finish_reason = finish_reason
        self.usage = usage
        self._finished = True
        self._on_finish(finish_reason, usage)
        return out

    def final(self) -> dict[str, Any]:
        """The non-streamed object of the protocol, equal to what its SDK reassembles from the stream."""
        if not self._finished:
            raise ParserStateError("final() before finish()")
        return self._final()

    def encode(self, chunks: Iterable[Chunk]) -> str:
        """The chunks as server-sent events (``sse_terminator`` goes after the last one)."""
        return "".join(f"event: {c['type']}\ndata: {dumps_chunk(c)}\n\n" for c in chunks)

    # -- dispatch --------------------------------------------------------------------------------------

    def _event(self, event: ParserEvent, cut_off: bool) -> None:
        if event["type"] == "unparsed":
            if self._cut_region and event["field"] in self.tool_calls.fields:
                # The text of a tool-call region the end of the output cut off, whose call was already
                # sent: that call, marked incomplete, is what stands for it (sent once, not twice).
                self._cut_region = False
                return
            self._on_unparsed(event)
            return
        field = event.get("field")  # every parser event has one; events of other sources may not
        if event["type"] == "region_open" and self._active is not None and self._blocks:
            # A region opens inside a text region (interleaved): its block ends here, a new one starts
            # when its text resumes.
            active, self._active = self._active, None
            self._interrupted = active
            if active.close():
                self._on_text_end(active.kind, False)
        if field in self.tool_calls.fields:
            ending = self._ending
            if ending and event["type"] == "region_close":
                self._cut_region = False
            for call_event in self.tool_calls.process(event, cut_off=cut_off, at_end=ending):
                if ending and call_event["type"] == "tool_call_end" and call_event.get("cut_off"):
                    self._cut_region = True
                self._on_call(call_event)
            return
        if field in self._routed:
            value = event.get("value") if event["type"] == "region_close" else None
            if isinstance(value, dict):
                self._routed_value(value)
            return
        part = self._parts.get(field) if field is not None else None
        if part is None:
            return
        if part is self._interrupted:
            self._interrupted = None
            if event["type"] == "region_close":
                return  # its last block already ended
            part.open()  # the text resumes in a new block
            self._active = part
        if event["type"] == "region_chunk":
            first, text = part.chunk(event["text"])
            if first:
                self._on_text_start(part.kind)
            if text:
                self._on_text_delta(part.kind, text)
        elif event["type"] == "region_open":
            self._active = part
            separator = part.open()
            if separator:
                self._on_text_delta(part.kind, separator)
        elif event["type"] == "region_close":
            self._active = None
            if part.close() and part.per_region:
                self._on_text_end(part.kind, cut_off)

    def _routed_value(self, value: Mapping[str, Any]) -> None:
        """A routed region closed: send its text and its calls, in the order of its keys."""
        for key, item in value.items():
            if key == self.tool_field:
                for call_event in self.tool_calls.whole_calls(item):
                    self._on_call(call_event)
                continue
            kind = self._text_keys.get(key)
            if kind is None or not isinstance(item, str) or not item:
                continue
            part = _TextPart(kind, strip=False, per_region=True, join=None)
            part.open()
            first, text = part.chunk(item)
            if first:
                self._on_text_start(kind)
            if text:
                self._on_text_delta(kind, text)
            if part.close():
                self._on_text_end(kind, False)

    def _text_chunk(self, part: _TextPart, event: RegionChunk) -> None:
        """A ``region_chunk`` of a text field (no interrupted region): what :meth:`_event` does with it."""
        text = event["text"]
        if not self._text_fast(part, text):
            self._text_general(part, text)

    def _text_general(self, part: _TextPart, text: str) -> None:
        """The text of a text field's ``region_chunk`` through the stripping, to the text hooks."""
        first, text = part.chunk(text)
        if first:
            self._on_text_start(part.kind)
        if text:
            self._on_text_delta(part.kind, text)

    def _text_fast(self, part: _TextPart, text: str) -> bool:
        """The text of a text field's ``region_chunk`` when the stripping leaves it as it is: handle it and
        return True, or do nothing and return False (then :meth:`_text_general` handles it).

        Once the scope's text started, with no whitespace held back, a text that does not end in
        whitespace is what :meth:`_TextPart.chunk` returns for it (and the part's state stays as it is),
        so it goes to :meth:`_on_text_delta` as it is. Subclasses may send it their own way."""
        if not part.started or part.pending or not text or text[-1].isspace():
            return False
        self._on_text_delta(part.kind, text)
        return True

    def _tool_chunk(self, event: RegionChunk) -> None:
        """The handler of the ``region_chunk`` events of the tool-call fields."""
        if not self._tool_fast(event["text"]):
            self._tool_process(event)

    def _tool_fast(self, text: str) -> bool:
        """The text of a tool-call field's ``region_chunk`` when it continues a string argument verbatim
        (:meth:`ToolCallStreamer.stream_text`): handle it and return True, or read nothing and return
        False (then the event goes to :meth:`_tool_process`)."""
        calls = self.tool_calls
        arguments = calls.stream_text(text)
        if arguments is None:
            return False
        if arguments:
            index = calls.streaming_index
            self._on_call({"type": "tool_call_delta", "index": index, "arguments": arguments, "whole": False})
        return True

    def _tool_process(self, event: RegionChunk) -> None:
        """A tool-call field's ``region_chunk`` through the tool-call streamer."""
        for call_event in self.tool_calls.process(event):
            self._on_call(call_event)

    def _on_unparsed(self, event: Unparsed) -> None:
        """The raw text of a region that failed, kept by the parser: sent as content, where users see it.

        In the block protocols (and without an implicit content field) it is a block of its own; the
        region it came from has closed, so no other block is open then."""
        part = self._unparsed
        if part.per_region:
            part.open()
        first, text = part.chunk(event["text"])
        if first:
            self._on_text_start(part.kind)
        if text:
            self._on_text_delta(part.kind, text)
        if part.per_region and part.close():
            self._on_text_end(part.kind, False)

    # -- hooks -----------------------------------------------------------------------------------------

    def _on_start(self) -> None:
        raise NotImplementedError

    def _on_text_start(self, kind: str) -> None:
        """A block of ``kind`` ("reasoning" or "content") starts (block protocols)."""

    def _on_text_delta(self, kind: str, text: str) -> None:
        raise NotImplementedError

    def _on_text_end(self, kind: str, cut_off: bool) -> None:
        """The current block of ``kind`` ends (block protocols)."""

    def _on_call(self, event: ToolCallEvent) -> None:
        raise NotImplementedError

    def _on_finish(self, finish_reason: str, usage: Usage | None) -> None:
        raise NotImplementedError

    def _final(self) -> dict[str, Any]:
        raise NotImplementedError


def dumps_chunk(chunk: Chunk) -> str:
    """A chunk as compact JSON, the way it goes on the wire: ``json.dumps(chunk, separators=(",", ":"))``."""
    return _dumps_compact(chunk)


_dumps_compact = json_dumper(separators=(",", ":"))


def partial_input(text: str) -> Any:
    """What a client's partial-JSON parser makes of an incomplete arguments text (the anthropic SDK's
    jiter, when installed); ``{}`` otherwise."""
    if not text:
        return {}
    try:
        from jiter import from_json
    except ImportError:  # pragma: no cover - jiter comes with the anthropic and openai SDKs
        return {}
    try:
        return from_json(text.encode("utf-8", "surrogatepass"), partial_mode=True)
    except ValueError:
        return {}
