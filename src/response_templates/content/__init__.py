"""Content parsers: turn the raw text of one region into a value.

A field's ``content`` names a parser and its ``content_args`` configure it. Each parser is a pair of pure
functions: ``validate`` runs once when the template is loaded (it checks the arguments, fills in the
defaults, precompiles what can be precompiled and raises :class:`~response_templates.errors.TemplateError`
naming the field and the ``content_args`` key), and ``parse`` runs once per region (it raises
:class:`~response_templates.errors.ContentError`, never a foreign exception).

Parsers:

* ``text`` -- the region text, stripped of surrounding whitespace unless ``strip`` is false.
* ``int`` / ``float`` -- ``int()`` / ``float()`` of the stripped text. Whatever Python accepts is accepted,
  so ``"1_000"``, ``"nan"``, ``"inf"`` and ``"-Infinity"`` are numbers.
* ``bool`` -- ``true``/``false``/``1``/``0`` in any case; any other text is an error.
* ``json`` -- ``json.loads`` of the text (non-finite ``NaN``/``Infinity`` accepted, as ``json.loads``
  does), with optional dialect knobs: ``unquoted_keys`` (``{name: "x"}``), ``string_delims``
  (``[[open, close], ...]`` markers that delimit string values instead of ``"``) and ``allow_non_json``
  (return the stripped text when the region cannot be read as JSON). Nesting deeper than
  :data:`MAX_JSON_DEPTH` is an error.
* ``xml-inline`` -- a flat run of tags matched by ``tag_pattern`` (a regex with named groups ``key`` and
  ``value``) becomes a dict; ``value_parser`` parses each value, ``merge_duplicates`` collects repeated
  keys into a list. With the extension ``xml-values``: ``type_group`` + ``type_parsers`` pick the value
  parser per tag from a captured attribute, ``unescape`` decodes HTML entities, ``cdata`` unwraps
  ``<![CDATA[...]]>``, ``nested`` reads values written as child tags into objects and arrays.
* ``kv-lines`` -- ``key: value`` lines become a dict (``line_sep``, ``kv_sep``, ``strip``,
  ``value_parser``); blank lines and lines without ``kv_sep`` are skipped.
* ``python-calls`` (extension ``python-calls``, see docs/extensions.md) -- tool calls written as Python
  calls (``[f(a=1), g()]``, a bare call, one call per line) become ``[{"name", "arguments"}]``; read with
  :func:`ast.parse` and a whitelist of literal nodes, never evaluated.

Example::

    >>> from response_templates.content import get_content_parser, parse_content
    >>> parser = get_content_parser("json", field="tool_calls")
    >>> args = parser.validate({"unquoted_keys": True, "string_delims": [["<e>", "<e>"]]}, "tool_calls")
    >>> parser.parse('{city: <e>Paris, "FR"<e>, days: 3}', args)
    {'city': 'Paris, "FR"', 'days': 3}
    >>> parse_content("<k>a</k><v>1</v>", "xml-inline", {
    ...     "tag_pattern": "<k>(?P<key>.*?)</k><v>(?P<value>.*?)</v>", "value_parser": {"name": "int"}})
    {'a': 1}
"""

from __future__ import annotations

import ast
import html
import json
import sys
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import regex

from ..errors import ContentError, TemplateError

__all__ = [
    "CONTENT_PARSERS",
    "MAX_JSON_DEPTH",
    "MAX_XML_DEPTH",
    "REGEX_TIMEOUT",
    "ContentArgs",
    "ContentParser",
    "get_content_parser",
    "parse_content",
    "register_content_parser",
]

MAX_JSON_DEPTH: int = 512
"""Deepest nesting of arrays/objects the ``json`` parser accepts (``[]`` is depth 1)."""

REGEX_TIMEOUT: float = 1.0
"""Seconds one ``xml-inline`` parse may spend in its ``tag_pattern`` before it is abandoned."""

#: ``xml-inline`` arguments that belong to the extension ``xml-values`` (docs/extensions.md).
XML_VALUES_ARGS: tuple[str, ...] = ("type_group", "type_parsers", "unescape", "cdata", "nested")

MAX_XML_DEPTH: int = 100
"""Deepest element nesting of an ``xml-inline`` argument with ``nested`` (its own tag is level 1)."""

MAX_VALUE_PARSER_NESTING: int = 8
"""How many ``value_parser`` levels may be nested inside each other."""

_ARGS_KEY = "content_args"


@dataclass(frozen=True)
class ContentParser:
    """A named content parser.

    Attributes:
        name: the name templates use in ``content``.
        streamable: true when every chunk of raw region text is already part of the final value (up to
            stripping), so streaming consumers may show it as is (``region_chunk`` events are not dirty).
        parse: ``(raw region text, validated args) -> value``; raises ``ContentError``.
        validate: ``(content_args from the template, field name) -> validated args``; raises
            ``TemplateError(field=..., key="content_args")``.
    """

    name: str
    streamable: bool
    parse: Callable[[str, Mapping[str, Any]], Any]
    validate: Callable[[Any, str], dict]


class ContentArgs(dict):  # type: ignore[type-arg]
    """Validated, normalized ``content_args`` (every argument present, patterns compiled).

    Returned by every built-in ``validate``; ``parse`` functions re-validate any other mapping they are
    given, so a plain dict still works (at the cost of validating on every call). Treat as read-only.
    Keys starting with ``_`` hold precompiled helpers.
    """


