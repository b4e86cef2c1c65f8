"""Shared by the wire tests (``tests/wire/``): the adapters by protocol, a fixed adapter configuration,
and the comparison of an SDK's reassembled object with the adapter's own."""

from __future__ import annotations

from typing import Any

from response_templates.wire import (
    AnthropicMessagesAdapter,
    ChatCompletionsAdapter,
    ResponsesAdapter,
    Usage,
    WireAdapter,
)

USAGE = Usage(prompt_tokens=20, completion_tokens=40, reasoning_tokens=12)
PROTOCOLS = ("chat", "responses", "anthropic")
ADAPTERS: dict[str, type[WireAdapter]] = {
    "chat": ChatCompletionsAdapter,
    "responses": ResponsesAdapter,
    "anthropic": AnthropicMessagesAdapter,
}


def make_adapter(protocol: str, template: Any, tools: Any = None, **kw: Any) -> WireAdapter:
    fixed: dict[str, Any] = {"model": "Qwen/Qwen3-8B", "seed": 7}
    if protocol != "anthropic":
        fixed["created"] = 1767225600
    return ADAPTERS[protocol](template, tools=tools, **{**fixed, **kw})


def clean(value: Any) -> Any:
    """Drop the keys whose value is None (SDK models add optional fields as None, e.g. ``parsed``) and
    the ``index`` the chat SDK keeps on reassembled tool calls."""
    if isinstance(value, dict):
        return {k: clean(v) for k, v in value.items() if v is not None and k != "index"}
    if isinstance(value, list):
        return [clean(v) for v in value]
    return value


def comparable(protocol: str, value: dict) -> dict:
    value = clean(value)
    if protocol == "chat":
        for choice in value["choices"]:
            choice.pop("index", None)
            if choice["message"].get("content") == "":  # the SDK starts from the first chunk's ""
                del choice["message"]["content"]
    return value
