"""Tool specifications: a request's ``tools`` as parameter schemas, and JSON schemas from Python functions.

A request's ``tools`` come either as JSON-schema dicts (``{"type": "function", "function": {...}}`` or
the bare function dict) or as Python functions with type hints and a Google-style docstring.
:func:`tool_parameters` reduces such a list to ``{tool name: parameter schemas}`` once per parser, and
:func:`type_tool_calls` (defined with the call shape in :mod:`response_templates.calls`, re-exported
here) uses it when a region closes to turn the strings a model wrote for non-string parameters into
integers, numbers, booleans, ``None``, dicts and lists.

>>> def set_alarm(hour: int, label: str = "") -> None:
...     '''Set an alarm.
...
...     Args:
...         hour: Hour of the day, 0-23.
...         label: Text shown when it rings.
...     '''
>>> params = tool_parameters([set_alarm])
>>> params["set_alarm"]["hour"]
{'type': 'integer', 'description': 'Hour of the day, 0-23.'}
>>> call = {"type": "function", "function": {"name": "set_alarm", "arguments": {"hour": "7", "label": "7"}}}
>>> type_tool_calls(call, params)["function"]["arguments"]
{'hour': 7, 'label': '7'}
>>> call["function"]["arguments"]["hour"]  # the input is never modified
'7'
"""

from __future__ import annotations

import inspect
import json
import re
import types
import typing
from collections.abc import Callable, Iterable, Mapping, Sequence
from enum import Enum
from typing import Any, Literal, Union

from .calls import type_tool_calls
from .errors import ResponseTemplateError

__all__ = ["ToolSpecError", "callable_to_schema", "tool_parameters", "type_tool_calls"]


class ToolSpecError(ResponseTemplateError):
    """A tool in ``tools`` is malformed, or a Python function cannot be described by a JSON schema.

    Attributes:
        index: position of the tool in the ``tools`` list (``None`` when not known, e.g. when
            :func:`callable_to_schema` is called directly).
        name: the tool's name when it could be read, else ``None``.
        detail: the message without the tool's index and name.
    """

    def __init__(self, message: str, *, index: int | None = None, name: str | None = None) -> None:
        where = "tool"
        if index is not None:
            where += f" #{index}"
        if name is not None:
            where += f" {name!r}"
        super().__init__(f"{where}: {message}" if where != "tool" else f"tools: {message}")
        self.index = index
        self.name = name
        self.detail = message


# ---------------------------------------------------------------------------------------------------------
# Google-style docstrings
#
# The sections are read exactly the way the reference reads them, quirks included, so that a function
# yields the same schema here as with ``transformers.get_json_schema``:
# * the summary is everything before the first "Args:", "Returns:" or "Raises:" anywhere in the text;
# * a section starts at a line that is just "Args:" (or "Returns:") with nothing after the colon, and
#   runs to the next "Returns:"/"Raises:" (for Args) or "Raises:" (for Returns), wherever that is;
# * inside Args, an entry starts at a line "<indent><word>:" or "<indent><word> (<type>):" (the type note
#   is skipped); it runs until the next line that is not indented deeper than the entry and also reads
#   that way. Lines before the first entry are ignored. Line breaks in an entry collapse to single spaces.

_SUMMARY_ENDS = ("Args:", "Returns:", "Raises:")
_ARGS_ENDS = ("Returns:", "Raises:")
_RETURNS_ENDS = ("Raises:",)
_LINE_BREAK_RUN = re.compile(r"\s+")
_CHOICES = re.compile(r"\(choices:", re.IGNORECASE)


def _first_of(text: str, needles: tuple[str, ...], start: int = 0) -> int:
    """Index of the earliest occurrence of any needle at or after ``start``; ``len(text)`` if none."""
    hits = [hit for hit in (text.find(needle, start) for needle in needles) if hit >= 0]
    return min(hits, default=len(text))


