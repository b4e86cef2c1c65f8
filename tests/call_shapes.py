"""Tool-call templates in both shapes, shared by the tests of the call shape (``calls``, the tool-call
streamer): a field whose open delimiter captures the tool's name, and the model's own JSON."""

from __future__ import annotations

from typing import Any

ANCHOR = "<|assistant|>"
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "f",
            "parameters": {
                "type": "object",
                "properties": {
                    "n": {"type": "integer"},
                    "ok": {"type": "boolean"},
                    "s": {"type": "string"},
                },
            },
        },
    }
]
PARAMS = {"f": TOOLS[0]["function"]["parameters"]["properties"]}

#: Transforms of a field whose open delimiter captures the tool's name; the content is the arguments.
CAPTURE_TRANSFORMS = {
    "chat": {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}},
    "bare": {"name": "{name}", "arguments": "{content}"},
    "bare-parameters": {"name": "{name}", "parameters": "{content}"},
    "chat-parameters": {"type": "function", "function": {"name": "{name}", "parameters": "{content}"}},
    "bare-with-id": {"id": "{name}", "name": "{name}", "arguments": "{content}"},
}
ARGUMENTS_KEY = {
    "chat": "arguments",
    "bare": "arguments",
    "bare-parameters": "parameters",
    "chat-parameters": "parameters",
    "bare-with-id": "arguments",
}


def capture_template(transform: Any, *, repeats: bool = False) -> dict[str, Any]:
    """A template whose ``<call name=...>`` region holds the JSON arguments, shaped by ``transform``."""
    field: dict[str, Any] = {
        "open_pattern": "<call name=(?P<name>\\w+)>",
        "close": "</call>",
        "content": "json",
        "transform": transform,
    }
    if repeats:
        field["repeats"] = True
    return {"start_anchor": ANCHOR, "fields": {"tool_calls": field}}


#: The model writes the whole call as JSON (no transform): the bare shape, with either arguments key.
JSON_TEMPLATE = {
    "start_anchor": ANCHOR,
    "fields": {
        "tool_calls": {"open": "<tool_call>", "close": "</tool_call>", "repeats": True, "content": "json"}
    },
}

WRITTEN = '{"n": "3", "ok": "true", "s": "7"}'
TYPED = {"n": 3, "ok": True, "s": "7"}
