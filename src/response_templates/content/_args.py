"""Helpers shared by the content parsers: checking ``content_args`` and running nested value parsers.

What is refused and what is only ignored (docs/differences.md, ``content-args``): an argument whose
value would be read differently here and in the reference (``"strip": "false"``, which the reference
reads as true) is a ``TemplateError``; an argument that cannot change the result (one the parser does
not have, ``strip`` on ``int``) is ignored, as the reference ignores it, and recorded for the linter
(:func:`recording_ignored_args`; ``lint`` reports each as a warning).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from ..errors import ContentError, TemplateError
from .registry import ContentArgs, ContentParser, parsers

__all__ = [
    "ARGS_KEY",
    "MAX_VALUE_PARSER_NESTING",
    "REFERENCE_PARSERS",
    "IgnoredArg",
    "bool_arg",
    "check_args",
    "ensure_valid",
    "ignore_arg",
    "parse_value",
    "recording_ignored_args",
    "separator_arg",
    "show",
    "type_name",
    "validate_value_parser",
]

MAX_VALUE_PARSER_NESTING: int = 8
"""How many ``value_parser`` levels may be nested inside each other."""

#: The template key that every content-argument error names.
ARGS_KEY = "content_args"


def show(text: str, limit: int = 80) -> str:
    """``repr`` of ``text``, shortened in the middle when long."""
    if len(text) > limit:
        half = limit // 2
        return repr(text[:half]) + f" ... ({len(text)} characters) ... " + repr(text[-half:])
    return repr(text)


def type_name(value: Any) -> str:
    return type(value).__name__


@dataclass(frozen=True)
class IgnoredArg:
    """A ``content_args`` entry that a content parser ignores because it cannot change the result.

    Attributes:
        field: the field whose ``content_args`` hold it (``None`` outside a template).
        parser: the content parser that ignores it (a ``value_parser``'s own parser for its ``args``).
        arg: the argument's name.
        reason: why it is ignored, as a sentence.
    """

    field: str | None
    parser: str
    arg: str
    reason: str


_IGNORED: ContextVar[list[IgnoredArg] | None] = ContextVar("response_templates_ignored_args", default=None)


@contextmanager
def recording_ignored_args() -> Iterator[list[IgnoredArg]]:
    """Collect the arguments that the validators run inside the block ignore (for ``lint``).

    >>> from response_templates.content import get_content_parser
    >>> with recording_ignored_args() as ignored:
    ...     _ = get_content_parser("int", "n").validate({"strip": False, "base": 16}, "n")
    >>> [(i.parser, i.arg) for i in ignored]
    [('int', 'base'), ('int', 'strip')]
    """
    sink: list[IgnoredArg] = []
    token = _IGNORED.set(sink)
    try:
        yield sink
    finally:
        _IGNORED.reset(token)


def ignore_arg(field: str | None, parser: str, arg: str, reason: str) -> None:
    """Record that ``parser`` ignores the argument ``arg`` (a no-op outside :func:`recording_ignored_args`)."""
    sink = _IGNORED.get()
    if sink is not None:
        sink.append(IgnoredArg(field, parser, arg, reason))


#: The content parsers the reference also has: it ignores arguments they do not read, and so do we.
REFERENCE_PARSERS = frozenset(
    {"text", "int", "float", "bool", "json", "xml-inline", "kv-lines", "python-call-list"}
)


def check_args(
    args: Any, allowed: tuple[str, ...], parser: str, field: str | None, *, unknown: str | None = None
) -> Mapping[str, Any]:
    """Check that ``args`` is a mapping whose keys are in ``allowed``.

    Other keys are ignored and recorded (see above) with ``unknown="ignore"``, the default for the
    parsers in :data:`REFERENCE_PARSERS`; they are an error with ``unknown="raise"``, the default for
    the others (extension parsers, which only this library reads).
    """
    if unknown is None:
        unknown = "ignore" if parser in REFERENCE_PARSERS else "raise"
    if not isinstance(args, Mapping):
        raise TemplateError(
            f"content_args must be an object (dict), got {type_name(args)}", field=field, key=ARGS_KEY
        )
    extra = [k for k in args if k not in allowed]
    if not extra:
        return args
    accepted = f"it accepts {', '.join(repr(a) for a in allowed)}" if allowed else "it takes no arguments"
    if unknown != "ignore":
        raise TemplateError(
            f"unknown content_args {', '.join(repr(k) for k in extra)} for content parser {parser!r}; "
            + accepted,
            field=field,
            key=ARGS_KEY,
        )
    for key in extra:
        why = f"content parser {parser!r} has no argument {key!r} ({accepted}); a misspelling?"
        if key == "value_parser_by":
            why = (
                f"content parser {parser!r} does not read 'value_parser_by' (only 'xml-inline' does); in a "
                "field's own content_args it still turns off the typing of its tool-call arguments by the "
                "request's tools, as in the reference"
            )
        ignore_arg(field, parser, str(key), why)
    return args


def bool_arg(args: Mapping[str, Any], name: str, default: bool, parser: str, field: str | None) -> bool:
    value = args.get(name, default)
    if not isinstance(value, bool):
        raise TemplateError(
            f"content_args {name!r} of content parser {parser!r} must be true or false, "
            f"got {type_name(value)} {value!r}",
            field=field,
            key=ARGS_KEY,
        )
    return value


def separator_arg(args: Mapping[str, Any], name: str, default: str, parser: str, field: str | None) -> str:
    value = args.get(name, default)
    if not isinstance(value, str) or not value:
        raise TemplateError(
            f"content_args {name!r} of content parser {parser!r} must be a non-empty string, got {value!r}",
            field=field,
            key=ARGS_KEY,
        )
    return value


def ensure_valid(
    args: Mapping[str, Any], validate: Callable[[Any, str | None], dict[str, Any]]
) -> Mapping[str, Any]:
    """Accept already-validated args as they are; validate anything else."""
    if isinstance(args, ContentArgs):
        return args
    return validate(args, None)


def _inner_specs(args: Mapping[str, Any]) -> list[Any]:
    """The value-parser specs inside one parser's ``args``: ``value_parser``, the entries of
    ``value_parser_by.parsers`` and of ``type_parsers``, ``nested.leaf_parser``."""
    inner = [args.get("value_parser")]
    by = args.get("value_parser_by")
    if isinstance(by, Mapping) and isinstance(by.get("parsers"), Mapping):
        inner.extend(by["parsers"].values())
    typed = args.get("type_parsers")
    if isinstance(typed, Mapping):
        inner.extend(typed.values())
    nested = args.get("nested")
    if isinstance(nested, Mapping):
        inner.append(nested.get("leaf_parser"))
    return inner


def _nesting(spec: Any) -> int:
    """How many value-parser levels ``spec`` holds, at its deepest (without recursion; stops past the limit)."""
    deepest, stack = 0, [(spec, 1)]
    while stack:
        current, depth = stack.pop()
        if not isinstance(current, Mapping):
            continue
        deepest = max(deepest, depth)
        if deepest > MAX_VALUE_PARSER_NESTING:
            break
        args = current.get("args")
        if isinstance(args, Mapping):
            stack.extend((inner, depth + 1) for inner in _inner_specs(args))
    return deepest


def validate_value_parser(
    spec: Any, parser: str, field: str | None
) -> tuple[dict[str, Any] | None, ContentParser | None]:
    """Validate a ``value_parser`` spec ``{"name": ..., "args": {...}}``.

    Returns the normalized spec and the parser, or ``(None, None)`` when no value parser is configured.
    ``name`` defaults to ``"text"`` and ``args`` to ``{}``, as in the reference implementation.
    """
    if spec is None:
        return None, None
    # Bound the nesting before recursing, so a pathological template cannot exhaust the stack.
    if _nesting(spec) > MAX_VALUE_PARSER_NESTING:
        raise TemplateError(
            f"value_parser of content parser {parser!r} is nested more than "
            f"{MAX_VALUE_PARSER_NESTING} levels deep",
            field=field,
            key=ARGS_KEY,
        )

    where = f"value_parser of content parser {parser!r}"
    if not isinstance(spec, Mapping):
        raise TemplateError(
            f'{where} must be an object like {{"name": "json", "args": {{}}}}, got {type_name(spec)}',
            field=field,
            key=ARGS_KEY,
        )
    for key in spec:
        if key not in ("name", "args"):
            why = f"a {where} reads only 'name' and 'args'; a misspelling?"
            ignore_arg(field, parser, f"value_parser.{key}", why)
    name = spec.get("name", "text")
    table = parsers()
    sub = table.get(name) if isinstance(name, str) else None
    if sub is None:
        raise TemplateError(
            f"{where} names unknown content parser {name!r}; available: {', '.join(sorted(table))}",
            field=field,
            key=ARGS_KEY,
        )
    try:
        sub_args = sub.validate(spec.get("args", {}), field)
    except TemplateError as exc:
        raise TemplateError(f"in {where}: {exc.detail}", field=field, key=ARGS_KEY) from None
    return {"name": name, "args": sub_args}, sub


def parse_value(raw: str, args: Mapping[str, Any], where: str) -> Any:
    """Run the configured value parser (if any) on one extracted value."""
    sub: ContentParser | None = args["_value_parser"]
    if sub is None:
        return raw
    try:
        return sub.parse(raw, args["value_parser"]["args"])
    except ContentError as exc:
        raise ContentError(f"{where}: {exc}") from exc
