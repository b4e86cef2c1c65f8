"""Internal: canonical JSON text of tool-call arguments, strict comparison of JSON values, and
:func:`json_dumper`, ``json.dumps`` with fixed options at a fraction of its cost.

The wire formats carry a call's arguments as a string. The canonical string is
``json.dumps(value, ensure_ascii=False)`` with lone surrogates kept as escapes; the incremental scanner
(:mod:`response_templates.jsonlex.scanner`) writes exactly this text token by token.
"""

from __future__ import annotations

import json
import json.encoder
import re
from collections.abc import Callable
from typing import Any

__all__ = ["dumps_arguments", "json_dumper", "same_json", "strict_equal"]

_make_encoder: Any = getattr(json.encoder, "c_make_encoder", None)
_SAMPLE = {"a": ["é\u2028", 1, 2.5, None, True, float("inf")], "b": {"c": "\x00\\u\ud800"}, "": []}


def _no_default(value: Any) -> Any:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def json_dumper(
    *,
    ensure_ascii: bool = True,
    separators: tuple[str, str] = (", ", ": "),
    default: Callable[[Any], Any] | None = None,
) -> Callable[[Any], str]:
    """A function whose result for every object is ``json.dumps(obj, ensure_ascii=..., separators=...,
    default=...)``'s: its text, or its error.

    ``json.dumps`` with any option but its defaults builds a new encoder at every call, which costs more
    than encoding a small object; the function returned keeps one (the standard library's C encoder, with
    the arguments ``json.dumps`` would give it, no circular-reference check). Whatever that encoder does
    not encode (an error, a circular structure, an interpreter without it) goes to ``json.dumps``.

    >>> compact = json_dumper(separators=(",", ":"))
    >>> compact({"city": "Zürich", "days": [1, 2.5]})
    '{"city":"Z\\\\u00fcrich","days":[1,2.5]}'
    """

    def dumps(obj: Any) -> str:
        return json.dumps(obj, ensure_ascii=ensure_ascii, separators=separators, default=default)

    if _make_encoder is None:  # pragma: no cover - CPython has it
        return dumps
    escape = json.encoder.c_encode_basestring_ascii if ensure_ascii else json.encoder.c_encode_basestring  # type: ignore[attr-defined]
    item_separator, key_separator = separators
    try:
        encoder = _make_encoder(
            None, default or _no_default, escape, None, key_separator, item_separator, False, False, True
        )
    except Exception:  # pragma: no cover - another interpreter's encoder
        return dumps

    def fast(obj: Any) -> str:
        try:
            return "".join(encoder(obj, 0))
        except Exception:  # json.dumps gives its own result or error
            return dumps(obj)

    try:
        same = fast(_SAMPLE) == dumps(_SAMPLE)
    except Exception:  # pragma: no cover - another interpreter's encoder
        same = False
    return fast if same else dumps


#: ``json.dumps(value, ensure_ascii=False)``.
_dumps_unicode = json_dumper(ensure_ascii=False)

_SURROGATE = re.compile("[\ud800-\udfff]")


def _escape_surrogate(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def dumps_arguments(value: Any) -> str:
    """The canonical JSON text of tool-call arguments: ``json.dumps(value, ensure_ascii=False)``.

    Lone surrogates (from a ``"\\ud800"`` escape the model wrote) are kept as escapes, so the text can
    always be encoded as UTF-8.

    >>> dumps_arguments({"city": "Zürich", "days": 3, "tags": ["a", "b"]})
    '{"city": "Zürich", "days": 3, "tags": ["a", "b"]}'
    """
    text = _dumps_unicode(value)
    if _SURROGATE.search(text):
        text = _SURROGATE.sub(_escape_surrogate, text)
    return text


def strict_equal(a: Any, b: Any) -> bool:
    """Equality that also compares scalar types (``1``, ``1.0`` and ``True`` differ) and NaN to NaN."""
    stack = [(a, b)]
    while stack:
        x, y = stack.pop()
        if type(x) is not type(y):
            return False
        if isinstance(x, dict):
            if x.keys() != y.keys():
                return False
            stack.extend((x[k], y[k]) for k in x)
        elif isinstance(x, list):
            if len(x) != len(y):
                return False
            stack.extend(zip(x, y, strict=True))
        elif x != y and not (isinstance(x, float) and x != x and y != y):
            return False
    return True


def same_json(text: str, value: Any) -> bool:
    """Whether ``text`` is JSON that decodes to exactly ``value`` (see :func:`strict_equal`)."""
    try:
        return strict_equal(json.loads(text), value)
    except (ValueError, RecursionError):
        return False
