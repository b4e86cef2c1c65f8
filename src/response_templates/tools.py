"""Tool specifications: a request's ``tools`` as parameter schemas, and JSON schemas from Python functions.

A request's ``tools`` come either as JSON-schema dicts, in any shape the wire formats carry (OpenAI chat
``{"type": "function", "function": {...}}``, OpenAI Responses and bare ``{"name": ..., "parameters": ...}``,
Anthropic ``{"name": ..., "input_schema": ...}``), or as Python functions with type hints and a
Google-style docstring. Each schema is checked once, when the list is read (:func:`check_schema`; a
refused one raises :class:`ToolSchemaError`), for parsing and grammars alike.
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

import copy
import inspect
import json
import math
import re
import types
import typing
from collections.abc import Callable, Iterable, Mapping, Sequence
from enum import Enum
from typing import Any, Literal, Union

import regex

from .calls import type_tool_calls
from .errors import ResponseTemplateError

__all__ = [
    "JSON_TYPES",
    "MAX_PATTERN_NESTING",
    "MAX_PATTERN_SIZE",
    "MAX_SCHEMA_DEPTH",
    "MAX_SCHEMA_VALUES",
    "SCHEMA_KEYS",
    "ToolSchemaError",
    "ToolSpecError",
    "callable_to_schema",
    "check_schema",
    "has_refs",
    "relocate_refs",
    "resolved_properties",
    "schema_pointer",
    "tool_parameters",
    "tool_schemas",
    "type_tool_calls",
]


class ToolSpecError(ResponseTemplateError):
    """A tool in ``tools`` is malformed, or a Python function cannot be described by a JSON schema.

    Attributes:
        index: position of the tool in the ``tools`` list (``None`` when not known, e.g. when
            :func:`callable_to_schema` is called directly).
        name: the tool's name when it could be read, else ``None``.
        detail: the message without the tool's index and name.
        path: for a :class:`ToolSchemaError` (a refused schema), where in it the fault is, as a
            JSON-pointer fragment; else ``None``.
    """

    def __init__(
        self, message: str, *, index: int | None = None, name: str | None = None, path: str | None = None
    ) -> None:
        where = "tool"
        if index is not None:
            where += f" #{index}"
        if name is not None:
            where += f" {name!r}"
        super().__init__(f"{where}: {message}" if where != "tool" else f"tools: {message}")
        self.index = index
        self.name = name
        self.detail = message
        self.path = path


class ToolSchemaError(ToolSpecError):
    """A tool's parameter schema is refused: not JSON, not a JSON schema, or beyond this library's limits.

    Raised when ``tools=`` is read (by the parser, the wire adapters and :func:`response_templates.grammar.build`
    alike) and by :func:`check_schema`. The message says which tool (index and name), where in its schema
    and what is wrong.

    Attributes:
        index, name, detail: as :class:`ToolSpecError`.
        path: where in the schema the fault is, as a JSON-pointer fragment (the form ``$ref`` uses):
            ``"#/properties/days/type"``; ``"#"`` is the schema itself.
        key: where the tool keeps the schema (``"parameters"``, ``"function.parameters"``,
            ``"input_schema"``), or ``None`` (a schema made from a Python function, or :func:`check_schema`).
        problem: what is wrong, without the tool and the path.
    """

    def __init__(
        self,
        problem: str,
        *,
        path: str,
        index: int | None = None,
        name: str | None = None,
        key: str | None = None,
    ) -> None:
        where = f"in {key!r} " if key is not None else ""
        super().__init__(
            f"invalid schema {where}at {_abridged(path)}: {problem}", index=index, name=name, path=path
        )
        self.key = key
        self.problem = problem


def _abridged(pointer: str, limit: int = 160) -> str:
    """A long JSON pointer shortened for a message (its start and its end kept)."""
    if len(pointer) <= limit:
        return pointer
    return f"{pointer[: limit // 3]}...{pointer[-(limit * 2) // 3 :]}"


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
        # A bound method's signature leaves out its receiver, whose hint get_type_hints still reports.
        if arg == receiver or (arg != "return" and arg not in signature.parameters):
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
# Checking a tool's parameter schema
#
# A tool's schema is checked once, when the tool list is read, so that argument typing and grammars read
# the same checked schemas and a bad one is refused with the request, not later by an engine. The walk is
# iterative and bounded (depth and size), so no schema can exhaust the stack or run for long.

#: How deeply a tool's schema may nest, counting every JSON object and array of it (the schema included).
MAX_SCHEMA_DEPTH: int = 100
#: How many JSON values (objects, arrays, strings, numbers...) a tool's schema may hold, counted as the
#: tree it describes: a dict that appears twice counts twice.
MAX_SCHEMA_VALUES: int = 200_000

JSON_TYPES = ("array", "boolean", "integer", "null", "number", "object", "string")

# Keywords whose value is one schema, a {name: schema} dict, or a non-empty list of schemas.
_ONE_SCHEMA = frozenset(
    {
        "additionalProperties",
        "additionalItems",
        "contains",
        "propertyNames",
        "not",
        "if",
        "then",
        "else",
        "unevaluatedItems",
        "unevaluatedProperties",
        "contentSchema",
    }
)
_SCHEMA_DICT = frozenset({"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"})
_SCHEMA_LIST = frozenset({"allOf", "anyOf", "oneOf", "prefixItems"})
_BOUNDS = frozenset({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"})
_COUNTS = frozenset(
    {
        "minLength",
        "maxLength",
        "minItems",
        "maxItems",
        "minProperties",
        "maxProperties",
        "minContains",
        "maxContains",
    }
)
_FLAGS = frozenset({"uniqueItems", "readOnly", "writeOnly", "deprecated", "nullable"})
_TEXTS = frozenset(
    {
        "title",
        "description",
        "format",
        "$comment",
        "$id",
        "$schema",
        "contentEncoding",
        "contentMediaType",
    }
)
_LISTS = frozenset({"enum", "examples"})
_REFS = frozenset({"$ref", "$dynamicRef"})
_ANCHORS = frozenset({"$anchor", "$dynamicAnchor"})
_ANCHOR_NAME = re.compile(r"[A-Za-z_][-A-Za-z0-9._]*")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")

_Path = tuple[str | int, ...]


class _SchemaProblem(Exception):
    """Where (a path in the schema) and what is wrong with a tool's schema (internal)."""

    def __init__(self, path: _Path, message: str) -> None:
        super().__init__(message)
        self.path = path
        self.message = message


