"""Internal: the registry of template-language extensions: the one list that loading, lint and ``rt.templates`` read.

:data:`REGISTRY` holds one :class:`~.extension.Extension` per extension, in the order their hooks run.
Everything else here is derived from it: :data:`EXTENSIONS` (name -> summary, the public
``rt.templates.EXTENSIONS``), the field keys, content parsers and ``content_args`` keys that belong to an
extension, and lookups by name. To add an extension, write its module in ``extensions/`` and add one line
to :data:`REGISTRY` (docs/extensions.md, "How to add an extension").
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from types import MappingProxyType
from typing import Any

from .extension import Extension, TransformFeature
from .extensions import (
    interleaved,
    into,
    item_transform,
    json_envelope,
    json_value_end,
    optional_placeholders,
    python_calls,
    xml_values,
)

__all__ = [
    "EXTENSIONS",
    "EXTENSION_ARGS",
    "EXTENSION_FIELD_KEYS",
    "EXTENSION_PARSERS",
    "REGISTRY",
    "extension",
    "extension_args_used",
    "transform_features",
]

#: Every extension this library implements, in the order their hooks run.
REGISTRY: tuple[Extension, ...] = (
    python_calls.EXTENSION,
    item_transform.EXTENSION,
    into.EXTENSION,
    xml_values.EXTENSION,
    json_envelope.EXTENSION,
    json_value_end.EXTENSION,
    optional_placeholders.EXTENSION,
    interleaved.EXTENSION,
)

_BY_NAME: Mapping[str, Extension] = MappingProxyType({e.name: e for e in REGISTRY})

#: The template-language extensions this library implements (docs/extensions.md): name -> what it adds.
EXTENSIONS: Mapping[str, str] = MappingProxyType({e.name: e.summary for e in REGISTRY})

#: Field keys that belong to an extension: key -> extension name (in registry order).
EXTENSION_FIELD_KEYS: Mapping[str, str] = MappingProxyType(
    {key: e.name for e in REGISTRY for key in e.field_keys}
)

#: Content parsers that belong to an extension: parser name -> extension name.
EXTENSION_PARSERS: Mapping[str, str] = MappingProxyType(
    {parser: e.name for e in REGISTRY for parser in e.content_parsers}
)

#: ``content_args`` keys that belong to an extension: parser name -> (argument, extension name) pairs.
EXTENSION_ARGS: Mapping[str, tuple[tuple[str, str], ...]] = MappingProxyType(
    {
        parser: tuple((arg, e.name) for e in REGISTRY for arg in e.content_args.get(parser, ()))
        for parser in sorted({p for e in REGISTRY for p in e.content_args})
    }
)


# How deep :func:`extension_args_used` follows nested value-parser specs.
_MAX_ARG_DEPTH = 16


def extension_args_used(content: Any, args: Any) -> Iterator[tuple[str, str, str]]:
    """``(parser, argument, extension)`` for each extension argument in a field's raw ``content_args``.

    Value parsers nest (``value_parser``, and the entries of ``value_parser_by.parsers``: each
    ``{"name": ..., "args": ...}``), so their arguments are read too, each with its own parser's name.
    """
    stack: list[tuple[Any, Any, int]] = [(content, args, 0)]
    while stack:
        content, args, depth = stack.pop()
        if not isinstance(args, Mapping) or depth > _MAX_ARG_DEPTH:
            continue
        for arg, name in EXTENSION_ARGS.get(content, ()) if isinstance(content, str) else ():
            if arg in args:
                yield content, arg, name
        inner: list[Any] = [args.get("value_parser")]
        by = args.get("value_parser_by")
        if isinstance(by, Mapping) and isinstance(by.get("parsers"), Mapping):
            inner.extend(by["parsers"].values())
        for spec in reversed(inner):  # the value_parser chain first, as before
            if isinstance(spec, Mapping):
                stack.append((spec.get("name", "text"), spec.get("args"), depth + 1))


def extension(name: str) -> Extension:
    """The registered extension called ``name`` (``KeyError`` if there is none)."""
    return _BY_NAME[name]


def transform_features(declared: tuple[str, ...]) -> frozenset[str]:
    """The names of the transform features the declared extensions turn on."""
    features: list[TransformFeature] = [f for name in declared for f in _BY_NAME[name].transform_features]
    return frozenset(f.name for f in features)
