"""``lint`` and the loader agree on what the extensions are: both read the one registry.

Every field key, content parser, ``content_args`` key and transform feature of a registered extension is
reported by lint (an ``extension`` note naming the extension), and lint never reports as an extension a
key or parser the registry does not have (names from the design drafts included).
"""

from __future__ import annotations

from typing import Any

import pytest

import response_templates as rt
from response_templates.language import REGISTRY, Extension
from response_templates.language.registry import EXTENSION_FIELD_KEYS, EXTENSION_PARSERS
from response_templates.lint import Issue

# Names the extension design drafts (docs/design/extensions.md) used and this library did not implement.
_DRAFT_KEYS = ("each_item", "inside", "wrap", "json_end", "close_value")
_DRAFT_PARSERS = ("json-lines", "json-envelope", "pythonic")


def _template(spec: dict[str, Any], declared: list[str]) -> dict[str, Any]:
    return {
        "extensions": declared,
        "start_anchor": "<|assistant|>",
        "fields": {"f": {"open": "<a>", "close": "</a>", **spec}, "content": {}},
    }


def _notes(spec: dict[str, Any], declared: list[str]) -> list[Issue]:
    return [i for i in rt.lint(_template(spec, declared)) if i.code == "extension" and i.field == "f"]


def _names(ext: Extension, issue: Issue) -> bool:
    return ext.name in issue.message or ext.design in issue.message


_KEYS = [(e, key) for e in REGISTRY for key in e.field_keys]
_PARSERS = [(e, parser) for e in REGISTRY for parser in e.content_parsers]
_ARGS = [(e, parser, arg) for e in REGISTRY for parser, args in e.content_args.items() for arg in args]
_FEATURES = [(e, feature) for e in REGISTRY for feature in e.transform_features]


def test_every_kind_of_extension_feature_is_probed() -> None:
    assert _KEYS and _PARSERS and _ARGS and _FEATURES


@pytest.mark.parametrize(("ext", "key"), _KEYS, ids=[k for _, k in _KEYS])
def test_lint_reports_every_extension_field_key(ext: Extension, key: str) -> None:
    notes = [i for i in _notes({key: True}, [ext.name]) if i.key == key]
    assert len(notes) == 1 and _names(ext, notes[0]), notes


@pytest.mark.parametrize(("ext", "parser"), _PARSERS, ids=[p for _, p in _PARSERS])
def test_lint_reports_every_extension_content_parser(ext: Extension, parser: str) -> None:
    notes = [i for i in _notes({"content": parser}, [ext.name]) if i.key == "content"]
    assert len(notes) == 1 and _names(ext, notes[0]) and repr(parser) in notes[0].message, notes


@pytest.mark.parametrize(("ext", "parser", "arg"), _ARGS, ids=[a for _, _, a in _ARGS])
def test_lint_reports_every_extension_content_arg(ext: Extension, parser: str, arg: str) -> None:
    for args in ({arg: True}, {"value_parser": {"name": parser, "args": {arg: True}}}):
        spec = {"content": parser, "content_args": args}
        notes = [i for i in _notes(spec, [ext.name]) if i.key == "content_args" and repr(arg) in i.message]
        assert len(notes) == 1 and _names(ext, notes[0]), (args, notes)


@pytest.mark.parametrize(("ext", "feature"), _FEATURES, ids=[f.name for _, f in _FEATURES])
def test_lint_reports_every_transform_feature(ext: Extension, feature: Any) -> None:
    spec = dict(feature.example)
    assert feature.used_in(spec, (ext.name,)) is not None
    rt.load_template(_template(spec, [ext.name]))  # the example is a valid use of the feature
    notes = [i for i in _notes(spec, [ext.name]) if _names(ext, i)]
    assert [i.key for i in notes] == [feature.used_in(spec, (ext.name,))], notes


@pytest.mark.parametrize("key", _DRAFT_KEYS)
def test_lint_reports_no_field_key_that_does_not_exist(key: str) -> None:
    assert key not in EXTENSION_FIELD_KEYS
    issues = rt.lint(_template({key: True}, []))
    assert [i.code for i in issues if i.key == key] == ["load-error"]  # unknown key: the loader's error only


@pytest.mark.parametrize("parser", _DRAFT_PARSERS)
def test_lint_reports_no_content_parser_that_does_not_exist(parser: str) -> None:
    assert parser not in EXTENSION_PARSERS
    for issue in _notes({"content": parser}, []):
        assert not any(ext.design in issue.message for ext in REGISTRY), issue
        assert "is extension" not in issue.message, issue


def test_every_extension_note_on_the_library_names_a_registered_feature() -> None:
    keys = set(EXTENSION_FIELD_KEYS) | {"extensions", "content", "content_args", "transform", "route"}
    for name in rt.templates.names():
        for issue in rt.lint(rt.templates.get(name)):
            if issue.code == "extension":
                assert issue.key in keys, (name, issue)
                assert issue.key == "extensions" or any(_names(ext, issue) for ext in REGISTRY), (name, issue)
