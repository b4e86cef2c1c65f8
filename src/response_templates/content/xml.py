"""The ``xml-inline`` content parser: a run of tags becomes an object.

A flat run of tags matched by ``tag_pattern`` (a regex with named groups ``key`` and ``value``) becomes a
dict (without a ``value`` group every tag's value is ``""``, so flag tags such as ``<urgent/>`` can be read); ``value_parser`` parses each value, ``value_parser_by`` picks the value parser per tag from what
another named group captured, ``merge_duplicates`` collects repeated keys into a list. With the
extension ``xml-values`` (docs/extensions.md): ``type_group`` + ``type_parsers`` pick the value parser per
tag from a captured attribute, ``unescape`` decodes HTML entities, ``cdata`` unwraps ``<![CDATA[...]]>``,
``nested`` reads values written as child tags into objects and arrays.

>>> from response_templates.content import parse_content
>>> parse_content("<k>a</k><v>1</v>", "xml-inline", {
...     "tag_pattern": "<k>(?P<key>.*?)</k><v>(?P<value>.*?)</v>", "value_parser": {"name": "int"}})
{'a': 1}
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import regex

from ..errors import ContentError, TemplateError
from ..matching.patterns import regex_literal_suffix
from ._args import (
    ARGS_KEY,
    bool_arg,
    check_args,
    ensure_valid,
    ignore_arg,
    parse_value,
    show,
    type_name,
    validate_value_parser,
)
from .registry import CUT_OFF_ARG, ContentArgs, ContentParser, package_value

__all__ = ["MAX_XML_DEPTH", "REGEX_TIMEOUT", "XML_INLINE", "XML_VALUES_ARGS"]

REGEX_TIMEOUT: float = 1.0
"""Seconds one ``xml-inline`` parse may spend in its ``tag_pattern`` before it is abandoned.

