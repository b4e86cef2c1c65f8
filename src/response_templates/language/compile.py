"""Loading, validating and compiling response templates (SPEC section 3).

A response template is plain JSON data. :func:`load_template` checks every key, with errors that
name the field and the key, and compiles it into an immutable :class:`ResponseTemplate` that can be
shared between threads and reused for any number of parses.

>>> import response_templates as rt
>>> t = rt.load_template({
...     "start_anchor": "<|im_start|>assistant\\n",
...     "fields": {
...         "reasoning_content": {"open": "<think>", "close": "</think>"},
...         "content": {"close": "<|im_end|>"},
...     },
... })
>>> [f.name for f in t.fields], t.implicit.name
(['reasoning_content', 'content'], 'content')
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import lru_cache
from types import MappingProxyType
from typing import Any

from ..content import XML_VALUES_ARGS, ContentParser, get_content_parser
from ..errors import TemplateError
from ..matching import Delimiter, WatchSet
from ..transforms import placeholders_repeat, transform_placeholders, validate_transform

__all__ = [
    "DEFAULT_REGEX_TIMEOUT",
    "EXTENSIONS",
    "FieldSpec",
    "ResponseTemplate",
    "load_template",
]

#: Seconds one regex search may take before the template is declared pathological.
DEFAULT_REGEX_TIMEOUT = 1.0

#: How many characters of already-routed text the parser keeps for lookbehind assertions.
LOOKBEHIND_WINDOW = 1024

_TOP_KEYS = frozenset({"version", "extensions", "defaults", "fields", "start_anchor", "start_anchor_pattern"})

#: The template-language extensions this library implements (docs/extensions.md): name -> what it adds.
EXTENSIONS: Mapping[str, str] = MappingProxyType(
    {
        "python-calls": "the 'python-calls' content parser: tool calls written as Python calls (E1)",
        "item-transform": "'transform_each' over single-key objects, binding {key} and {value} (E2)",
        "into": "the field key 'into': a field's values accumulate under another output key (E8)",
        "xml-values": "'xml-inline' arguments type_group/type_parsers, unescape, cdata and nested: typed XML values (E4)",
        "json-envelope": "the field key 'route': one JSON object's top-level keys go to several output keys (E7)",
        "json-value-end": "the field key 'close_json': a region ends exactly where its JSON value ends (E3)",
        "optional-placeholders": 'transform placeholders written "{path?}": omitted (null in a list) when the path does not resolve',
        "interleaved": "the field key 'within': a field may open inside another field's region, which resumes after it (E5)",
    }
)
#: Content parsers that belong to an extension: parser name -> extension to declare.
_EXTENSION_PARSERS = {"python-calls": "python-calls"}
#: Field keys that belong to an extension: key -> extension to declare.
_EXTENSION_FIELD_KEYS = {
    "into": "into",
    "route": "json-envelope",
    "close_json": "json-value-end",
    "within": "interleaved",
}
#: Variables an item transform binds for each single-key object.
ITEM_VARIABLES = frozenset({"key", "value"})
_FIELD_KEYS = frozenset(
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
        "into",
        "route",
        "close_json",
        "within",
    }
)
#: ``json-envelope``: the route key that takes a value which is not a JSON object.
ROUTE_OTHER = "*"
_ROUTE_ADD = ("item", "items")


@dataclass(frozen=True)
class Route:
    """One entry of a field's ``route`` (extension ``json-envelope``)."""

    #: The output key the value goes to.
    to: str
    #: None: the value is the key's value; ``"item"``: appended to a list; ``"items"``: a list, extended.
    add: str | None
    transform: Any = None
    has_transform: bool = False


