"""The template language: loading, validation and compilation of response templates.

The rules of the language are described in ``docs/spec.md`` (base language) and ``docs/extensions.md``
(extensions); this package is where each one is checked:

* :mod:`.model` -- what a compiled template is (:class:`FieldSpec`, :class:`ResponseTemplate`), with the
  attributes that only extensions set kept apart (:class:`FieldExtensionData`);
* :mod:`.loader` -- the top-level keys, compilation of a whole template, the cache, :func:`load_template`;
* :mod:`.fields` -- the rules of each base field key, and the compilation of one field;
* :mod:`.extension` -- what an extension is (:class:`Extension`) and the hooks it plugs in;
* :mod:`.extensions` -- one module per extension: its keys, validation and compilation;
* :mod:`.registry` -- the registered extensions (:data:`REGISTRY`), read by loading, lint and
  ``rt.templates.EXTENSIONS``.

:func:`load_template` is the entry point; the result, a :class:`ResponseTemplate`, is what every other
part of the library reads. This package imports only the core (errors, matching, content, transforms,
jsonlex), never the outer rings.
"""

from __future__ import annotations

from .extension import Extension, TransformFeature
from .extensions.item_transform import ITEM_VARIABLES
from .extensions.json_envelope import ROUTE_OTHER
from .fields import BASE_CONTENT_PARSERS, BASE_FIELD_KEYS
from .loader import load_template
from .model import (
    DEFAULT_REGEX_TIMEOUT,
    LOOKBEHIND_WINDOW,
    FieldExtensionData,
    FieldSpec,
    ResponseTemplate,
    Route,
    TemplateExtensionData,
)
from .registry import EXTENSIONS, REGISTRY

__all__ = [
    "BASE_CONTENT_PARSERS",
    "BASE_FIELD_KEYS",
    "DEFAULT_REGEX_TIMEOUT",
    "EXTENSIONS",
    "ITEM_VARIABLES",
    "LOOKBEHIND_WINDOW",
    "REGISTRY",
    "ROUTE_OTHER",
    "Extension",
    "FieldExtensionData",
    "FieldSpec",
    "ResponseTemplate",
    "Route",
    "TemplateExtensionData",
    "TransformFeature",
    "load_template",
]