# --------------------------------------------------------------------------------------------- helpers


def _show(text: str, limit: int = 80) -> str:
    """``repr`` of ``text``, shortened in the middle when long."""
    if len(text) > limit:
        half = limit // 2
        return repr(text[:half]) + f" ... ({len(text)} characters) ... " + repr(text[-half:])
    return repr(text)


def _type_name(value: Any) -> str:
    return type(value).__name__


def _check_args(args: Any, allowed: tuple[str, ...], parser: str, field: str | None) -> Mapping[str, Any]:
    """Check that ``args`` is a mapping whose keys are all in ``allowed``."""
    if not isinstance(args, Mapping):
        raise TemplateError(
            f"content_args must be an object (dict), got {_type_name(args)}", field=field, key=_ARGS_KEY
        )
    unknown = [k for k in args if k not in allowed]
    if unknown:
        accepted = f"it accepts {', '.join(repr(a) for a in allowed)}" if allowed else "it takes no arguments"
        raise TemplateError(
            f"unknown content_args {', '.join(repr(k) for k in unknown)} for content parser {parser!r}; "
            + accepted,
            field=field,
            key=_ARGS_KEY,
        )
    return args


def _bool_arg(args: Mapping[str, Any], name: str, default: bool, parser: str, field: str | None) -> bool:
    value = args.get(name, default)
    if not isinstance(value, bool):
        raise TemplateError(
            f"content_args {name!r} of content parser {parser!r} must be true or false, "
            f"got {_type_name(value)} {value!r}",
            field=field,
            key=_ARGS_KEY,
        )
    return value


def _separator_arg(args: Mapping[str, Any], name: str, default: str, parser: str, field: str | None) -> str:
    value = args.get(name, default)
    if not isinstance(value, str) or not value:
        raise TemplateError(
            f"content_args {name!r} of content parser {parser!r} must be a non-empty string, got {value!r}",
            field=field,
            key=_ARGS_KEY,
        )
    return value


def _ensure_valid(args: Mapping[str, Any], validate: Callable[[Any, str | None], dict]) -> Mapping[str, Any]:
    """Accept already-validated args as they are; validate anything else."""
    if isinstance(args, ContentArgs):
        return args
    return validate(args, None)


def _validate_value_parser(
    spec: Any, parser: str, field: str | None
) -> tuple[dict | None, ContentParser | None]:
    """Validate a ``value_parser`` spec ``{"name": ..., "args": {...}}``.

    Returns the normalized spec and the parser, or ``(None, None)`` when no value parser is configured.
    ``name`` defaults to ``"text"`` and ``args`` to ``{}``, as in the reference implementation.
    """
    if spec is None:
        return None, None
    # Bound the nesting before recursing, so a pathological template cannot exhaust the stack.
    depth, current = 0, spec
    while isinstance(current, Mapping):
        depth += 1
        if depth > MAX_VALUE_PARSER_NESTING:
            raise TemplateError(
                f"value_parser of content parser {parser!r} is nested more than "
                f"{MAX_VALUE_PARSER_NESTING} levels deep",
                field=field,
                key=_ARGS_KEY,
            )
        inner = current.get("args")
        current = inner.get("value_parser") if isinstance(inner, Mapping) else None

    where = f"value_parser of content parser {parser!r}"
    if not isinstance(spec, Mapping):
        raise TemplateError(
            f'{where} must be an object like {{"name": "json", "args": {{}}}}, got {_type_name(spec)}',
            field=field,
            key=_ARGS_KEY,
        )
    unknown = [k for k in spec if k not in ("name", "args")]
    if unknown:
        raise TemplateError(
            f"{where} has unknown keys {', '.join(repr(k) for k in unknown)}; it accepts 'name' and 'args'",
            field=field,
            key=_ARGS_KEY,
        )
    name = spec.get("name", "text")
    sub = CONTENT_PARSERS.get(name) if isinstance(name, str) else None
    if sub is None:
        raise TemplateError(
            f"{where} names unknown content parser {name!r}; available: {', '.join(sorted(CONTENT_PARSERS))}",
            field=field,
            key=_ARGS_KEY,
        )
    try:
        sub_args = sub.validate(spec.get("args", {}), field)  # type: ignore[arg-type]
    except TemplateError as exc:
        raise TemplateError(f"in {where}: {exc.detail}", field=field, key=_ARGS_KEY) from None
    return {"name": name, "args": sub_args}, sub


def _parse_value(raw: str, args: Mapping[str, Any], where: str) -> Any:
    """Run the configured value parser (if any) on one extracted value."""
    sub: ContentParser | None = args["_value_parser"]
    if sub is None:
        return raw
    try:
        return sub.parse(raw, args["value_parser"]["args"])
    except ContentError as exc:
        raise ContentError(f"{where}: {exc}") from exc


# --------------------------------------------------------------------------------------- scalar parsers


def _validate_text(args: Any, field: str | None) -> dict:
    args = _check_args(args, ("strip",), "text", field)
    return ContentArgs(strip=_bool_arg(args, "strip", True, "text", field))


def _parse_text(text: str, args: Mapping[str, Any]) -> str:
    # Hot path: avoid re-validation when the args are already normalized.
    strip = args["strip"] if isinstance(args, ContentArgs) else _ensure_valid(args, _validate_text)["strip"]
    return text.strip() if strip else text


