"""The extension registry (language/registry.py): one entry per extension, the single source of loading.

Checks that the registry, the loader and the compiled data agree: every name, key, parser and argument an
extension registers is what the loader enforces, each extension attribute of a field or template is set
by exactly one extension, and the language package imports only the core.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import pkgutil
from pathlib import Path
from typing import Any

import pytest

import response_templates as rt
from response_templates import language
from response_templates.content import CONTENT_PARSERS
from response_templates.errors import TemplateError
from response_templates.language import (
    BASE_CONTENT_PARSERS,
    BASE_FIELD_KEYS,
    REGISTRY,
    Extension,
    FieldExtensionData,
    TemplateExtensionData,
)
from response_templates.language import extensions as extensions_package

_MODULES = sorted(m.name for m in pkgutil.iter_modules(extensions_package.__path__))


def _template(spec: dict[str, Any], declared: list[str] | None = None) -> dict[str, Any]:
    data: dict[str, Any] = {
        "start_anchor": "<|assistant|>",
        "fields": {"f": {"open": "<a>", "close": "</a>", **spec}, "content": {}},
    }
    if declared is not None:
        data["extensions"] = declared
    return data


def _load_error(data: dict[str, Any]) -> TemplateError:
    with pytest.raises(TemplateError) as info:
        rt.load_template(data)
    return info.value


def test_one_module_and_one_entry_per_extension() -> None:
    names = [e.name for e in REGISTRY]
    assert len(set(names)) == len(names) == len(_MODULES)
    assert sorted(n.replace("-", "_") for n in names) == _MODULES
    for name in _MODULES:
        module = importlib.import_module(f"{extensions_package.__name__}.{name}")
        assert module.EXTENSION in REGISTRY and module.EXTENSION.name == module.NAME
        assert module.__doc__ and "run time" in module.__doc__, name  # where its runtime behaviour lives
        assert module.EXTENSION.runtime, name
    assert len({e.design for e in REGISTRY}) == len(REGISTRY)


def test_public_extensions_mapping_is_the_registry() -> None:
    assert dict(rt.templates.EXTENSIONS) == {e.name: e.summary for e in REGISTRY}
    assert rt.templates.EXTENSIONS is language.EXTENSIONS
    assert list(rt.templates.EXTENSIONS) == [e.name for e in REGISTRY]


def test_extension_vocabulary_does_not_overlap_the_base_language() -> None:
    keys = [k for e in REGISTRY for k in e.field_keys]
    parsers = [p for e in REGISTRY for p in e.content_parsers]
    assert len(set(keys)) == len(keys) and not set(keys) & BASE_FIELD_KEYS
    assert len(set(parsers)) == len(parsers) and not set(parsers) & BASE_CONTENT_PARSERS
    assert BASE_CONTENT_PARSERS | set(parsers) <= set(CONTENT_PARSERS)
    for e in REGISTRY:
        assert set(e.content_args) <= set(CONTENT_PARSERS), e.name


@pytest.mark.parametrize(
    ("data_type", "attribute"),
    [(FieldExtensionData, "field_attributes"), (TemplateExtensionData, "template_attributes")],
)
def test_each_extension_attribute_is_set_by_exactly_one_extension(data_type: type, attribute: str) -> None:
    claimed = [a for e in REGISTRY for a in getattr(e, attribute)]
    assert sorted(claimed) == sorted(f.name for f in dataclasses.fields(data_type))


def test_extension_attributes_read_through_on_fields_and_templates() -> None:
    for spec_type, data_type in (
        (rt.FieldSpec, FieldExtensionData),
        (rt.ResponseTemplate, TemplateExtensionData),
    ):
        # Attributes computed from the others for the hot path (metadata "derived") are not copies.
        copies = {
            f.name for f in dataclasses.fields(spec_type) if not f.init and not f.metadata.get("derived")
        }
        assert copies == {f.name for f in dataclasses.fields(data_type)}
    t = rt.templates.get("generic-json")
    for f in t.fields:
        for a in dataclasses.fields(FieldExtensionData):
            assert getattr(f, a.name) == getattr(f.extension_data, a.name)
        assert f.output_key == (f.into or f.name)
    assert t.route_lists == t.extension_data.route_lists and t.route_lists
    assert t.route_values == t.extension_data.route_values


def _uses() -> list[tuple[Extension, str, dict[str, Any]]]:
    out = []
    for e in REGISTRY:
        out += [(e, key, {key: True}) for key in e.field_keys]
        out += [(e, "content", {"content": p}) for p in e.content_parsers]
        for parser, args in e.content_args.items():
            out += [(e, "content_args", {"content": parser, "content_args": {a: True}}) for a in args]
    return out


@pytest.mark.parametrize(("ext", "key", "spec"), _uses(), ids=lambda v: v if isinstance(v, str) else "")
def test_every_registered_feature_needs_its_declaration(
    ext: Extension, key: str, spec: dict[str, Any]
) -> None:
    error = _load_error(_template(spec, []))
    assert (error.field, error.key) == ("f", key)
    assert f"belongs to the extension {ext.name!r}" in str(error)
    assert f'"extensions": ["{ext.name}"]' in str(error)


def test_transform_features_are_valid_when_declared_and_never_silently_used_without() -> None:
    for e in REGISTRY:
        for feature in e.transform_features:
            spec = dict(feature.example)
            assert rt.load_template(_template(spec, [e.name])).extensions == (e.name,)
            assert feature.used_in(spec, (e.name,)) is not None
            try:
                rt.load_template(_template(spec, []))
            except TemplateError as error:  # rejected: the error says what to declare
                assert (error.field, error.key) == ("f", feature.used_in(spec, (e.name,)))
                assert f"belongs to the extension {e.name!r}" in str(error)
            else:  # accepted: then the text keeps its base meaning and lint does not call it the feature
                assert feature.used_in(spec, ()) is None, feature.name


def test_close_json_rejects_a_dialect_the_lexer_cannot_end() -> None:
    args = {"string_delims": [["<e]x", "</e>"]]}
    spec = {"open": "CALL", "close_json": True, "content": "json", "content_args": args}
    data = {"extensions": ["json-value-end"], "start_anchor": "x", "fields": {"c": spec, "content": {}}}
    error = _load_error(data)
    assert (error.field, error.key) == ("c", "close_json")
    assert "'<e]x'" in str(error)


_CORE = {"errors", "matching", "content", "transforms", "jsonlex"}


def test_the_language_package_imports_only_the_core() -> None:
    root = Path(language.__file__).parent
    for path in sorted(root.rglob("*.py")):
        depth = len(path.relative_to(root).parts)  # 1: language/x.py, 2: language/extensions/x.py
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level > depth:
                top = (node.module or "").split(".")[0]
                assert top in _CORE, f"{path.name} imports {node.module}"
            if isinstance(node, ast.Import) or (isinstance(node, ast.ImportFrom) and node.level == 0):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
                assert not any(n.startswith("response_templates") for n in names), path.name
