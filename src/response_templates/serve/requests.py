"""Reading the request bodies of the three APIs into one :class:`Generation`, or a :class:`RequestError`.

Each API's messages, content blocks, tool calls and tool results become chat-template messages (the
OpenAI Chat Completions shape that Hugging Face chat templates read: ``role``, ``content`` as a string,
``tool_calls`` with ``arguments`` as an object, ``tool`` messages with ``tool_call_id``), and each API's
tools the ``{"type": "function", "function": {...}}`` shape. Nothing here does I/O.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "API",
    "Generation",
    "RequestError",
    "read_chat",
    "read_messages",
    "read_request",
    "read_responses",
]

#: The three APIs: OpenAI Chat Completions, OpenAI Responses, Anthropic Messages.
API = Literal["chat", "responses", "messages"]


class RequestError(ValueError):
    """A request the server refuses with a 400: ``message`` says why, ``param`` names the field."""

    def __init__(self, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.param = param


@dataclass
class Generation:
    """One request, whatever API it came in: what to render, what to ask upstream, how to answer."""

    api: API
    model: str | None
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] = field(default_factory=list)
    tool_choice: Any = "auto"  # "auto", "none", "required" or {"type": "function", "function": {"name"}}
    parallel_tool_calls: bool = True
    stream: bool = False
    include_usage: bool | None = None  # Chat Completions' stream_options.include_usage
    max_tokens: int | None = None
    sampling: dict[str, Any] = field(default_factory=dict)  # passed upstream as they are
    chat_template_kwargs: dict[str, Any] = field(default_factory=dict)
    echo: dict[str, Any] = field(default_factory=dict)  # request fields the answer repeats (Responses)

    @property
    def forced_tool(self) -> bool:
        """Whether the request forces a tool call (``required`` or a named tool)."""
        return self.tool_choice == "required" or isinstance(self.tool_choice, dict)


# ------------------------------------------------------------------------------------------- helpers


def _object(value: Any, param: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise RequestError(f"'{param}' must be an object", param)
    return value


def _list(value: Any, param: str) -> list[Any]:
    if not isinstance(value, list):
        raise RequestError(f"'{param}' must be an array", param)
    return value


def _string(value: Any, param: str) -> str:
    if not isinstance(value, str):
        raise RequestError(f"'{param}' must be a string", param)
    return value


def _optional(body: Mapping[str, Any], key: str, kind: type | tuple[type, ...], what: str) -> Any:
    value = body.get(key)
    if value is None:
        return None
    if not isinstance(value, kind) or (isinstance(value, bool) and bool not in _types(kind)):
        raise RequestError(f"'{key}' must be {what}", key)
    return value


def _types(kind: type | tuple[type, ...]) -> tuple[type, ...]:
    return kind if isinstance(kind, tuple) else (kind,)


def _positive(body: Mapping[str, Any], key: str) -> int | None:
    value = _optional(body, key, int, "a positive integer")
    if value is not None and value < 1:
        raise RequestError(f"'{key}' must be a positive integer, got {value}", key)
    return value  # type: ignore[no-any-return]


def _body(body: Any) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise RequestError("the request body must be a JSON object")
    return body


def _sampling(body: Mapping[str, Any], names: Mapping[str, str]) -> dict[str, Any]:
    """The sampling parameters of the request, by their upstream (completions) names."""
    out: dict[str, Any] = {}
    for key, upstream in names.items():
        value = body.get(key)
        if value is None:
            continue
        if key in ("stop", "stop_sequences"):
            if isinstance(value, str):
                value = [value]
            if not isinstance(value, list) or not all(isinstance(s, str) for s in value):
                raise RequestError(f"'{key}' must be a string or an array of strings", key)
        elif key in ("seed", "top_k"):
            if not isinstance(value, int) or isinstance(value, bool):
                raise RequestError(f"'{key}' must be an integer", key)
        elif not isinstance(value, (int, float)) or isinstance(value, bool):
            raise RequestError(f"'{key}' must be a number", key)
        out[upstream] = value
    return out


def _text_parts(content: Any, param: str, kinds: tuple[str, ...]) -> str:
    """A string, or the concatenated text of a list of text parts (no images, audio or files)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    parts = _list(content, param)
    texts = []
    for i, part in enumerate(parts):
        part = _object(part, f"{param}[{i}]")
        if part.get("type") not in kinds:
            raise RequestError(
                f"'{param}[{i}]': content of type {part.get('type')!r} is not supported (only text)",
                f"{param}[{i}].type",
            )
        texts.append(_string(part.get("text"), f"{param}[{i}].text"))
    return "".join(texts)


