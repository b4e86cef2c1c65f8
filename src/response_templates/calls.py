"""What a tool call is: its parts, how they are read from a parsed value, and how arguments are typed.

A parsed tool call comes in one of two shapes:

* the chat shape ``{"type": "function", "id": ..., "function": {"name": ..., "arguments": {...}}}``;
* the bare shape ``{"name": ..., "arguments": {...}}`` (``"parameters"`` is accepted for the arguments,
  as some models write it; an ``"id"`` may sit beside the name).

The keys of both shapes are named once here (:data:`FUNCTION_KEY`, :data:`NAME_KEY`, :data:`ID_KEY`,
:data:`ARGUMENTS_KEYS`) and read by two functions, :func:`call_function` (where name and arguments sit)
and :func:`arguments_key` (which key holds the arguments). Everything that looks at calls goes through
them: :func:`call_parts` (the tool streamer, the wire adapters), :func:`type_tool_calls` (the parser's
argument typing) and the tool streamer's plan of a template's transform. So both shapes are typed alike,
and typing keeps a call's shape: it only replaces the arguments.

>>> params = {"set_alarm": {"hour": {"type": "integer"}}}
>>> type_tool_calls({"name": "set_alarm", "arguments": {"hour": "7"}}, params)
{'name': 'set_alarm', 'arguments': {'hour': 7}}
>>> type_tool_calls({"type": "function", "function": {"name": "set_alarm", "arguments": {"hour": "7"}}}, params)
{'type': 'function', 'function': {'name': 'set_alarm', 'arguments': {'hour': 7}}}
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any

from .jsonlex.canonical import dumps_arguments

__all__ = [
    "ARGUMENTS_KEYS",
    "FUNCTION_KEY",
    "ID_KEY",
    "NAME_KEY",
    "argument_cast",
    "arguments_key",
    "arguments_text",
    "call_function",
    "call_parts",
    "flatten_calls",
    "schema_types",
    "type_call",
    "type_tool_calls",
]


def arguments_text(arguments: Any) -> str:
    """The ``arguments`` string the wire formats carry for a parsed call's arguments.

    A dict (the usual case) and any other JSON value are written by :func:`dumps_arguments`; a string is
    kept as it is (a model that wrote its arguments as a JSON string, or a ``json`` region with
    ``allow_non_json`` that fell back to text); a missing value (``None``) is ``"{}"``.

    >>> arguments_text({"q": "x"}), arguments_text('{"q": "x"}'), arguments_text(None)
    ('{"q": "x"}', '{"q": "x"}', '{}')
    """
    if isinstance(arguments, str):
        return arguments
    if arguments is None:
        return "{}"
    return dumps_arguments(arguments)


# ---------------------------------------------------------------------------------------------------------
# The call shape: the one reading of a call's keys (the parser's typing, the tool streamer's plan and the
# wire adapters all go through these names and functions)

#: The key of the chat shape's wrapper around name and arguments.
FUNCTION_KEY = "function"
#: The keys of a call's name and id (the id sits beside the name in the bare shape, beside ``function`` in
#: the chat shape: in both, at the top of the call).
NAME_KEY = "name"
ID_KEY = "id"
#: The keys a call's arguments may sit under, in order of preference.
ARGUMENTS_KEYS = ("arguments", "parameters")


def call_function(value: Mapping[str, Any]) -> Mapping[str, Any]:
    """The mapping that holds a call's name and arguments: ``value["function"]`` when that is a mapping
    (the chat shape), else ``value`` itself (the bare shape).

    >>> call_function({"type": "function", "function": {"name": "f"}}), call_function({"name": "f"})
    ({'name': 'f'}, {'name': 'f'})
    """
    function = value.get(FUNCTION_KEY)
    return function if isinstance(function, Mapping) else value


def arguments_key(function: Mapping[str, Any]) -> str | None:
    """The key ``function`` (see :func:`call_function`) holds its arguments under, or ``None`` (no
    arguments: they are ``{}``).

    >>> arguments_key({"name": "f", "parameters": {}}), arguments_key({"name": "f"})
    ('parameters', None)
    """
    for key in ARGUMENTS_KEYS:
        if key in function:
            return key
    return None


def call_parts(value: Any) -> tuple[str, str | None, Any] | None:
    """``(name, id, arguments)`` of one parsed tool call, or ``None`` if ``value`` is not one.

    Accepts the chat shape ``{"type": "function", "id": ..., "function": {"name": ..., "arguments": ...}}``
    and a bare ``{"name": ..., "arguments": ...}`` (also ``"parameters"`` for the arguments, as some
    models write). A missing arguments value is ``{}``; a non-string id is written as JSON.

    >>> call_parts({"type": "function", "function": {"name": "f", "arguments": {"x": 1}}})
    ('f', None, {'x': 1})
    >>> call_parts({"id": "functions.f:0", "name": "f", "parameters": {}})
    ('f', 'functions.f:0', {})
    """
    if not isinstance(value, dict):
        return None
    function = call_function(value)
    name = function.get(NAME_KEY)
    if not isinstance(name, str) or not name:
        return None
    key = arguments_key(function)
    arguments = function[key] if key is not None else {}
    call_id = value.get(ID_KEY)
    if call_id is not None and not isinstance(call_id, str):
        call_id = json.dumps(call_id)
    return name, call_id or None, arguments


def flatten_calls(value: Any) -> list[Any]:
    """The calls in a tool-call region's value: a dict is one call, lists are flattened."""
    if isinstance(value, list):
        out: list[Any] = []
        stack = [iter(value)]
        while stack:
            for item in stack[-1]:
                if isinstance(item, list):
                    stack.append(iter(item))
                    break
                out.append(item)
            else:
                stack.pop()
        return out
    return [] if value is None else [value]