def _no_args_validator(parser: str) -> Callable[[Any, str | None], dict]:
    def validate(args: Any, field: str | None) -> dict:
        _check_args(args, (), parser, field)
        return ContentArgs()

    validate.__name__ = f"_validate_{parser}"
    return validate


def _looks_like_long_int(text: str) -> bool:
    """True if ``text`` is a well-formed integer that only failed because of Python's digit limit."""
    digits = text.lstrip("+-").replace("_", "")
    limit = sys.get_int_max_str_digits() if hasattr(sys, "get_int_max_str_digits") else 0
    return bool(limit) and digits.isdigit() and len(digits) > limit


def _parse_int(text: str, args: Mapping[str, Any]) -> int:
    stripped = text.strip()
    try:
        return int(stripped)
    except ValueError:
        if _looks_like_long_int(stripped):
            raise ContentError(
                f"int: the integer has more digits than Python converts "
                f"(limit {sys.get_int_max_str_digits()}): {_show(stripped)}"
            ) from None
        raise ContentError(f"int: {_show(stripped)} is not an integer") from None


def _parse_float(text: str, args: Mapping[str, Any]) -> float:
    stripped = text.strip()
    try:
        return float(stripped)
    except ValueError:
        raise ContentError(f"float: {_show(stripped)} is not a number") from None


_TRUE_WORDS = frozenset({"true", "1"})
_FALSE_WORDS = frozenset({"false", "0"})


def _parse_bool(text: str, args: Mapping[str, Any]) -> bool:
    word = text.strip().lower()
    if word in _TRUE_WORDS:
        return True
    if word in _FALSE_WORDS:
        return False
    raise ContentError(f"bool: expected true, false, 1 or 0 (in any case), got {_show(text.strip())}")


# ------------------------------------------------------------------------------------------------ json

_JSON_WS = r"[ \t\r\n]"


def _validate_json(args: Any, field: str | None) -> dict:
    args = _check_args(args, ("unquoted_keys", "string_delims", "allow_non_json"), "json", field)
    unquoted = _bool_arg(args, "unquoted_keys", False, "json", field)
    allow = _bool_arg(args, "allow_non_json", False, "json", field)
    raw_delims = args.get("string_delims", [])
    shape = 'a list of [open, close] pairs of non-empty strings, e.g. [["<|\\"|>", "<|\\"|>"]]'
    if not isinstance(raw_delims, (list, tuple)):
        raise TemplateError(
            f"content_args 'string_delims' must be {shape}, got {_type_name(raw_delims)}",
            field=field,
            key=_ARGS_KEY,
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
                key=_ARGS_KEY,
            )
        delims.append((pair[0], pair[1]))

    closers: dict[str, str] = {}
    for open_d, close_d in delims:
        closers.setdefault(open_d, close_d)  # the first pair with a given opening marker wins
    alternatives = []
    if closers:
        # Longest opening marker first, so that it wins over a shorter one starting at the same place.
        opens = sorted(closers, key=len, reverse=True)
        alternatives.append("(?P<delim>" + "|".join(regex.escape(o) for o in opens) + ")")
    if closers or unquoted:
        alternatives.append('(?P<quote>")')
    if unquoted:
        alternatives.append(rf"(?P<lead>[{{,]{_JSON_WS}*+)(?P<key>\w++)(?P<trail>{_JSON_WS}*+):")
    scanner = regex.compile("|".join(alternatives)) if alternatives else None
    return ContentArgs(
        unquoted_keys=unquoted,
        string_delims=[list(pair) for pair in delims],
        allow_non_json=allow,
        _scanner=scanner,
        _closers=closers,
    )


def _end_of_json_string(text: str, start: int) -> int:
    """Index of the ``"`` closing the standard JSON string whose body starts at ``start``, or -1."""
    search = start
    while True:
        end = text.find('"', search)
        if end < 0:
            return -1
        backslashes = 0
        before = end - 1
        while before >= start and text[before] == "\\":
            backslashes += 1
            before -= 1
        if backslashes % 2 == 0:
            return end
        search = end + 1


def _rewrite_dialect(text: str, args: Mapping[str, Any]) -> str:
    """Turn the JSON dialect into standard JSON in one left-to-right pass.

    Outside strings: a custom-delimited string becomes a standard JSON string (its body taken verbatim),
    and, with ``unquoted_keys``, a bare ``\\w+`` key right after ``{`` or ``,`` gets quotes. Standard
    ``"..."`` strings are copied untouched, so nothing inside a string value is ever rewritten.
    """
    scanner: regex.Pattern[str] = args["_scanner"]
    closers: Mapping[str, str] = args["_closers"]
    out: list[str] = []
    pos = 0
    while True:
        match = scanner.search(text, pos)
        if match is None:
            out.append(text[pos:])
            return "".join(out)
        out.append(text[pos : match.start()])
        opener = match.group("delim") if closers else None
        if opener is not None:
            closer = closers[opener]
            end = text.find(closer, match.end())
            if end < 0:
                raise ContentError(
                    f"json: the string opened with {opener!r} at character {match.start()} is never closed "
                    f"with {closer!r}"
                )
            out.append(json.dumps(text[match.end() : end], ensure_ascii=False))
            pos = end + len(closer)
        elif match.group("quote") is not None:
            end = _end_of_json_string(text, match.end())
            if end < 0:  # unterminated: leave it for json.loads to report
                out.append(text[match.start() :])
                return "".join(out)
            out.append(text[match.start() : end + 1])
            pos = end + 1
        else:
            out.append(f'{match.group("lead")}"{match.group("key")}"{match.group("trail")}:')
            pos = match.end()


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
        message += f"{_show(working, 120)})"
    return ContentError(message)


