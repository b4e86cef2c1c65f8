"""Internal: JSON lines read and written fast, with the standard library's exact results.

:func:`loads` reads one JSON line (``bytes``) into the same Python objects as :func:`json.loads`, with
orjson when it is installed (``pip install 'response-templates[fast]'``): whatever orjson refuses (NaN,
integers beyond 64 bits, lone surrogates, UTF-16 text, nesting deeper than it allows, ...) is read again
by :func:`json.loads`, so the objects, and the errors of lines that are not JSON, are the standard
library's.

:class:`LineEncoder` writes an object as ``json.dumps(obj, ensure_ascii=False, default=str)`` would,
byte for byte, at about half the cost: it keeps one C encoder for the whole run instead of building one
per call, and encodes with the ASCII escaper first (much faster in CPython), whose text is the same
whenever no character needed a ``\\uXXXX`` escape; otherwise the text is encoded again without it.
"""

from __future__ import annotations

import importlib
import json
import json.encoder
from collections.abc import Callable
from typing import Any

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

_make_encoder: Any = getattr(json.encoder, "c_make_encoder", None)

#: After a record whose text needed ``\\uXXXX`` escapes, encode this many without trying ASCII first.
_NON_ASCII_RUN = 32


class LineEncoder:
    """``encode(obj)`` is ``json.dumps(obj, ensure_ascii=False, default=str)``, faster (module docstring)."""

    def __init__(self) -> None:
        self._ascii: Any = None
        self._unicode: Any = None
        self._skip_ascii = 0
        if _make_encoder is not None:
            try:
                self._ascii = self._c_encoder(json.encoder.c_encode_basestring_ascii)  # type: ignore[attr-defined]
                self._unicode = self._c_encoder(json.encoder.c_encode_basestring)  # type: ignore[attr-defined]
                sample = {"a": ["é\u2028", 1, 2.5, None, True], "b": {"c": "\x00\\u"}}
                if self.encode(sample) != json.dumps(sample, ensure_ascii=False, default=str):
                    raise ValueError("the C encoder does not give json.dumps's text")
                self._skip_ascii = 0
            except Exception:  # another Python: json.dumps every time
                self._ascii = self._unicode = None

    @staticmethod
    def _c_encoder(escape: Any) -> Any:
        # The arguments json.JSONEncoder.iterencode passes for json.dumps's defaults (no circular check:
        # results are trees).
        return _make_encoder(None, str, escape, None, ": ", ", ", False, False, True)

    def encode(self, obj: Any) -> str:
        """The JSON text of ``obj``."""
        if self._ascii is None:
            return json.dumps(obj, ensure_ascii=False, default=str)
        try:
            if self._skip_ascii:
                self._skip_ascii -= 1
                return "".join(self._unicode(obj, 0))
            text: str = "".join(self._ascii(obj, 0))
            if "\\u" not in text:
                return text
            self._skip_ascii = _NON_ASCII_RUN
            return "".join(self._unicode(obj, 0))
        except Exception:  # let json.dumps give its own result or error
            return json.dumps(obj, ensure_ascii=False, default=str)
