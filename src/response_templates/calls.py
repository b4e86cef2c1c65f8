"""What a tool call is: its parts, how they are read from a parsed value, and how arguments are typed.

A parsed tool call comes in one of two shapes:

* the chat shape ``{"type": "function", "id": ..., "function": {"name": ..., "arguments": {...}}}``;
* the bare shape ``{"name": ..., "arguments": {...}}`` (``"parameters"`` is accepted for the arguments,
  as some models write it; an ``"id"`` may sit beside the name).

Every part of the library that looks at calls (the parser's argument typing, the tool-call streamer, the
wire adapters) reads them through :func:`call_parts` and types them with :func:`type_tool_calls`.

>>> params = {"set_alarm": {"hour": {"type": "integer"}}}
>>> type_tool_calls({"function": {"name": "set_alarm", "arguments": {"hour": "7"}}}, params)
{'function': {'name': 'set_alarm', 'arguments': {'hour': 7}}}
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any

from .jsonlex.canonical import dumps_arguments

__all__ = [
    "CASTS",
    "arguments_text",
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
    function = value.get("function")
    if not isinstance(function, dict):
        function = value
    name = function.get("name")
    if not isinstance(name, str) or not name:
        return None
    if "arguments" in function:
        arguments = function["arguments"]
    elif "parameters" in function:
        arguments = function["parameters"]
    else:
        arguments = {}
    call_id = value.get("id")
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


CASTS: dict[str, Callable[[str], Any]] = {
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
        cast = CASTS.get(kind)  # "string" and unknown types never end the search
        if cast is not None:
            value = cast(raw)
            if value is not _FAILED:
                return value
    return raw


def type_call(call: dict[Any, Any], params: Mapping[str, dict[str, Any]]) -> dict[Any, Any]:
    function = call.get("function")
    if not isinstance(function, dict):
        return call
    name = function.get("name")
    arguments = function.get("arguments")
    if not isinstance(name, str) or not isinstance(arguments, dict):
        return call
    properties = params.get(name)
    if not properties or not isinstance(properties, dict):
        return call
    typed: dict[Any, Any] | None = None
    for key, argument in arguments.items():
        if key not in properties:
            continue
        kinds = schema_types(properties[key])
        if not kinds:
            continue
        if isinstance(argument, str):
            value = _cast(argument, kinds)
        elif isinstance(argument, list) and "array" not in kinds:
            # the values of a key repeated in the output (merge_duplicates): cast one by one
            value = argument
            for position, item in enumerate(argument):
                if isinstance(item, str) and (cast_item := _cast(item, kinds)) is not item:
                    if value is argument:
                        value = list(argument)
                    value[position] = cast_item
        else:
            continue
        if value is not argument:
            if typed is None:
                typed = dict(arguments)
            typed[key] = value
    if typed is None:
        return call
    return {**call, "function": {**function, "arguments": typed}}


def _type_value(value: Any, params: Mapping[str, dict[str, Any]]) -> Any:
    if isinstance(value, dict):
        return type_call(value, params)
    if isinstance(value, list):
        typed: list[Any] | None = None
        for position, item in enumerate(value):
            new = _type_value(item, params)
            if new is not item:
                if typed is None:
                    typed = list(value)
                typed[position] = new
        return value if typed is None else typed
    return value


def type_tool_calls(value: Any, params: Mapping[str, dict[str, Any]]) -> Any:
    """Cast the string arguments of the tool calls in a parsed field value by their tools' schemas.

    ``value`` is a tool call ``{"function": {"name": ..., "arguments": {...}}, ...}``, or a list of them
    (lists are descended, nothing else is). ``params`` comes from :func:`tool_parameters`. Each string
    argument whose parameter schema names a type is cast to the first type that accepts it: ``integer``
    (``"3"``, also ``"3.0"``), ``number`` (``"3"`` -> 3, ``"3.5"`` -> 3.5; NaN and infinities refused),
    ``boolean`` (``true``/``false``/``1``/``0`` in any case), ``null`` (``null``/``None``), ``object`` and
    ``array`` (JSON that decodes to a dict / list). Type lists, ``anyOf``/``oneOf`` and ``nullable``
    are tried in order. A failed cast keeps the string; ``string`` parameters, unknown tools and unknown
    parameters are left alone. A list argument whose schema does not allow ``array`` (a repeated key
    collected by ``merge_duplicates``) has its string items cast one by one.

    The input is never modified: changed calls and lists are new objects, unchanged ones are returned as
    they came.
    """
    if not params:
        return value
    try:
        return _type_value(value, params)
    except RecursionError:  # absurdly deep nesting of lists or schemas: leave the value untyped
        return value