# ---------------------------------------------------------------------------------------------------------
# Typing tool-call arguments

_FAILED: Any = object()  # a cast that did not apply (``None`` is a legitimate result of the null cast)


def schema_types(schema: Any) -> tuple[str, ...]:
    """The JSON types a parameter schema allows, in the order to try them."""
    if not isinstance(schema, dict):
        return ()
    kinds: list[str] = []
    declared = schema.get("type")
    if isinstance(declared, str):
        kinds.append(declared)
    elif isinstance(declared, list):
        kinds.extend(kind for kind in declared if isinstance(kind, str))
    for union in ("anyOf", "oneOf"):
        options = schema.get(union)
        if isinstance(options, (list, tuple)):
            for option in options:
                kinds.extend(schema_types(option))
    if schema.get("nullable") and "null" not in kinds:
        kinds.append("null")
    return tuple(kinds)


def _whole_number(raw: str, approx: float) -> int | None:
    """The integer ``raw`` denotes exactly, given that ``float(raw)`` rounds to the whole number ``approx``;
    ``None`` when the exact value has a fraction (e.g. ``"3.0000000000000000001"``)."""
    try:
        exact = Decimal(raw)
    except (ArithmeticError, ValueError):
        return int(approx)
    whole = int(exact)
    return whole if whole == exact else None


def _as_integer(raw: str) -> Any:
    try:
        return int(raw)
    except ValueError:
        pass
    try:
        approx = float(raw)  # whole numbers written as floats, e.g. "3.0" or "1e3"
    except ValueError:
        return _FAILED
    if not approx.is_integer():  # also rejects nan and inf
        return _FAILED
    whole = _whole_number(raw, approx)
    return _FAILED if whole is None else whole


def _as_number(raw: str) -> Any:
    try:
        approx = float(raw)
    except ValueError:
        return _FAILED
    if not math.isfinite(approx):
        return _FAILED
    if "." in raw or not approx.is_integer():
        return approx
    # Written without a decimal point and whole: an int, exact even beyond float precision.
    try:
        return int(raw)
    except ValueError:
        whole = _whole_number(raw, approx)
        return approx if whole is None else whole


def _as_boolean(raw: str) -> Any:
    word = raw.strip().lower()
    if word in ("true", "1"):
        return True
    if word in ("false", "0"):
        return False
    return _FAILED


def _as_null(raw: str) -> Any:
    return None if raw.strip() in ("null", "None") else _FAILED


def _as_json(expected: type) -> Callable[[str], Any]:
    def cast(raw: str) -> Any:
        try:
            decoded = json.loads(raw)
        except (ValueError, RecursionError):
            return _FAILED
        return decoded if isinstance(decoded, expected) else _FAILED

    return cast


_CASTS: dict[str, Callable[[str], Any]] = {
    "integer": _as_integer,
    "number": _as_number,
    "boolean": _as_boolean,
    "null": _as_null,
    "object": _as_json(dict),
    "array": _as_json(list),
}


def _cast(raw: str, kinds: tuple[str, ...]) -> Any:
    """``raw`` cast to the first of ``kinds`` that accepts it; ``raw`` itself when none does."""
    for kind in kinds:
        cast = _CASTS.get(kind)  # "string" and unknown types never end the search
        if cast is not None:
            value = cast(raw)
            if value is not _FAILED:
                return value
    return raw


def _type_argument(argument: Any, kinds: tuple[str, ...]) -> Any:
    """One argument typed by the JSON types its schema allows; ``argument`` itself when nothing changes."""
    if isinstance(argument, str):
        return _cast(argument, kinds)
    if isinstance(argument, list) and "array" not in kinds:
        # the values of a key repeated in the output (merge_duplicates): cast one by one
        value = argument
        for position, item in enumerate(argument):
            if isinstance(item, str) and (cast_item := _cast(item, kinds)) is not item:
                if value is argument:
                    value = list(argument)
                value[position] = cast_item
        return value
    return argument