def _section_start(doc: str, header: str) -> int | None:
    """Where the body of the first ``header`` section begins, or ``None`` when there is none.

    The header must be followed directly by a newline and preceded by whitespace that contains a newline
    (so it stands on a line of its own; it can never be the first line).
    """
    marker = header + "\n"
    at = doc.find(marker)
    while at >= 0:
        gap = at
        while gap > 0 and doc[gap - 1].isspace():
            gap -= 1
        if "\n" in doc[gap:at]:
            return at + len(marker)
        at = doc.find(marker, at + 1)
    return None


def _type_note_end(block: str, start: int) -> int | None:
    """Index after a ``(type)`` note starting at ``start`` (spaces or tabs, then parentheses with no
    parenthesis or newline inside), or ``None`` when there is none."""
    end = len(block)
    at = start
    while at < end and block[at] in " \t":
        at += 1
    if at == end or block[at] != "(":
        return None
    close = at + 1
    while close < end and block[close] not in "()\n":
        close += 1
    if close == end or block[close] != ")":
        return None
    return close + 1


def _entry_head(block: str, line: int) -> tuple[str, str, int] | None:
    """``(indent, name, index after the colon)`` if the line starting at ``line`` opens an argument entry.

    The name may be followed by a type note, ``x (int): ...``; the note is skipped (the type comes from the
    annotation)."""
    end = len(block)
    start = line
    while start < end and block[start] in " \t":
        start += 1
    stop = start
    while stop < end and (block[stop].isalnum() or block[stop] == "_"):
        stop += 1
    if stop in (start, end):
        return None
    colon = stop
    if block[colon] != ":":
        note_end = _type_note_end(block, stop)
        if note_end is None:
            return None
        colon = note_end
    if colon == end or block[colon] != ":":
        return None
    return block[line:start], block[start:stop], colon + 1


def _entry_end(block: str, start: int, indent: str) -> int:
    """The newline (searched from ``start``) before the next entry at this indentation or shallower."""
    newline = block.find("\n", start)
    while newline >= 0:
        line = newline + 1
        after_indent = line + len(indent)
        deeper = block.startswith(indent, line) and block[after_indent : after_indent + 1] in (" ", "\t")
        if not deeper and _entry_head(block, line) is not None:
            return newline
        newline = block.find("\n", line)
    return len(block)


def _collapse_line_breaks(text: str) -> str:
    """Replace every whitespace run that contains a newline by one space; other runs stay as they are."""
    return _LINE_BREAK_RUN.sub(lambda run: " " if "\n" in run.group() else run.group(), text)


def _argument_docs(block: str) -> dict[str, str]:
    block = "\n".join(line for line in block.split("\n") if line.strip())
    docs: dict[str, str] = {}
    line = 0
    head = _entry_head(block, 0)
    while head is None:
        newline = block.find("\n", line)
        if newline < 0:
            return docs
        line = newline + 1
        head = _entry_head(block, line)
    while head is not None:
        indent, name, text_start = head
        while text_start < len(block) and block[text_start].isspace():
            text_start += 1
        text_end = _entry_end(block, text_start, indent)
        docs[name] = _collapse_line_breaks(block[text_start:text_end].strip())
        head = _entry_head(block, text_end + 1) if text_end < len(block) else None
    return docs


def _parse_docstring(doc: str) -> tuple[str, dict[str, str], str | None]:
    """``(summary, {argument: description}, returns description or None)``."""
    summary = doc[: _first_of(doc, _SUMMARY_ENDS)].strip()
    args_start = _section_start(doc, "Args:")
    arg_docs = {}
    if args_start is not None:
        arg_docs = _argument_docs(doc[args_start : _first_of(doc, _ARGS_ENDS, args_start)].rstrip())
    returns_start = _section_start(doc, "Returns:")
    returns = None
    if returns_start is not None:
        returns = doc[returns_start : _first_of(doc, _RETURNS_ENDS, returns_start)].strip()
    return summary, arg_docs, returns


def _split_choices(text: str) -> tuple[str, str | None]:
    """Split a trailing ``(choices: <json>)`` off an argument description: ``(description, json or None)``."""
    trimmed = text.rstrip()
    if not trimmed.endswith(")"):
        return text, None
    found = _CHOICES.search(trimmed)
    if found is None:
        return text, None
    return text[: found.start()].strip(), trimmed[found.end() : -1].lstrip()


