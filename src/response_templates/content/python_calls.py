"""The ``python-calls`` content parser (extension ``python-calls``, docs/extensions.md).

Tool calls written as Python calls (``[f(a=1), g()]``, a bare call, one call per line) become
``[{"name", "arguments"}]``; the text is read with :func:`ast.parse` and a whitelist of literal nodes,
never evaluated. It is the lenient reader of the shape that ``python-call-list`` reads strictly: names
that Python cannot parse but tool names use (``ns.tool-name(...)``, ``class(...)``) and Python keywords
used as argument names (``book_flight(from="SFO", to="JFK")``) are read as written.

>>> from response_templates.content import parse_content
>>> parse_content('[get_weather(city="Paris", days=3), now()]', "python-calls")
[{'name': 'get_weather', 'arguments': {'city': 'Paris', 'days': 3}}, {'name': 'now', 'arguments': {}}]
>>> parse_content('ns.book-flight(from="SFO", to="JFK", class=1)', "python-calls")
[{'name': 'ns.book-flight', 'arguments': {'from': 'SFO', 'to': 'JFK', 'class': 1}}]
"""

from __future__ import annotations

import ast
import keyword
import re
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


#: A name as tool calls write it: identifier segments joined by ``.`` or ``-`` (``ns.tool-name``).
_NAME_RUN = re.compile(r"(?<![\w.])[^\W\d]\w*(?:[-.]\w+)*")
#: What may follow a name that is rewritten: ``(`` (a called name) or ``=`` but not ``==`` (an argument).
_AFTER_NAME = re.compile(r"\s*(\(|=(?!=))")
_SURROGATE = re.compile("[\ud800-\udfff]")
_STRING_PREFIXES = frozenset({"r", "u", "b", "f", "br", "rb", "fr", "rf"})


def _python_name(name: str, dotted: bool) -> bool:
    """True if Python's parser reads ``name`` as one name (``dotted``: or as a dotted name)."""
    parts = name.split(".") if dotted else [name]
    return all(part.isidentifier() and not keyword.iskeyword(part) for part in parts)


#: The next character that may end a one-line / a triple-quoted string literal (or escape the next one).
_STRING_STOP = {1: re.compile(r"[\\'\"\r\n]"), 3: re.compile(r"[\\'\"]")}


def _string_end(text: str, i: int) -> int:
    """The offset after the string literal whose opening quote is at ``i`` (``len(text)`` if unclosed)."""
    quote = text[i : i + 3] if text[i : i + 3] in ("'''", '"""') else text[i]
    stop = _STRING_STOP[len(quote)]
    j = i + len(quote)
    while (found := stop.search(text, j)) is not None:
        j = found.start()
        ch = text[j]
        if ch == "\\":
            j += 2
        elif text.startswith(quote, j):
            return j + len(quote)
        elif ch in "\r\n":
            return j
        else:
            j += 1
    return len(text)


def _json_escapes(literal: str) -> str:
    """A non-raw string ``literal`` with JSON's ``\\/`` read as ``/`` and a raw NUL written as an escape.

    Both are what ``python-call-list`` reads (Python would keep the backslash, and refuses a NUL byte),
    so that every text the strict parser accepts reads the same here.
    """
    out: list[str] = []
    j, n = 0, len(literal)
    while j < n:
        ch = literal[j]
        if ch == "\\":
            pair = literal[j : j + 2]
            out.append("/" if pair == "\\/" else pair)
            j += 2
            continue
        out.append("\\x00" if ch == "\x00" else ch)
        j += 1
    return "".join(out)


def _rename(text: str) -> tuple[str, dict[str, str]]:
    """``text`` with the names Python cannot parse replaced by placeholders, and the placeholders.

    Rewritten are a called name that is not a (dotted) Python name (``ns.tool-name(``, ``class(``) and an
    argument name that is not a Python name (``from=``, ``a.b=``). Rewriting is safe because only calls
    and keyword arguments, never values, may be followed by ``(`` or ``=``. String literals are kept as
    written, except for :func:`_json_escapes` in a non-raw one.
    """
    out: list[str] = []
    names: dict[str, str] = {}
    base = "_rt_name"
    while base in text:
        base += "_"
    start = 0  # text[start:] is not copied to out yet

    def string(quote_at: int, raw: bool) -> int:
        nonlocal start
        end = _string_end(text, quote_at)
        literal = text[quote_at:end]
        if not raw and ("\\/" in literal or "\x00" in literal):
            out.append(text[start:quote_at])
            out.append(_json_escapes(literal))
            start = end
        return end

    i, n = 0, len(text)
    while i < n:
        if text[i] in "'\"":
            i = string(i, raw=False)
            continue
        match = _NAME_RUN.match(text, i)
        if match is None:
            i += 1
            continue
        name, end = match.group(), match.end()
        if name.lower() in _STRING_PREFIXES and text[end : end + 1] in ("'", '"'):
            i = string(end, raw="r" in name.lower())
            continue
        after = _AFTER_NAME.match(text, end)
        if after is not None and not _python_name(name, dotted=after.group(1) == "("):
            placeholder = f"{base}{len(names)}"
            names[placeholder] = name
            out.append(text[start:i])
            out.append(placeholder)
            start = end
        i = end
    out.append(text[start:])
    return "".join(out), names