def _shown(text: str) -> str:
    """``text`` printable as UTF-8: lone surrogates written as ``\\udXXX`` escapes."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def schema_pointer(path: _Path) -> str:
    """A path in a schema as a JSON-pointer fragment, the form ``$ref`` uses: ``#`` is the schema itself.

    >>> schema_pointer(("properties", "a/b", "anyOf", 0))
    '#/properties/a~1b/anyOf/0'
    """
    tokens = (str(token).replace("~", "~0").replace("/", "~1") for token in path)
    return "#" + "".join("/" + _shown(token) for token in tokens)


def _finite(value: int | float) -> bool:
    """Whether a number is finite (an int always is, however large)."""
    return isinstance(value, int) or math.isfinite(value)


def _kind(value: Any) -> str:
    return (
        "a list" if isinstance(value, (list, tuple)) else "a dict" if isinstance(value, dict) else repr(value)
    )


class _SchemaWalk:
    """One walk over a tool's schema: every value checked as JSON, every schema keyword it reads checked
    for its form; the references and anchors collected for resolving afterwards."""

    def __init__(self) -> None:
        self.refs: list[tuple[_Path, str]] = []
        self.anchors: dict[str, _Path] = {}
        self.count = 0
        # (value, path, depth, whether the value is in a schema position)
        self.stack: list[tuple[Any, _Path, int, bool]] = []

    def run(self, root: Any) -> None:
        self.stack.append((root, (), 1, True))
        while self.stack:
            value, path, depth, is_schema = self.stack.pop()
            self.count += 1
            if self.count > MAX_SCHEMA_VALUES:
                raise _SchemaProblem(path, f"the schema holds more than {MAX_SCHEMA_VALUES} values")
            if isinstance(value, (dict, list, tuple)) and depth > MAX_SCHEMA_DEPTH:
                raise _SchemaProblem(path, f"the schema nests deeper than {MAX_SCHEMA_DEPTH} levels")
            if is_schema:
                if isinstance(value, dict):
                    self.schema(value, path, depth)
                elif not isinstance(value, bool):
                    raise _SchemaProblem(path, f"a schema must be a dict or a boolean, got {_kind(value)}")
            else:
                self.json(value, path, depth)

    def push(self, value: Any, path: _Path, depth: int, is_schema: bool = False) -> None:
        self.stack.append((value, path, depth, is_schema))

    def json(self, value: Any, path: _Path, depth: int) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                self.key(key, path)
                self.push(item, (*path, key), depth + 1)
        elif isinstance(value, (list, tuple)):
            for position, item in enumerate(value):
                self.push(item, (*path, position), depth + 1)
        elif isinstance(value, str):
            self.text(value, path)
        elif isinstance(value, float):
            if not math.isfinite(value):
                raise _SchemaProblem(path, f"{value!r} is not a JSON number")
        elif value is not None and not isinstance(value, (bool, int)):
            raise _SchemaProblem(path, f"a {type(value).__name__} is not a JSON value")

    def key(self, key: Any, path: _Path) -> None:
        if not isinstance(key, str):
            raise _SchemaProblem(path, f"the key {key!r} is not a string (JSON object keys are strings)")
        self.text(key, path, f"the key {key!r}")

    def text(self, value: str, path: _Path, what: str = "the string") -> None:
        found = _LONE_SURROGATE.search(value)
        if found is not None:
            raise _SchemaProblem(
                path, f"{what} holds a lone surrogate (U+{ord(found.group()):04X}), which is not Unicode text"
            )

    def schema(self, schema: dict[Any, Any], path: _Path, depth: int) -> None:
        for key, value in schema.items():
            self.key(key, path)
            here = (*path, key)
            if key in _ONE_SCHEMA:
                self.push(value, here, depth + 1, True)
            elif key == "items" and isinstance(value, (list, tuple)):  # draft 7: one schema per position
                self.schemas(key, value, here, depth)
            elif key == "items":
                self.push(value, here, depth + 1, True)
            elif key in _SCHEMA_LIST:
                self.schemas(key, value, here, depth)
            elif key in _SCHEMA_DICT:
                self.schema_dict(key, value, here, depth)
            elif key == "dependencies":
                self.dependencies(value, here, depth)
            else:
                self.keyword(key, value, here)
                self.push(value, here, depth + 1)

    def schemas(self, key: str, value: Any, path: _Path, depth: int) -> None:
        if not isinstance(value, (list, tuple)) or not value:
            raise _SchemaProblem(path, f"{key!r} must be a non-empty list of schemas, got {_kind(value)}")
        for position, item in enumerate(value):
            self.push(item, (*path, position), depth + 2, True)

    def schema_dict(self, key: str, value: Any, path: _Path, depth: int) -> None:
        if not isinstance(value, dict):
            raise _SchemaProblem(path, f"{key!r} must be a dict of schemas, got {_kind(value)}")
        for name, item in value.items():
            self.key(name, path)
            if key == "patternProperties":
                self.regex(name, path, f"the key {name!r}")
            self.push(item, (*path, name), depth + 2, True)

    def dependencies(self, value: Any, path: _Path, depth: int) -> None:
        if not isinstance(value, dict):
            raise _SchemaProblem(path, f"'dependencies' must be a dict, got {_kind(value)}")
        for name, item in value.items():
            self.key(name, path)
            if isinstance(item, (list, tuple)):
                self.names("dependencies", item, (*path, name))
                self.push(item, (*path, name), depth + 2)
            else:
                self.push(item, (*path, name), depth + 2, True)

    def names(self, key: str, value: Any, path: _Path) -> None:
        if not isinstance(value, (list, tuple)) or not all(isinstance(item, str) for item in value):
            raise _SchemaProblem(
                path, f"{key!r} must be a list of property names (strings), got {_kind(value)}"
            )
        if len(set(value)) != len(value):
            raise _SchemaProblem(path, f"{key!r} lists a property name twice: {list(value)!r:.200}")

    def regex(self, value: str, path: _Path, what: str) -> None:
        size, nesting = _pattern_size(value)
        if size > MAX_PATTERN_SIZE:
            raise _SchemaProblem(
                path,
                f"{what} is too large: it spells out more than {MAX_PATTERN_SIZE} items once its fixed "
                "repeats ('{n}') are counted",
            )
        if nesting > MAX_PATTERN_NESTING:
            raise _SchemaProblem(path, f"{what} nests its groups deeper than {MAX_PATTERN_NESTING} levels")
        try:
            regex.compile(value)
        except (regex.error, ValueError, OverflowError, RecursionError) as exc:
            raise _SchemaProblem(path, f"{what} is not a valid regular expression ({exc})") from None

    def keyword(self, key: str, value: Any, path: _Path) -> None:
        """The form of a keyword whose value is not a schema (the value is then checked as JSON)."""
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        if key == "type":
            kinds = list(value) if isinstance(value, (list, tuple)) else [value]
            if not kinds or not all(isinstance(kind, str) and kind in JSON_TYPES for kind in kinds):
                raise _SchemaProblem(
                    path,
                    f"'type' must be one of {', '.join(JSON_TYPES)} or a non-empty list of them, "
                    f"got {value!r:.200}",
                )
            if len(set(kinds)) != len(kinds):
                raise _SchemaProblem(path, f"'type' lists a type twice: {value!r}")
        elif key in _BOUNDS or key == "multipleOf":
            if not number or not _finite(value):
                raise _SchemaProblem(path, f"{key!r} must be a finite number, got {value!r:.200}")
            if key == "multipleOf" and value <= 0:
                raise _SchemaProblem(path, f"'multipleOf' must be greater than 0, got {value!r}")
        elif key in _COUNTS:
            if not number or not _finite(value) or value < 0 or value != int(value):
                raise _SchemaProblem(path, f"{key!r} must be a non-negative integer, got {value!r:.200}")
        elif key in _FLAGS:
            if not isinstance(value, bool):
                raise _SchemaProblem(path, f"{key!r} must be true or false, got {value!r:.200}")
        elif key in _TEXTS or key == "pattern":
            if not isinstance(value, str):
                raise _SchemaProblem(path, f"{key!r} must be a string, got {_kind(value):.200}")
            if key == "pattern":
                self.regex(value, path, f"'pattern' {_shown(value)!r:.200}")
        elif key == "required":
            self.names(key, value, path)
        elif key == "dependentRequired":
            if not isinstance(value, dict):
                raise _SchemaProblem(path, f"'dependentRequired' must be a dict, got {_kind(value)}")
            for name, item in value.items():
                self.names(key, item, (*path, str(name)))
        elif key in _LISTS:
            if not isinstance(value, (list, tuple)):
                raise _SchemaProblem(path, f"{key!r} must be a list, got {_kind(value):.200}")
        elif key in _REFS:
            if not isinstance(value, str):
                raise _SchemaProblem(path, f"{key!r} must be a string, got {_kind(value):.200}")
            self.refs.append((path, value))
        elif key in _ANCHORS:
            if not isinstance(value, str) or _ANCHOR_NAME.fullmatch(value) is None:
                raise _SchemaProblem(
                    path,
                    f"{key!r} must be a name (a letter or '_', then letters, digits, '-', '.', '_'), "
                    f"got {value!r:.200}",
                )
            self.anchors.setdefault(value, path[:-1])


#: How large a ``pattern`` may be, counted as the items (characters, classes, escapes) it spells out with
#: its fixed repeats expanded (``a{3}`` is 3, ``(ab){3}`` is 6; only the lower bound of ``{m,n}`` counts),
#: and how deeply its groups may nest: compiling a regular expression costs about that much.
MAX_PATTERN_SIZE: int = 10_000
MAX_PATTERN_NESTING: int = 32

_QUANTIFIER = re.compile(r"\{(\d*)(?:,(\d*))?\}")


def _pattern_size(pattern: str) -> tuple[int, int]:
    """``(size, nesting)`` of a regular expression, as :data:`MAX_PATTERN_SIZE` counts them; a size above
    the limit may be reported as any number above it.

    >>> _pattern_size(r"^\\d{4}-(ab){2}$"), _pattern_size("a{1000000000}")[0] > MAX_PATTERN_SIZE
    ((11, 1), True)
    """
    sizes = [0]  # the size of each open group's contents so far
    last = 0  # the size of the item a quantifier would repeat
    deepest = 0
    i, end = 0, len(pattern)
    while i < end:
        char = pattern[i]
        if char == "(":
            sizes.append(0)
            deepest = max(deepest, len(sizes) - 1)
            last = 0
            i += 1
            continue
        if char == ")" and len(sizes) > 1:
            last = sizes.pop()
            sizes[-1] += last
            i += 1
            continue
        if char == "{":
            found = _QUANTIFIER.match(pattern, i)
            if found is not None and (found.group(1) or found.group(2)):
                digits = found.group(1)
                low = max(1, int(digits) if 0 < len(digits) <= 9 else 10**9 if digits else 0)
                extra = last * (low - 1)
                sizes[-1] += extra
                last += extra
                i = found.end()
                if sizes[-1] > MAX_PATTERN_SIZE:
                    return sizes[-1], deepest
                continue
        if char == "\\":
            i += 2
            if i < end and pattern[i - 1] in "pPNxuUg" and pattern[i] in "{<":  # \p{L}, \x{41}, \g<1>
                close = pattern.find("}" if pattern[i] == "{" else ">", i)
                i = end if close < 0 else close + 1
        elif char == "[":
            i += 1
            if i < end and pattern[i] == "^":
                i += 1
            if i < end and pattern[i] == "]":
                i += 1
            while i < end and pattern[i] != "]":
                i += 2 if pattern[i] == "\\" else 1
            i += 1
        else:
            i += 1
        last = 1
        sizes[-1] += 1
        if sizes[-1] > MAX_PATTERN_SIZE:
            return sizes[-1], deepest
    return sum(sizes), deepest


def _pointer_tokens(fragment: str) -> list[str]:
    """The tokens of a JSON-pointer fragment (after ``#``), percent-decoded and unescaped."""
    from urllib.parse import unquote

    return [token.replace("~1", "/").replace("~0", "~") for token in unquote(fragment).split("/")[1:]]


def _resolve(root: Any, ref: str, anchors: Mapping[str, _Path]) -> tuple[Any, _Path] | None:
    """The schema a reference within the document points to, and its path; ``None`` when there is none."""
    fragment = ref[1:]
    if fragment and not fragment.startswith("/"):
        path = anchors.get(fragment)
        return None if path is None else (_at(root, path), path)
    target: Any = root
    path_out: list[str | int] = []
    for token in _pointer_tokens(fragment):
        if isinstance(target, dict) and token in target:
            target = target[token]
            path_out.append(token)
        elif isinstance(target, (list, tuple)) and token.isdigit() and (token == "0" or token[0] != "0"):
            position = int(token)
            if position >= len(target):
                return None
            target = target[position]
            path_out.append(position)
        else:
            return None
    return target, tuple(path_out)


def _at(root: Any, path: _Path) -> Any:
    value = root
    for token in path:
        value = value[token]
    return value


def _check_refs(root: Any, walk: _SchemaWalk) -> None:
    for path, ref in walk.refs:
        if not ref.startswith("#"):
            raise _SchemaProblem(
                path,
                f"{path[-1]!s} {_shown(ref)!r:.200} points outside the tool's schema; only references within "
                "it are read ('#', '#/json/pointer', '#anchor')",
            )
        found = _resolve(root, ref, walk.anchors)
        if found is None:
            raise _SchemaProblem(
                path, f"{path[-1]!s} {_shown(ref)!r:.200} does not resolve within the schema"
            )
        target, target_path = found
        if not isinstance(target, (dict, bool)):
            raise _SchemaProblem(
                path, f"{path[-1]!s} {_shown(ref)!r:.200} points to {_kind(target):.80}, not to a schema"
            )
        # A chain of references that comes back to where it started never reaches a schema.
        seen = {path[:-1]}
        while isinstance(target, dict) and isinstance(target.get("$ref"), str) and target_path not in seen:
            seen.add(target_path)
            found = _resolve(root, target["$ref"], walk.anchors)
            if found is None:
                break  # reported when that reference itself is checked
            target, target_path = found
        if target_path in seen:
            raise _SchemaProblem(
                path,
                f"{path[-1]!s} {_shown(ref)!r:.200} leads into a cycle of references "
                "('$ref' to '$ref') that never reaches a schema",
            )


def check_schema(schema: Any) -> None:
    """Check a tool's parameter schema the way :func:`tool_parameters` does, raising :class:`ToolSchemaError`.

    The schema must be a JSON document (string keys, finite numbers, text without lone surrogates) no
    deeper than :data:`MAX_SCHEMA_DEPTH`, describe an object (a ``type``, if any, allows ``"object"``),
    and every keyword of JSON Schema it uses must have the form JSON Schema gives it: ``type`` names JSON
    types, ``pattern`` and ``patternProperties`` compile, bounds are finite numbers, counts non-negative
    integers, ``required`` lists distinct names, subschemas are dicts or booleans, and each ``$ref``
    resolves within the schema itself (a reference may be recursive; a cycle of references that never
    reaches a schema is refused). ``pattern`` is compiled as a Python regular expression (the ``regex``
    module, a superset of ``re``): a pattern it refuses is refused, but an engine with another dialect
    (ECMAScript) may still refuse one it accepts. Keywords it does not know are only checked to be JSON.
    The walk is iterative: no schema raises ``RecursionError``.

    >>> check_schema({"type": "object", "properties": {"days": {"type": "integer", "minimum": 1}}})
    >>> check_schema({"type": "object", "properties": {"days": {"$ref": "#/$defs/days"}}})
    Traceback (most recent call last):
    ...
    response_templates.tools.ToolSchemaError: tools: invalid schema at #/properties/days/$ref: $ref '#/$defs/days' does not resolve within the schema
    """
    try:
        _check(schema)
    except _SchemaProblem as problem:
        raise ToolSchemaError(problem.message, path=schema_pointer(problem.path)) from None


def _check(schema: Any) -> _SchemaWalk:
    if not isinstance(schema, dict):
        raise _SchemaProblem((), f"a parameters schema must be a dict, got {_kind(schema):.80}")
    declared = schema.get("type", "object")
    kinds = declared if isinstance(declared, (list, tuple)) else [declared]
    walk = _SchemaWalk()
    walk.run(schema)
    if "object" not in kinds:
        raise _SchemaProblem(
            ("type",),
            f"a tool's arguments are a JSON object, so 'type' must allow \"object\", got {declared!r}",
        )
    _check_refs(schema, walk)
    return walk


# ---------------------------------------------------------------------------------------------------------
# Tool lists
#
# The shapes a tool may come in, and where each keeps its parameter schema:
# * OpenAI chat:      {"type": "function", "function": {"name": ..., "parameters": {...}}}
#                     "parameters" may be left out or null: a function without arguments;
# * OpenAI Responses: {"type": "function", "name": ..., "parameters": {...}}   ("parameters" required,
#                     null for a function without arguments, as that API has it);
# * bare:             {"name": ..., "parameters": {...}}   (the same);
# * Anthropic:        {"name": ..., "input_schema": {...}}   ("input_schema" required, a schema: that API
#                     has no tool without one; "type" may be "custom").

#: The keys a tool dict may keep its parameter schema under.
SCHEMA_KEYS = ("parameters", "input_schema")
_NO_ARGUMENTS: dict[str, Any] = {"type": "object", "properties": {}}


def _tool_name(spec: Mapping[Any, Any], index: int) -> str:
    name = spec.get("name")
    if not isinstance(name, str) or not name:
        raise ToolSpecError(f"has no name: 'name' must be a non-empty string, got {name!r}", index=index)
    found = _LONE_SURROGATE.search(name)
    if found is not None:
        raise ToolSpecError(
            f"'name' {name!r} holds a lone surrogate (U+{ord(found.group()):04X}), which is not Unicode text",
            index=index,
        )
    return name


def _tool_schema(tool: Mapping[Any, Any], index: int) -> tuple[str, str, dict[str, Any] | None]:
    """``(name, the key the schema was read from, schema or None for a tool without arguments)`` of a tool
    dict."""
    kind = tool.get("type")
    if "function" in tool:  # the chat shape
        spec = tool["function"]
        if not isinstance(spec, dict):
            raise ToolSpecError(f"'function' must be a dict, got {type(spec).__name__}", index=index)
        name = _tool_name(spec, index)
        if "input_schema" in spec and "parameters" not in spec:
            raise ToolSpecError(
                '\'function.input_schema\' is not read: a {"type": "function", "function": {...}} tool keeps '
                'its schema in \'function.parameters\' (an Anthropic tool is {"name": ..., "input_schema": '
                "...}, without the wrapper)",
                index=index,
                name=name,
            )
        return name, "function.parameters", _schema_value(spec.get("parameters"), "parameters", index, name)
    name = _tool_name(tool, index)
    if kind is not None and kind not in ("function", "custom"):
        raise ToolSpecError(
            f"a tool of type {kind!r:.80} is not a function tool: it has no parameter schema to type arguments "
            "by or build a grammar from; leave it out of tools=",
            index=index,
            name=name,
        )
    present = [key for key in SCHEMA_KEYS if key in tool]
    if len(present) == 2:
        raise ToolSpecError(
            "has both 'parameters' and 'input_schema'; keep the schema under one of them",
            index=index,
            name=name,
        )
    if not present:
        raise ToolSpecError(
            "has no parameter schema: looked for 'parameters' (OpenAI Responses and bare tools, also "
            "'function.parameters' in the chat shape) and 'input_schema' (Anthropic); write "
            '"parameters": null for a tool without arguments',
            index=index,
            name=name,
        )
    key = present[0]
    if key == "input_schema":
        if kind == "function":
            raise ToolSpecError(
                "a {\"type\": \"function\", ...} tool keeps its schema in 'parameters', not 'input_schema'",
                index=index,
                name=name,
            )
        if not isinstance(tool[key], dict):
            raise ToolSpecError(
                f"'input_schema' must be a JSON-schema object (a dict), got {type(tool[key]).__name__} (an "
                'Anthropic tool without arguments has {"type": "object"})',
                index=index,
                name=name,
            )
    elif kind == "custom":
        raise ToolSpecError(
            "a tool of type 'custom' is an Anthropic tool and keeps its schema in 'input_schema'",
            index=index,
            name=name,
        )
    return name, key, _schema_value(tool[key], key, index, name)


def _schema_value(schema: Any, key: str, index: int, name: str) -> dict[str, Any] | None:
    if schema is None:
        return None
    if not isinstance(schema, dict):
        raise ToolSpecError(
            f"{key!r} must be a JSON-schema object (a dict), got {type(schema).__name__}",
            index=index,
            name=name,
        )
    return schema


def _checked(schema: dict[str, Any], key: str | None, index: int, name: str) -> _SchemaWalk:
    try:
        return _check(schema)
    except _SchemaProblem as problem:
        raise ToolSchemaError(
            problem.message, path=schema_pointer(problem.path), index=index, name=name, key=key
        ) from None


def tool_schemas(
    tools: Sequence[Mapping[str, Any] | Callable[..., Any]] | None,
) -> dict[str, dict[str, Any]]:
    """Map each tool's name to its whole parameter schema, checked (see :func:`check_schema`).

    ``tools`` is a request's tool list, in any of the shapes the wire formats carry: OpenAI chat
    ``{"type": "function", "function": {"name": ..., "parameters": ...}}``, OpenAI Responses
    ``{"type": "function", "name": ..., "parameters": ...}``, bare ``{"name": ..., "parameters": ...}``,
    Anthropic ``{"name": ..., "input_schema": ...}``, or Python functions (see :func:`callable_to_schema`).
    A chat-shape tool may leave ``parameters`` out; the others need their schema key (``parameters``
    may be null). A tool without arguments maps to ``{"type": "object", "properties": {}}``. The
    schemas are the caller's own objects, not copies; treat them as read-only. Tools keep their order;
    a tool listed twice appears once.

    >>> tool_schemas([{"name": "get_weather", "input_schema": {"type": "object", "properties": {"days": {"type": "integer"}}}},
    ...               {"type": "function", "function": {"name": "now"}}])
    {'get_weather': {'type': 'object', 'properties': {'days': {'type': 'integer'}}}, 'now': {'type': 'object', 'properties': {}}}

    Raises:
        ToolSchemaError: a tool's schema is refused (see :func:`check_schema`); ``path`` says where in it.
        ToolSpecError: ``tools`` is not a list, or a tool is malformed: no name, no schema key where its
            shape needs one, or two different tools with one name. The message names the tool's index
            and, when known, its name.
    """
    return {name: tool.schema for name, tool in _read_tools(tools).items()}


class _ReadTool:
    """One tool as read: its checked parameter schema, its ``properties`` as written, and the same with
    the references typing reads resolved (:func:`resolved_properties`)."""

    __slots__ = ("properties", "schema", "typed")

    def __init__(self, schema: dict[str, Any], properties: dict[str, Any], typed: dict[str, Any]) -> None:
        self.schema = schema
        self.properties = properties
        self.typed = typed


def _read_tools(
    tools: Sequence[Mapping[str, Any] | Callable[..., Any]] | None,
) -> dict[str, _ReadTool]:
    """Each tool's name -> the tool as read, checked."""
    if tools is None:
        return {}
    if isinstance(tools, (str, bytes, Mapping)) or callable(tools) or not isinstance(tools, Iterable):
        raise ToolSpecError(f"expected a list of tools, got a single {type(tools).__name__}")
    read: dict[str, _ReadTool] = {}
    first_index: dict[str, int] = {}
    for index, tool in enumerate(tools):
        walk: _SchemaWalk | None = None
        if isinstance(tool, dict):
            name, key, found = _tool_schema(tool, index)
            schema = _NO_ARGUMENTS if found is None else found
            if found is not None:
                walk = _checked(found, key, index, name)
        elif inspect.isfunction(tool) or inspect.ismethod(tool):
            try:
                function = callable_to_schema(tool)["function"]
            except ToolSpecError as exc:
                raise ToolSpecError(exc.detail, index=index, name=exc.name) from None
            name = function["name"]
            schema = function["parameters"]
            walk = _checked(schema, None, index, name)
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
        properties = schema.get("properties")
        if properties is None:
            properties = {}
        if name in read and read[name].properties != properties:
            raise ToolSpecError(
                f"tool #{first_index[name]} has the same name but different parameters; tool names must be unique",
                index=index,
                name=name,
            )
        if name not in read:
            typed = properties if walk is None or not walk.refs else _resolve_properties(schema, walk.anchors)
            read[name] = _ReadTool(schema, properties, typed)
            first_index[name] = index
    return read


def tool_parameters(
    tools: Sequence[Mapping[str, Any] | Callable[..., Any]] | None,
) -> dict[str, dict[str, Any]]:
    """Map each tool's name to its parameters' JSON schemas (the ``properties`` dict, ``{}`` if none).

    ``tools`` is read as :func:`tool_schemas` reads it (every shape the wire formats carry, Python
    functions too), schemas checked. A parameter whose schema refers into the tool's schema with
    ``$ref`` comes back resolved (see :func:`resolved_properties`), so that it is typed by what it
    refers to; otherwise the returned ``properties`` dicts are the caller's own objects, not copies;
    treat them as read-only. The same tool may be listed twice, but two different tools may not share
    a name.

    >>> tool_parameters([{"name": "get_weather", "input_schema": {"type": "object", "properties": {"days": {"type": "integer"}}}}])
    {'get_weather': {'days': {'type': 'integer'}}}

    Raises:
        ToolSchemaError, ToolSpecError: as :func:`tool_schemas`.
    """
    return {name: tool.typed for name, tool in _read_tools(tools).items()}


#: How many references :func:`resolved_properties` follows for one tool, and how deeply it follows them
#: (beyond, a reference is left as it is, and typing then ignores it).
_MAX_RESOLVED = 256
_MAX_RESOLVE_DEPTH = 32


def resolved_properties(schema: dict[str, Any]) -> dict[str, Any]:
    """The ``properties`` of a checked tool schema, each with the references that typing reads resolved.

    A parameter schema ``{"$ref": "#/$defs/days", ...}`` becomes the schema it refers to with the
    parameter's other keywords laid over it; the options of its ``anyOf``/``oneOf`` are resolved the same
    way. Nothing else is changed, and a schema without such references is returned as it is. Recursive
    references are followed a bounded number of times (typing only reads the top levels).

    >>> resolved_properties({"properties": {"days": {"$ref": "#/$defs/d", "description": "How many."}},
    ...                      "$defs": {"d": {"type": "integer"}}})
    {'days': {'type': 'integer', 'description': 'How many.'}}
    """
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        return {}
    walk = _SchemaWalk()
    try:
        walk.run(schema)
    except _SchemaProblem:
        return properties
    return properties if not walk.refs else _resolve_properties(schema, walk.anchors)


def _resolve_properties(schema: dict[str, Any], anchors: Mapping[str, _Path]) -> dict[str, Any]:
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        return {}
    budget = [_MAX_RESOLVED]
    resolved = {key: _resolved(schema, value, anchors, 0, budget) for key, value in properties.items()}
    if all(resolved[key] is value for key, value in properties.items()):
        return properties
    return resolved


def _resolved(root: Any, schema: Any, anchors: Mapping[str, _Path], depth: int, budget: list[int]) -> Any:
    if not isinstance(schema, dict) or depth >= _MAX_RESOLVE_DEPTH:
        return schema
    out = schema
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#") and budget[0] > 0:
        budget[0] -= 1
        found = _resolve(root, ref, anchors)
        if found is not None:
            target = _resolved(root, found[0], anchors, depth + 1, budget)
            rest = {key: value for key, value in schema.items() if key != "$ref"}
            out = {**target, **rest} if isinstance(target, dict) else rest
    for union in ("anyOf", "oneOf"):
        options = out.get(union)
        if isinstance(options, list):
            new = [_resolved(root, option, anchors, depth + 1, budget) for option in options]
            if any(a is not b for a, b in zip(new, options, strict=True)):
                out = {**out, union: new}
    return out


def relocate_refs(schema: dict[str, Any], prefix: str) -> dict[str, Any]:
    """A copy of a checked ``schema`` whose references within it (``#``, ``#/...``) still point to the same
    places once the schema sits at ``prefix`` (a JSON pointer such as ``/properties/arguments``) inside
    another document; ``schema`` itself when it has no such reference. ``#anchor`` references are kept.

    >>> moved = relocate_refs({"properties": {"a": {"$ref": "#/$defs/a"}}, "$defs": {"a": {"type": "integer"}}},
    ...                       "/properties/arguments")
    >>> moved["properties"]
    {'a': {'$ref': '#/properties/arguments/$defs/a'}}
    """
    walk = _SchemaWalk()
    walk.run(schema)
    moved = [(path, ref) for path, ref in walk.refs if ref == "#" or ref.startswith("#/")]
    if not moved:
        return schema
    copied: dict[str, Any] = copy.deepcopy(schema)
    for path, ref in moved:
        _at(copied, path[:-1])[path[-1]] = "#" + prefix + ref[1:]
    return copied


def has_refs(schema: Any) -> bool:
    """Whether a checked schema holds a ``$ref`` (or ``$dynamicRef``) anywhere.

    >>> has_refs({"items": {"$ref": "#"}}), has_refs({"properties": {"$ref": {"type": "string"}}})
    (True, False)
    """
    walk = _SchemaWalk()
    walk.run(schema)
    return bool(walk.refs)