def _parse_json(text: str, args: Mapping[str, Any]) -> Any:
    args = _ensure_valid(args, _validate_json)
    allow = args["allow_non_json"]
    try:
        working = text if args["_scanner"] is None else _rewrite_dialect(text, args)
        try:
            value = json.loads(working)
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
            return text.strip()
        raise
    return value


# ------------------------------------------------------------------------------------------ xml-inline


def _validate_xml_inline(args: Any, field: str | None) -> dict:
    name = "xml-inline"
    args = _check_args(
        args, ("tag_pattern", "value_parser", "merge_duplicates", *XML_VALUES_ARGS), name, field
    )
    if "tag_pattern" not in args:
        raise TemplateError(
            "content parser 'xml-inline' requires content_args 'tag_pattern' (a regex with named groups "
            "'key' and 'value')",
            field=field,
            key=_ARGS_KEY,
        )
    pattern = args["tag_pattern"]
    if not isinstance(pattern, str) or not pattern:
        raise TemplateError(
            f"content_args 'tag_pattern' must be a non-empty regex string, got {pattern!r}",
            field=field,
            key=_ARGS_KEY,
        )
    try:
        compiled = regex.compile(pattern, regex.DOTALL)
    except (regex.error, ValueError, TypeError, OverflowError, RecursionError) as exc:
        raise TemplateError(
            f"content_args 'tag_pattern' {pattern!r} is not a valid regex: {exc}", field=field, key=_ARGS_KEY
        ) from None
    missing = [group for group in ("key", "value") if group not in compiled.groupindex]
    if missing:
        raise TemplateError(
            f"content_args 'tag_pattern' {pattern!r} lacks the named group(s) "
            f"{', '.join(f'(?P<{g}>...)' for g in missing)}; it needs both 'key' and 'value'",
            field=field,
            key=_ARGS_KEY,
        )
    value_parser, sub = _validate_value_parser(args.get("value_parser"), name, field)
    type_group, type_parsers = _validate_type_group(args, compiled, field)
    nested, nested_re, leaf = _validate_nested(args.get("nested", False), field)
    return ContentArgs(
        tag_pattern=pattern,
        value_parser=value_parser,
        merge_duplicates=_bool_arg(args, "merge_duplicates", False, name, field),
        type_group=type_group,
        type_parsers=None if type_parsers is None else {k: spec for k, (spec, _) in type_parsers.items()},
        unescape=_bool_arg(args, "unescape", False, name, field),
        cdata=_bool_arg(args, "cdata", False, name, field),
        nested=nested,
        _tag_re=compiled,
        _value_parser=sub,
        _type_parsers=type_parsers,
        _nested_re=nested_re,
        _leaf_parser=leaf,
    )


_NESTED_KEYS = ("tag_prefix", "item_tag", "leaf_parser")


def _validate_nested(
    nested: Any, field: str | None
) -> tuple[dict | None, regex.Pattern[str] | None, ContentParser | None]:
    """``nested`` (extension ``xml-values``): ``false``, ``true`` or an object of ``_NESTED_KEYS``.

    Returns the normalized setting (``None`` when off), the compiled tag scanner and the leaf parser.
    """
    if nested is False:
        return None, None, None
    if nested is True:
        nested = {}
    if not isinstance(nested, Mapping):
        raise TemplateError(
            "content_args 'nested' of content parser 'xml-inline' must be true, false or an object with "
            f"the optional keys {', '.join(repr(k) for k in _NESTED_KEYS)}; "
            f"got {_type_name(nested)} {nested!r}",
            field=field,
            key=_ARGS_KEY,
        )
    unknown = [k for k in nested if k not in _NESTED_KEYS]
    if unknown:
        raise TemplateError(
            f"content_args 'nested' has unknown keys {', '.join(repr(k) for k in unknown)}; it accepts "
            f"{', '.join(repr(k) for k in _NESTED_KEYS)}",
            field=field,
            key=_ARGS_KEY,
        )
    prefix = nested.get("tag_prefix", "")
    if not isinstance(prefix, str):
        raise TemplateError(
            f"content_args 'nested.tag_prefix' must be a string (the literal written before every tag), "
            f"got {_type_name(prefix)} {prefix!r}",
            field=field,
            key=_ARGS_KEY,
        )
    item_tag = nested.get("item_tag")
    if item_tag is not None and (not isinstance(item_tag, str) or not _XML_NAME.fullmatch(item_tag)):
        raise TemplateError(
            f"content_args 'nested.item_tag' must be a tag name such as \"item\" (or null), got {item_tag!r}",
            field=field,
            key=_ARGS_KEY,
        )
    try:
        leaf_spec, leaf = _validate_value_parser(nested.get("leaf_parser"), "xml-inline", field)
    except TemplateError as exc:
        raise TemplateError(f"nested.leaf_parser: {exc.detail}", field=field, key=_ARGS_KEY) from None
    scanner = regex.compile(
        r"(?P<cdata><!\[CDATA\[.*?(?:\]\]>|\Z))"
        rf"|{regex.escape(prefix)}<(?P<close>/)?(?P<name>{_XML_NAME.pattern})(?:\s[^<>]*?)?(?P<self>/)?>",
        regex.DOTALL,
    )
    normalized = {"tag_prefix": prefix, "item_tag": item_tag, "leaf_parser": leaf_spec}
    return normalized, scanner, leaf


