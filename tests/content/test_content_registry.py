"""The content package after its split into modules: one registry, read through the package."""

from __future__ import annotations

import time

import pytest

import response_templates.content as content
from response_templates.content import CONTENT_PARSERS, ContentParser, get_content_parser, parse_content
from response_templates.content.json import JSON
from response_templates.content.kvlines import KV_LINES
from response_templates.content.python_call_list import PYTHON_CALL_LIST
from response_templates.content.python_calls import PYTHON_CALLS
from response_templates.content.registry import parsers
from response_templates.content.scalars import BOOL, FLOAT, INT, TEXT
from response_templates.content.xml import XML_INLINE
from response_templates.errors import ContentError


def test_built_in_parsers_registered_once_in_order() -> None:
    assert list(CONTENT_PARSERS) == [
        "text",
        "int",
        "float",
        "bool",
        "json",
        "xml-inline",
        "kv-lines",
        "python-call-list",
        "python-calls",
    ]
    modules = [TEXT, INT, FLOAT, BOOL, JSON, XML_INLINE, KV_LINES, PYTHON_CALL_LIST, PYTHON_CALLS]
    assert list(CONTENT_PARSERS.values()) == modules
    assert parsers() is CONTENT_PARSERS


def test_lookups_read_the_package_attribute(monkeypatch: pytest.MonkeyPatch) -> None:
    replacement = {"only": ContentParser("only", True, lambda text, args: text * 2, lambda args, field: {})}
    monkeypatch.setattr(content, "CONTENT_PARSERS", replacement)
    assert get_content_parser("only", None).name == "only"
    assert parse_content("ab", "only") == "abab"
    with pytest.raises(Exception, match="available: only"):
        get_content_parser("json", None)


def test_regex_timeout_is_read_through_the_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(content, "REGEX_TIMEOUT", 0.05)
    start = time.perf_counter()
    with pytest.raises(ContentError, match=r"ran longer than 0\.05 s"):
        parse_content("a" * 80, "xml-inline", {"tag_pattern": r"(?P<key>(?:a|aa)+)c(?P<value>)"})
    assert time.perf_counter() - start < 0.9


def test_every_re_exported_name_is_importable() -> None:
    for name in content.__all__:
        assert hasattr(content, name), name
    for name in ("MAX_JSON_DEPTH", "MAX_XML_DEPTH", "MAX_PYTHON_DEPTH", "XML_VALUES_ARGS", "REGEX_TIMEOUT"):
        assert hasattr(content, name)
    for name in ("MAX_CALL_LIST_DEPTH",):
        assert hasattr(content, name)
