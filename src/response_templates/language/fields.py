"""Internal: one field of a template: the rules of each base field key, and the compilation of a field.

The base keys (docs/spec.md, section 3) and where their rules are:

==============================  =================================================================
``open`` / ``open_pattern``     :func:`_delimiter` (one of the two; a literal or a list, or a regex),
                                :func:`_check_empty_matches` (a pattern must consume text)
``close`` / ``close_pattern``   the same
``repeats``, ``optional``,      :func:`_bool_key` (true or false)
``transform_each``
``join``                        :func:`_join` (a string, only with ``repeats``)
``content``, ``content_args``   :func:`_content` (a registered parser, its arguments validated by it)
``transform``                   ``validate_transform`` (valid transform data), then :func:`_check_transform`
                                (every placeholder can resolve; captures reach the output only through it)
==============================  =================================================================

Keys, content parsers and ``content_args`` keys that belong to an extension are allowed only when the
template declares it (:func:`_check_declared`, from the registry); each extension's own rules run as its
hooks (:mod:`.extension`), in registry order.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from ..content import ContentParser, get_content_parser
from ..errors import TemplateError
from ..matching import Delimiter
from ..transforms import (
    OPTIONAL_PLACEHOLDERS,
    placeholders_repeat,
    transform_placeholders,
    validate_transform,
)
from .extension import FieldDraft, undeclared
from .limits import check_delimiter_value, check_pattern_limits
from .model import NO_FIELD_EXTENSIONS, FieldSpec
from .registry import (
    EXTENSION_FIELD_KEYS,
    EXTENSION_PARSERS,
    REGISTRY,
    extension_args_used,
    transform_features,
)

__all__ = ["BASE_CONTENT_PARSERS", "BASE_FIELD_KEYS", "FIELD_KEYS", "compile_field"]

#: The field keys of the base language.
BASE_FIELD_KEYS = frozenset(
    {
        "open",
        "open_pattern",
        "close",
        "close_pattern",
        "repeats",
        "join",
        "optional",
        "content",
        "content_args",
        "transform",
        "transform_each",
    }
)
#: The content parsers of the base language (docs/spec.md, section 6); extensions add more (the registry).
BASE_CONTENT_PARSERS = frozenset(
    {"text", "int", "float", "bool", "json", "xml-inline", "kv-lines", "python-call-list"}
)
#: Every field key this library reads: the base keys and the extensions' keys.
FIELD_KEYS = BASE_FIELD_KEYS | frozenset(EXTENSION_FIELD_KEYS)


def _bool_key(spec: Mapping[str, Any], key: str, default: bool, field_name: str) -> bool:
    value = spec.get(key, default)
    if not isinstance(value, bool):
        raise TemplateError(f"must be true or false, got {value!r}", field=field_name, key=key)
    return value


def _delimiter(spec: Mapping[str, Any], name: str, kind: str) -> Delimiter | None:
    literal_key, pattern_key = kind, f"{kind}_pattern"
    if literal_key in spec and pattern_key in spec:
        raise TemplateError(
            f"give either {literal_key!r} or {pattern_key!r}, not both", field=name, key=pattern_key
        )
    if literal_key in spec:
        check_delimiter_value(spec[literal_key], field=name, key=literal_key, pattern=False)
        return Delimiter.literal(spec[literal_key], field=name, kind=kind, key=literal_key)
    if pattern_key in spec:
        check_delimiter_value(spec[pattern_key], field=name, key=pattern_key, pattern=True)
        return Delimiter.regex(spec[pattern_key], field=name, kind=kind, key=pattern_key)
    return None


def _join(spec: Mapping[str, Any], name: str, repeats: bool) -> str | None:
    join = spec.get("join")
    if join is not None:
        if not isinstance(join, str):
            raise TemplateError(f"must be a string, got {type(join).__name__}", field=name, key="join")
        if not repeats:
            raise TemplateError("'join' needs 'repeats': true", field=name, key="join")
    return join


def _check_declared(spec: Mapping[str, Any], name: str, declared: tuple[str, ...]) -> None:
    """Field keys that belong to an undeclared extension are errors (parsers and arguments: :func:`_content`)."""
    for key, extension in EXTENSION_FIELD_KEYS.items():
        if key in spec and extension not in declared:
            raise undeclared(extension, f"the key {key!r}", name, key)


#: The content arguments that are regexes, by parser.
_PATTERN_ARGS: dict[str, tuple[str, ...]] = {"xml-inline": ("tag_pattern",)}


def _content(spec: Mapping[str, Any], name: str, declared: tuple[str, ...]) -> tuple[ContentParser, Any]:
    """The field's content parser and its validated arguments."""
    content = spec.get("content", "text")
    if not isinstance(content, str):
        raise TemplateError(f"must be a parser name, got {content!r}", field=name, key="content")
    needs = EXTENSION_PARSERS.get(content)
    if needs is not None and needs not in declared:
        raise undeclared(needs, f"the content parser {content!r}", name, "content")
    parser = get_content_parser(content, name)
    used = next(extension_args_used(content, spec.get("content_args")), None)
    if used is not None and used[2] not in declared:
        parser_name, arg, extension = used
        raise undeclared(extension, f"the {parser_name} argument {arg!r}", name, "content_args")
    args = spec.get("content_args", {})
    if isinstance(args, Mapping):
        # A content argument that is a regex gets the limits of a delimiter pattern before it is compiled.
        for arg in _PATTERN_ARGS.get(content, ()):
            if isinstance(args.get(arg), str):
                check_pattern_limits(args[arg], field=name, key="content_args")
    return parser, parser.validate(args, name)