def type_call(
    call: dict[Any, Any], params: Mapping[str, Mapping[str, Any]], *, keep_strings: bool = False
) -> dict[Any, Any]:
    """One tool call (either shape) with its arguments typed by ``params``; ``call`` itself when nothing
    changes. The result keeps the call's shape: only the arguments value is replaced. ``keep_strings``:
    leave alone every argument whose schema admits a string (see :func:`type_tool_calls`).

    >>> params = {"f": {"n": {"type": "integer"}}}
    >>> type_call({"id": "c1", "name": "f", "parameters": {"n": "3"}}, params)
    {'id': 'c1', 'name': 'f', 'parameters': {'n': 3}}
    """
    function = call_function(call)
    name = function.get(NAME_KEY)
    key = arguments_key(function)
    if not isinstance(name, str) or key is None:
        return call
    arguments = function[key]
    properties = params.get(name)
    if not isinstance(arguments, dict) or not properties or not isinstance(properties, dict):
        return call
    typed: dict[Any, Any] | None = None
    for argument_name, argument in arguments.items():
        if argument_name not in properties:
            continue
        kinds = schema_types(properties[argument_name])
        if not kinds or (keep_strings and "string" in kinds):
            continue
        value = _type_argument(argument, kinds)
        if value is not argument:
            if typed is None:
                typed = dict(arguments)
            typed[argument_name] = value
    if typed is None:
        return call
    if function is call:
        return {**call, key: typed}
    return {**call, FUNCTION_KEY: {**function, key: typed}}


def argument_cast(
    params: Mapping[str, Mapping[str, Any]], tool: Any, key: str, written: str, *, keep_strings: bool = False
) -> Callable[[Any], Any] | None:
    """How typing changes argument ``key`` of a call to ``tool`` that the model writes as a ``written``
    value (``"string"`` or ``"array"``): a function from the complete value to the typed one (what
    :func:`type_call` makes of it), or ``None`` when typing can never change such a value (unknown tool or
    parameter, a schema with no castable type, an array the schema allows as it is, a schema that admits
    a string under ``keep_strings``).

    >>> cast = argument_cast({"f": {"n": {"type": "integer"}}}, "f", "n", "string")
    >>> cast("3"), cast("three"), argument_cast({"f": {"n": {"type": "string"}}}, "f", "n", "string")
    (3, 'three', None)
    """
    properties = params.get(tool) if isinstance(tool, str) else None
    if not properties or not isinstance(properties, dict) or key not in properties:
        return None
    kinds = schema_types(properties[key])
    if not any(kind in _CASTS for kind in kinds) or (written == "array" and "array" in kinds):
        return None
    if keep_strings and "string" in kinds:
        return None

    def cast(value: Any) -> Any:
        return _type_argument(value, kinds)

    return cast


def _type_value(value: Any, params: Mapping[str, Mapping[str, Any]], keep_strings: bool) -> Any:
    if isinstance(value, dict):
        return type_call(value, params, keep_strings=keep_strings)
    if isinstance(value, list):
        typed: list[Any] | None = None
        for position, item in enumerate(value):
            new = _type_value(item, params, keep_strings)
            if new is not item:
                if typed is None:
                    typed = list(value)
                typed[position] = new
        return value if typed is None else typed
    return value


def type_tool_calls(
    value: Any, params: Mapping[str, Mapping[str, Any]], *, keep_strings: bool = False
) -> Any:
    """Cast the string arguments of the tool calls in a parsed field value by their tools' schemas.

    ``value`` is a tool call of either shape (see :func:`call_parts`), or a list of them (lists are
    descended, nothing else is); each call keeps its shape. ``params`` comes from :func:`tool_parameters`. Each string
    argument whose parameter schema names a type is cast to the first type that accepts it: ``integer``
    (``"3"``, also ``"3.0"``), ``number`` (``"3"`` -> 3, ``"3.5"`` -> 3.5; NaN and infinities refused),
    ``boolean`` (``true``/``false``/``1``/``0`` in any case), ``null`` (``null``/``None``), ``object`` and
    ``array`` (JSON that decodes to a dict / list). Type lists, ``anyOf``/``oneOf`` and ``nullable``
    are tried in order. A failed cast keeps the string; ``string`` parameters, unknown tools and unknown
    parameters are left alone. A list argument whose schema does not allow ``array`` (a repeated key
    collected by ``merge_duplicates``) has its string items cast one by one.

    ``keep_strings``: also leave alone every argument whose schema admits a string (``"string"`` in a
    type list, an ``anyOf``/``oneOf`` option or a nullable string): for content whose syntax already tells
    a string from other values (``json``, ``python-call-list``), where ``"7"`` was written as a string.

    >>> params = {"f": {"n": {"type": ["string", "integer"]}, "k": {"type": "integer"}}}
    >>> call = {"name": "f", "arguments": {"n": "7", "k": "7"}}
    >>> type_tool_calls(call, params)["arguments"], type_tool_calls(call, params, keep_strings=True)["arguments"]
    ({'n': 7, 'k': 7}, {'n': '7', 'k': 7})

    The input is never modified: changed calls and lists are new objects, unchanged ones are returned as
    they came.
    """
    if not params:
        return value
    try:
        return _type_value(value, params, keep_strings)
    except RecursionError:  # absurdly deep nesting of lists or schemas: leave the value untyped
        return value