def _py_call_name(node: ast.expr, names: dict[str, str]) -> str:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        raise ContentError(
            f"python-calls: a call must name a function (name or dotted name), got {ast.dump(node)[:60]}"
        )
    parts.append(names.get(node.id, node.id))
    return ".".join(reversed(parts))


def _py_value(node: ast.expr, depth: int = 0) -> Any:
    """The JSON value of a literal node; anything else is a ContentError (nothing is evaluated)."""
    if depth > MAX_PYTHON_DEPTH:
        raise ContentError(
            f"python-calls: an argument value is nested more than {MAX_PYTHON_DEPTH} levels deep"
        )
    if isinstance(node, ast.Constant):
        value = node.value
        if isinstance(value, str) and _SURROGATE.search(value) is not None:
            return _join_surrogates(value)
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


def _join_surrogates(value: str) -> str:
    """``value`` with each surrogate pair (``'\\ud83d\\ude00'``) as the one character it encodes.

    A lone surrogate is an error: it is not a character, and no UTF-8 output can hold it.
    """
    try:
        return value.encode("utf-16-le", "surrogatepass").decode("utf-16-le")
    except UnicodeDecodeError:
        raise ContentError(f"python-calls: a string holds a lone surrogate: {show(value)}") from None


def _py_call(node: ast.expr, names: dict[str, str]) -> dict[str, Any]:
    if not isinstance(node, ast.Call):
        raise ContentError(f"python-calls: expected a call such as f(a=1), got {type(node).__name__}")
    name = _py_call_name(node.func, names)
    if node.args:
        raise ContentError(
            f"python-calls: {name}() has positional arguments; tool calls name every argument (k=v)"
        )
    arguments: dict[str, Any] = {}
    for kw in node.keywords:
        if kw.arg is None:
            raise ContentError(f"python-calls: {name}() uses '**' unpacking; only k=v arguments are data")
        argument = names.get(kw.arg, kw.arg)
        if argument in arguments:
            raise ContentError(f"python-calls: {name}() repeats the argument {argument!r}")
        arguments[argument] = _py_value(kw.value)
    return {"name": name, "arguments": arguments}


def _py_calls(tree: ast.expr, names: dict[str, str]) -> list[dict[str, Any]]:
    if isinstance(tree, (ast.List, ast.Tuple)):
        return [_py_call(item, names) for item in tree.elts]
    return [_py_call(tree, names)]


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


def _comment_at(text: str) -> int:
    """The offset of the first ``#`` outside string literals (a Python comment), or -1."""
    i, n = 0, len(text)
    while i < n:
        hash_at = text.find("#", i)
        if hash_at < 0:
            return -1
        quote = _QUOTE.search(text, i, hash_at)
        if quote is None:
            return hash_at
        i = _string_end(text, quote.start())
    return -1


_QUOTE = re.compile(r"['\"]")


def _py_parse(text: str) -> tuple[ast.expr, dict[str, str]]:
    """The expression of ``text`` and the placeholders that stand for names Python cannot parse.

    A comment is an error: Python's parser skips it, so its text would be lost without a trace.
    """
    renamed, names = _rename(text)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # an invalid escape such as '\s' keeps its backslash
            tree = ast.parse(renamed, mode="eval").body
    except (SyntaxError, ValueError, MemoryError) as exc:  # ValueError: NUL bytes, huge int literals
        raise ContentError(f"python-calls: not a Python call expression: {exc}") from None
    except RecursionError:
        raise ContentError("python-calls: the text is nested too deeply") from None
    comment = _comment_at(text)
    if comment >= 0:
        end = text.find("\n", comment)
        raise ContentError(
            f"python-calls: the comment {show(text[comment : end if end >= 0 else len(text)].rstrip())} at "
            f"offset {comment} is not part of any call (its text would be lost)"
        )
    return tree, names


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
        tree, names = _py_parse(stripped)
    except ContentError as whole:
        # Line breaks written raw inside one-line strings, then one call (or list of calls) per line.
        repaired = _escape_raw_line_breaks(stripped)
        if repaired != stripped:
            try:
                tree, names = _py_parse(repaired)
            except ContentError:
                pass
            else:
                return _py_calls_bounded(tree, names)
        lines = [line.strip() for line in repaired.splitlines() if line.strip()]
        if len(lines) < 2:
            raise whole from None
        calls: list[dict[str, Any]] = []
        for number, line in enumerate(lines, start=1):
            try:
                calls.extend(_py_calls_bounded(*_py_parse(line)))
            except ContentError as exc:
                raise ContentError(f"{exc} (line {number}: {show(line)})") from None
        return calls
    return _py_calls_bounded(tree, names)


def _py_calls_bounded(tree: ast.expr, names: dict[str, str]) -> list[dict[str, Any]]:
    try:
        return _py_calls(tree, names)
    except RecursionError:
        raise ContentError("python-calls: the text is nested too deeply") from None


PYTHON_CALLS = ContentParser(
    "python-calls", False, _parse_python_calls, _validate_python_calls, quoted_strings=True
)