The setting in use is the package attribute ``response_templates.content.REGEX_TIMEOUT``."""

#: ``xml-inline`` arguments that belong to the extension ``xml-values`` (docs/extensions.md).
XML_VALUES_ARGS: tuple[str, ...] = ("type_group", "type_parsers", "unescape", "cdata", "nested")

MAX_XML_DEPTH: int = 100
"""Deepest element nesting of an ``xml-inline`` argument with ``nested`` (its own tag is level 1)."""

_XML_NAME = regex.compile(r"[A-Za-z_][^\s<>/\"'=]*")
_NON_SPACE = regex.compile(r"\S")


def _timeout() -> float:
    return package_value("REGEX_TIMEOUT", REGEX_TIMEOUT)


def _validate_xml_inline(args: Any, field: str | None) -> dict[str, Any]:
    name = "xml-inline"
    allowed = ("tag_pattern", "value_parser", "value_parser_by", "merge_duplicates", *XML_VALUES_ARGS)
    args = check_args(args, allowed, name, field, unknown="ignore")
    if "tag_pattern" not in args:
        raise TemplateError(
            "content parser 'xml-inline' requires content_args 'tag_pattern' (a regex with named groups "
            "'key' and 'value')",
            field=field,
            key=ARGS_KEY,
        )
    pattern = args["tag_pattern"]
    if not isinstance(pattern, str) or not pattern:
        raise TemplateError(
            f"content_args 'tag_pattern' must be a non-empty regex string, got {pattern!r}",
            field=field,
            key=ARGS_KEY,
        )
    try:
        compiled = regex.compile(pattern, regex.DOTALL)
    except (regex.error, ValueError, TypeError, OverflowError, RecursionError, MemoryError) as exc:
        raise TemplateError(
            f"content_args 'tag_pattern' {pattern!r} is not a valid regex: {exc or type(exc).__name__}",
            field=field,
            key=ARGS_KEY,
        ) from None
    if "key" not in compiled.groupindex:
        raise TemplateError(
            f"content_args 'tag_pattern' {pattern!r} lacks the named group (?P<key>...); it needs 'key' "
            "(and 'value' for tags with a value: without it every tag's value is the empty string)",
            field=field,
            key=ARGS_KEY,
        )
    value_parser, sub = validate_value_parser(args.get("value_parser"), name, field)
    type_group, type_parsers = _validate_type_group(args, compiled, field)
    by_group, by_parsers = _validate_value_parser_by(args.get("value_parser_by"), compiled, field)
    if by_group is not None and type_group is not None:
        raise TemplateError(
            "content_args 'value_parser_by' and 'type_group'/'type_parsers' of content parser 'xml-inline' "
            "both pick the value parser per tag; give one of them",
            field=field,
            key=ARGS_KEY,
        )
    nested, nested_re, leaf = _validate_nested(args.get("nested", False), field)
    return ContentArgs(
        tag_pattern=pattern,
        value_parser=value_parser,
        value_parser_by=None
        if by_parsers is None
        else {"group": by_group, "parsers": {k: spec for k, (spec, _) in by_parsers.items()}},
        merge_duplicates=bool_arg(args, "merge_duplicates", False, name, field),
        type_group=type_group,
        type_parsers=None if type_parsers is None else {k: spec for k, (spec, _) in type_parsers.items()},
        unescape=bool_arg(args, "unescape", False, name, field),
        cdata=bool_arg(args, "cdata", False, name, field),
        nested=nested,
        _tag_re=compiled,
        _value_parser=sub,
        # The per-tag choice, by value_parser_by or by type_group/type_parsers (never both).
        _choice_group=by_group if by_group is not None else type_group,
        _type_parsers=by_parsers if by_parsers is not None else type_parsers,
        _nested_re=nested_re,
        _leaf_parser=leaf,
    )


_BY_KEYS = ("group", "parsers")


def _validate_value_parser_by(
    spec: Any, compiled: regex.Pattern[str], field: str | None
) -> tuple[str | None, dict[str, Any] | None]:
    """``value_parser_by``: ``{"group": G, "parsers": {capture: value parser}}``, checked here, at load.

    Returns the group and ``{capture: (normalized spec, parser)}`` (``(None, None)`` for an entry ``null``,
    which keeps the raw text), or ``(None, None)`` without the argument (``null`` included).
    """
    if spec is None:
        return None, None
    example = '{"group": "string", "parsers": {"false": {"name": "json"}}}'
    if not isinstance(spec, Mapping):
        raise TemplateError(
            "content_args 'value_parser_by' of content parser 'xml-inline' must be an object like "
            f"{example}, got {type_name(spec)} {show(repr(spec))}",
            field=field,
            key=ARGS_KEY,
        )
    for key in spec:
        if key not in _BY_KEYS:
            ignore_arg(
                field,
                "xml-inline",
                f"value_parser_by.{key}",
                "value_parser_by reads only 'group' and 'parsers'",
            )
    group = spec.get("group")
    groups = sorted(compiled.groupindex)
    if not isinstance(group, str):
        raise TemplateError(
            "content_args 'value_parser_by.group' must name a named group of 'tag_pattern' (whose capture "
            f"picks the value parser), got {type_name(group)} {group!r}; the pattern's groups: {groups}",
            field=field,
            key=ARGS_KEY,
        )
    if group not in compiled.groupindex:
        raise TemplateError(
            f"content_args 'value_parser_by.group' names the group {group!r}, which 'tag_pattern' "
            f"{compiled.pattern!r} does not define; its groups: {groups}",
            field=field,
            key=ARGS_KEY,
        )
    parsers = spec.get("parsers")
    if not isinstance(parsers, Mapping):
        raise TemplateError(
            "content_args 'value_parser_by.parsers' must be an object mapping what the group captures to a "
            f"value parser, as in {example}; got {type_name(parsers)} {show(repr(parsers))}",
            field=field,
            key=ARGS_KEY,
        )
    out: dict[str, Any] = {}
    for capture, entry in parsers.items():
        if not isinstance(capture, str):
            raise TemplateError(
                "the keys of content_args 'value_parser_by.parsers' are the texts the group captures "
                f"(strings), got {type_name(capture)} {capture!r}",
                field=field,
                key=ARGS_KEY,
            )
        try:
            out[capture] = validate_value_parser(entry, "xml-inline", field)
        except TemplateError as exc:
            raise TemplateError(
                f"value_parser_by.parsers[{capture!r}]: {exc.detail}", field=field, key=ARGS_KEY
            ) from None
    return group, out


_NESTED_KEYS = ("tag_prefix", "item_tag", "leaf_parser")


def _validate_nested(
    nested: Any, field: str | None
) -> tuple[dict[str, Any] | None, regex.Pattern[str] | None, ContentParser | None]:
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
            f"got {type_name(nested)} {nested!r}",
            field=field,
            key=ARGS_KEY,
        )
    unknown = [k for k in nested if k not in _NESTED_KEYS]
    if unknown:
        raise TemplateError(
            f"content_args 'nested' has unknown keys {', '.join(repr(k) for k in unknown)}; it accepts "
            f"{', '.join(repr(k) for k in _NESTED_KEYS)}",
            field=field,
            key=ARGS_KEY,
        )
    prefix = nested.get("tag_prefix", "")
    if not isinstance(prefix, str):
        raise TemplateError(
            f"content_args 'nested.tag_prefix' must be a string (the literal written before every tag), "
            f"got {type_name(prefix)} {prefix!r}",
            field=field,
            key=ARGS_KEY,
        )
    item_tag = nested.get("item_tag")
    if item_tag is not None and (not isinstance(item_tag, str) or not _XML_NAME.fullmatch(item_tag)):
        raise TemplateError(
            f"content_args 'nested.item_tag' must be a tag name such as \"item\" (or null), got {item_tag!r}",
            field=field,
            key=ARGS_KEY,
        )
    try:
        leaf_spec, leaf = validate_value_parser(nested.get("leaf_parser"), "xml-inline", field)
    except TemplateError as exc:
        raise TemplateError(f"nested.leaf_parser: {exc.detail}", field=field, key=ARGS_KEY) from None
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
            key=ARGS_KEY,
        )
    if not isinstance(group, str) or group in ("key", "value") or group not in compiled.groupindex:
        raise TemplateError(
            f"content_args 'type_group' must name a named group of 'tag_pattern' other than 'key' and "
            f"'value', got {group!r}; the pattern's groups: {sorted(compiled.groupindex)}",
            field=field,
            key=ARGS_KEY,
        )
    if not isinstance(parsers, Mapping) or not parsers:
        raise TemplateError(
            "content_args 'type_parsers' must be a non-empty object mapping the captured type to a value "
            f'parser, e.g. {{"true": {{"name": "text"}}, "false": {{"name": "json"}}}}; got {parsers!r}',
            field=field,
            key=ARGS_KEY,
        )
    out: dict[str, Any] = {}
    for kind, spec in parsers.items():
        try:
            out[kind] = validate_value_parser(spec, "xml-inline", field)
        except TemplateError as exc:
            raise TemplateError(f"type_parsers[{kind!r}]: {exc.detail}", field=field, key=ARGS_KEY) from None
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


@lru_cache(maxsize=256)
def _tag_suffix(pattern: str) -> str:
    return regex_literal_suffix(pattern)


def _xml_matches(tag_re: regex.Pattern[str], text: str, args: Mapping[str, Any]) -> Any:
    """``tag_re.finditer`` that turns a regex timeout into a ContentError.

    When every match ends with the same literal text (``</parameter>``), the search stops where its last
    occurrence ends: a run of open tags that is never closed then costs one pass, not one pass per tag.
    """
    end = len(text)
    suffix = _tag_suffix(tag_re.pattern)
    if suffix:
        last = text.rfind(suffix)
        if last < 0:
            return
        end = last + len(suffix)
    matches = tag_re.finditer(text, 0, end, timeout=_timeout())
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
        f"xml-inline: tag_pattern {args['tag_pattern']!r} ran longer than {_timeout()} s on this "
        "text (catastrophic backtracking?)"
    )


def _xml_key(match: regex.Match[str], args: Mapping[str, Any]) -> str:
    key = match.group("key")
    if key is None:
        raise ContentError(
            f"xml-inline: tag_pattern matched {show(match.group(0))} at character {match.start()} "
            "but its 'key' group took no part in the match"
        )
    return html.unescape(key) if args["unescape"] else key


def _xml_leaf(raw: str, args: Mapping[str, Any], chosen: Any, where: str) -> Any:
    """A value without child elements: CDATA unwrap / unescape, then the chosen (or the default) parser."""
    raw = _xml_raw_value(raw, args)
    if chosen is not None:
        spec, sub = chosen
        if sub is None:  # an entry null: the raw text
            return raw
        try:
            return sub.parse(raw, spec["args"])
        except ContentError as exc:
            raise ContentError(f"{where}: {exc}") from exc
    return parse_value(raw, args, where)


def _xml_raw(match: regex.Match[str]) -> str | None:
    """The text of the ``value`` group: ``None`` when it took no part in the match, ``""`` when
    ``tag_pattern`` has no ``value`` group at all (a flag tag such as ``<urgent/>``, as in the reference)."""
    if "value" not in match.re.groupindex:
        return ""
    value: str | None = match.group("value")
    return value


def _xml_chosen(match: regex.Match[str], args: Mapping[str, Any]) -> Any:
    """The ``(spec, parser)`` that ``value_parser_by`` (or ``type_group`` / ``type_parsers``) picks for this
    match, if any: None (``value_parser``) for a capture without an entry or a group that took no part."""
    typed = args["_type_parsers"]
    return typed.get(match.group(args["_choice_group"])) if typed is not None else None


def _xml_store(out: dict[str, Any], merged: set[str], key: str, value: Any, merge: bool) -> None:
    if merge and key in out:
        if key in merged:
            out[key].append(value)
        else:
            out[key] = [out[key], value]
            merged.add(key)
    else:
        out[key] = value


def _check_unconsumed(text: str, start: int, end: int, args: Mapping[str, Any]) -> None:
    """ContentError if ``text[start:end]``, which no tag consumed, holds anything but whitespace.

    Such text is what the model wrote outside every tag ``tag_pattern`` reads (stray words, a tag that
    is malformed or never closed): dropping it would lose it without a trace.
    """
    found = _NON_SPACE.search(text, start, end)
    if found is None:
        return
    at = found.start()
    stop = end
    # Show the stray text itself, up to the next tag or line end.
    for mark in ("<", "\n"):
        cut = text.find(mark, at + 1, end)
        if cut >= 0:
            stop = min(stop, cut)
    raise ContentError(
        f"xml-inline: the text {show(text[at:stop].rstrip())} at character {at} is outside every tag that "
        f"tag_pattern {args['tag_pattern']!r} matches (a malformed or unclosed tag, or stray text); "
        "it would be lost"
    )


def _parse_xml_inline(text: str, args: Mapping[str, Any]) -> dict[str, Any]:
    args = ensure_valid(args, _validate_xml_inline)
    if args["nested"] is not None:
        return _parse_xml_nested(text, args)
    merge: bool = args["merge_duplicates"]
    out: dict[str, Any] = {}
    merged: set[str] = set()  # keys whose value is a list built by merge_duplicates
    consumed = 0  # text[:consumed] is tags or whitespace
    last: regex.Match[str] | None = None
    for match in _xml_matches(args["_tag_re"], text, args):
        last = match
        _check_unconsumed(text, consumed, match.start(), args)
        consumed = max(consumed, match.end())
        key = _xml_key(match, args)
        raw_value = _xml_raw(match)
        # A value group that took no part in the match (e.g. a self-closing tag) gives None.
        if raw_value is None:
            value = None
        else:
            value = _xml_leaf(raw_value, args, _xml_chosen(match, args), f"xml-inline value of {key!r}")
        _xml_store(out, merged, key, value, merge)
    _check_unconsumed(text, consumed, len(text), args)
    if last is not None and args.get(CUT_OFF_ARG):
        _check_finished(text, last)
    return out


def _check_finished(text: str, match: regex.Match[str]) -> None:
    """ContentError if the last tag's value is ended only by the end of a text that was cut off.

    A ``tag_pattern`` may end a value at the end of the call (``\\Z``, Qwen3-Coder's missing
    ``</parameter>``); when the output itself ended the call, that value is what the model had written
    so far, not what it meant.
    """
    if "value" not in match.re.groupindex or match.end() < len(text):
        return
    value_end = match.end("value")
    if value_end < 0 or text[value_end:].strip():
        return  # the value ended at its close tag
    raise ContentError(
        f"xml-inline: the value of {show(match.group('key') or '')} at character {match.start()} was cut "
        "off by the end of the output (no close tag, and the call never ended)"
    )


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


def _xml_scan(text: str, scanner: regex.Pattern[str], max_depth: int, where: str) -> _XmlNode:
    """The element tree of ``text`` under a root node; ContentError for bad nesting or too much depth."""
    root = _XmlNode("", 0, 0, len(text), len(text), children=[])
    stack = [root]
    last = 0
    matches = scanner.finditer(text, timeout=_timeout())
    while True:
        try:
            match = next(matches, None)
        except TimeoutError:  # pragma: no cover - the scanner is linear
            raise ContentError(f"{where}: the tag scan ran longer than {_timeout()} s") from None
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
                    f"{where}: the close tag {show(match.group(0))} at character {match.start()} has no "
                    "open tag"
                )
            if top.name != name:
                raise ContentError(
                    f"{where}: the close tag {show(match.group(0))} at character {match.start()} does not "
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
            f"({show(text[node.start : node.inner_start])})"
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
    consumed = 0
    for element in _xml_scan(text, scanner, MAX_XML_DEPTH, "xml-inline").children or ():
        _check_unconsumed(text, consumed, element.start, args)
        consumed = element.end
        span = text[element.start : element.end]
        try:
            match = tag_re.fullmatch(span, timeout=_timeout())
        except TimeoutError:
            raise _xml_timeout(args) from None
        if match is None:
            raise ContentError(
                f"xml-inline: tag_pattern {args['tag_pattern']!r} does not match the whole element "
                f"{show(span)} at character {element.start} (with 'nested', it must)"
            )
        key = _xml_key(match, args)
        raw_value = _xml_raw(match)
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
    _check_unconsumed(text, consumed, len(text), args)
    return out


XML_INLINE = ContentParser("xml-inline", False, _parse_xml_inline, _validate_xml_inline)
