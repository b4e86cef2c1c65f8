"""Internal: canonical JSON text of tool-call arguments, and strict comparison of JSON values.

The wire formats carry a call's arguments as a string. The canonical string is
``json.dumps(value, ensure_ascii=False)`` with lone surrogates kept as escapes; the incremental scanner
(:mod:`response_templates.jsonlex.scanner`) writes exactly this text token by token.
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["dumps_arguments", "same_json", "strict_equal"]

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
    text = json.dumps(value, ensure_ascii=False)
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