@dataclass(frozen=True, eq=False)
class FieldSpec:
    """One compiled field of a template."""

    name: str
    open: Delimiter | None
    close: Delimiter | None
    repeats: bool
    join: str | None
    optional: bool
    parser: ContentParser
    content_args: Mapping[str, Any]
    transform: Any
    transform_each: bool
    has_transform: bool
    #: Whether this is the implicit field (no open delimiter).
    implicit: bool
    #: The ``dirty`` flag of this field's ``region_chunk`` events: true unless every chunk is part of the
    #: final value (up to stripping), as it is for ``text``, ``int``, ``float`` and ``bool``.
    dirty: bool
    #: Whether the transform substitutes some variable twice (its values must then be copied).
    transform_copies: bool
    #: ``into`` extension: the output key this field's values accumulate under (None: its own name).
    into: str | None = None
    #: ``item-transform`` extension: ``transform_each`` binds ``{key}``/``{value}`` of single-key objects.
    item_transform: bool = False
    #: ``json-envelope`` extension: top-level JSON key (or ``"*"``) -> where its value goes.
    route: Mapping[str, Route] | None = None
    #: ``json-value-end`` extension: the region ends where its JSON value ends (no close delimiter).
    close_json: bool = False
    #: ``interleaved`` extension: the fields inside whose open region this field may also open.
    within: tuple[str, ...] = ()
    #: ``into`` the implicit field: this field's text is one more segment of the implicit field (a
    #: wrapper that the implicit text may or may not be written in).
    into_implicit: bool = False

    @property
    def output_key(self) -> str:
        """The key of the output message this field's values go to."""
        return self.into if self.into is not None else self.name


@dataclass(frozen=True, eq=False)
class ResponseTemplate:
    """A validated, compiled response template: immutable, reusable and thread-safe.

    Build one with :func:`load_template`. ``source`` is a private copy of the template data.
    """

    source: Mapping[str, Any]
    fields: tuple[FieldSpec, ...]
    by_name: Mapping[str, FieldSpec]
    implicit: FieldSpec | None
    defaults_json: str
    defaults_keys: frozenset[str]
    start_anchor: Delimiter
    #: The extensions the template declares (``"extensions"``), in declaration order.
    extensions: tuple[str, ...]
    #: ``json-envelope``: output keys that routes fill as lists (``add``), and as single values.
    route_lists: frozenset[str]
    route_values: frozenset[str]
    regex_timeout: float
    lookbehind_window: int
    # Watch sets: what the scanner looks for outside explicit regions, and inside each explicit region.
    outside: WatchSet
    inside: Mapping[str, WatchSet] = field(default_factory=dict)

    def defaults(self) -> dict[str, Any]:
        """A fresh copy of the template's ``defaults``."""
        return json.loads(self.defaults_json)

    def to_dict(self) -> dict[str, Any]:
        """The template as plain JSON data (a copy)."""
        return copy.deepcopy(dict(self.source))

    def cut_prefix(self, prefix: str) -> tuple[str, bool]:
        """The part of ``prefix`` after the last start anchor, and whether an anchor was found."""
        anchor = self.start_anchor
        last_start, last_end = -1, -1
        if anchor.literals is not None:
            for lit in anchor.literals:
                at = prefix.rfind(lit)
                if at < 0:
                    continue
                if at > last_start or (at == last_start and at + len(lit) > last_end):
                    last_start, last_end = at, at + len(lit)
        else:
            try:
                for m in anchor.pattern.finditer(prefix, overlapped=True, timeout=self.regex_timeout):
                    last_end = m.end()
            except TimeoutError:
                raise anchor._timeout_error(self.regex_timeout) from None
        if last_end < 0:
            return prefix, False
        return prefix[last_end:], True

    def __repr__(self) -> str:
        return f"<ResponseTemplate fields={[f.name for f in self.fields]}>"


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
        return Delimiter.literal(spec[literal_key], field=name, kind=kind, key=literal_key)
    if pattern_key in spec:
        return Delimiter.regex(spec[pattern_key], field=name, kind=kind, key=pattern_key)
    return None