# ---------------------------------------------------------------------------------------------------------
# Type hints -> JSON schema


class _HintError(Exception):
    """A type hint with no JSON-schema equivalent (internal; becomes a ToolSpecError)."""


_JSON_SCALARS: dict[type, str] = {
    str: "string",
    int: "integer",
    float: "number",
    bool: "boolean",
    type(None): "null",
}
_PLAIN_HINTS: dict[Any, str] = {**_JSON_SCALARS, list: "array", tuple: "array", dict: "object"}
# Media types that the reference maps when their libraries are installed; recognised by name so that this
# module imports neither library.
_MEDIA_HINTS = {("PIL.Image", "Image"): "image", ("torch", "Tensor"): "audio"}


def _enum_schema(values: list[Any]) -> dict[str, Any]:
    kinds: list[str] = []
    for value in values:
        kind = _JSON_SCALARS[type(value)]
        if kind not in kinds:
            kinds.append(kind)
    return {"type": kinds[0] if len(kinds) == 1 else kinds, "enum": values}


def _describe_hint(hint: Any) -> str:
    return str(hint).replace("typing.", "") if not isinstance(hint, type) else hint.__qualname__


def _hint_schema(hint: Any) -> dict[str, Any]:
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin is None:
        if isinstance(hint, type) and issubclass(hint, Enum):
            values = [member.value for member in hint]
            if not values:
                raise _HintError(f"the Enum {hint.__qualname__} has no members, so no value could match it")
            if any(type(value) not in _JSON_SCALARS for value in values):
                raise _HintError(
                    f"the Enum {hint.__qualname__} has values that are not JSON scalars "
                    f"(str, int, float, bool or None): {values!r}"
                )
            return _enum_schema(values)
        if hint is Any:
            return {}
        try:
            kind = _PLAIN_HINTS.get(hint)
        except TypeError:  # unhashable annotation
            kind = None
        if kind is None and isinstance(hint, type):
            kind = _MEDIA_HINTS.get((hint.__module__, hint.__qualname__))
        if kind is None:
            raise _HintError(
                f"{_describe_hint(hint)} has no JSON-schema equivalent; use str, int, float, bool, None, Any, "
                "an Enum, Literal, or list/tuple/dict/Union of those, or write the tool's JSON schema by hand"
            )
        return {"type": kind}
    if origin is Union or origin is types.UnionType:
        members = [_hint_schema(arg) for arg in args if arg is not type(None)]
        if len(members) == 1:
            schema = members[0]
        elif all(member.keys() == {"type"} and isinstance(member["type"], str) for member in members):
            kinds = sorted({member["type"] for member in members})
            schema = {"type": kinds[0] if len(kinds) == 1 else kinds}
        else:
            schema = {"anyOf": members}
        if type(None) in args:
            schema["nullable"] = True
        return schema
    if origin is Literal and args:
        if any(type(arg) not in _JSON_SCALARS for arg in args):
            raise _HintError(
                f"{_describe_hint(hint)} lists values that are not str, int, float, bool or None"
            )
        return _enum_schema(list(args))
    if origin is list:
        return {"type": "array", "items": _hint_schema(args[0])} if args else {"type": "array"}
    if origin is tuple:
        if not args:
            return {"type": "array"}
        if len(args) == 1:
            raise _HintError(
                f"{_describe_hint(hint)} is a one-element tuple; use the element type itself, or list[...] "
                "for a sequence"
            )
        if Ellipsis in args:
            raise _HintError(f"{_describe_hint(hint)} has a variable length; use list[...] instead")
        return {"type": "array", "prefixItems": [_hint_schema(arg) for arg in args]}
    if origin is dict:
        schema = {"type": "object"}
        if len(args) == 2:
            schema["additionalProperties"] = _hint_schema(args[1])
        return schema
    raise _HintError(
        f"{_describe_hint(hint)} has no JSON-schema equivalent; use str, int, float, bool, None, Any, an Enum, "
        "Literal, or list/tuple/dict/Union of those, or write the tool's JSON schema by hand"
    )