def _arguments(value: Any, param: str) -> Any:
    """Tool-call arguments as chat templates read them: an object (a JSON string is decoded)."""
    if isinstance(value, str):
        try:
            return json.loads(value) if value.strip() else {}
        except ValueError:
            return value  # left as written: the template renders the string
    return value


def _function_tool(name: Any, description: Any, parameters: Any, param: str) -> dict[str, Any]:
    function: dict[str, Any] = {"name": _string(name, f"{param}.name")}
    if not function["name"]:
        raise RequestError(f"'{param}.name' must not be empty", f"{param}.name")
    if description is not None:
        function["description"] = _string(description, f"{param}.description")
    function["parameters"] = (
        _object(parameters, f"{param}.parameters") if parameters is not None else {"type": "object"}
    )
    return {"type": "function", "function": function}


def _named_choice(name: Any, tools: list[dict[str, Any]], param: str) -> dict[str, Any]:
    name = _string(name, f"{param}.name")
    if name not in {t["function"]["name"] for t in tools}:
        raise RequestError(
            f"'{param}' names the tool {name!r}, which is not among the request's tools", param
        )
    return {"type": "function", "function": {"name": name}}


def _check_choice(choice: Any, tools: list[dict[str, Any]]) -> Any:
    if (choice == "required" or isinstance(choice, dict)) and not tools:
        raise RequestError("'tool_choice' forces a tool call, but the request has no tools", "tool_choice")
    return choice


# ------------------------------------------------------------------------------------ Chat Completions

_CHAT_ROLES = ("system", "developer", "user", "assistant", "tool")
_CHAT_SAMPLING = {
    "temperature": "temperature",
    "top_p": "top_p",
    "stop": "stop",
    "seed": "seed",
    "presence_penalty": "presence_penalty",
    "frequency_penalty": "frequency_penalty",
}


def _chat_message(message: Any, param: str) -> dict[str, Any]:
    message = _object(message, param)
    role = message.get("role")
    if role not in _CHAT_ROLES:
        raise RequestError(f"'{param}.role' must be one of {', '.join(_CHAT_ROLES)}", f"{param}.role")
    out: dict[str, Any] = {"role": "system" if role == "developer" else role}
    out["content"] = _text_parts(message.get("content"), f"{param}.content", ("text",))
    if role == "assistant":
        for key in ("reasoning_content", "reasoning"):
            if isinstance(message.get(key), str):
                out["reasoning_content"] = message[key]
                break
        calls = message.get("tool_calls")
        if calls:
            out["tool_calls"] = []
            for i, call in enumerate(_list(calls, f"{param}.tool_calls")):
                where = f"{param}.tool_calls[{i}]"
                call = _object(call, where)
                function = _object(call.get("function"), f"{where}.function")
                entry: dict[str, Any] = {
                    "type": "function",
                    "function": {
                        "name": _string(function.get("name"), f"{where}.function.name"),
                        "arguments": _arguments(function.get("arguments"), f"{where}.function.arguments"),
                    },
                }
                if isinstance(call.get("id"), str):
                    entry["id"] = call["id"]
                out["tool_calls"].append(entry)
    if role == "tool" and isinstance(message.get("tool_call_id"), str):
        out["tool_call_id"] = message["tool_call_id"]
    if isinstance(message.get("name"), str):
        out["name"] = message["name"]
    return out


def _chat_tools(value: Any) -> list[dict[str, Any]]:
    tools = []
    for i, tool in enumerate(_list(value, "tools") if value is not None else []):
        tool = _object(tool, f"tools[{i}]")
        if tool.get("type", "function") != "function":
            raise RequestError(f"'tools[{i}].type' must be 'function'", f"tools[{i}].type")
        function = _object(tool.get("function"), f"tools[{i}].function")
        tools.append(
            _function_tool(
                function.get("name"),
                function.get("description"),
                function.get("parameters"),
                f"tools[{i}].function",
            )
        )
    return tools