def _validate_type_group(
    args: Mapping[str, Any], compiled: regex.Pattern[str], field: str | None
) -> tuple[str | None, dict[str, Any] | None]:
    """``type_group`` / ``type_parsers`` (extension ``xml-values``): both or neither."""
    group, parsers = args.get("type_group"), args.get("type_parsers")
    if group is None and parsers is None:
        return None, None
    if group is None or parsers is None:
        raise TemplateError(
            "content_args 'type_group' and 'type_parsers' of content parser 'xml-inline' go together",
            field=field,
            key=_ARGS_KEY,
        )
    if not isinstance(group, str) or group in ("key", "value") or group not in compiled.groupindex:
        raise TemplateError(
            f"content_args 'type_group' must name a named group of 'tag_pattern' other than 'key' and "
            f"'value', got {group!r}; the pattern's groups: {sorted(compiled.groupindex)}",
            field=field,
            key=_ARGS_KEY,
        )
    if not isinstance(parsers, Mapping) or not parsers:
        raise TemplateError(
            "content_args 'type_parsers' must be a non-empty object mapping the captured type to a value "
            f'parser, e.g. {{"true": {{"name": "text"}}, "false": {{"name": "json"}}}}; got {parsers!r}',
            field=field,
            key=_ARGS_KEY,
        )
    out: dict[str, Any] = {}
    for type_name, spec in parsers.items():
        try:
            out[type_name] = _validate_value_parser(spec, "xml-inline", field)
        except TemplateError as exc:
            raise TemplateError(
                f"type_parsers[{type_name!r}]: {exc.detail}", field=field, key=_ARGS_KEY
            ) from None
    return group, out


def _xml_raw_value(raw: str, args: Mapping[str, Any]) -> str:
    """Unwrap a CDATA section (kept verbatim) or unescape HTML entities, as configured."""
    if args["cdata"]:
        inner = raw.strip()
        if inner.startswith("<![CDATA[") and inner.endswith("]]>"):
            return inner[9:-3]
    if args["unescape"]:
        return html.unescape(raw)
    return raw


def _xml_matches(tag_re: regex.Pattern[str], text: str, args: Mapping[str, Any]) -> Any:
    """``tag_re.finditer`` that turns a regex timeout into a ContentError."""
    matches = tag_re.finditer(text, timeout=REGEX_TIMEOUT)
    while True:
        try:
            match = next(matches, None)
        except TimeoutError:
            raise _xml_timeout(args) from None
        if match is None:
            return
        yield match


def _xml_timeout(args: Mapping[str, Any]) -> ContentError:
    return ContentError(
        f"xml-inline: tag_pattern {args['tag_pattern']!r} ran longer than {REGEX_TIMEOUT} s on this "
        "text (catastrophic backtracking?)"
    )


def _xml_key(match: regex.Match[str], args: Mapping[str, Any]) -> str:
    key = match.group("key")
    if key is None:
        raise ContentError(
            f"xml-inline: tag_pattern matched {_show(match.group(0))} at character {match.start()} "
            "but its 'key' group took no part in the match"
        )
    return html.unescape(key) if args["unescape"] else key


def _xml_leaf(raw: str, args: Mapping[str, Any], chosen: Any, where: str) -> Any:
    """A value without child elements: CDATA unwrap / unescape, then the chosen (or the default) parser."""
    raw = _xml_raw_value(raw, args)
    if chosen is not None:
        spec, sub = chosen
        try:
            return sub.parse(raw, spec["args"])
        except ContentError as exc:
            raise ContentError(f"{where}: {exc}") from exc
    return _parse_value(raw, args, where)


def _xml_chosen(match: regex.Match[str], args: Mapping[str, Any]) -> Any:
    """The ``(spec, parser)`` that ``type_group`` / ``type_parsers`` pick for this match, if any."""
    typed = args["_type_parsers"]
    return typed.get(match.group(args["type_group"])) if typed is not None else None


def _xml_store(out: dict[str, Any], merged: set[str], key: str, value: Any, merge: bool) -> None:
    if merge and key in out:
        if key in merged:
            out[key].append(value)
        else:
            out[key] = [out[key], value]
            merged.add(key)
    else:
        out[key] = value


def _parse_xml_inline(text: str, args: Mapping[str, Any]) -> dict[str, Any]:
    args = _ensure_valid(args, _validate_xml_inline)
    if args["nested"] is not None:
        return _parse_xml_nested(text, args)
    merge: bool = args["merge_duplicates"]
    out: dict[str, Any] = {}
    merged: set[str] = set()  # keys whose value is a list built by merge_duplicates
    for match in _xml_matches(args["_tag_re"], text, args):
        key = _xml_key(match, args)
        raw_value = match.group("value")
        # A value group that took no part in the match (e.g. a self-closing tag) gives None.
        if raw_value is None:
            value = None
        else:
            value = _xml_leaf(raw_value, args, _xml_chosen(match, args), f"xml-inline value of {key!r}")
        _xml_store(out, merged, key, value, merge)
    return out