def _check_transform(draft: FieldDraft) -> None:
    """The base rules of ``transform`` once it is valid data: placeholders that can resolve, no lost captures."""
    name, groups = draft.name, draft.groups
    if not draft.has_transform:
        if groups:
            raise TemplateError(
                f"named group(s) {sorted(groups)} would be lost: captures reach the output only through a "
                "'transform'; add one that uses them or make the groups unnamed",
                field=name,
                key="open_pattern" if draft.open and draft.open.group_names else "close_pattern",
            )
        return
    if not draft.transform_each:
        available = {"content"} | groups
        unknown_vars = sorted(transform_placeholders(draft.transform) - available)
        if unknown_vars:
            raise TemplateError(
                f"placeholder(s) {unknown_vars} can never resolve; available variables: {sorted(available)}",
                field=name,
                key="transform",
            )


def _check_empty_matches(open_d: Delimiter | None, close_d: Delimiter | None, name: str) -> None:
    """Reject delimiters that would fire at almost every position (docs/spec.md, rule 4.13).

    An open pattern must not match the empty string in ordinary text, at a line end included (an open
    ``$`` would open an empty region at the end of every line it sees). The implicit field's close may be
    zero-width where a context binds it: ``$`` (TRL writes ``<\\|im_end\\|>\\s*|$``), a lookahead,
    ``(?=\\n)``; only a close that matches the empty string between two ordinary characters (``x*``) is
    rejected. Either way a zero-width match is never accepted twice at one position, so parsing always
    moves forward.
    """
    if open_d is not None and open_d.matches_empty_anywhere():
        raise TemplateError(
            "the open pattern matches the empty string in ordinary text, so the region would open "
            "almost anywhere; make it consume text (a lookahead such as (?=<tool>), or ^, is fine)",
            field=name,
            key="open_pattern",
        )
    if open_d is None and close_d is not None and close_d.matches_empty_anywhere(line_ends=False):
        raise TemplateError(
            "the close pattern of the implicit field matches the empty string in ordinary text, so it "
            "would end the region at almost every position; make it consume text (a context-bound "
            "zero-width match such as $ or a lookahead is fine)",
            field=name,
            key="close_pattern",
        )


def _draft(name: str, spec: Mapping[str, Any], declared: tuple[str, ...]) -> FieldDraft:
    """Check the base keys of one field, in a fixed order (the first error found is reported)."""
    open_d = _delimiter(spec, name, "open")
    close_d = _delimiter(spec, name, "close")
    repeats = _bool_key(spec, "repeats", False, name)
    optional = _bool_key(spec, "optional", True, name)
    transform_each = _bool_key(spec, "transform_each", False, name)
    join = _join(spec, name, repeats)
    _check_declared(spec, name, declared)
    parser, content_args = _content(spec, name, declared)
    has_transform = spec.get("transform") is not None  # null means no transform, as in the reference
    if transform_each and not has_transform:
        raise TemplateError("'transform_each' needs a 'transform'", field=name, key="transform_each")
    groups = (open_d.group_names if open_d else frozenset()) | (
        close_d.group_names if close_d else frozenset()
    )
    return FieldDraft(
        name=name,
        spec=spec,
        declared=declared,
        open=open_d,
        close=close_d,
        repeats=repeats,
        optional=optional,
        join=join,
        parser=parser,
        content_args=content_args,
        transform=spec.get("transform"),
        transform_each=transform_each,
        has_transform=has_transform,
        groups=groups,
        transform_features=transform_features(declared),
    )


def compile_field(name: Any, spec: Any, declared: tuple[str, ...] = ()) -> FieldSpec:
    """Validate and compile one field; ``declared`` are the extensions the template declares."""
    if not isinstance(name, str) or not name:
        raise TemplateError(f"field names must be non-empty strings, got {name!r}", key="fields")
    if not isinstance(spec, Mapping):
        raise TemplateError(f"must be an object, got {type(spec).__name__}", field=name)
    unknown = sorted(set(spec) - FIELD_KEYS)
    if unknown:
        raise TemplateError(
            f"unknown key(s) {unknown}; allowed: {sorted(FIELD_KEYS)}", field=name, key=unknown[0]
        )
    draft = _draft(name, spec, declared)
    data = NO_FIELD_EXTENSIONS
    if draft.has_transform:
        optional = OPTIONAL_PLACEHOLDERS in draft.transform_features
        validate_transform(draft.transform, name, optional=optional)
        for ext in REGISTRY:
            if ext.check_transform is not None:
                data = ext.check_transform(draft, data)
    _check_transform(draft)
    _check_empty_matches(draft.open, draft.close, name)
    for ext in REGISTRY:
        if ext.compile_field is not None:
            data = ext.compile_field(draft, data)
    transform = draft.transform
    return FieldSpec(
        name=name,
        open=draft.open,
        close=draft.close,
        repeats=draft.repeats,
        join=draft.join,
        optional=draft.optional,
        parser=draft.parser,
        content_args=draft.content_args,
        transform=copy.deepcopy(transform),
        transform_each=draft.transform_each,
        has_transform=draft.has_transform,
        implicit=draft.open is None,
        dirty=not draft.parser.streamable,
        transform_copies=draft.has_transform and placeholders_repeat(transform),
        argument_typing=_argument_typing(draft),
        extension_data=data,
    )


def _argument_typing(draft: FieldDraft) -> str:
    """``FieldSpec.argument_typing``: ``"none"`` when the raw ``content_args`` has ``value_parser_by`` (for
    any content parser, as in the reference: only ``xml-inline`` reads it, but its presence alone turns
    the typing off), ``"non-string"`` for a parser whose syntax quotes strings, else ``"all"``."""
    args = draft.spec.get("content_args")
    if isinstance(args, Mapping) and "value_parser_by" in args:
        return "none"
    return "non-string" if draft.parser.quoted_strings else "all"
