"""Internal: extension ``json-envelope`` (E7): one JSON object's top-level keys go to several output keys.

It adds the field key ``route``: JSON key (or ``"*"`` for a value that is not an object) -> an output key,
or ``{"to": key, "add": "item" | "items", "transform": ...}``. Checked here at load time:

* per field: a non-empty object of valid entries (an entry's ``transform`` needs ``add`` and is a valid
  transform); not combined with ``into``, ``join``, ``transform`` or ``"optional": false``;
* across fields: a target is never a field name or a ``defaults`` key, and one output key is not filled
  both as a list (``add``, or ``into``) and as a single value. The template gets ``route_lists`` and
  ``route_values``.

At run time: the value pipeline (:mod:`response_templates.values`) routes each parsed value, and the
message assembler (:mod:`response_templates.assembly`) combines routed values into the output keys.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import replace
from types import MappingProxyType
from typing import Any

from ...errors import TemplateError
from ...transforms import OPTIONAL_PLACEHOLDERS, validate_transform
from ..extension import Extension, FieldDraft, TemplateDraft
from ..model import FieldExtensionData, Route

__all__ = ["EXTENSION", "NAME", "ROUTE_OTHER", "Route"]

NAME = "json-envelope"

#: The route key that takes a value which is not a JSON object.
ROUTE_OTHER = "*"
_ROUTE_ADD = ("item", "items")


def _check_combinations(draft: FieldDraft) -> None:
    for other in ("into", "join", "transform"):
        if other in draft.spec:
            raise TemplateError(
                f"'route' cannot be combined with {other!r}"
                + (" (give each route entry its own 'transform')" if other == "transform" else ""),
                field=draft.name,
                key="route",
            )
    if not draft.optional:
        raise TemplateError(
            "'optional': false cannot be combined with 'route' (the field has no output key of its own)",
            field=draft.name,
            key="optional",
        )


def _entry(json_key: str, entry: Any, draft: FieldDraft) -> Route:
    name = draft.name
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
        raise TemplateError(f"{where}: 'add' must be 'item' or 'items', got {add!r}", field=name, key="route")
    if "transform" in entry:
        if add is None:
            raise TemplateError(
                f"{where}: a 'transform' applies to each added item, so it needs 'add'",
                field=name,
                key="route",
            )
        optional = OPTIONAL_PLACEHOLDERS in draft.transform_features
        validate_transform(entry["transform"], name, optional=optional, error_key="route")
    return Route(to, add, copy.deepcopy(entry.get("transform")), "transform" in entry)


def _compile_field(draft: FieldDraft, data: FieldExtensionData) -> FieldExtensionData:
    """Field-level checks (targets are checked with all the fields)."""
    if "route" not in draft.spec:
        return data
    raw = draft.spec["route"]
    if not isinstance(raw, Mapping) or not raw:
        raise TemplateError(
            f'must be a non-empty object: JSON key -> output key, e.g. {{"response": "content"}}; got {raw!r}',
            field=draft.name,
            key="route",
        )
    _check_combinations(draft)
    out = {json_key: _entry(json_key, entry, draft) for json_key, entry in raw.items()}
    return replace(data, route=MappingProxyType(out))


def _compile_template(draft: TemplateDraft) -> TemplateDraft:
    """Check the route targets against the fields and ``defaults``; record which keys are lists."""
    names_ = {f.name for f in draft.fields}
    lists: dict[str, str] = {}
    values: dict[str, str] = {}
    for f in draft.fields:
        for r in (f.route or {}).values():
            if r.to in names_ or r.to in draft.defaults:
                raise TemplateError(
                    f"route output key {r.to!r} is a field or a 'defaults' key; a route fills output keys that "
                    "only routes use",
                    field=f.name,
                    key="route",
                )
            (lists if r.add else values)[r.to] = f.name
    both = sorted(set(lists) & set(values))
    into_targets = {f.into for f in draft.fields if f.into is not None}
    both += sorted(set(values) & into_targets)
    if both:
        raise TemplateError(
            f"output key {both[0]!r} is filled both as a list ('add' or 'into') and as a single value",
            field=lists.get(both[0]) or values.get(both[0]),
            key="route",
        )
    data = replace(draft.data, route_lists=frozenset(lists), route_values=frozenset(values))
    return replace(draft, data=data)


EXTENSION: Extension = Extension(
    name=NAME,
    design="E7",
    summary="the field key 'route': one JSON object's top-level keys go to several output keys (E7)",
    field_keys=("route",),
    field_attributes=("route",),
    template_attributes=("route_lists", "route_values"),
    compile_field=_compile_field,
    compile_template=_compile_template,
    runtime="values.py (routing a parsed value) and assembly.py (combining routed values)",
)