# Nested values (``nested``): the text is cut into elements by tag balance, then read recursively.


@dataclass
class _XmlNode:
    """One element found by :func:`_xml_scan` (positions index the scanned text)."""

    name: str
    start: int  # the open tag, tag_prefix included
    inner_start: int
    inner_end: int = -1
    end: int = -1
    empty: bool = False  # a self-closing tag
    has_text: bool = False  # non-whitespace text (or CDATA) directly inside, outside the children
    children: list[_XmlNode] | None = None


_XML_NAME = regex.compile(r"[A-Za-z_][^\s<>/\"'=]*")


def _xml_scan(text: str, scanner: regex.Pattern[str], max_depth: int, where: str) -> _XmlNode:
    """The element tree of ``text`` under a root node; ContentError for bad nesting or too much depth."""
    root = _XmlNode("", 0, 0, len(text), len(text), children=[])
    stack = [root]
    last = 0
    matches = scanner.finditer(text, timeout=REGEX_TIMEOUT)
    while True:
        try:
            match = next(matches, None)
        except TimeoutError:  # pragma: no cover - the scanner is linear
            raise ContentError(f"{where}: the tag scan ran longer than {REGEX_TIMEOUT} s") from None
        top = stack[-1]
        if match is None:
            if text[last:].strip():
                top.has_text = True
            break
        if match.group("cdata") is not None or text[last : match.start()].strip():
            top.has_text = True
        last = match.end()
        if match.group("cdata") is not None:
            continue
        name = match.group("name")
        if match.group("close"):
            if top is root:
                raise ContentError(
                    f"{where}: the close tag {_show(match.group(0))} at character {match.start()} has no "
                    "open tag"
                )
            if top.name != name:
                raise ContentError(
                    f"{where}: the close tag {_show(match.group(0))} at character {match.start()} does not "
                    f"match <{top.name}> opened at character {top.start} (tags must nest)"
                )
            stack.pop()
            top.inner_end, top.end = match.start(), match.end()
            stack[-1].children.append(top)  # type: ignore[union-attr]
            continue
        if len(stack) > max_depth:
            raise ContentError(f"{where}: elements are nested more than {MAX_XML_DEPTH} levels deep")
        if match.group("self"):
            node = _XmlNode(name, match.start(), match.end(), match.end(), match.end(), empty=True)
            top.children.append(node)  # type: ignore[union-attr]
        else:
            stack.append(_XmlNode(name, match.start(), match.end(), children=[]))
    if len(stack) > 1:
        node = stack[-1]
        raise ContentError(
            f"{where}: <{node.name}> opened at character {node.start} is never closed "
            f"({_show(text[node.start : node.inner_start])})"
        )
    return root


def _xml_node_value(text: str, node: _XmlNode, args: Mapping[str, Any], leaf: Any, where: str) -> Any:
    """The value of one child element: null, a container or a leaf."""
    if node.empty:
        return None
    if node.children and not node.has_text:
        return _xml_container(text, node.children, args, leaf, where)
    return _xml_leaf(text[node.inner_start : node.inner_end], args, leaf, f"xml-inline value of {where!r}")


def _xml_container(
    text: str, children: list[_XmlNode], args: Mapping[str, Any], leaf: Any, where: str
) -> Any:
    """Child elements as an array (one shared name that is ``item_tag``, or 2+ of them) or an object."""
    first = children[0].name
    if all(child.name == first for child in children) and (
        first == args["nested"]["item_tag"] or len(children) > 1
    ):
        return [_xml_node_value(text, child, args, leaf, f"{where}[{i}]") for i, child in enumerate(children)]
    out: dict[str, Any] = {}
    merged: set[str] = set()
    for child in children:
        key = html.unescape(child.name) if args["unescape"] else child.name
        value = _xml_node_value(text, child, args, leaf, f"{where}.{key}")
        _xml_store(out, merged, key, value, args["merge_duplicates"])
    return out


def _parse_xml_nested(text: str, args: Mapping[str, Any]) -> dict[str, Any]:
    scanner: regex.Pattern[str] = args["_nested_re"]
    tag_re: regex.Pattern[str] = args["_tag_re"]
    sub = args["_leaf_parser"]
    leaf_spec = args["nested"]["leaf_parser"]
    out: dict[str, Any] = {}
    merged: set[str] = set()
    for element in _xml_scan(text, scanner, MAX_XML_DEPTH, "xml-inline").children or ():
        span = text[element.start : element.end]
        try:
            match = tag_re.fullmatch(span, timeout=REGEX_TIMEOUT)
        except TimeoutError:
            raise _xml_timeout(args) from None
        if match is None:
            raise ContentError(
                f"xml-inline: tag_pattern {args['tag_pattern']!r} does not match the whole element "
                f"{_show(span)} at character {element.start} (with 'nested', it must)"
            )
        key = _xml_key(match, args)
        raw_value = match.group("value")
        if raw_value is None:
            value = None
        else:
            chosen = _xml_chosen(match, args)
            where = f"xml-inline value of {key!r}"
            inner = _xml_scan(raw_value, scanner, MAX_XML_DEPTH - 1, where)
            if inner.children and not inner.has_text:
                leaf = (leaf_spec, sub) if sub is not None else chosen
                value = _xml_container(raw_value, inner.children, args, leaf, key)
            else:  # no child elements, or text mixed with them: the flat rules, on the whole text
                value = _xml_leaf(raw_value, args, chosen, where)
        _xml_store(out, merged, key, value, args["merge_duplicates"])
    return out


