"""The ``python-calls`` content parser (extension ``python-calls``, docs/extensions.md).

Tool calls written as Python calls (``[f(a=1), g()]``, a bare call, one call per line) become
``[{"name", "arguments"}]``; the text is read with :func:`ast.parse` and a whitelist of literal nodes,
never evaluated.

>>> from response_templates.content import parse_content
>>> parse_content('[get_weather(city="Paris", days=3), now()]', "python-calls")
[{'name': 'get_weather', 'arguments': {'city': 'Paris', 'days': 3}}, {'name': 'now', 'arguments': {}}]
"""

from __future__ import annotations

import ast
import warnings
from collections.abc import Mapping
from typing import Any

from ..errors import ContentError, TemplateError
from ._args import ARGS_KEY, check_args, ensure_valid, show, type_name
from .registry import ContentArgs, ContentParser

__all__ = ["MAX_PYTHON_DEPTH", "PYTHON_CALLS"]

MAX_PYTHON_DEPTH: int = 100
"""Deepest nesting of lists/dicts/tuples a ``python-calls`` argument value may have."""

#: Bare names read as JSON literals (models trained on JSON sometimes write them inside Python calls).
_PY_JSON_NAMES = {"true": True, "false": False, "null": None}


def _py_call_name(node: ast.expr) -> str:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        raise ContentError(
            f"python-calls: a call must name a function (name or dotted name), got {ast.dump(node)[:60]}"
        )
    parts.append(node.id)
    return ".".join(reversed(parts))


def _py_value(node: ast.expr, depth: int = 0) -> Any:
    """The JSON value of a literal node; anything else is a ContentError (nothing is evaluated)."""
    if depth > MAX_PYTHON_DEPTH:
        raise ContentError(
            f"python-calls: an argument value is nested more than {MAX_PYTHON_DEPTH} levels deep"
        )
    if isinstance(node, ast.Constant):
        value = node.value
        if value is None or isinstance(value, (str, bool, int, float)):
            return value
        raise ContentError(f"python-calls: {type(value).__name__} literals are not JSON data: {value!r}")
    if (
        isinstance(node, ast.UnaryOp)
        and isinstance(node.op, (ast.USub, ast.UAdd))
        and isinstance(node.operand, ast.Constant)
        and isinstance(node.operand.value, (int, float))
        and not isinstance(node.operand.value, bool)
    ):
        number = node.operand.value
        return -number if isinstance(node.op, ast.USub) else number
    if isinstance(node, (ast.List, ast.Tuple)):
        return [_py_value(item, depth + 1) for item in node.elts]
    if isinstance(node, ast.Dict):
        out: dict[str, Any] = {}
        for key, item in zip(node.keys, node.values, strict=True):
            if key is None:
                raise ContentError("python-calls: '**' unpacking inside a dict literal is not data")
            name = _py_value(key, depth + 1)
            if not isinstance(name, str):
                raise ContentError(f"python-calls: dict keys must be strings, got {name!r}")
            out[name] = _py_value(item, depth + 1)
        return out
    if isinstance(node, ast.Name) and node.id in _PY_JSON_NAMES:
        return _PY_JSON_NAMES[node.id]
    raise ContentError(
        f"python-calls: only literals (strings, numbers, True/False/None, lists, tuples, dicts) may be "
        f"argument values, got {type(node).__name__} at column {getattr(node, 'col_offset', '?')}"
    )


def _py_call(node: ast.expr) -> dict[str, Any]:
    if not isinstance(node, ast.Call):
        raise ContentError(f"python-calls: expected a call such as f(a=1), got {type(node).__name__}")
    name = _py_call_name(node.func)
    if node.args:
        raise ContentError(
            f"python-calls: {name}() has positional arguments; tool calls name every argument (k=v)"
        )
    arguments: dict[str, Any] = {}
    for kw in node.keywords:
        if kw.arg is None:
            raise ContentError(f"python-calls: {name}() uses '**' unpacking; only k=v arguments are data")
        if kw.arg in arguments:
            raise ContentError(f"python-calls: {name}() repeats the argument {kw.arg!r}")
        arguments[kw.arg] = _py_value(kw.value)
    return {"name": name, "arguments": arguments}


