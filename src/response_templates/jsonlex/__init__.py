"""One incremental, dialect-aware JSON lexer family.

* :mod:`.end` -- where a JSON value ends (regions that end with their value, ``close_json``);
* :mod:`.scanner` -- one document read chunk by chunk, watched values reported as soon as complete and
  the arguments re-written as canonical text (tool-call streaming);
* :mod:`.canonical` -- the canonical text of arguments, strict JSON equality.
"""

from __future__ import annotations

from .canonical import dumps_arguments, same_json, strict_equal
from .end import JsonEnd
from .scanner import JsonScanner

__all__ = ["JsonEnd", "JsonScanner", "dumps_arguments", "same_json", "strict_equal"]
