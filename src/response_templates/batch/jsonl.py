"""Internal: JSON lines read and written fast, with the standard library's exact results.

:func:`loads` reads one JSON line (``bytes``) into the same Python objects as :func:`json.loads`, with
orjson when it is installed (``pip install 'response-templates[fast]'``): whatever orjson refuses (NaN,
integers beyond 64 bits, lone surrogates, UTF-16 text, nesting deeper than it allows, ...) is read again
by :func:`json.loads`, so the objects, and the errors of lines that are not JSON, are the standard
library's.

:class:`LineEncoder` writes an object as ``json.dumps(obj, ensure_ascii=False, default=str)`` would,
byte for byte, at about half the cost: it keeps one C encoder for the whole run instead of building one
per call (:func:`~response_templates.jsonlex.canonical.json_dumper`), and encodes with the ASCII escaper first (much faster in CPython), whose text is the same
whenever no character needed a ``\\uXXXX`` escape; otherwise the text is encoded again without it.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable
from typing import Any

from ..jsonlex.canonical import json_dumper

__all__ = ["LineEncoder", "loads", "orjson_loads"]

_orjson: Any
try:  # an optional speed-up: the [fast] extra
    _orjson = importlib.import_module("orjson")
except ImportError:  # pragma: no cover - depends on the environment
    _orjson = None


def _stdlib_loads(line: bytes) -> Any:
    return json.loads(line)


def _orjson_loads(line: bytes) -> Any:
    try:
        return _orjson.loads(line)
    except Exception:  # refused by orjson: the standard library decides (its result or its error)
        return json.loads(line)


#: Whether :func:`loads` uses orjson.
orjson_loads = _orjson is not None

#: One JSON line (bytes) to Python objects, exactly as :func:`json.loads` gives them.
loads: Callable[[bytes], Any] = _orjson_loads if orjson_loads else _stdlib_loads

#: After a record whose text needed ``\\uXXXX`` escapes, encode this many without trying ASCII first.
_NON_ASCII_RUN = 32


class LineEncoder:
    """``encode(obj)`` is ``json.dumps(obj, ensure_ascii=False, default=str)``, faster (module docstring)."""

    def __init__(self) -> None:
        self._ascii = json_dumper(ensure_ascii=True, default=str)
        self._unicode = json_dumper(ensure_ascii=False, default=str)
        self._skip_ascii = 0

    def encode(self, obj: Any) -> str:
        """The JSON text of ``obj``."""
        if self._skip_ascii:
            self._skip_ascii -= 1
            return self._unicode(obj)
        text = self._ascii(obj)
        if "\\u" not in text:
            return text
        self._skip_ascii = _NON_ASCII_RUN
        return self._unicode(obj)