def _py_calls(tree: ast.expr) -> list[dict[str, Any]]:
    if isinstance(tree, (ast.List, ast.Tuple)):
        return [_py_call(item) for item in tree.elts]
    return [_py_call(tree)]


def _escape_raw_line_breaks(text: str) -> str:
    """``text`` with each line break inside a one-line string literal written as an escape.

    Chat templates that render arguments with Python quoting but without escaping (LFM2.5's, for one)
    put raw line breaks inside ``'...'``; a model trained on them writes the same.
    """
    out: list[str] = []
    quote = ""  # the open string's delimiter; "" outside strings
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if not quote:
            if ch in "'\"":
                quote = text[i : i + 3] if text[i : i + 3] in ("'''", '"""') else ch
                out.append(quote)
                i += len(quote)
                continue
        elif ch == "\\":
            out.append(text[i : i + 2])
            i += 2
            continue
        elif text.startswith(quote, i):
            out.append(quote)
            i += len(quote)
            quote = ""
            continue
        elif len(quote) == 1 and ch in "\r\n":
            out.append("\\n" if ch == "\n" else "\\r")
            i += 1
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def _py_parse(text: str) -> ast.expr:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # an invalid escape such as '\s' keeps its backslash
            return ast.parse(text, mode="eval").body
    except (SyntaxError, ValueError, MemoryError) as exc:  # ValueError: NUL bytes, huge int literals
        raise ContentError(f"python-calls: not a Python call expression: {exc}") from None
    except RecursionError:
        raise ContentError("python-calls: the text is nested too deeply") from None


def _validate_python_calls(args: Any, field: str | None) -> dict[str, Any]:
    args = check_args(args, ("name_suffix",), "python-calls", field)
    suffix = args.get("name_suffix", "")
    if not isinstance(suffix, str):
        raise TemplateError(
            f"python-calls: name_suffix must be a string, got {type_name(suffix)}",
            field=field,
            key=ARGS_KEY,
        )
    return ContentArgs(name_suffix=suffix)


def _parse_python_calls(text: str, args: Mapping[str, Any]) -> list[dict[str, Any]]:
    args = args if isinstance(args, ContentArgs) else ensure_valid(args, _validate_python_calls)
    calls = _python_calls(text)
    suffix = args["name_suffix"]
    if suffix:
        # A method that marks the call rather than naming the tool (Llama 3.1: brave_search.call(...)).
        for call in calls:
            name = call["name"]
            if name.endswith(suffix) and len(name) > len(suffix):
                call["name"] = name[: -len(suffix)]
    return calls


def _python_calls(text: str) -> list[dict[str, Any]]:
    stripped = text.strip()
    if not stripped:
        return []
    try:
        tree = _py_parse(stripped)
    except ContentError as whole:
        # Line breaks written raw inside one-line strings, then one call (or list of calls) per line.
        repaired = _escape_raw_line_breaks(stripped)
        if repaired != stripped:
            try:
                tree = _py_parse(repaired)
            except ContentError:
                pass
            else:
                return _py_calls_bounded(tree)
        lines = [line.strip() for line in repaired.splitlines() if line.strip()]
        if len(lines) < 2:
            raise whole from None
        calls: list[dict[str, Any]] = []
        for number, line in enumerate(lines, start=1):
            try:
                calls.extend(_py_calls_bounded(_py_parse(line)))
            except ContentError as exc:
                raise ContentError(f"{exc} (line {number}: {show(line)})") from None
        return calls
    return _py_calls_bounded(tree)


def _py_calls_bounded(tree: ast.expr) -> list[dict[str, Any]]:
    try:
        return _py_calls(tree)
    except RecursionError:
        raise ContentError("python-calls: the text is nested too deeply") from None


PYTHON_CALLS = ContentParser("python-calls", False, _parse_python_calls, _validate_python_calls)