def _function_choice(value: Any, tools: list[dict[str, Any]], *, nested: bool) -> Any:
    """An OpenAI ``tool_choice``: a mode, or a function named at ``function.name`` (Chat Completions,
    ``nested``) or at ``name`` (Responses)."""
    if value is None:
        return "auto"
    if value in ("auto", "none", "required"):
        return _check_choice(value, tools)
    named = (
        '{"type": "function", "function": {"name": ...}}' if nested else '{"type": "function", "name": ...}'
    )
    choice = _object(value, "tool_choice") if not isinstance(value, str) else None
    if choice is None or choice.get("type") != "function":
        raise RequestError(f"'tool_choice' must be 'auto', 'none', 'required' or {named}", "tool_choice")
    if nested:
        function = _object(choice.get("function"), "tool_choice.function")
        return _check_choice(_named_choice(function.get("name"), tools, "tool_choice.function"), tools)
    return _check_choice(_named_choice(choice.get("name"), tools, "tool_choice"), tools)


def read_chat(body: Any) -> Generation:
    """A ``POST /v1/chat/completions`` body."""
    body = _body(body)
    model = _optional(body, "model", str, "a string")
    messages = _list(body.get("messages"), "messages")
    if not messages:
        raise RequestError("'messages' must not be empty", "messages")
    n = _positive(body, "n")
    if n not in (None, 1):
        raise RequestError("'n' greater than 1 is not supported", "n")
    tools = _chat_tools(body.get("tools"))
    stream = _optional(body, "stream", bool, "a boolean") or False
    options = _object(body["stream_options"], "stream_options") if body.get("stream_options") else {}
    include_usage = options.get("include_usage")
    if include_usage is not None and not isinstance(include_usage, bool):
        raise RequestError("'stream_options.include_usage' must be a boolean", "stream_options.include_usage")
    kwargs = body.get("chat_template_kwargs")
    return Generation(
        api="chat",
        model=model,
        messages=[_chat_message(m, f"messages[{i}]") for i, m in enumerate(messages)],
        tools=tools,
        tool_choice=_function_choice(body.get("tool_choice"), tools, nested=True),
        parallel_tool_calls=_optional(body, "parallel_tool_calls", bool, "a boolean") is not False,
        stream=stream,
        include_usage=bool(include_usage) if stream else None,
        max_tokens=_positive(body, "max_completion_tokens") or _positive(body, "max_tokens"),
        sampling=_sampling(body, _CHAT_SAMPLING),
        chat_template_kwargs=dict(_object(kwargs, "chat_template_kwargs")) if kwargs is not None else {},
    )


# -------------------------------------------------------------------------------------- Responses API

_RESPONSES_SAMPLING = {"temperature": "temperature", "top_p": "top_p"}
#: The request fields the response object repeats.
_RESPONSES_ECHO = (
    "instructions",
    "tools",
    "tool_choice",
    "parallel_tool_calls",
    "max_output_tokens",
    "temperature",
    "top_p",
    "metadata",
)
_RESPONSES_TEXT = ("input_text", "output_text", "text")


