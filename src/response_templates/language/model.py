"""Internal: what a compiled template is: :class:`FieldSpec`, :class:`ResponseTemplate` and the language's constants.

Everything here is data, built by :mod:`.loader` and read by the rest of the library. The attributes that
exist only for a template-language extension are kept apart, in :class:`FieldExtensionData` and
:class:`TemplateExtensionData`: each of their attributes is set by exactly one module of
:mod:`response_templates.language.extensions` (the registry's ``field_attributes`` says which), and is
also readable directly on the field or template (``field.into``, ``template.route_lists``), as copies
made when the field or template is built.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from dataclasses import fields as dataclass_fields
from typing import Any

from ..content import ContentParser
from ..matching import Delimiter, RegexMeter, WatchSet
from ..transforms import compile_transform

__all__ = [
    "DEFAULT_REGEX_TIMEOUT",
    "LOOKBEHIND_WINDOW",
    "NO_FIELD_EXTENSIONS",
    "NO_TEMPLATE_EXTENSIONS",
    "FieldExtensionData",
    "FieldSpec",
    "ResponseTemplate",
    "Route",
    "TemplateExtensionData",
]

#: Seconds one regex search may take before the template is declared pathological.
DEFAULT_REGEX_TIMEOUT = 1.0

#: How many characters of already-routed text the parser keeps for lookbehind assertions.
LOOKBEHIND_WINDOW = 1024


# ---------------------------------------------------------------------------------- extension data
# Compiled data that only an extension sets. The rules that produce it live in language/extensions/.


@dataclass(frozen=True)
class Route:
    """One entry of a field's ``route`` (extension ``json-envelope``, language/extensions/json_envelope.py)."""

    #: The output key the value goes to.
    to: str
    #: None: the value is the key's value; ``"item"``: appended to a list; ``"items"``: a list, extended.
    add: str | None
    transform: Any = None
    has_transform: bool = False


@dataclass(frozen=True)
class FieldExtensionData:
    """A field's extension attributes; each one is set by the extension module named beside it."""

    #: ``into`` (extensions/into.py): the output key this field's values accumulate under (None: its own).
    into: str | None = None
    #: ``into`` (extensions/into.py): this field feeds the implicit field, its text being one more segment
    #: of it (a wrapper that the implicit text may or may not be written in).
    into_implicit: bool = False
    #: ``item-transform`` (extensions/item_transform.py): ``transform_each`` binds ``{key}``/``{value}``.
    item_transform: bool = False
    #: ``json-envelope`` (extensions/json_envelope.py): top-level JSON key (or ``"*"``) -> where it goes.
    route: Mapping[str, Route] | None = None
    #: ``json-value-end`` (extensions/json_value_end.py): the region ends where its JSON value ends.
    close_json: bool = False
    #: ``interleaved`` (extensions/interleaved.py): the fields inside whose open region this one may open.
    within: tuple[str, ...] = ()


@dataclass(frozen=True)
class TemplateExtensionData:
    """A template's extension attributes; each one is set by the extension module named beside it."""

    #: ``json-envelope`` (extensions/json_envelope.py): output keys that routes fill as lists (``add``).
    route_lists: frozenset[str] = frozenset()
    #: ``json-envelope``: output keys that routes fill as single values.
    route_values: frozenset[str] = frozenset()


NO_FIELD_EXTENSIONS = FieldExtensionData()
NO_TEMPLATE_EXTENSIONS = TemplateExtensionData()


# ----------------------------------------------------------------------------------------- fields


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
    #: How the request's tools type the tool-call arguments in this field's values (docs/spec.md, 8):
    #: ``"all"``: every string argument whose schema names a type it can be cast to; ``"non-string"``:
    #: the same, except arguments whose schema admits a string (the content parser's syntax already tells
    #: strings apart: ``json``, ``python-call-list``); ``"none"``: nothing (``content_args`` has
    #: ``value_parser_by``: the output itself says how each value is read).
    argument_typing: str = "all"
    #: The attributes that only extensions set (see :class:`FieldExtensionData`).
    extension_data: FieldExtensionData = NO_FIELD_EXTENSIONS

    # The attributes of ``extension_data``, also readable on the field itself (``field.into``). They are
    # copied from it when the field is built, never set otherwise: plain attributes, because the parser
    # reads some of them at every region.
    #: ``into``: the output key this field's values accumulate under (None: its own name).
    into: str | None = field(init=False, repr=False)
    #: ``into``: this field is a wrapper whose text is one more segment of the implicit field.
    into_implicit: bool = field(init=False, repr=False)
    #: ``item-transform``: ``transform_each`` binds ``{key}``/``{value}`` of single-key objects.
    item_transform: bool = field(init=False, repr=False)
    #: ``json-envelope``: top-level JSON key (or ``"*"``) -> where its value goes.
    route: Mapping[str, Route] | None = field(init=False, repr=False)
    #: ``json-value-end``: the region ends where its JSON value ends (no close delimiter).
    close_json: bool = field(init=False, repr=False)
    #: ``interleaved``: the fields inside whose open region this field may also open.
    within: tuple[str, ...] = field(init=False, repr=False)

    #: The transform compiled (:func:`~response_templates.transforms.compile_transform`), or None.
    build_transform: Callable[[Mapping[str, Any]], Any] | None = field(
        init=False, repr=False, metadata={"derived": True}
    )

    def __post_init__(self) -> None:
        data = self.extension_data
        for f in dataclass_fields(data):
            object.__setattr__(self, f.name, getattr(data, f.name))
        build = None
        if self.has_transform and not self.transform_each:
            build = compile_transform(self.transform, copy_values=self.transform_copies)
        object.__setattr__(self, "build_transform", build)

    @property
    def output_key(self) -> str:
        """The key of the output message this field's values go to."""
        return self.into if self.into is not None else self.name