def _extensions(spec: Mapping[str, Any]) -> tuple[str, ...]:
    raw = spec.get("extensions", [])
    if not isinstance(raw, list) or not all(isinstance(e, str) for e in raw):
        raise TemplateError(
            f"must be a list of extension names, got {raw!r}; known: {sorted(EXTENSIONS)}", key="extensions"
        )
    for name in raw:
        if name not in EXTENSIONS:
            raise TemplateError(
                f"unknown extension {name!r}; this library implements {sorted(EXTENSIONS)}", key="extensions"
            )
    duplicates = sorted({e for e in raw if raw.count(e) > 1})
    if duplicates:
        raise TemplateError(f"extension(s) {duplicates} declared more than once", key="extensions")
    return tuple(raw)


def _undeclared(extension: str, what: str, field: str, key: str) -> TemplateError:
    return TemplateError(
        f"{what} belongs to the extension {extension!r}; declare it at the top level: "
        f'"extensions": ["{extension}"] (see docs/extensions.md)',
        field=field,
        key=key,
    )


def _xml_values_arg(content: Any, args: Any, depth: int = 0) -> str | None:
    """The first ``xml-values`` argument used by an ``xml-inline`` parser in these args (or nested value parsers)."""
    if not isinstance(args, Mapping) or depth > 16:
        return None
    if content == "xml-inline":
        for arg in XML_VALUES_ARGS:
            if arg in args:
                return arg
    inner = args.get("value_parser")
    if isinstance(inner, Mapping):
        return _xml_values_arg(inner.get("name", "text"), inner.get("args"), depth + 1)
    return None


def _compile_field(name: Any, spec: Any, extensions: tuple[str, ...] = ()) -> FieldSpec:
    if not isinstance(name, str) or not name:
        raise TemplateError(f"field names must be non-empty strings, got {name!r}", key="fields")
    if not isinstance(spec, Mapping):
        raise TemplateError(f"must be an object, got {type(spec).__name__}", field=name)
    unknown = sorted(set(spec) - _FIELD_KEYS)
    if unknown:
        raise TemplateError(
            f"unknown key(s) {unknown}; allowed: {sorted(_FIELD_KEYS)}", field=name, key=unknown[0]
        )
    open_d = _delimiter(spec, name, "open")
    close_d = _delimiter(spec, name, "close")
    repeats = _bool_key(spec, "repeats", False, name)
    optional = _bool_key(spec, "optional", True, name)
    transform_each = _bool_key(spec, "transform_each", False, name)
    join = spec.get("join")
    if join is not None:
        if not isinstance(join, str):
            raise TemplateError(f"must be a string, got {type(join).__name__}", field=name, key="join")
        if not repeats:
            raise TemplateError("'join' needs 'repeats': true", field=name, key="join")
    for key, extension in _EXTENSION_FIELD_KEYS.items():
        if key in spec and extension not in extensions:
            raise _undeclared(extension, f"the key {key!r}", name, key)
    content = spec.get("content", "text")
    if not isinstance(content, str):
        raise TemplateError(f"must be a parser name, got {content!r}", field=name, key="content")
    needs = _EXTENSION_PARSERS.get(content)
    if needs is not None and needs not in extensions:
        raise _undeclared(needs, f"the content parser {content!r}", name, "content")
    parser = get_content_parser(content, name)
    if "xml-values" not in extensions:
        used_arg = _xml_values_arg(content, spec.get("content_args"))
        if used_arg is not None:
            raise _undeclared("xml-values", f"the xml-inline argument {used_arg!r}", name, "content_args")
    content_args = parser.validate(spec.get("content_args", {}), name)
    has_transform = "transform" in spec
    transform = spec.get("transform")
    if transform_each and not has_transform:
        raise TemplateError("'transform_each' needs a 'transform'", field=name, key="transform_each")
    groups = (open_d.group_names if open_d else frozenset()) | (
        close_d.group_names if close_d else frozenset()
    )
    item_transform = False
    if has_transform:
        validate_transform(transform, name, optional="optional-placeholders" in extensions)
        used = transform_placeholders(transform)
        if transform_each and "item-transform" in extensions and used & ITEM_VARIABLES:
            # An item transform: each element is a single-key object bound to {key} and {value}.
            item_transform = True
            available = ITEM_VARIABLES | groups
            unknown_vars = sorted(used - available)
            if unknown_vars:
                raise TemplateError(
                    f"placeholder(s) {unknown_vars} can never resolve: an item transform (extension "
                    f"'item-transform') binds only {{key}}, {{value}} and the pattern captures "
                    f"{sorted(groups)}",
                    field=name,
                    key="transform",
                )
        if not transform_each:
            available = {"content"} | groups
            unknown_vars = sorted(transform_placeholders(transform) - available)
            if unknown_vars:
                raise TemplateError(
                    f"placeholder(s) {unknown_vars} can never resolve; available variables: {sorted(available)}",
                    field=name,
                    key="transform",
                )
    elif groups:
        raise TemplateError(
            f"named group(s) {sorted(groups)} would be lost: captures reach the output only through a "
            "'transform'; add one that uses them or make the groups unnamed",
            field=name,
            key="open_pattern" if open_d and open_d.group_names else "close_pattern",
        )
    if open_d is not None and open_d.matches_empty_anywhere():
        raise TemplateError(
            "the open pattern matches the empty string in ordinary text, so the region would open "
            "almost anywhere; make it consume text (a lookahead, ^ or $ alone is fine)",
            field=name,
            key="open_pattern",
        )
    if open_d is None and close_d is not None and close_d.matches_empty_anywhere():
        raise TemplateError(
            "the close pattern of the implicit field matches the empty string in ordinary text, so it "
            "would end the region at almost every position",
            field=name,
            key="close_pattern",
        )
    close_json = _bool_key(spec, "close_json", False, name)
    if close_json:
        if open_d is None:
            raise TemplateError(
                "the implicit field has no region of its own to end; 'close_json' needs 'open' or "
                "'open_pattern'",
                field=name,
                key="close_json",
            )
        if close_d is not None:
            raise TemplateError(
                "'close_json' ends the region where its JSON value ends; it cannot be combined with "
                "'close' or 'close_pattern'",
                field=name,
                key="close_json",
            )
    into = _into(spec, name, repeats, optional, open_d is None)
    within = _within(spec, name, open_d is None)
    route = _route(spec, name, optional, has_transform, extensions)
    return FieldSpec(
        name=name,
        open=open_d,
        close=close_d,
        repeats=repeats,
        join=join,
        optional=optional,
        parser=parser,
        content_args=content_args,
        transform=copy.deepcopy(transform),
        transform_each=transform_each,
        has_transform=has_transform,
        implicit=open_d is None,
        dirty=not parser.streamable,
        transform_copies=has_transform and placeholders_repeat(transform),
        into=into,
        item_transform=item_transform,
        route=route,
        close_json=close_json,
        within=within,
    )