def _assistant(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """The assistant message at the end of ``messages`` to add to, appended if the last is another role."""
    if not messages or messages[-1]["role"] != "assistant":
        messages.append({"role": "assistant", "content": ""})
    return messages[-1]


def _responses_input(value: Any, instructions: str | None) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    if instructions:
        messages.append({"role": "system", "content": instructions})
    if isinstance(value, str):
        messages.append({"role": "user", "content": value})
        return messages
    items = _list(value, "input")
    for i, item in enumerate(items):
        param = f"input[{i}]"
        item = _object(item, param)
        kind = item.get("type", "message")
        if kind == "message":
            role = item.get("role")
            if role not in ("system", "developer", "user", "assistant"):
                raise RequestError(
                    f"'{param}.role' must be system, developer, user or assistant", f"{param}.role"
                )
            text = _text_parts(item.get("content"), f"{param}.content", _RESPONSES_TEXT)
            if role == "assistant":
                _assistant(messages)["content"] += text
            else:
                messages.append({"role": "system" if role == "developer" else role, "content": text})
        elif kind == "function_call":
            call = {
                "type": "function",
                "id": _string(item.get("call_id"), f"{param}.call_id"),
                "function": {
                    "name": _string(item.get("name"), f"{param}.name"),
                    "arguments": _arguments(item.get("arguments"), f"{param}.arguments"),
                },
            }
            _assistant(messages).setdefault("tool_calls", []).append(call)
        elif kind == "function_call_output":
            output = item.get("output")
            messages.append(
                {
                    "role": "tool",
                    "tool_call_id": _string(item.get("call_id"), f"{param}.call_id"),
                    "content": output
                    if isinstance(output, str)
                    else _text_parts(output, f"{param}.output", _RESPONSES_TEXT),
                }
            )
        elif kind == "reasoning":
            parts = item.get("content") or item.get("summary") or []
            text = _text_parts(parts, f"{param}.content", ("reasoning_text", "summary_text"))
            assistant = _assistant(messages)
            assistant["reasoning_content"] = assistant.get("reasoning_content", "") + text
        else:
            raise RequestError(f"'{param}': input items of type {kind!r} are not supported", f"{param}.type")
    if not messages:
        raise RequestError("'input' must not be empty", "input")
    return messages


def _responses_tools(value: Any) -> list[dict[str, Any]]:
    tools = []
    for i, tool in enumerate(_list(value, "tools") if value is not None else []):
        tool = _object(tool, f"tools[{i}]")
        if tool.get("type") != "function":
            raise RequestError(
                f"'tools[{i}]': tools of type {tool.get('type')!r} are not supported (only function)",
                f"tools[{i}].type",
            )
        tools.append(
            _function_tool(tool.get("name"), tool.get("description"), tool.get("parameters"), f"tools[{i}]")
        )
    return tools


def read_responses(body: Any) -> Generation:
    """A ``POST /v1/responses`` body."""
    body = _body(body)
    if "input" not in body:
        raise RequestError("'input' is required", "input")
    if body.get("previous_response_id") is not None:
        raise RequestError(
            "'previous_response_id' is not supported: send the whole input", "previous_response_id"
        )
    instructions = _optional(body, "instructions", str, "a string")
    tools = _responses_tools(body.get("tools"))
    return Generation(
        api="responses",
        model=_optional(body, "model", str, "a string"),
        messages=_responses_input(body["input"], instructions),
        tools=tools,
        tool_choice=_function_choice(body.get("tool_choice"), tools, nested=False),
        parallel_tool_calls=_optional(body, "parallel_tool_calls", bool, "a boolean") is not False,
        stream=_optional(body, "stream", bool, "a boolean") or False,
        max_tokens=_positive(body, "max_output_tokens"),
        sampling=_sampling(body, _RESPONSES_SAMPLING),
        echo={key: body[key] for key in _RESPONSES_ECHO if body.get(key) is not None},
    )


# ---------------------------------------------------------------------------------- Anthropic Messages

_ANTHROPIC_SAMPLING = {
    "temperature": "temperature",
    "top_p": "top_p",
    "top_k": "top_k",
    "stop_sequences": "stop",
}


def _anthropic_result(block: dict[str, Any], param: str) -> dict[str, Any]:
    content = block.get("content")
    text = content if isinstance(content, str) else _text_parts(content, f"{param}.content", ("text",))
    return {
        "role": "tool",
        "tool_call_id": _string(block.get("tool_use_id"), f"{param}.tool_use_id"),
        "content": text,
    }


def _anthropic_messages(value: Any, system: Any) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    if system:
        messages.append({"role": "system", "content": _text_parts(system, "system", ("text",))})
    turns = _list(value, "messages")
    if not turns:
        raise RequestError("'messages' must not be empty", "messages")
    if isinstance(turns[-1], dict) and turns[-1].get("role") == "assistant":
        raise RequestError(
            "a final assistant message (a prefill to continue) is not supported yet: end with a user message",
            f"messages[{len(turns) - 1}]",
        )
    for i, turn in enumerate(turns):
        param = f"messages[{i}]"
        turn = _object(turn, param)
        role = turn.get("role")
        if role not in ("user", "assistant"):
            raise RequestError(f"'{param}.role' must be user or assistant", f"{param}.role")
        content = turn.get("content")
        if isinstance(content, str):
            messages.append({"role": role, "content": content})
            continue
        message: dict[str, Any] = {"role": role, "content": ""}
        results: list[dict[str, Any]] = []
        for j, block in enumerate(_list(content, f"{param}.content")):
            where = f"{param}.content[{j}]"
            block = _object(block, where)
            kind = block.get("type")
            if kind == "text":
                message["content"] += _string(block.get("text"), f"{where}.text")
            elif kind == "thinking" and role == "assistant":
                message["reasoning_content"] = message.get("reasoning_content", "") + _string(
                    block.get("thinking"), f"{where}.thinking"
                )
            elif kind == "redacted_thinking" and role == "assistant":
                continue
            elif kind == "tool_use" and role == "assistant":
                message.setdefault("tool_calls", []).append(
                    {
                        "type": "function",
                        "id": _string(block.get("id"), f"{where}.id"),
                        "function": {
                            "name": _string(block.get("name"), f"{where}.name"),
                            "arguments": _object(block.get("input", {}), f"{where}.input"),
                        },
                    }
                )
            elif kind == "tool_result" and role == "user":
                results.append(_anthropic_result(block, where))
            else:
                raise RequestError(
                    f"'{where}': {role} content blocks of type {kind!r} are not supported", f"{where}.type"
                )
        messages.extend(results)  # the tool results answer the previous turn's calls: they come first
        if message["content"] or role == "assistant" or not results:
            messages.append(message)
    return messages


def _anthropic_tools(value: Any) -> list[dict[str, Any]]:
    tools = []
    for i, tool in enumerate(_list(value, "tools") if value is not None else []):
        tool = _object(tool, f"tools[{i}]")
        if tool.get("type") not in (None, "custom"):
            raise RequestError(
                f"'tools[{i}]': tools of type {tool.get('type')!r} are not supported (only custom tools)",
                f"tools[{i}].type",
            )
        if tool.get("input_schema") is None:
            raise RequestError(f"'tools[{i}].input_schema' is required", f"tools[{i}].input_schema")
        tools.append(
            _function_tool(tool.get("name"), tool.get("description"), tool["input_schema"], f"tools[{i}]")
        )
    return tools


def _anthropic_choice(value: Any, tools: list[dict[str, Any]]) -> tuple[Any, bool]:
    if value is None:
        return "auto", True
    choice = _object(value, "tool_choice")
    parallel = choice.get("disable_parallel_tool_use") is not True
    kind = choice.get("type")
    if kind == "auto":
        return "auto", parallel
    if kind == "none":
        return "none", parallel
    if kind == "any":
        return _check_choice("required", tools), parallel
    if kind == "tool":
        return _check_choice(_named_choice(choice.get("name"), tools, "tool_choice"), tools), parallel
    raise RequestError("'tool_choice.type' must be auto, any, tool or none", "tool_choice.type")


def read_messages(body: Any) -> Generation:
    """A ``POST /v1/messages`` body."""
    body = _body(body)
    max_tokens = _positive(body, "max_tokens")
    if max_tokens is None:
        raise RequestError("'max_tokens' is required", "max_tokens")
    tools = _anthropic_tools(body.get("tools"))
    choice, parallel = _anthropic_choice(body.get("tool_choice"), tools)
    kwargs: dict[str, Any] = {}
    thinking = body.get("thinking")
    if thinking is not None:
        kind = _object(thinking, "thinking").get("type")
        if kind not in ("enabled", "disabled", "adaptive"):
            raise RequestError("'thinking.type' must be enabled, disabled or adaptive", "thinking.type")
        kwargs["enable_thinking"] = kind != "disabled"
    return Generation(
        api="messages",
        model=_optional(body, "model", str, "a string"),
        messages=_anthropic_messages(body.get("messages"), body.get("system")),
        tools=tools,
        tool_choice=choice,
        parallel_tool_calls=parallel,
        stream=_optional(body, "stream", bool, "a boolean") or False,
        max_tokens=max_tokens,
        sampling=_sampling(body, _ANTHROPIC_SAMPLING),
        chat_template_kwargs=kwargs,
    )


_READERS = {"chat": read_chat, "responses": read_responses, "messages": read_messages}


def read_request(api: API, body: Any) -> Generation:
    """The request ``body`` of ``api``; :class:`RequestError` when it is not a valid request."""
    return _READERS[api](body)