# --------------------------------------------------------------------------------------- templates


def _last_match_end(text: str, pos: int, *, pattern: Any, timeout: float) -> int:
    """Where the last (overlapped) match of ``pattern`` in ``text[pos:]`` ends, or -1: one regex scan,
    with one timeout for all its matches (the iterator's timeout is a deadline for the whole scan)."""
    last_end = -1
    for m in pattern.finditer(text, pos, overlapped=True, timeout=timeout):
        last_end = m.end()
    return last_end


@dataclass(frozen=True, eq=False)
class ResponseTemplate:
    """A validated, compiled response template: immutable, reusable and thread-safe.

    Build one with :func:`~response_templates.language.load_template`. ``source`` is a private copy of the
    template data. ``family`` names the built-in library family the template was taken from (``None`` for a
    template loaded from your own data): ``rt.templates.get("qwq").family == "qwen3"``, also for a family
    that shares another's format (qwen3 uses hermes's template data).
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
    regex_timeout: float
    lookbehind_window: int
    # Watch sets: what the scanner looks for outside explicit regions, and inside each explicit region.
    outside: WatchSet
    inside: Mapping[str, WatchSet] = field(default_factory=dict)
    #: The attributes that only extensions set (see :class:`TemplateExtensionData`).
    extension_data: TemplateExtensionData = NO_TEMPLATE_EXTENSIONS
    #: The library family the template comes from, or ``None`` (set by the library, not by the loader).
    family: str | None = None
    # Copies of ``extension_data``'s attributes, made when the template is built (as for FieldSpec).
    #: ``json-envelope``: output keys that routes fill as lists (``add``).
    route_lists: frozenset[str] = field(init=False, repr=False)
    #: ``json-envelope``: output keys that routes fill as single values.
    route_values: frozenset[str] = field(init=False, repr=False)
    #: ``defaults`` when its values are all scalars (a shallow copy is then a fresh copy), else None.
    flat_defaults: Mapping[str, Any] | None = field(init=False, repr=False, metadata={"derived": True})

    def __post_init__(self) -> None:
        data = self.extension_data
        for f in dataclass_fields(data):
            object.__setattr__(self, f.name, getattr(data, f.name))
        defaults = json.loads(self.defaults_json)
        flat = all(v is None or isinstance(v, (str, int, float)) for v in defaults.values())
        object.__setattr__(self, "flat_defaults", defaults if flat else None)

    def defaults(self) -> dict[str, Any]:
        """A fresh copy of the template's ``defaults``."""
        flat = self.flat_defaults
        if flat is not None:
            return dict(flat)
        value: dict[str, Any] = json.loads(self.defaults_json)
        return value

    def to_dict(self) -> dict[str, Any]:
        """The template as plain JSON data (a copy)."""
        return copy.deepcopy(dict(self.source))

    def cut_prefix(self, prefix: str, meter: RegexMeter | None = None) -> tuple[str, bool]:
        """The part of ``prefix`` after the last start anchor, and whether an anchor was found.

        A ``start_anchor_pattern`` search is charged to ``meter`` (the parser's regex budget; without one,
        only ``regex_timeout`` bounds it).
        """
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
            if meter is None:
                meter = RegexMeter.unlimited(self.regex_timeout)
            meter.read_prompt(len(prefix))  # the constructor's call: its allowance grows with the prompt
            try:
                last_end = meter.run(_last_match_end, prefix, 0, pattern=anchor.pattern)
            except TimeoutError:
                raise anchor._timeout_error(meter) from None
        if last_end < 0:
            return prefix, False
        return prefix[last_end:], True

    def __repr__(self) -> str:
        family = f" family={self.family!r}" if self.family is not None else ""
        return f"<ResponseTemplate{family} fields={[f.name for f in self.fields]}>"