def _within(spec: Mapping[str, Any], name: str, implicit: bool) -> tuple[str, ...]:
    """Field-level checks of the ``interleaved`` extension (the outer fields are checked with all fields)."""
    if "within" not in spec:
        return ()
    raw = spec["within"]
    if isinstance(raw, str):
        raw = [raw]
    if not isinstance(raw, list) or not raw or not all(isinstance(n, str) and n for n in raw):
        raise TemplateError(
            f"must be a field name or a non-empty list of field names, got {spec['within']!r}",
            field=name,
            key="within",
        )
    if len(set(raw)) != len(raw):
        raise TemplateError(f"lists a field more than once: {raw!r}", field=name, key="within")
    if name in raw:
        raise TemplateError("a field cannot open inside itself", field=name, key="within")
    if implicit:
        raise TemplateError(
            "the implicit field has no open delimiter, so it cannot open inside another region",
            field=name,
            key="within",
        )
    return tuple(raw)


def _check_within(fields: tuple[FieldSpec, ...]) -> None:
    """Each outer field of ``within`` is an explicit field that does not end with its JSON value and does
    not open ``within`` another field itself (one level of nesting)."""
    by_name = {f.name: f for f in fields}
    for f in fields:
        for outer_name in f.within:
            outer = by_name.get(outer_name)
            why = (
                f"names {outer_name!r}, which is not a field; fields: {sorted(by_name)}"
                if outer is None
                else f"{outer_name!r} is the implicit field: every field already opens wherever it is (its "
                "text is segments between other regions); 'within' names explicit fields"
                if outer.implicit
                else f"{outer_name!r} ends where its JSON value ends ('close_json'); nothing can open inside it"
                if outer.close_json
                else f"{outer_name!r} itself opens 'within' {list(outer.within)!r}; regions nest one level deep"
                if outer.within
                else None
            )
            if why is not None:
                raise TemplateError(why, field=f.name, key="within")


