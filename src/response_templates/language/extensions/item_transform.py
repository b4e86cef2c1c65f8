"""Internal: extension ``item-transform`` (E2): ``transform_each`` over single-key objects, the name as the key.

With the extension declared, a ``transform_each`` whose transform uses ``{key}`` or ``{value}`` is an
item transform: each element of the parsed list must be an object with exactly one key, bound to
``{key}``, its value to ``{value}``. Checked here at load time: such a transform may use only ``key``,
``value`` and the captures of the field's patterns; the field gets ``item_transform``.

At run time: :func:`response_templates.transforms.apply_transform_each` with ``items=True``, called by the
value pipeline (:mod:`response_templates.values`) for a field whose ``item_transform`` is set.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from ...errors import ResponseTemplateError, TemplateError
from ...transforms import transform_placeholders
from ..extension import Extension, FieldDraft, TransformFeature
from ..model import FieldExtensionData

__all__ = ["EXTENSION", "ITEM_VARIABLES", "NAME"]

NAME = "item-transform"

#: Variables an item transform binds for each single-key object.
ITEM_VARIABLES = frozenset({"key", "value"})


def _check_transform(draft: FieldDraft, data: FieldExtensionData) -> FieldExtensionData:
    """Mark an item transform and check that its placeholders can resolve."""
    if not (draft.transform_each and NAME in draft.declared):
        return data
    used = transform_placeholders(draft.transform)
    if not used & ITEM_VARIABLES:
        return data
    unknown_vars = sorted(used - (ITEM_VARIABLES | draft.groups))
    if unknown_vars:
        raise TemplateError(
            f"placeholder(s) {unknown_vars} can never resolve: an item transform (extension "
            f"'item-transform') binds only {{key}}, {{value}} and the pattern captures "
            f"{sorted(draft.groups)}",
            field=draft.name,
            key="transform",
        )
    return replace(data, item_transform=True)


def _used_in(spec: Mapping[str, Any], declared: tuple[str, ...]) -> str | None:
    """``"transform"`` when this raw field spec is an item transform under these declarations."""
    if NAME not in declared or spec.get("transform_each") is not True or "transform" not in spec:
        return None
    try:
        uses = bool(transform_placeholders(spec["transform"]) & ITEM_VARIABLES)
    except ResponseTemplateError:
        return None
    return "transform" if uses else None


EXTENSION: Extension = Extension(
    name=NAME,
    design="E2",
    summary="'transform_each' over single-key objects, binding {key} and {value} (E2)",
    transform_features=(
        TransformFeature(
            name="item transform",
            summary="transform_each binds {key}/{value} of single-key objects",
            used_in=_used_in,
            example={"transform_each": True, "transform": {"name": "{key}", "arguments": "{value}"}},
        ),
    ),
    field_attributes=("item_transform",),
    check_transform=_check_transform,
    runtime="transforms.apply_transform_each(items=True), called by values.py",
)
