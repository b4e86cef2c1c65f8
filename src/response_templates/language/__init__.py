"""The template language: loading, validation and compilation of response templates.

Rules of the language are described in ``docs/spec.md``; this package is where each one is checked.
:func:`load_template` is the entry point; the result, a :class:`ResponseTemplate`, is what every other
part of the library reads.
"""

from __future__ import annotations

from .compile import (
    DEFAULT_REGEX_TIMEOUT,
    EXTENSIONS,
    ITEM_VARIABLES,
    LOOKBEHIND_WINDOW,
    ROUTE_OTHER,
    FieldSpec,
    ResponseTemplate,
    Route,
    load_template,
)

__all__ = [
    "DEFAULT_REGEX_TIMEOUT",
    "EXTENSIONS",
    "ITEM_VARIABLES",
    "LOOKBEHIND_WINDOW",
    "ROUTE_OTHER",
    "FieldSpec",
    "ResponseTemplate",
    "Route",
    "load_template",
]