def _parameters_schema(fn: Callable[..., Any], name: str) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """``(parameters schema, return schema or None)`` from the function's signature and type hints."""
    try:
        hints = typing.get_type_hints(fn)
    except Exception as exc:
        raise ToolSpecError(
            f"its type hints cannot be resolved ({type(exc).__name__}: {exc})", name=name
        ) from None
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError) as exc:
        raise ToolSpecError(f"its signature cannot be read ({exc})", name=name) from None
    parameters = list(signature.parameters.values())
    receiver = None
    if (
        parameters
        and parameters[0].name in ("self", "cls")
        and parameters[0].annotation is inspect.Parameter.empty
    ):
        receiver = parameters[0].name

    required = []
    for parameter in parameters:
        if parameter.name == receiver:
            continue
        if parameter.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
            stars = "*" if parameter.kind is inspect.Parameter.VAR_POSITIONAL else "**"
            raise ToolSpecError(
                f"argument '{stars}{parameter.name}' cannot be described by a JSON schema (a tool call passes "
                "named arguments only); give each argument its own name",
                name=name,
            )
        if parameter.annotation is inspect.Parameter.empty:
            raise ToolSpecError(f"argument {parameter.name!r} has no type hint", name=name)
        if parameter.default is inspect.Parameter.empty:
            required.append(parameter.name)

    properties: dict[str, Any] = {}
    returns = None
    for arg, hint in hints.items():
        if arg == receiver:
            continue
        if arg == "return":
            # The model never writes the return value: a return hint without a schema is simply left out.
            try:
                returns = _hint_schema(hint)
            except Exception:
                returns = None
            continue
        try:
            properties[arg] = _hint_schema(hint)
        except _HintError as exc:
            raise ToolSpecError(f"the type hint of argument {arg!r}: {exc}", name=name) from None
        except Exception as exc:
            raise ToolSpecError(
                f"the type hint of argument {arg!r} cannot be converted ({type(exc).__name__}: {exc})",
                name=name,
            ) from None
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    return schema, returns


def callable_to_schema(fn: Callable[..., Any]) -> dict[str, Any]:
    """Describe a Python function as a tool: ``{"type": "function", "function": {...}}``.

    The function needs a type hint on every argument and a Google-style docstring whose ``Args:`` section
    describes every argument. A description may end in ``(choices: [...])`` (a JSON list), which becomes
    the parameter's ``enum``. A ``Returns:`` section and a convertible return hint add a ``return`` entry.
    The schema is the one ``transformers.utils.get_json_schema`` builds, key order included.

    Raises:
        ToolSpecError: ``fn`` is not a function or method, has no docstring, has an argument without a
            type hint or description, uses ``*args``/``**kwargs``, has a hint with no JSON-schema
            equivalent, or a ``(choices: ...)`` that is not a JSON list.
    """
    if not (inspect.isfunction(fn) or inspect.ismethod(fn)):
        raise ToolSpecError(
            f"only functions and methods can be turned into a tool schema, got {type(fn).__name__}; "
            "pass a JSON-schema dict for other callables"
        )
    name = getattr(fn, "__name__", "operation")
    doc = inspect.getdoc(fn)
    if not doc:
        raise ToolSpecError(
            "the function has no docstring; describe it and its arguments in a Google-style docstring",
            name=name,
        )
    summary, arg_docs, returns_doc = _parse_docstring(doc.strip())
    parameters, returns = _parameters_schema(fn, name)
    if returns is not None and returns_doc is not None:
        returns["description"] = returns_doc
    for arg, schema in parameters["properties"].items():
        if arg not in arg_docs:
            raise ToolSpecError(
                f"the docstring does not describe argument {arg!r}; add a line '{arg}: <description>' "
                "to its Args: section",
                name=name,
            )
        description, choices = _split_choices(arg_docs[arg])
        if choices is not None:
            try:
                values = json.loads(choices)
            except Exception as exc:
                raise ToolSpecError(
                    f"the (choices: ...) of argument {arg!r} is not valid JSON ({exc}): {choices!r}",
                    name=name,
                ) from None
            if not isinstance(values, list):
                raise ToolSpecError(
                    f"the (choices: ...) of argument {arg!r} must be a JSON list, got {choices!r}", name=name
                )
            schema["enum"] = [value.strip() if isinstance(value, str) else value for value in values]
        schema["description"] = description
    function: dict[str, Any] = {"name": name, "description": summary, "parameters": parameters}
    if returns is not None:
        function["return"] = returns
    return {"type": "function", "function": function}