def _into(spec: Mapping[str, Any], name: str, repeats: bool, optional: bool, implicit: bool) -> str | None:
    """Field-level checks of the ``into`` extension (the target is checked with all the fields)."""
    if "into" not in spec:
        return None
    target = spec["into"]
    if not isinstance(target, str) or not target:
        raise TemplateError(f"must be a non-empty output key, got {target!r}", field=name, key="into")
    if target == name:
        raise TemplateError("a field cannot feed 'into' itself", field=name, key="into")
    if implicit:
        raise TemplateError(
            "the implicit field cannot use 'into' (its text is parsed once, at the end)",
            field=name,
            key="into",
        )
    if "join" in spec:
        raise TemplateError("'into' cannot be combined with 'join'", field=name, key="into")
    if not optional:
        raise TemplateError(
            "'optional': false cannot be combined with 'into' (the field has no output key of its own)",
            field=name,
            key="optional",
        )
    return target


def _route(
    spec: Mapping[str, Any], name: str, optional: bool, has_transform: bool, extensions: tuple[str, ...] = ()
) -> Mapping[str, Route] | None:
    """Field-level checks of the ``json-envelope`` extension (targets are checked with all the fields)."""
    if "route" not in spec:
        return None
    raw = spec["route"]
    if not isinstance(raw, Mapping) or not raw:
        raise TemplateError(
            f'must be a non-empty object: JSON key -> output key, e.g. {{"response": "content"}}; got {raw!r}',
            field=name,
            key="route",
        )
    for other in ("into", "join", "transform"):
        if other in spec:
            raise TemplateError(
                f"'route' cannot be combined with {other!r}"
                + (" (give each route entry its own 'transform')" if other == "transform" else ""),
                field=name,
                key="route",
            )
    if not optional:
        raise TemplateError(
            "'optional': false cannot be combined with 'route' (the field has no output key of its own)",
            field=name,
            key="optional",
        )
    out: dict[str, Route] = {}
    for json_key, entry in raw.items():
        where = f"route entry {json_key!r}"
        if isinstance(entry, str):
            entry = {"to": entry}
        if not isinstance(entry, Mapping) or set(entry) - {"to", "add", "transform"}:
            raise TemplateError(
                f'{where} must be an output key or an object {{"to": ..., "add": "item"|"items", '
                f'"transform": ...}}, got {entry!r}',
                field=name,
                key="route",
            )
        to, add = entry.get("to"), entry.get("add")
        if not isinstance(to, str) or not to:
            raise TemplateError(
                f"{where}: 'to' must be a non-empty output key, got {to!r}", field=name, key="route"
            )
        if add is not None and add not in _ROUTE_ADD:
            raise TemplateError(
                f"{where}: 'add' must be 'item' or 'items', got {add!r}", field=name, key="route"
            )
        if "transform" in entry:
            if add is None:
                raise TemplateError(
                    f"{where}: a 'transform' applies to each added item, so it needs 'add'",
                    field=name,
                    key="route",
                )
            validate_transform(
                entry["transform"], name, optional="optional-placeholders" in extensions, error_key="route"
            )
        out[json_key] = Route(to, add, copy.deepcopy(entry.get("transform")), "transform" in entry)
    return MappingProxyType(out)


