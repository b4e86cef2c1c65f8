"""OpenAI Chat Completions: ``chat.completion.chunk`` deltas and the ``chat.completion`` object."""

from __future__ import annotations

import json
import json.encoder
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Final, Literal

from ..compiled import mypyc_attr
from ..events import ParserEvent, ToolCallEvent
from ..language import ResponseTemplate
from ._base import Chunk, Usage, WireAdapter, _TextPart, dumps_chunk

__all__ = ["ChatCompletionsAdapter"]

_REASONING_KEYS: Final = {
    "reasoning_content": ("reasoning_content",),
    "reasoning": ("reasoning",),
    "both": ("reasoning_content", "reasoning"),
}


#: What :meth:`ChatCompletionsAdapter.encode` writes chunks with: the constant part it was made for,
#: its keys and the keys of the choice, the id, created, model and choice index it holds, and the text
#: before and after the delta.
_Frame = tuple[Chunk, list[str], list[str], Any, Any, Any, Any, str, str]
#: The delta's place in a frame, and how JSON writes it.
_MARK: Final = "\x00delta\x00"
_MARK_JSON: Final = '"\\u0000delta\\u0000"'
#: The text deltas written from a frame: key -> its JSON, with the opening brace.
_TEXT_KEYS: Final = {key: f'{{"{key}":' for key in ("content", "reasoning_content", "reasoning")}
_CALL_KEYS: Final = ["index", "function"]
_escape: Callable[[str], str] = getattr(json.encoder, "c_encode_basestring_ascii", None) or (
    lambda text: json.dumps(text)
)


def _framed(chunk: Chunk, frame: _Frame) -> str | None:
    """``"data: " + dumps_chunk(chunk) + "\\n\\n"`` from the frame, or None when the chunk is not of a
    shape the frame writes exactly (then it is encoded whole)."""
    _, head_keys, choice_keys, chunk_id, created, model, choice_index, before, after = frame
    try:
        if (
            type(chunk) is not dict
            or list(chunk) != head_keys  # the same keys in the same order: the frame's
            or chunk["id"] is not chunk_id  # the very objects the frame wrote
            or chunk["created"] is not created
            or chunk["model"] is not model
            or chunk["object"] != "chat.completion.chunk"
            or chunk.get("usage", None) is not None
        ):
            return None
        choices = chunk["choices"]
        if type(choices) is not list or len(choices) != 1:
            return None
        choice = choices[0]
        if (
            type(choice) is not dict
            or list(choice) != choice_keys
            or choice["index"] is not choice_index
            or choice["logprobs"] is not None
            or choice["finish_reason"] is not None
        ):
            return None
        delta = choice["delta"]
        if type(delta) is not dict or len(delta) != 1:
            return None
        key, value = next(iter(delta.items()))
        opening = _TEXT_KEYS.get(key)
        if opening is not None:
            return f"{before}{opening}{_escape(value)}}}{after}" if type(value) is str else None
        if key != "tool_calls" or type(value) is not list or len(value) != 1:
            return None
        call = value[0]
        if type(call) is not dict or list(call) != _CALL_KEYS:
            return None
        index, function = call["index"], call["function"]
        if type(index) is not int or type(function) is not dict or len(function) != 1:
            return None
        arguments = function["arguments"]  # the one key, or KeyError
        if type(arguments) is not str:
            return None
    except KeyError:
        return None
    return f'{before}{{"tool_calls":[{{"index":{index},"function":{{"arguments":{_escape(arguments)}}}}}]}}{after}'