# ---------------------------------------------------------------------------------------------------------
# Tool lists


def _function_properties(tool: dict[Any, Any], index: int) -> tuple[str, dict[str, Any]]:
    spec = tool
    if "function" in tool:  # the {"type": "function", "function": {...}} wrapper
        spec = tool["function"]
    if not isinstance(spec, dict):
        raise ToolSpecError(f"'function' must be a dict, got {type(spec).__name__}", index=index)
    name = spec.get("name")
    if not isinstance(name, str) or not name:
        raise ToolSpecError(f"has no name: 'name' must be a non-empty string, got {name!r}", index=index)
    parameters = spec.get("parameters")
    if parameters is None:
        return name, {}
    if not isinstance(parameters, dict):
        raise ToolSpecError(
            f"'parameters' must be a JSON-schema object (a dict), got {type(parameters).__name__}",
            index=index,
            name=name,
        )
    properties = parameters.get("properties")
    if properties is None:
        return name, {}
    if not isinstance(properties, dict):
        raise ToolSpecError(
            f"'parameters.properties' must be a dict, got {type(properties).__name__}", index=index, name=name
        )
    for key, schema in properties.items():
        if not isinstance(schema, (dict, bool)):
            raise ToolSpecError(
                f"the schema of parameter {key!r} must be a dict (or a boolean), got {type(schema).__name__}",
                index=index,
                name=name,
            )
    return name, properties


def tool_parameters(
    tools: Sequence[Mapping[str, Any] | Callable[..., Any]] | None,
) -> dict[str, dict[str, Any]]:
    """Map each tool's name to its parameters' JSON schemas (the ``properties`` dict, ``{}`` if none).

    ``tools`` is a request's tool list: ``{"type": "function", "function": {...}}`` dicts, bare function
    dicts ``{"name": ..., "parameters": ...}``, or functions (see :func:`callable_to_schema`). The returned
    ``properties`` dicts are the caller's own objects, not copies; treat them as read-only. The same tool
    may be listed twice, but two different tools may not share a name.

    Raises:
        ToolSpecError: ``tools`` is not a list, or a tool is malformed; the message names the tool's index
            and, when known, its name.
    """
    if tools is None:
        return {}
    if isinstance(tools, (str, bytes, Mapping)) or callable(tools) or not isinstance(tools, Iterable):
        raise ToolSpecError(f"expected a list of tools, got a single {type(tools).__name__}")
    params: dict[str, dict[str, Any]] = {}
    first_index: dict[str, int] = {}
    for index, tool in enumerate(tools):
        if isinstance(tool, dict):
            name, properties = _function_properties(tool, index)
        elif inspect.isfunction(tool) or inspect.ismethod(tool):
            try:
                function = callable_to_schema(tool)["function"]
            except ToolSpecError as exc:
                raise ToolSpecError(exc.detail, index=index, name=exc.name) from None
            name, properties = function["name"], function["parameters"]["properties"]
        elif callable(tool):
            raise ToolSpecError(
                f"only functions and methods are converted to schemas, got a {type(tool).__name__}; "
                "pass its JSON schema as a dict instead",
                index=index,
            )
        else:
            raise ToolSpecError(
                f"must be a JSON-schema dict or a function, got {type(tool).__name__}: {tool!r:.80}",
                index=index,
            )
        if name in params and params[name] != properties:
            raise ToolSpecError(
                f"tool #{first_index[name]} has the same name but different parameters; tool names must be unique",
                index=index,
                name=name,
            )
        params[name] = properties
        first_index.setdefault(name, index)
    return params
