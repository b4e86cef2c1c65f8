"""The ``json`` content parser, with the dialect arguments ``unquoted_keys`` and ``string_delims``.

``json.loads`` of the region text (non-finite ``NaN``/``Infinity`` accepted, as ``json.loads`` does).
``unquoted_keys`` accepts bare keys (``{name: "x"}``), ``string_delims`` (``[[open, close], ...]``)
markers that delimit verbatim string values instead of ``"``, and ``allow_non_json`` returns the stripped
text (the text as it is with ``"strip": false``) when the region cannot be read as JSON. Nesting deeper
than :data:`MAX_JSON_DEPTH` is an error.

The dialect is lexed by :mod:`response_templates.jsonlex.dialect` (the same rules as the end of
``close_json`` regions and tool-argument streaming); arguments that its lexers could not honour are
rejected here, when the template is loaded.

>>> from response_templates.content import parse_content
>>> dialect = {"unquoted_keys": True, "string_delims": [["<e>", "<e>"]]}
>>> parse_content('{city: <e>Paris, "FR"<e>, days: 3}', "json", dialect)
{'city': 'Paris, "FR"', 'days': 3}
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ..errors import ContentError, TemplateError
from ..jsonlex.dialect import MAX_JSON_DEPTH, JsonDialect, UnclosedString, dialect_for
from ._args import ARGS_KEY, bool_arg, check_args, ensure_valid, ignore_arg, show, type_name
from .registry import ContentArgs, ContentParser

__all__ = ["JSON", "MAX_JSON_DEPTH"]

_scan_value: Any = json.JSONDecoder().scan_once  # type: ignore[attr-defined]  # the decoder's own scanner (C where available)
_JSON_SPACE = " \t\n\r"


def _loads(text: str) -> Any:
    """``json.loads(text)``, without its per-call layers when the text is one valid JSON value.

    The value is read by the scanner ``json.loads`` itself uses, after and before the same whitespace; any
    text it does not read whole goes to ``json.loads``, which raises its own error for it.
    """
    n = len(text)
    i = 0
    while i < n and text[i] in _JSON_SPACE:
        i += 1
    try:
        value, end = _scan_value(text, i)
    except StopIteration:
        return json.loads(text)
    while end < n and text[end] in _JSON_SPACE:
        end += 1
    if end != n:
        return json.loads(text)
    return value


def _validate_json(args: Any, field: str | None) -> dict[str, Any]:
    args = check_args(
        args, ("unquoted_keys", "string_delims", "allow_non_json", "strip"), "json", field, unknown="ignore"
    )
    unquoted = bool_arg(args, "unquoted_keys", False, "json", field)
    allow = bool_arg(args, "allow_non_json", False, "json", field)
    strip = bool_arg(args, "strip", True, "json", field)
    if "strip" in args and not allow:
        ignore_arg(
            field,
            "json",
            "strip",
            "for json it changes only the text that 'allow_non_json' falls back to, which is off",
        )
    raw_delims = args.get("string_delims", [])
    shape = 'a list of [open, close] pairs of non-empty strings, e.g. [["<|\\"|>", "<|\\"|>"]]'
    if not isinstance(raw_delims, (list, tuple)):
        raise TemplateError(
            f"content_args 'string_delims' must be {shape}, got {type_name(raw_delims)}",
            field=field,
            key=ARGS_KEY,
        )
    delims: list[tuple[str, str]] = []
    for index, pair in enumerate(raw_delims):
        if (
            not isinstance(pair, (list, tuple))
            or len(pair) != 2
            or not all(isinstance(part, str) and part for part in pair)
        ):
            raise TemplateError(
                f"content_args 'string_delims' item {index} must be [open, close] with two non-empty "
                f"strings, got {pair!r}",
                field=field,
                key=ARGS_KEY,
            )
        delims.append((pair[0], pair[1]))
    dialect = dialect_for(unquoted, tuple(delims))
    problem = dialect.problem()
    if problem is not None:
        raise TemplateError(problem, field=field, key=ARGS_KEY)
    return ContentArgs(
        unquoted_keys=unquoted,
        string_delims=[list(pair) for pair in delims],
        allow_non_json=allow,
        strip=strip,
        _dialect=dialect,
    )


def _exceeds_depth(value: Any, limit: int) -> bool:
    """True if arrays/objects in ``value`` nest deeper than ``limit`` (iterative, no recursion)."""
    if not isinstance(value, (dict, list)):
        return False
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return True
        children = node.values() if isinstance(node, dict) else node
        for child in children:
            if isinstance(child, (dict, list)):
                stack.append((child, depth + 1))
    return False


def _depth_error() -> ContentError:
    return ContentError(f"json: arrays/objects nest more than {MAX_JSON_DEPTH} levels deep (nesting depth)")


def _decode_error(exc: json.JSONDecodeError, original: str, working: str) -> ContentError:
    lo = max(0, exc.pos - 30)
    near = working[lo : exc.pos + 30]
    message = f"json: invalid JSON: {exc.msg} at line {exc.lineno} column {exc.colno} (character {exc.pos})"
    message += f", near {near!r}"
    if working != original:
        message += " (positions refer to the text after rewriting bare keys / delimited strings: "
        message += f"{show(working, 120)})"
    return ContentError(message)


def _parse_json(text: str, args: Mapping[str, Any]) -> Any:
    args = ensure_valid(args, _validate_json)
    allow = args["allow_non_json"]
    try:
        dialect: JsonDialect = args["_dialect"]
        try:
            working = dialect.to_standard(text)
        except UnclosedString as exc:
            raise ContentError(f"json: {exc}") from None
        try:
            value = _loads(working)
        except RecursionError:
            raise _depth_error() from None
        except json.JSONDecodeError as exc:
            raise _decode_error(exc, text, working) from None
        except ValueError as exc:  # e.g. an integer longer than Python's int digit limit
            raise ContentError(f"json: {exc}") from None
        # Only a text with enough brackets can nest too deeply; skip the walk otherwise.
        brackets = working.count("[") + working.count("{")
        if brackets > MAX_JSON_DEPTH and _exceeds_depth(value, MAX_JSON_DEPTH):
            raise _depth_error()
    except ContentError:
        if allow:
            return text.strip() if args["strip"] else text
        raise
    return value


JSON = ContentParser("json", False, _parse_json, _validate_json, quoted_strings=True)
