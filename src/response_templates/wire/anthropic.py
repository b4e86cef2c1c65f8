"""Anthropic Messages streaming events and the ``message`` object."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

from ..compiled import mypyc_attr
from ..events import ToolCallEvent
from ..jsonlex.canonical import dumps_arguments
from ..language import ResponseTemplate
from ._base import Usage, WireAdapter, partial_input

__all__ = ["AnthropicMessagesAdapter"]


def tool_input(arguments: Any) -> dict[str, Any]:
    """A call's arguments as a ``tool_use`` block's ``input`` object.

    Anthropic's ``input`` is always an object. Arguments that are not one (rare: a model that wrote them
    as a string, or a content parser with ``allow_non_json``) are decoded when they are a JSON object in a
    string, and otherwise wrapped as ``{"value": arguments}``.

    >>> tool_input({"q": 1}), tool_input('{"q": 1}'), tool_input("ls -la")
    ({'q': 1}, {'q': 1}, {'value': 'ls -la'})
    """
    if isinstance(arguments, dict):
        return arguments
    if isinstance(arguments, str):
        try:
            decoded = json.loads(arguments)
        except ValueError:
            decoded = None
        if isinstance(decoded, dict):
            return decoded
    if arguments is None:
        return {}
    return {"value": arguments}


@mypyc_attr(allow_interpreted_subclasses=True)
class AnthropicMessagesAdapter(WireAdapter):
    """Turn the parser's events into Anthropic Messages stream events.

    Reasoning becomes ``thinking`` blocks (with an empty ``signature``: there is none to give), text
    ``text`` blocks, tool calls ``tool_use`` blocks whose input streams as ``input_json_delta``; blocks are
    numbered in order of appearance, and text before and after a tool call makes two text blocks, each
    its region's text, stripped. Every ``partial_json`` keeps the input sent so far a prefix of a JSON
    object (the SDK parses it after each delta), and a block's ``partial_json`` texts concatenate to a
    JSON object, also for a call that failed while the output went on (its text is closed, or ``{}``);
    for a call the end of the output cut off they stay the start of one, as the model wrote it, and the
    block's ``input`` holds only the members the model finished. ``stop_reason`` is
    ``max_tokens`` for ``finish_reason="length"``, else ``tool_use`` when a tool call completed, else
    ``end_turn``.

    Arguments as for :class:`~response_templates.wire.ChatCompletionsAdapter`, plus ``message_id``
    (default: a generated ``msg_...``).

    >>> import response_templates as rt
    >>> from response_templates.wire import AnthropicMessagesAdapter
    >>> template = {"start_anchor": "<|im_start|>assistant\\n", "fields": {
    ...     "tool_calls": {"open": "<tool_call>", "close": "</tool_call>", "repeats": True, "content": "json",
    ...                    "transform": {"type": "function", "function": "{content}"}},
    ...     "content": {"close": "<|im_end|>"}}}
    >>> parser = rt.ResponseParser(template, prefix="")
    >>> adapter = AnthropicMessagesAdapter(template, model="qwen3", seed=1)
    >>> events = adapter.feed(parser.initial_events)
    >>> events += adapter.feed(parser.feed('On it.<tool_call>{"name": "f", "arguments": {"x": 1}}</tool_call>'))
    >>> events += adapter.finish(parser.finalize()[1])
    >>> [e["type"] for e in events]  # doctest: +NORMALIZE_WHITESPACE
    ['message_start', 'content_block_start', 'content_block_delta', 'content_block_stop',
     'content_block_start', 'content_block_delta', 'content_block_stop', 'message_delta', 'message_stop']
    >>> adapter.final()["content"]  # doctest: +NORMALIZE_WHITESPACE, +ELLIPSIS
    [{'type': 'text', 'text': 'On it.'}, {'type': 'tool_use', 'id': 'toolu_...', 'name': 'f', 'input': {'x': 1}}]
    """

    def __init__(
        self,
        template: Mapping[str, Any] | ResponseTemplate | str,
        *,
        tools: Sequence[Mapping[str, Any] | Callable[..., Any]] | None = None,
        model: str = "",
        message_id: str | None = None,
        fields: Mapping[str, str] | None = None,
        tool_streaming: str = "eager",
        arguments: Literal["stream", "buffered"] = "stream",
        seed: int | None = None,
    ) -> None:
        super().__init__(
            template,
            tools=tools,
            model=model,
            fields=fields,
            tool_streaming=tool_streaming,
            arguments=arguments,
            seed=seed,
        )
        self.id = message_id or self._ids.make("msg_")
        self._content: list[dict[str, Any]] = []  # the final blocks
        self._text: list[str] = []  # text of the open text/thinking block
        self._json: dict[int, list[str]] = {}  # call index -> partial_json sent
        self._block: dict[int, int] = {}  # call index -> block index

    # -- hooks -------------------------------------------------------------------------------------------

    def _on_start(self) -> None:
        message: dict[str, Any] = {
            "id": self.id,
            "type": "message",
            "role": "assistant",
            "model": self.model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": 0, "output_tokens": 0},
        }
        self._out.append({"type": "message_start", "message": message})

    def _on_text_start(self, kind: str) -> None:
        block = (
            {"type": "thinking", "thinking": "", "signature": ""}
            if kind == "reasoning"
            else {"type": "text", "text": ""}
        )
        self._content.append(block)
        self._text = []
        self._out.append(
            {"type": "content_block_start", "index": len(self._content) - 1, "content_block": dict(block)}
        )

    def _on_text_delta(self, kind: str, text: str) -> None:
        self._text.append(text)
        delta = (
            {"type": "thinking_delta", "thinking": text}
            if kind == "reasoning"
            else {"type": "text_delta", "text": text}
        )
        self._out.append({"type": "content_block_delta", "index": len(self._content) - 1, "delta": delta})

    def _on_text_end(self, kind: str, cut_off: bool) -> None:
        block = self._content[-1]
        block["thinking" if kind == "reasoning" else "text"] = "".join(self._text)
        self._out.append({"type": "content_block_stop", "index": len(self._content) - 1})

    def _partial_json(self, index: int, text: str) -> None:
        self._json[index].append(text)
        block = self._block[index]
        self._out.append(
            {
                "type": "content_block_delta",
                "index": block,
                "delta": {"type": "input_json_delta", "partial_json": text},
            }
        )

    def _on_call(self, event: ToolCallEvent) -> None:
        index = event["index"]
        if event["type"] == "tool_call_start":
            block = {
                "type": "tool_use",
                "id": event["id"] or self._ids.make("toolu_"),
                "name": event["name"],
                "input": {},
            }
            self._content.append(block)
            self._block[index] = len(self._content) - 1
            self._json[index] = []
            self._out.append(
                {"type": "content_block_start", "index": len(self._content) - 1, "content_block": dict(block)}
            )
        elif event["type"] == "tool_call_delta":
            if not event["whole"]:  # streamed canonical JSON: always a prefix of the arguments object
                self._partial_json(index, event["arguments"])
        elif event["type"] == "tool_call_end":
            block_index = self._block[index]
            block = self._content[block_index]
            sent = "".join(self._json[index])
            if event["complete"]:
                value = tool_input(event["input"])
                if not sent:
                    self._partial_json(index, dumps_arguments(value))
                block["input"] = value
            elif event.get("cut_off") and not sent and event["arguments"]:
                # Cut off after its region parsed, its arguments sent whole (valid JSON: the model
                # finished every value); incomplete all the same.
                value = tool_input(json.loads(event["arguments"]))
                self._partial_json(index, dumps_arguments(value))
                block["input"] = value
            else:
                # A call that failed while the output went on: the streamer closed the text sent (its
                # last delta), and one whose arguments were never streamed (sent whole, or held back)
                # gets "{}". A call the end of the output cut off keeps the text sent, unclosed: its
                # input is what the SDK's partial parse reads from it, the members the model finished.
                if not sent and not event.get("cut_off"):
                    sent = "{}"
                    self._partial_json(index, sent)
                block["input"] = partial_input(sent)
            self._out.append({"type": "content_block_stop", "index": block_index})

    def _stop_reason(self, finish_reason: str) -> str:
        if finish_reason == "length":
            return "max_tokens"
        return "tool_use" if self.tool_calls.completed else "end_turn"

    def _on_finish(self, finish_reason: str, usage: Usage | None) -> None:
        counts: dict[str, Any] = {"output_tokens": usage.completion_tokens if usage is not None else 0}
        if usage is not None:
            counts["input_tokens"] = usage.prompt_tokens
        self._out.append(
            {
                "type": "message_delta",
                "delta": {"stop_reason": self._stop_reason(finish_reason), "stop_sequence": None},
                "usage": counts,
            }
        )
        self._out.append({"type": "message_stop"})

    def _final(self) -> dict[str, Any]:
        assert self.finish_reason is not None
        usage = self.usage
        return {
            "id": self.id,
            "type": "message",
            "role": "assistant",
            "model": self.model,
            "content": [dict(block) for block in self._content],
            "stop_reason": self._stop_reason(self.finish_reason),
            "stop_sequence": None,
            "usage": {
                "input_tokens": usage.prompt_tokens if usage is not None else 0,
                "output_tokens": usage.completion_tokens if usage is not None else 0,
            },
        }
