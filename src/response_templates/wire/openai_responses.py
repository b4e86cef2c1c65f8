"""OpenAI Responses API streaming events and the ``response`` object."""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

from ..compiled import mypyc_attr
from ..events import ToolCallEvent
from ..language import ResponseTemplate
from ._base import Usage, WireAdapter

__all__ = ["ResponsesAdapter"]


@mypyc_attr(allow_interpreted_subclasses=True)
class ResponsesAdapter(WireAdapter):
    """Turn the parser's events into OpenAI Responses API stream events.

    Every output is an *item*, numbered in order of appearance: reasoning is a ``reasoning`` item with one
    ``reasoning_text`` part, text a ``message`` item with one ``output_text`` part, and each tool call a
    ``function_call`` item whose arguments stream as ``response.function_call_arguments.delta``. Text before
    and after a tool call becomes two message items (an item cannot be reopened once a later one started);
    each item's text is its region's text, stripped. The stream starts with ``response.created`` and
    ``response.in_progress`` and ends with ``response.completed``, or ``response.incomplete`` (reason
    ``max_output_tokens``) when ``finish_reason="length"``; items that the end of a truncated stream
    closed then have ``status: "incomplete"``. A call the end of the output cut off keeps the argument
    text sent as it is, unclosed (docs/wire.md, "A call cut off by the end of the output").

    Arguments as for :class:`~response_templates.wire.ChatCompletionsAdapter`, plus ``response_id``
    (default: a generated ``resp_...``) and ``response_fields``: extra keys of the response object
    (``instructions``, ``tools``, ``temperature``, ...), copied into every event that carries it.

    >>> import response_templates as rt
    >>> from response_templates.wire import ResponsesAdapter
    >>> template = {"start_anchor": "<|im_start|>assistant\\n", "fields": {
    ...     "reasoning_content": {"open": "<think>", "close": "</think>"},
    ...     "tool_calls": {"open": "<tool_call>", "close": "</tool_call>", "repeats": True, "content": "json",
    ...                    "transform": {"type": "function", "function": "{content}"}},
    ...     "content": {"close": "<|im_end|>"}}}
    >>> parser = rt.ResponseParser(template, prefix="")
    >>> adapter = ResponsesAdapter(template, model="qwen3", created=0, seed=1)
    >>> events = adapter.feed(parser.initial_events)
    >>> events += adapter.feed(parser.feed('<think>Paris.</think><tool_call>{"name": "f", "arguments": {}}'))
    >>> events += adapter.feed(parser.feed("</tool_call><|im_end|>"))
    >>> events += adapter.finish(parser.finalize()[1])
    >>> [e["type"].removeprefix("response.") for e in events]  # doctest: +NORMALIZE_WHITESPACE
    ['created', 'in_progress', 'output_item.added', 'content_part.added', 'reasoning_text.delta',
     'reasoning_text.done', 'content_part.done', 'output_item.done', 'output_item.added',
     'function_call_arguments.delta', 'function_call_arguments.done', 'output_item.done', 'completed']
    >>> [item["type"] for item in adapter.final()["output"]]
    ['reasoning', 'function_call']
    """

    def __init__(
        self,
        template: Mapping[str, Any] | ResponseTemplate | str,
        *,
        tools: Sequence[Mapping[str, Any] | Callable[..., Any]] | None = None,
        model: str = "",
        response_id: str | None = None,
        created: int | None = None,
        response_fields: Mapping[str, Any] | None = None,
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
            created=created,
        )
        self.id = response_id or self._ids.make("resp_")
        self._extra = dict(response_fields or {})
        self._seq = 0
        self._output: list[dict[str, Any]] = []  # finished items, in order
        self._added = 0  # items added so far (the next output_index)
        self._item: dict[str, Any] | None = None  # the open text item
        self._text: list[str] = []
        self._calls: dict[int, dict[str, Any]] = {}  # call index -> its open function_call item
        self._call_args: dict[int, list[str]] = {}

    # -- helpers ---------------------------------------------------------------------------------------

    def _emit(self, kind: str, **fields: Any) -> None:
        self._out.append({"type": kind, **fields, "sequence_number": self._seq})
        self._seq += 1

    def _response(
        self, status: str, output: list[dict[str, Any]], usage: Usage | None = None
    ) -> dict[str, Any]:
        response: dict[str, Any] = {
            "id": self.id,
            "object": "response",
            "created_at": self.created,
            "status": status,
            "model": self.model,
            "output": output,
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
            "error": None,
            "incomplete_details": {"reason": "max_output_tokens"} if status == "incomplete" else None,
            "usage": None,
        }
        response.update(copy.deepcopy(self._extra))
        if usage is not None:
            response["usage"] = {
                "input_tokens": usage.prompt_tokens,
                "input_tokens_details": {"cached_tokens": usage.cached_tokens or 0},
                "output_tokens": usage.completion_tokens,
                "output_tokens_details": {"reasoning_tokens": usage.reasoning_tokens or 0},
                "total_tokens": usage.total_tokens,
            }
        return response

    # -- hooks -------------------------------------------------------------------------------------------

    def _on_start(self) -> None:
        self._emit("response.created", response=self._response("in_progress", []))
        self._emit("response.in_progress", response=self._response("in_progress", []))

    def _on_text_start(self, kind: str) -> None:
        index = self._added
        self._added += 1
        if kind == "reasoning":
            item = {
                "id": self._ids.make("rs_"),
                "type": "reasoning",
                "summary": [],
                "content": [],
                "status": "in_progress",
            }
            part: dict[str, Any] = {"type": "reasoning_text", "text": ""}
        else:
            item = {
                "id": self._ids.make("msg_"),
                "type": "message",
                "role": "assistant",
                "status": "in_progress",
                "content": [],
            }
            part = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
        self._item = {"index": index, "kind": kind, "item": item, "part": part}
        self._text = []
        self._emit("response.output_item.added", output_index=index, item=copy.deepcopy(item))
        self._emit(
            "response.content_part.added",
            item_id=item["id"],
            output_index=index,
            content_index=0,
            part=dict(part),
        )

    def _on_text_delta(self, kind: str, text: str) -> None:
        state = self._item
        assert state is not None
        self._text.append(text)
        where = {"item_id": state["item"]["id"], "output_index": state["index"], "content_index": 0}
        if kind == "reasoning":
            self._emit("response.reasoning_text.delta", **where, delta=text)
        else:
            self._emit("response.output_text.delta", **where, delta=text, logprobs=[])

    def _on_text_end(self, kind: str, cut_off: bool) -> None:
        state = self._item
        assert state is not None
        self._item = None
        text = "".join(self._text)
        item, part = state["item"], {**state["part"], "text": text}
        where = {"item_id": item["id"], "output_index": state["index"], "content_index": 0}
        if kind == "reasoning":
            self._emit("response.reasoning_text.done", **where, text=text)
        else:
            self._emit("response.output_text.done", **where, text=text, logprobs=[])
        self._emit("response.content_part.done", **where, part=copy.deepcopy(part))
        done = {**item, "content": [part], "status": "incomplete" if cut_off else "completed"}
        self._output.append(done)
        self._emit("response.output_item.done", output_index=state["index"], item=copy.deepcopy(done))

    def _on_call(self, event: ToolCallEvent) -> None:
        index = event["index"]
        if event["type"] == "tool_call_start":
            item = {
                "id": self._ids.make("fc_"),
                "type": "function_call",
                "call_id": event["id"] or self._ids.make("call_"),
                "name": event["name"],
                "arguments": "",
                "status": "in_progress",
                "output_index": self._added,
            }
            self._added += 1
            self._calls[index] = item
            self._call_args[index] = []
            self._emit("response.output_item.added", output_index=item["output_index"], item=_public(item))
        elif event["type"] == "tool_call_delta":
            item = self._calls[index]
            self._call_args[index].append(event["arguments"])
            self._emit(
                "response.function_call_arguments.delta",
                item_id=item["id"],
                output_index=item["output_index"],
                delta=event["arguments"],
            )
        elif event["type"] == "tool_call_end":
            item = self._calls.pop(index)
            arguments = "".join(self._call_args.pop(index))
            where = {"item_id": item["id"], "output_index": item["output_index"]}
            if event["complete"]:
                self._emit(
                    "response.function_call_arguments.done", **where, name=item["name"], arguments=arguments
                )
            done = {
                **_public(item),
                "arguments": arguments,
                "status": "completed" if event["complete"] else "incomplete",
            }
            self._output.append(done)
            self._emit(
                "response.output_item.done", output_index=item["output_index"], item=copy.deepcopy(done)
            )

    def _on_finish(self, finish_reason: str, usage: Usage | None) -> None:
        status = "incomplete" if finish_reason == "length" else "completed"
        self._emit(f"response.{status}", response=self._response(status, copy.deepcopy(self._output), usage))

    def _final(self) -> dict[str, Any]:
        assert self.finish_reason is not None
        status = "incomplete" if self.finish_reason == "length" else "completed"
        return self._response(status, copy.deepcopy(self._output), self.usage)


def _public(item: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in item.items() if k != "output_index"}
