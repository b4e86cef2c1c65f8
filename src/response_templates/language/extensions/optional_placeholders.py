"""Internal: extension ``optional-placeholders`` (E9): transform placeholders that may be missing.

With the extension declared, a transform string that is exactly one placeholder followed by ``?``
(``"{id?}"``) is optional: when its path does not resolve it is omitted (its key left out of an object,
``null`` in a list or as the whole transform). Without the declaration such a string is a load error
naming the field, the key (``transform``, or ``route`` for a ``json-envelope`` entry) and the extension.

This module is the home of that rule: it names the transform feature (:data:`FEATURE`) that the loader
turns on for templates declaring the extension. The check itself runs inside
:func:`response_templates.transforms.validate_transform` (``optional=``), node by node with the other
transform checks, and the omission at run time is :func:`response_templates.transforms.apply_transform`;
both stay in :mod:`response_templates.transforms` because every transform goes through them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...errors import ResponseTemplateError
from ...transforms import OPTIONAL_PLACEHOLDERS, uses_optional_placeholders
from ..extension import Extension, TransformFeature

__all__ = ["EXTENSION", "FEATURE", "NAME"]

NAME = "optional-placeholders"

#: The transform feature this extension turns on (``validate_transform(optional=True)`` for its fields).
FEATURE = OPTIONAL_PLACEHOLDERS


def _uses(transform: Any) -> bool:
    try:
        return uses_optional_placeholders(transform)
    except ResponseTemplateError:
        return False


def _used_in(spec: Mapping[str, Any], declared: tuple[str, ...]) -> str | None:
    """The key of a raw field spec whose transform has a ``"{path?}"`` placeholder, or None."""
    if "transform" in spec and _uses(spec["transform"]):
        return "transform"
    route = spec.get("route")
    if isinstance(route, Mapping):
        for entry in route.values():
            if isinstance(entry, Mapping) and "transform" in entry and _uses(entry["transform"]):
                return "route"
    return None


EXTENSION: Extension = Extension(
    name=NAME,
    design="E9",
    summary='transform placeholders written "{path?}": omitted (null in a list) when the path does not resolve',
    transform_features=(
        TransformFeature(
            name=FEATURE,
            summary='a transform placeholder written "{path?}" is omitted when its path does not resolve',
            used_in=_used_in,
            example={"transform": {"id": "{content.id?}", "arguments": "{content}"}},
        ),
    ),
    runtime="transforms.validate_transform(optional=True) and transforms.apply_transform",
)