@mypyc_attr(allow_interpreted_subclasses=True)
class ChatCompletionsAdapter(WireAdapter):
    """Turn the parser's events into OpenAI ``chat.completion.chunk`` dicts for one choice.

    Args:
        template: the response template the parser uses (dict, JSON or compiled).
        tools: the request's tools, as given to the parser (arguments are typed by them before sending).
        model: the ``model`` of every chunk.
        completion_id: the ``id`` of every chunk (default: a generated ``chatcmpl-...``).
        created: the ``created`` timestamp (default: now).
        reasoning_key: the delta key of the reasoning: ``"reasoning_content"`` (DeepSeek, SGLang,
            llama.cpp), ``"reasoning"`` (vLLM >= 0.16, Ollama, OpenRouter) or ``"both"``.
        choice_index: the ``choices[].index`` (one adapter per choice when ``n > 1``).
        fields: the template fields of the roles ``reasoning``, ``content`` and ``tool_calls``, if they are
            not ``reasoning_content``, ``content`` and ``tool_calls``.
        tool_streaming: ``"eager"`` (announce a call as soon as its name is known and stream its
            arguments) or ``"at_close"`` (send each call whole once its region parsed).
        arguments: ``"stream"`` (default: with ``"eager"``, the arguments are sent as they are written) or
            ``"buffered"`` (the call is announced early, its arguments are sent whole once its region
            parsed). A call that fails is ended with valid JSON either way: the text sent so far, closed
            (``"stream"``), or ``{}`` (nothing was sent); a call the end of the output cut off keeps the
            text sent, unclosed (``""`` when nothing was sent). Either has ``"status": "incomplete"``.
            See docs/wire.md, "A call that does not parse" and "A call cut off by the end of the output".
        include_usage: the request's ``stream_options.include_usage``. ``True``: every chunk carries
            ``"usage": null`` and the stream ends with a chunk holding the usage and no choices (``finish``
            then needs ``usage``); ``False``: no usage chunk, even when ``finish`` gets a usage (the
            non-streamed object still has it); ``None`` (default): a usage chunk when ``finish`` gets a usage.
        seed: makes the generated ids reproducible (tests).

    Feed it ``parser.initial_events`` first (it then also returns the first chunk, with the role), the
    events of every ``parser.feed`` (or pass each piece of output to :meth:`step`, which feeds the parser
    too, at less cost), and end with :meth:`finish` and the events of ``parser.finalize()``.
    :meth:`final` then returns the non-streamed ``chat.completion``; :meth:`encode` writes chunks as SSE.

    >>> import response_templates as rt
    >>> from response_templates.wire import ChatCompletionsAdapter
    >>> template = {"start_anchor": "<|im_start|>assistant\\n", "fields": {
    ...     "reasoning_content": {"open": "<think>", "close": "</think>"},
    ...     "tool_calls": {"open": "<tool_call>", "close": "</tool_call>", "repeats": True, "content": "json",
    ...                    "transform": {"type": "function", "function": "{content}"}},
    ...     "content": {"close": "<|im_end|>"}}}
    >>> parser = rt.ResponseParser(template, prefix="")
    >>> adapter = ChatCompletionsAdapter(template, model="qwen3", completion_id="chatcmpl-1", created=0, seed=1)
    >>> deltas = lambda chunks: [c["choices"][0]["delta"] for c in chunks]
    >>> deltas(adapter.feed(parser.initial_events))
    [{'role': 'assistant', 'content': ''}]
    >>> deltas(adapter.feed(parser.feed('<think>Paris.</think>\\n\\nOK.\\n<tool_call>\\n{"name": "get_weather", ')))
    ... # doctest: +NORMALIZE_WHITESPACE, +ELLIPSIS
    [{'reasoning_content': 'Paris.'}, {'content': 'OK.'},
     {'tool_calls': [{'index': 0, 'id': 'call_...', 'type': 'function',
                      'function': {'name': 'get_weather', 'arguments': ''}}]}]
    >>> deltas(adapter.feed(parser.feed('"arguments": {"city": "Paris"}}\\n</tool_call><|im_end|>')))
    [{'tool_calls': [{'index': 0, 'function': {'arguments': '{"city": "Paris"}'}}]}]
    >>> message, final_events = parser.finalize()
    >>> [c["choices"][0]["finish_reason"] for c in adapter.finish(final_events, finish_reason="stop")]
    ['tool_calls']
    >>> adapter.final()["choices"][0]["message"]  # doctest: +NORMALIZE_WHITESPACE, +ELLIPSIS
    {'role': 'assistant', 'content': 'OK.', 'reasoning_content': 'Paris.',
     'tool_calls': [{'id': 'call_...', 'type': 'function',
                     'function': {'name': 'get_weather', 'arguments': '{"city": "Paris"}'}}]}
    """

    _blocks = False
    sse_terminator = "data: [DONE]\n\n"

    def __init__(
        self,
        template: Mapping[str, Any] | ResponseTemplate | str,
        *,
        tools: Sequence[Mapping[str, Any] | Callable[..., Any]] | None = None,
        model: str = "",
        completion_id: str | None = None,
        created: int | None = None,
        reasoning_key: str = "reasoning_content",
        choice_index: int = 0,
        fields: Mapping[str, str] | None = None,
        tool_streaming: str = "eager",
        arguments: Literal["stream", "buffered"] = "stream",
        include_usage: bool | None = None,
        seed: int | None = None,
    ) -> None:
        if reasoning_key not in _REASONING_KEYS:
            raise ValueError(f"reasoning_key must be one of {sorted(_REASONING_KEYS)}, got {reasoning_key!r}")
        self._choice: dict[str, Any] = {}
        self._choice_index = choice_index
        self._include_usage = include_usage
        super().__init__(
            template,
            tools=tools,
            model=model,
            fields=fields,
            tool_streaming=tool_streaming,
            arguments=arguments,
            seed=seed,
            created=created,
        )
        self.id = completion_id or self._ids.make("chatcmpl-")
        self._reasoning_keys = _REASONING_KEYS[reasoning_key]
        self._reasoning_key = self._reasoning_keys[0] if len(self._reasoning_keys) == 1 else None
        self._content: list[str] = []
        self._reasoning: list[str] = []
        # The shortcuts of _text_chunk and _tool_chunk do what _on_text_delta and _on_call do: not for a
        # subclass that sends text or calls its own way.
        self._short_text = type(self)._on_text_delta is ChatCompletionsAdapter._on_text_delta
        self._short_calls = type(self)._on_call is ChatCompletionsAdapter._on_call
        self._frame: _Frame | None = None  # how encode() writes the usual chunks (see _framed)
        self._calls: list[dict[str, Any]] = []  # the message's tool_calls, as sent
        self._arguments: list[list[str]] = []

    # More attributes every chunk repeats (id, model and created are WireAdapter's).
    @property
    def choice_index(self) -> int:
        """The ``choices[].index`` of every chunk."""
        return self._choice_index

    @choice_index.setter
    def choice_index(self, value: int) -> None:
        self._choice_index = value
        self._head = None

    @property
    def include_usage(self) -> bool | None:
        """The request's ``stream_options.include_usage`` (see the class)."""
        return self._include_usage

    @include_usage.setter
    def include_usage(self, value: bool | None) -> None:
        self._include_usage = value
        self._head = None

    def encode(self, chunks: Iterable[Chunk]) -> str:
        """The chunks as server-sent events (``data: {...}`` lines); end the stream with
        :attr:`sse_terminator` (``data: [DONE]``).

        Each line is ``"data: " + dumps_chunk(chunk) + "\\n\\n"``. A chunk of the usual shapes (one text
        delta, or one argument fragment, with this adapter's constant part, as :meth:`feed` made it) is
        written from a prepared frame around its one varying string, without encoding the rest again;
        any other chunk, or one changed since, is encoded whole.
        """
        frame = self._frame
        if frame is None or frame[0] is not self._head:
            frame = self._frame = self._new_frame()
        if frame is None:  # pragma: no cover - see _new_frame
            return "".join(f"data: {dumps_chunk(c)}\n\n" for c in chunks)
        out = []
        for chunk in chunks:
            text = _framed(chunk, frame)
            out.append(text if text is not None else f"data: {dumps_chunk(chunk)}\n\n")
        return "".join(out)

    def _new_frame(self) -> _Frame | None:
        """The text of every chunk around its delta, for the chunks of the constant part now in use."""
        head = self._head or self._new_head()
        choice = {**self._choice, "delta": _MARK}
        text = f"data: {dumps_chunk({**head, 'choices': [choice]})}\n\n"
        before, mark, after = text.partition(_MARK_JSON)
        if not mark:  # pragma: no cover - the marker is always written as _MARK_JSON
            return None
        return (
            head,
            list(head),
            list(choice),
            head["id"],
            head["created"],
            head["model"],
            choice["index"],
            before,
            after,
        )

    # -- hooks -------------------------------------------------------------------------------------------

    def _new_head(self) -> Chunk:
        """The constant part of every chunk, with its keys in order (``choices`` is replaced), and of
        every choice (``delta`` is replaced)."""
        head: Chunk = {
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": None,
        }
        if self._include_usage:
            head["usage"] = None  # the protocol: null on every chunk but the last one
        self._choice = {"index": self._choice_index, "delta": None, "logprobs": None, "finish_reason": None}
        self._head = head
        return head

    def _new_chunk(self, delta: dict[str, Any]) -> Chunk:
        """A chunk with ``delta`` (no finish reason); appended to the output."""
        chunk = (self._head or self._new_head()).copy()
        choice = self._choice.copy()
        choice["delta"] = delta
        chunk["choices"] = [choice]
        self._out.append(chunk)
        return chunk

    def _chunk(self, delta: dict[str, Any], finish_reason: str | None = None) -> Chunk:
        chunk = self._new_chunk(delta)
        if finish_reason is not None:
            chunk["choices"][0]["finish_reason"] = finish_reason
        return chunk

    def _on_start(self) -> None:
        self._chunk({"role": "assistant", "content": ""})

    def _on_text_delta(self, kind: str, text: str) -> None:
        if kind == "content":
            self._content.append(text)
            self._chunk({"content": text})
        else:
            self._reasoning.append(text)
            self._chunk(dict.fromkeys(self._reasoning_keys, text))

    def _text_fast(self, part: _TextPart, text: str) -> bool:
        # Once the region's text started, what _TextPart.chunk returns is sent as _on_text_delta sends
        # it; text the stripping leaves as it is (nothing held back, no whitespace at its end) is that
        # text itself.
        if not self._short_text:
            return super()._text_fast(part, text)
        if not part.started:
            return False
        if part.pending or not text or text[-1].isspace():
            text = part.chunk(text)[1]
            if not text:
                return True
        chunk = (self._head or self._new_head()).copy()  # _new_chunk, inline
        choice = self._choice.copy()
        if part.kind == "content":
            self._content.append(text)
            choice["delta"] = {"content": text}
        else:
            self._reasoning.append(text)
            key = self._reasoning_key
            choice["delta"] = {key: text} if key is not None else dict.fromkeys(self._reasoning_keys, text)
        chunk["choices"] = [choice]
        self._out.append(chunk)
        return True

    def _tool_fast(self, text: str) -> bool:
        if not self._short_calls:
            return super()._tool_fast(text)
        calls = self.tool_calls
        arguments = calls.stream_text(text)
        if arguments is None:
            return False
        if not arguments:
            return True
        index = calls.streaming_index
        sent = self._arguments[index]
        if sent and sent[0]:  # then the announcement already has arguments, or is not the last chunk
            # What _on_call does with the tool_call_delta then.
            sent.append(arguments)
            chunk = (self._head or self._new_head()).copy()  # _new_chunk, inline
            choice = self._choice.copy()
            choice["delta"] = {"tool_calls": [{"index": index, "function": {"arguments": arguments}}]}
            chunk["choices"] = [choice]
            self._out.append(chunk)
        else:
            self._on_call({"type": "tool_call_delta", "index": index, "arguments": arguments, "whole": False})
        return True

    def _on_call(self, event: ToolCallEvent) -> None:
        index = event["index"]
        if event["type"] == "tool_call_start":
            call_id = event["id"] or self._ids.make("call_")
            function = {"name": event["name"], "arguments": ""}
            self._calls.append({"id": call_id, "type": "function", "function": function})
            self._arguments.append([])
            self._chunk(
                {
                    "tool_calls": [
                        {"index": index, "id": call_id, "type": "function", "function": dict(function)}
                    ]
                }
            )
        elif event["type"] == "tool_call_delta":
            text = event["arguments"]
            self._arguments[index].append(text)
            last = self._out[-1]["choices"][0]["delta"].get("tool_calls") if self._out else None
            if (
                last
                and last[0]["index"] == index
                and "id" in last[0]
                and not last[0]["function"]["arguments"]
            ):
                last[0]["function"]["arguments"] = text  # the first fragment rides on the announcement
            else:
                self._chunk({"tool_calls": [{"index": index, "function": {"arguments": text}}]})
        elif event["type"] == "tool_call_end":
            call = self._calls[index]
            call["function"]["arguments"] = "".join(self._arguments[index])
            if not event["complete"]:
                # The protocol has no way to say so; ours, after the Responses items: "status":
                # "incomplete" on the call, on its last fragment (which the SDK keeps on the call).
                call["status"] = "incomplete"
                last = self._out[-1]["choices"][0]["delta"].get("tool_calls") if self._out else None
                if last and last[0]["index"] == index:
                    last[0]["status"] = "incomplete"
                else:
                    self._chunk(
                        {
                            "tool_calls": [
                                {"index": index, "function": {"arguments": ""}, "status": "incomplete"}
                            ]
                        }
                    )

    def _reason(self, finish_reason: str) -> str:
        if finish_reason == "stop" and self.tool_calls.completed:
            return "tool_calls"
        return finish_reason

    def _usage(self, usage: Usage) -> dict[str, Any]:
        out: dict[str, Any] = {
            "prompt_tokens": usage.prompt_tokens,
            "completion_tokens": usage.completion_tokens,
            "total_tokens": usage.total_tokens,
        }
        if usage.cached_tokens is not None:
            out["prompt_tokens_details"] = {"cached_tokens": usage.cached_tokens}
        if usage.reasoning_tokens is not None:
            out["completion_tokens_details"] = {"reasoning_tokens": usage.reasoning_tokens}
        return out

    def finish(
        self,
        events: Iterable[ParserEvent] = (),
        *,
        finish_reason: str = "stop",
        usage: Usage | None = None,
    ) -> list[Chunk]:
        """See :meth:`WireAdapter.finish`; with ``include_usage=True``, ``usage`` is required."""
        if self.include_usage and usage is None:
            raise ValueError(
                "include_usage=True: the stream must end with the usage chunk, so pass usage= to finish() "
                "(or end the model output with StreamEnd(finish_reason, usage))"
            )
        return super().finish(events, finish_reason=finish_reason, usage=usage)

    def _on_finish(self, finish_reason: str, usage: Usage | None) -> None:
        self._chunk({}, self._reason(finish_reason))
        if usage is not None and self.include_usage is not False:
            chunk = self._chunk({})
            chunk["choices"] = []
            chunk["usage"] = self._usage(usage)

    def _final(self) -> dict[str, Any]:
        content = "".join(self._content)
        message: dict[str, Any] = {"role": "assistant", "content": content or (None if self._calls else "")}
        reasoning = "".join(self._reasoning)
        if reasoning:
            for key in self._reasoning_keys:
                message[key] = reasoning
        if self._calls:
            calls = []
            for c in self._calls:
                call = {"id": c["id"], "type": "function", "function": dict(c["function"])}
                if "status" in c:
                    call["status"] = c["status"]
                calls.append(call)
            message["tool_calls"] = calls
        assert self.finish_reason is not None
        completion: dict[str, Any] = {
            "id": self.id,
            "object": "chat.completion",
            "created": self.created,
            "model": self.model,
            "choices": [
                {
                    "index": self.choice_index,
                    "message": message,
                    "logprobs": None,
                    "finish_reason": self._reason(self.finish_reason),
                }
            ],
        }
        if self.usage is not None:
            completion["usage"] = self._usage(self.usage)
        return completion