# -------------------------------------------------------------------------------------------- kv-lines


def _validate_kv_lines(args: Any, field: str | None) -> dict:
    name = "kv-lines"
    args = _check_args(args, ("line_sep", "kv_sep", "strip", "value_parser"), name, field)
    value_parser, sub = _validate_value_parser(args.get("value_parser"), name, field)
    return ContentArgs(
        line_sep=_separator_arg(args, "line_sep", "\n", name, field),
        kv_sep=_separator_arg(args, "kv_sep", ":", name, field),
        strip=_bool_arg(args, "strip", True, name, field),
        value_parser=value_parser,
        _value_parser=sub,
    )


def _parse_kv_lines(text: str, args: Mapping[str, Any]) -> dict[str, Any]:
    args = _ensure_valid(args, _validate_kv_lines)
    kv_sep: str = args["kv_sep"]
    strip: bool = args["strip"]
    out: dict[str, Any] = {}
    for line in text.split(args["line_sep"]):
        if strip:
            line = line.strip()
        if not line or kv_sep not in line:
            continue
        key, value = line.split(kv_sep, 1)
        if strip:
            key, value = key.strip(), value.strip()
        out[key] = _parse_value(value, args, f"kv-lines value of {key!r}")
    return out


# ---------------------------------------------------------------------------------------- python-calls

MAX_PYTHON_DEPTH: int = 100
"""Deepest nesting of lists/dicts/tuples a ``python-calls`` argument value may have."""

#: Bare names read as JSON literals (models trained on JSON sometimes write them inside Python calls).
_PY_JSON_NAMES = {"true": True, "false": False, "null": None}


def _py_call_name(node: ast.expr) -> str:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        raise ContentError(
            f"python-calls: a call must name a function (name or dotted name), got {ast.dump(node)[:60]}"
        )
    parts.append(node.id)
    return ".".join(reversed(parts))


def _py_value(node: ast.expr, depth: int = 0) -> Any:
    """The JSON value of a literal node; anything else is a ContentError (nothing is evaluated)."""
    if depth > MAX_PYTHON_DEPTH:
        raise ContentError(
            f"python-calls: an argument value is nested more than {MAX_PYTHON_DEPTH} levels deep"
        )
    if isinstance(node, ast.Constant):
        value = node.value
        if value is None or isinstance(value, (str, bool, int, float)):
            return value
        raise ContentError(f"python-calls: {type(value).__name__} literals are not JSON data: {value!r}")
    if (
        isinstance(node, ast.UnaryOp)
        and isinstance(node.op, (ast.USub, ast.UAdd))
        and isinstance(node.operand, ast.Constant)
        and isinstance(node.operand.value, (int, float))
        and not isinstance(node.operand.value, bool)
    ):
        number = node.operand.value
        return -number if isinstance(node.op, ast.USub) else number
    if isinstance(node, (ast.List, ast.Tuple)):
        return [_py_value(item, depth + 1) for item in node.elts]
    if isinstance(node, ast.Dict):
        out: dict[str, Any] = {}
        for key, item in zip(node.keys, node.values, strict=True):
            if key is None:
                raise ContentError("python-calls: '**' unpacking inside a dict literal is not data")
            name = _py_value(key, depth + 1)
            if not isinstance(name, str):
                raise ContentError(f"python-calls: dict keys must be strings, got {name!r}")
            out[name] = _py_value(item, depth + 1)
        return out
    if isinstance(node, ast.Name) and node.id in _PY_JSON_NAMES:
        return _PY_JSON_NAMES[node.id]
    raise ContentError(
        f"python-calls: only literals (strings, numbers, True/False/None, lists, tuples, dicts) may be "
        f"argument values, got {type(node).__name__} at column {getattr(node, 'col_offset', '?')}"
    )


def _py_call(node: ast.expr) -> dict[str, Any]:
    if not isinstance(node, ast.Call):
        raise ContentError(f"python-calls: expected a call such as f(a=1), got {type(node).__name__}")
    name = _py_call_name(node.func)
    if node.args:
        raise ContentError(
            f"python-calls: {name}() has positional arguments; tool calls name every argument (k=v)"
        )
    arguments: dict[str, Any] = {}
    for kw in node.keywords:
        if kw.arg is None:
            raise ContentError(f"python-calls: {name}() uses '**' unpacking; only k=v arguments are data")
        if kw.arg in arguments:
            raise ContentError(f"python-calls: {name}() repeats the argument {kw.arg!r}")
        arguments[kw.arg] = _py_value(kw.value)
    return {"name": name, "arguments": arguments}


def _py_calls(tree: ast.expr) -> list[dict[str, Any]]:
    if isinstance(tree, (ast.List, ast.Tuple)):
        return [_py_call(item) for item in tree.elts]
    return [_py_call(tree)]


