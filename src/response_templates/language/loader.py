"""Internal: loading a response template: the top-level keys, compilation of the whole template, and the cache.

A response template is plain JSON data. :func:`load_template` checks every key, with errors that name the
field and the key, and compiles it into an immutable :class:`~.model.ResponseTemplate` that can be shared
between threads and reused for any number of parses. The rules of each field are in :mod:`.fields`, those
of each extension in its module of :mod:`.extensions`.

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
import dataclasses
import json
import re
from collections.abc import Callable, Mapping
from functools import lru_cache
from types import MappingProxyType
from typing import Any

from ..errors import TemplateError
from ..matching import Delimiter, WatchSet
from .extension import TemplateDraft
from .fields import compile_field
from .limits import (
    check_delimiter_value,
    check_field_count,
    check_template_data,
    loads_template_json,
)
from .model import (
    DEFAULT_REGEX_TIMEOUT,
    LOOKBEHIND_WINDOW,
    NO_TEMPLATE_EXTENSIONS,
    FieldSpec,
    ResponseTemplate,
)
from .registry import EXTENSIONS, REGISTRY

__all__ = ["TOP_KEYS", "load_template"]

#: The top-level keys of a template.
TOP_KEYS = frozenset({"version", "extensions", "defaults", "fields", "start_anchor", "start_anchor_pattern"})


def _extensions(spec: Mapping[str, Any]) -> tuple[str, ...]:
    """``extensions``: a list of names this library implements, each given once."""
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


def _defaults(spec: Mapping[str, Any]) -> tuple[Mapping[str, Any], str]:
    """``defaults``: an object of JSON data; returned with its JSON text."""
    defaults = spec.get("defaults", {})
    if not isinstance(defaults, Mapping):
        raise TemplateError(f"must be an object, got {type(defaults).__name__}", key="defaults")
    try:
        return defaults, json.dumps(defaults, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise TemplateError(f"must be JSON data: {exc}", key="defaults") from None


def _start_anchor(spec: Mapping[str, Any]) -> Delimiter:
    """``start_anchor`` or ``start_anchor_pattern``: exactly one of them."""
    if "start_anchor" in spec and "start_anchor_pattern" in spec:
        raise TemplateError(
            "give either 'start_anchor' or 'start_anchor_pattern', not both", key="start_anchor"
        )
    if "start_anchor" in spec:
        check_delimiter_value(spec["start_anchor"], field=None, key="start_anchor", pattern=False)
        return Delimiter.literal(spec["start_anchor"], field="", kind="anchor", key="start_anchor")
    if "start_anchor_pattern" in spec:
        check_delimiter_value(
            spec["start_anchor_pattern"], field=None, key="start_anchor_pattern", pattern=True
        )
        return Delimiter.regex(
            spec["start_anchor_pattern"], field="", kind="anchor", key="start_anchor_pattern"
        )
    raise TemplateError(
        "one of 'start_anchor' or 'start_anchor_pattern' is required: it marks where the assistant "
        "message starts inside the prompt (e.g. '<|im_start|>assistant\\n')",
        key="start_anchor",
    )


def _fields(
    raw_fields: Mapping[str, Any], defaults: Mapping[str, Any], declared: tuple[str, ...]
) -> TemplateDraft:
    """Every field compiled, then the extensions' checks across fields (in registry order)."""
    fields = tuple(compile_field(name, fspec, declared) for name, fspec in raw_fields.items())
    draft = TemplateDraft(
        fields=fields, defaults=defaults, raw_fields=raw_fields, data=NO_TEMPLATE_EXTENSIONS
    )
    for ext in REGISTRY:
        if ext.compile_template is not None:
            draft = ext.compile_template(draft)
    implicit = [f for f in draft.fields if f.implicit]
    if len(implicit) > 1:
        raise TemplateError(
            f"at most one field may lack 'open'/'open_pattern' (the implicit field); found {[f.name for f in implicit]}",
            key="fields",
        )
    return draft


def _watch_sets(
    fields: tuple[FieldSpec, ...], implicit: FieldSpec | None
) -> tuple[WatchSet, dict[str, WatchSet]]:
    """What the scanner watches outside explicit regions, and inside each explicit region."""
    outside = [f.open for f in fields if f.open is not None]
    if implicit is not None and implicit.close is not None:
        outside.append(implicit.close)
    inside: dict[str, WatchSet] = {}
    for f in fields:
        if f.open is None:
            continue
        watched = [f.close] if f.close is not None else []
        for ext in REGISTRY:
            if ext.watch_inside is not None:
                watched += ext.watch_inside(f, fields)
        inside[f.name] = WatchSet.build(watched)
    return WatchSet.build(outside), inside


def _check_top_level(spec: Any) -> None:
    if not isinstance(spec, Mapping):
        raise TemplateError(f"a response template must be an object, got {type(spec).__name__}")
    unknown = sorted(str(k) for k in set(spec) - TOP_KEYS)
    if unknown:
        raise TemplateError(
            f"unknown top-level key(s) {unknown}; allowed: {sorted(TOP_KEYS)}", key=unknown[0]
        )
    version = spec.get("version", 1)
    if type(version) is not int or version != 1:
        raise TemplateError(f"unsupported version {version!r}; this library reads version 1", key="version")


