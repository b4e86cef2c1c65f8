"""Internal: one incremental, dialect-aware JSON lexer family.

* :mod:`.dialect` -- the JSON dialect of the ``json`` content parser (bare keys, delimited strings) and
  the lexical rules shared by every reader of it;
* :mod:`.end` -- where a JSON value ends (regions that end with their value, ``close_json``);
* :mod:`.scanner` -- one document read chunk by chunk, watched values reported as soon as complete and
  the arguments re-written as canonical text (tool-call streaming);
* :mod:`.canonical` -- the canonical text of arguments, strict JSON equality.
"""

from __future__ import annotations

from .canonical import dumps_arguments, same_json, strict_equal
from .dialect import MAX_JSON_DEPTH, STANDARD, JsonDialect
from .end import JsonEnd, value_end_problem
from .scanner import JsonScanner

__all__ = [
    "MAX_JSON_DEPTH",
    "STANDARD",
    "JsonDialect",
    "JsonEnd",
    "JsonScanner",
    "dumps_arguments",
    "same_json",
    "strict_equal",
    "value_end_problem",
]
