"""The content-parser registry: what a content parser is, and the table of them by name.

The table is the package attribute ``response_templates.content.CONTENT_PARSERS``. Every lookup reads it
through the package at call time (:func:`parsers`), so that a caller who replaces it (tests do, to
register throw-away parsers) replaces it for every lookup, as when the package was a single module.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from ..errors import ContentError, TemplateError

__all__ = [
    "CONTENT_PARSERS",
    "CUT_OFF_ARG",
    "ContentArgs",
    "ContentParser",
    "get_content_parser",
    "package_value",
    "parse_content",
    "parsers",
    "register_content_parser",
]

_T = TypeVar("_T")


@dataclass(frozen=True)
class ContentParser:
    """A named content parser.

    Attributes:
        name: the name templates use in ``content``.
        streamable: true when every chunk of raw region text is already part of the final value (up to
            stripping), so streaming consumers may show it as is (``region_chunk`` events are not dirty).
        parse: ``(raw region text, validated args) -> value``; raises ``ContentError``.
        validate: ``(content_args from the template, field name or None) -> validated args``; raises
            ``TemplateError(field=..., key="content_args")``.
        quoted_strings: true when the syntax already tells a string from other values (``"7"`` against
            ``7`` in ``json``): typing by the request's tools then leaves alone the arguments whose schema
            admits a string (``json``, ``python-call-list``, ``python-calls``; docs/spec.md, 8).
    """

    name: str
    streamable: bool
    parse: Callable[[str, Mapping[str, Any]], Any]
    validate: Callable[[Any, str | None], dict[str, Any]]
    quoted_strings: bool = False


class ContentArgs(dict[str, Any]):
    """Validated, normalized ``content_args`` (every argument present, patterns compiled).

    Returned by every built-in ``validate``; ``parse`` functions re-validate any other mapping they are
    given, so a plain dict still works (at the cost of validating on every call). Treat as read-only.
    Keys starting with ``_`` hold precompiled helpers.
    """


CUT_OFF_ARG = "_cut_off"
"""The key set (to ``True``) in a copy of the validated args when the end of the output cut the region
off before its close delimiter: a parser that can tell a value the model did not finish refuses it."""

CONTENT_PARSERS: dict[str, ContentParser] = {}


def package_value(name: str, default: _T) -> _T:
    """The attribute ``name`` of the package ``response_templates.content`` (``default`` while it loads)."""
    package = sys.modules.get(__package__ or "")
    value: _T = getattr(package, name, default)
    return value


def parsers() -> dict[str, ContentParser]:
    """The registry in use: ``response_templates.content.CONTENT_PARSERS``."""
    return package_value("CONTENT_PARSERS", CONTENT_PARSERS)


def register_content_parser(parser: ContentParser) -> None:
    """Add a content parser to the registry; a name can be registered only once."""
    if not isinstance(parser, ContentParser):
        raise TypeError(f"register_content_parser expects a ContentParser, got {type(parser).__name__}")
    if not isinstance(parser.name, str) or not parser.name:
        raise ValueError("a content parser needs a non-empty string name")
    table = parsers()
    if parser.name in table:
        raise ValueError(f"a content parser named {parser.name!r} is already registered")
    table[parser.name] = parser


def get_content_parser(name: str, field: str | None) -> ContentParser:
    """The parser called ``name``; ``TemplateError(field=field, key="content")`` if there is none."""
    table = parsers()
    parser = table.get(name) if isinstance(name, str) else None
    if parser is None:
        raise TemplateError(
            f"unknown content parser {name!r}; available: {', '.join(sorted(table))}",
            field=field,
            key="content",
        )
    return parser


def parse_content(text: str, name: str, args: Mapping[str, Any] | None = None) -> Any:
    """Validate ``args`` for parser ``name`` and parse ``text`` with it (a convenience for one-off calls)."""
    parser = get_content_parser(name, None)
    if not isinstance(text, str):
        raise ContentError(f"{name}: expected the region text as a string, got {type(text).__name__}")
    validated = args if isinstance(args, ContentArgs) else parser.validate({} if args is None else args, None)
    return parser.parse(text, validated)