def _compile(spec: Mapping[str, Any], regex_timeout: float) -> ResponseTemplate:
    _check_top_level(spec)
    check_template_data(spec)  # size and nesting first: every later walk of the data is then bounded
    defaults, defaults_json = _defaults(spec)
    raw_fields = spec.get("fields")
    if not isinstance(raw_fields, Mapping) or not raw_fields:
        raise TemplateError("must be a non-empty object of field specs", key="fields")
    check_field_count(len(raw_fields))
    declared = _extensions(spec)
    draft = _fields(raw_fields, defaults, declared)
    fields = draft.fields
    anchor = _start_anchor(spec)
    if (
        not isinstance(regex_timeout, (int, float))
        or isinstance(regex_timeout, bool)
        or not regex_timeout > 0
    ):
        raise TemplateError(f"regex_timeout must be a positive number of seconds, got {regex_timeout!r}")
    implicit = next((f for f in fields if f.implicit), None)
    outside, inside = _watch_sets(fields, implicit)
    lookbehind = any(d.lookbehind for f in fields for d in (f.open, f.close) if d is not None)
    return ResponseTemplate(
        source=MappingProxyType(copy.deepcopy(dict(spec))),
        fields=fields,
        by_name=MappingProxyType({f.name: f for f in fields}),
        implicit=implicit,
        defaults_json=defaults_json,
        defaults_keys=frozenset(defaults),
        start_anchor=anchor,
        extensions=declared,
        regex_timeout=float(regex_timeout),
        lookbehind_window=LOOKBEHIND_WINDOW if lookbehind else 1,
        outside=outside,
        inside=MappingProxyType(inside),
        extension_data=draft.data,
    )


def _preview(text: str, limit: int = 40) -> str:
    return repr(text) if len(text) <= limit else repr(text[:limit]) + "..."


def _is_json_scalar(text: str) -> bool:
    """Whether a name-like word is JSON all the same (a number, ``true``, ``false`` or ``null``)."""
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


@lru_cache(maxsize=128)
def _compile_cached(key: str, regex_timeout: float) -> ResponseTemplate:
    return _compile(loads_template_json(key, check_size=False), regex_timeout)


#: A string that can only be a name: no spaces, quotes, braces or brackets (a family name, an alias or a
#: model id such as ``Qwen/Qwen3-8B``), never JSON text.
_NAME = re.compile(r"[\w.+@:/\\-]+")
#: The longest string read as a name (a longer one is read as JSON text).
_NAME_LIMIT = 256

#: How a name is looked up: set by the model library when it is imported (the library is an outer ring,
#: so the loader cannot import it; importing ``response_templates`` imports it).
_name_resolver: list[Callable[[str], ResponseTemplate]] = []


def set_name_resolver(resolver: Callable[[str], ResponseTemplate]) -> None:
    """Internal: let :func:`load_template` look up a family name or model id with ``resolver``."""
    _name_resolver[:] = [resolver]


def load_template(
    template: Mapping[str, Any] | ResponseTemplate | str, *, regex_timeout: float = DEFAULT_REGEX_TIMEOUT
) -> ResponseTemplate:
    """Validate and compile a response template.

    ``template`` is the template as a dict, as a JSON string, or an already compiled
    :class:`~.model.ResponseTemplate` (returned unchanged). Compiled templates are cached by content, so
    passing the same dict again is cheap. ``regex_timeout`` bounds each regex search (seconds).

    A string that is a single word (no spaces, quotes or braces) is a name: a family of the built-in
    library, an alias or a model id (``"qwen3"``, ``"Qwen/Qwen3-8B"``), looked up as
    :func:`response_templates.templates.get` and ``for_model`` do; an unknown one raises
    :class:`~response_templates.library.UnknownModelError` with the near matches. The template returned
    has its ``family`` set (``None`` for a template given as data).

    Raises :class:`~response_templates.TemplateError` naming the field and key at fault.

    >>> import response_templates as rt
    >>> rt.load_template("Qwen/Qwen3-8B") is rt.templates.get("qwen3")
    True
    """
    if isinstance(template, ResponseTemplate):
        return template
    if isinstance(template, str):
        name = template.strip()
        if len(name) <= _NAME_LIMIT and _NAME.fullmatch(name) and not _is_json_scalar(name):
            if not _name_resolver:  # pragma: no cover - importing any module of the package sets it
                raise TemplateError(
                    f"{name!r} is not JSON text; to look up a library family or model id by name, "
                    "import response_templates (its model library resolves names)"
                )
            found = _name_resolver[0](name)
            if found.regex_timeout == regex_timeout:
                return found
            recompiled = load_template(found.to_dict(), regex_timeout=regex_timeout)
            return dataclasses.replace(recompiled, family=found.family)
        try:
            template = loads_template_json(template)
        except TemplateError as exc:
            if name.startswith(("{", "[")):
                raise
            raise TemplateError(
                f"{exc.detail} (a template given as a string is JSON text, a library family name or a "
                f"model id; got {_preview(name)})"
            ) from None
    if not isinstance(template, Mapping):
        raise TemplateError(f"a response template must be an object, got {type(template).__name__}")
    try:
        key = json.dumps(template, sort_keys=False, allow_nan=False)
    except (TypeError, ValueError):
        return _compile(template, regex_timeout)  # not JSON data: _compile reports what is wrong
    except RecursionError:
        check_template_data(template)  # names the limit and where it is exceeded
        raise TemplateError("the template is nested too deeply to be read") from None  # pragma: no cover
    return _compile_cached(key, regex_timeout)