def _escape_raw_line_breaks(text: str) -> str:
    """``text`` with each line break inside a one-line string literal written as an escape.

    Chat templates that render arguments with Python quoting but without escaping (LFM2.5's, for one)
    put raw line breaks inside ``'...'``; a model trained on them writes the same.
    """
    out: list[str] = []
    quote = ""  # the open string's delimiter; "" outside strings
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if not quote:
            if ch in "'\"":
                quote = text[i : i + 3] if text[i : i + 3] in ("'''", '"""') else ch
                out.append(quote)
                i += len(quote)
                continue
        elif ch == "\\":
            out.append(text[i : i + 2])
            i += 2
            continue
        elif text.startswith(quote, i):
            out.append(quote)
            i += len(quote)
            quote = ""
            continue
        elif len(quote) == 1 and ch in "\r\n":
            out.append("\\n" if ch == "\n" else "\\r")
            i += 1
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def _py_parse(text: str) -> ast.expr:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # an invalid escape such as '\s' keeps its backslash
            return ast.parse(text, mode="eval").body
    except (SyntaxError, ValueError, MemoryError) as exc:  # ValueError: NUL bytes, huge int literals
        raise ContentError(f"python-calls: not a Python call expression: {exc}") from None
    except RecursionError:
        raise ContentError("python-calls: the text is nested too deeply") from None


def _validate_python_calls(args: Any, field: str | None) -> dict:
    args = _check_args(args, ("name_suffix",), "python-calls", field)
    suffix = args.get("name_suffix", "")
    if not isinstance(suffix, str):
        raise TemplateError(
            f"python-calls: name_suffix must be a string, got {_type_name(suffix)}",
            field=field,
            key=_ARGS_KEY,
        )
    return ContentArgs(name_suffix=suffix)


def _parse_python_calls(text: str, args: Mapping[str, Any]) -> list[dict[str, Any]]:
    args = args if isinstance(args, ContentArgs) else _ensure_valid(args, _validate_python_calls)
    calls = _python_calls(text)
    suffix = args["name_suffix"]
    if suffix:
        # A method that marks the call rather than naming the tool (Llama 3.1: brave_search.call(...)).
        for call in calls:
            name = call["name"]
            if name.endswith(suffix) and len(name) > len(suffix):
                call["name"] = name[: -len(suffix)]
    return calls


def _python_calls(text: str) -> list[dict[str, Any]]:
    stripped = text.strip()
    if not stripped:
        return []
    try:
        tree = _py_parse(stripped)
    except ContentError as whole:
        # Line breaks written raw inside one-line strings, then one call (or list of calls) per line.
        repaired = _escape_raw_line_breaks(stripped)
        if repaired != stripped:
            try:
                tree = _py_parse(repaired)
            except ContentError:
                pass
            else:
                return _py_calls_bounded(tree)
        lines = [line.strip() for line in repaired.splitlines() if line.strip()]
        if len(lines) < 2:
            raise whole from None
        calls: list[dict[str, Any]] = []
        for number, line in enumerate(lines, start=1):
            try:
                calls.extend(_py_calls_bounded(_py_parse(line)))
            except ContentError as exc:
                raise ContentError(f"{exc} (line {number}: {_show(line)})") from None
        return calls
    return _py_calls_bounded(tree)


def _py_calls_bounded(tree: ast.expr) -> list[dict[str, Any]]:
    try:
        return _py_calls(tree)
    except RecursionError:
        raise ContentError("python-calls: the text is nested too deeply") from None


# -------------------------------------------------------------------------------------------- registry

CONTENT_PARSERS: dict[str, ContentParser] = {}


def register_content_parser(parser: ContentParser) -> None:
    """Add a content parser to the registry; a name can be registered only once."""
    if not isinstance(parser, ContentParser):
        raise TypeError(f"register_content_parser expects a ContentParser, got {_type_name(parser)}")
    if not isinstance(parser.name, str) or not parser.name:
        raise ValueError("a content parser needs a non-empty string name")
    if parser.name in CONTENT_PARSERS:
        raise ValueError(f"a content parser named {parser.name!r} is already registered")
    CONTENT_PARSERS[parser.name] = parser


for _parser in (
    ContentParser("text", True, _parse_text, _validate_text),
    ContentParser("int", True, _parse_int, _no_args_validator("int")),
    ContentParser("float", True, _parse_float, _no_args_validator("float")),
    ContentParser("bool", True, _parse_bool, _no_args_validator("bool")),
    ContentParser("json", False, _parse_json, _validate_json),
    ContentParser("xml-inline", False, _parse_xml_inline, _validate_xml_inline),
    ContentParser("kv-lines", False, _parse_kv_lines, _validate_kv_lines),
    ContentParser("python-calls", False, _parse_python_calls, _validate_python_calls),
):
    register_content_parser(_parser)
del _parser


def get_content_parser(name: str, field: str | None) -> ContentParser:
    """The parser called ``name``; ``TemplateError(field=field, key="content")`` if there is none."""
    parser = CONTENT_PARSERS.get(name) if isinstance(name, str) else None
    if parser is None:
        raise TemplateError(
            f"unknown content parser {name!r}; available: {', '.join(sorted(CONTENT_PARSERS))}",
            field=field,
            key="content",
        )
    return parser


def parse_content(text: str, name: str, args: Mapping[str, Any] | None = None) -> Any:
    """Validate ``args`` for parser ``name`` and parse ``text`` with it (a convenience for one-off calls)."""
    parser = get_content_parser(name, None)
    if not isinstance(text, str):
        raise ContentError(f"{name}: expected the region text as a string, got {_type_name(text)}")
    validated = args if isinstance(args, ContentArgs) else parser.validate({} if args is None else args, None)
    return parser.parse(text, validated)