def _check_routes(
    fields: tuple[FieldSpec, ...], defaults: Mapping[str, Any]
) -> tuple[frozenset[str], frozenset[str]]:
    names_ = {f.name for f in fields}
    lists: dict[str, str] = {}
    values: dict[str, str] = {}
    for f in fields:
        for r in (f.route or {}).values():
            if r.to in names_ or r.to in defaults:
                raise TemplateError(
                    f"route output key {r.to!r} is a field or a 'defaults' key; a route fills output keys that "
                    "only routes use",
                    field=f.name,
                    key="route",
                )
            (lists if r.add else values)[r.to] = f.name
    both = sorted(set(lists) & set(values))
    into_targets = {f.into for f in fields if f.into is not None}
    both += sorted(set(values) & into_targets)
    if both:
        raise TemplateError(
            f"output key {both[0]!r} is filled both as a list ('add' or 'into') and as a single value",
            field=lists.get(both[0]) or values.get(both[0]),
            key="route",
        )
    return frozenset(lists), frozenset(values)


#: Keys a field feeding ``into`` the implicit field may not have: its text is parsed with the implicit field.
_WRAPPER_FORBIDS = (
    "content",
    "content_args",
    "transform",
    "transform_each",
    "repeats",
    "route",
    "close_json",
)


def _check_into(
    fields: tuple[FieldSpec, ...], defaults: Mapping[str, Any], raw_fields: Mapping[str, Any]
) -> tuple[FieldSpec, ...]:
    """Check every ``into`` target; mark the fields that feed the implicit field (its wrappers)."""
    by_name = {f.name: f for f in fields}
    out = []
    for f in fields:
        target = by_name.get(f.into) if f.into is not None else None
        if target is not None and target.implicit:
            for key in _WRAPPER_FORBIDS:
                if key in raw_fields[f.name]:
                    raise TemplateError(
                        f"a field feeding 'into' the implicit field {f.into!r} adds its text as one more "
                        f"segment of it, parsed with it; it cannot have {key!r}",
                        field=f.name,
                        key=key,
                    )
            f = replace(f, into_implicit=True, dirty=target.dirty, parser=target.parser)
        out.append(f)
    for f in out:
        if f.into is None or f.into_implicit:
            continue
        target = by_name.get(f.into)
        if target is None:
            if f.into in defaults:
                raise TemplateError(
                    f"output key {f.into!r} is a 'defaults' key; 'into' may name a field with 'repeats' or a "
                    "key that no field and no default uses",
                    field=f.name,
                    key="into",
                )
            continue
        if target.into is not None:
            raise TemplateError(
                f"field {f.into!r} itself feeds 'into' {target.into!r}; name the final output key",
                field=f.name,
                key="into",
            )
        if not target.repeats or target.join is not None:
            raise TemplateError(
                f"the target field {f.into!r} must have 'repeats': true and no 'join' (its value is the list "
                "the fields feeding it add to)",
                field=f.name,
                key="into",
            )
    return tuple(out)


def _compile(spec: Mapping[str, Any], regex_timeout: float) -> ResponseTemplate:
    if not isinstance(spec, Mapping):
        raise TemplateError(f"a response template must be an object, got {type(spec).__name__}")
    unknown = sorted(str(k) for k in set(spec) - _TOP_KEYS)
    if unknown:
        raise TemplateError(
            f"unknown top-level key(s) {unknown}; allowed: {sorted(_TOP_KEYS)}", key=unknown[0]
        )
    version = spec.get("version", 1)
    if type(version) is not int or version != 1:
        raise TemplateError(f"unsupported version {version!r}; this library reads version 1", key="version")
    defaults = spec.get("defaults", {})
    if not isinstance(defaults, Mapping):
        raise TemplateError(f"must be an object, got {type(defaults).__name__}", key="defaults")
    try:
        defaults_json = json.dumps(defaults, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise TemplateError(f"must be JSON data: {exc}", key="defaults") from None
    raw_fields = spec.get("fields")
    if not isinstance(raw_fields, Mapping) or not raw_fields:
        raise TemplateError("must be a non-empty object of field specs", key="fields")
    extensions = _extensions(spec)
    fields = tuple(_compile_field(name, fspec, extensions) for name, fspec in raw_fields.items())
    fields = _check_into(fields, defaults, raw_fields)
    _check_within(fields)
    route_lists, route_values = _check_routes(fields, defaults)
    implicit = [f for f in fields if f.implicit]
    if len(implicit) > 1:
        raise TemplateError(
            f"at most one field may lack 'open'/'open_pattern' (the implicit field); found {[f.name for f in implicit]}",
            key="fields",
        )
    if "start_anchor" in spec and "start_anchor_pattern" in spec:
        raise TemplateError(
            "give either 'start_anchor' or 'start_anchor_pattern', not both", key="start_anchor"
        )
    if "start_anchor" in spec:
        anchor = Delimiter.literal(spec["start_anchor"], field="", kind="anchor", key="start_anchor")
    elif "start_anchor_pattern" in spec:
        anchor = Delimiter.regex(
            spec["start_anchor_pattern"], field="", kind="anchor", key="start_anchor_pattern"
        )
    else:
        raise TemplateError(
            "one of 'start_anchor' or 'start_anchor_pattern' is required: it marks where the assistant "
            "message starts inside the prompt (e.g. '<|im_start|>assistant\\n')",
            key="start_anchor",
        )
    if (
        not isinstance(regex_timeout, (int, float))
        or isinstance(regex_timeout, bool)
        or not regex_timeout > 0
    ):
        raise TemplateError(f"regex_timeout must be a positive number of seconds, got {regex_timeout!r}")
    implicit_field = implicit[0] if implicit else None
    outside = [f.open for f in fields if f.open is not None]
    if implicit_field is not None and implicit_field.close is not None:
        outside.append(implicit_field.close)
    inside = {
        f.name: WatchSet.build(
            ([f.close] if f.close is not None else [])
            + [g.open for g in fields if f.name in g.within and g.open is not None]
        )
        for f in fields
        if f.open is not None
    }
    lookbehind = any(d.lookbehind for f in fields for d in (f.open, f.close) if d is not None)
    return ResponseTemplate(
        source=MappingProxyType(copy.deepcopy(dict(spec))),
        fields=fields,
        by_name=MappingProxyType({f.name: f for f in fields}),
        implicit=implicit_field,
        defaults_json=defaults_json,
        defaults_keys=frozenset(defaults),
        start_anchor=anchor,
        extensions=extensions,
        route_lists=route_lists,
        route_values=route_values,
        regex_timeout=float(regex_timeout),
        lookbehind_window=LOOKBEHIND_WINDOW if lookbehind else 1,
        outside=WatchSet.build(outside),
        inside=MappingProxyType(inside),
    )


@lru_cache(maxsize=128)
def _compile_cached(key: str, regex_timeout: float) -> ResponseTemplate:
    return _compile(json.loads(key), regex_timeout)


def load_template(
    template: Mapping[str, Any] | ResponseTemplate | str, *, regex_timeout: float = DEFAULT_REGEX_TIMEOUT
) -> ResponseTemplate:
    """Validate and compile a response template.

    ``template`` is the template as a dict, as a JSON string, or an already compiled
    :class:`ResponseTemplate` (returned unchanged). Compiled templates are cached by content, so
    passing the same dict again is cheap. ``regex_timeout`` bounds each regex search (seconds).

    Raises :class:`~response_templates.TemplateError` naming the field and key at fault.
    """
    if isinstance(template, ResponseTemplate):
        return template
    if isinstance(template, str):
        try:
            template = json.loads(template)
        except json.JSONDecodeError as exc:
            raise TemplateError(f"not valid JSON: {exc}") from None
    if not isinstance(template, Mapping):
        raise TemplateError(f"a response template must be an object, got {type(template).__name__}")
    try:
        key = json.dumps(template, sort_keys=False, allow_nan=False)
    except (TypeError, ValueError):
        return _compile(template, regex_timeout)  # not JSON data: _compile reports what is wrong
    except RecursionError:
        raise TemplateError("the template is nested too deeply") from None
    return _compile_cached(key, regex_timeout)
