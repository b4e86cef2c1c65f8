"""The template linter (issue 4, item 5)."""

from __future__ import annotations

import json
from typing import Any

import pytest

import response_templates as rt
from response_templates.lint import Issue, regex_constructs


def template(fields: dict[str, Any], anchor: str = "<|im_start|>assistant\n") -> dict[str, Any]:
    return {"start_anchor": anchor, "fields": fields}


def codes(issues: list[Issue]) -> list[tuple[str, str, str | None]]:
    return [(i.level, i.code, i.field) for i in issues]


@pytest.mark.parametrize(
    ("pattern", "kinds"),
    [
        (r"(?P<a>x)(?P=a)", ["backreference"]),
        (r"(a)\1", ["backreference"]),
        (r"(?P<k>a)\g<k>", ["backreference"]),
        (r"(?>a+)b", ["atomic-group"]),
        (r"a++b", ["possessive-quantifier"]),
        (r"a*+b", ["possessive-quantifier"]),
        (r"a?+b", ["possessive-quantifier"]),
        (r"a{1,3}+b", ["possessive-quantifier"]),
        (r"(a|(?R))", ["recursion"]),
        (r"(a)(?1)", ["recursion"]),
        (r"(?P<x>a)(?&x)", ["recursion"]),
        (r"a(?=b)(?!c)(?<=d)(?<!e)", ["lookaround"] * 4),
        (r"<a>.*</a>", ["greedy"]),
        # Not reported: escaped, in classes, lazy, quantified groups, flags, a literal '+' after an escape.
        (r"\(?>[\1(?>]\\", []),
        (r"a.*?b(?:c)+d{2}?[+]\++", []),
        (r"(?:<tool_call>\s*)?<function=(?P<name>[^>\n]+)>", []),
        (r"(?i)x", []),
    ],
)
def test_regex_constructs(pattern: str, kinds: list[str]) -> None:
    assert [k for k, _, _ in regex_constructs(pattern)] == kinds


def test_portability_rules_of_spec_section_10() -> None:
    issues = rt.lint(
        template(
            {
                "reasoning_content": {"open_pattern": r"<think>(?=\S)", "close_pattern": r"(?>\s*)</think>"},
                "tool_calls": {
                    "open": "<tc>",
                    "close": "</tc>",
                    "content": "xml-inline",
                    "content_args": {"tag_pattern": r"<(?P<key>\w+)>(?P<value>.*?)</(?P=key)>"},
                },
                "content": {"close": "<|im_end|>"},
            }
        )
    )
    assert codes(issues) == [
        ("warning", "atomic-group", "reasoning_content"),
        ("warning", "backreference", "tool_calls"),
        ("note", "lookaround", "reasoning_content"),
    ]
    assert issues[1].key == "content_args.tag_pattern"
    assert "section 10)" in str(issues[0])  # cites the portability rules of docs/spec.md


def test_identical_opens_make_a_field_unreachable() -> None:
    issues = rt.lint(
        template({"b": {"open": "<x>", "close": "</x>"}, "a": {"open": ["<x>", "<y>"], "close": "</y>"}})
    )
    assert ("error", "unreachable-field", "b") in codes(issues)


def test_a_delimiter_that_is_a_prefix_of_another() -> None:
    issues = rt.lint(
        template({"a": {"open": "<tool", "close": ">"}, "b": {"open": "<tool_call>", "close": "x"}})
    )
    (issue,) = [i for i in issues if i.code == "delimiter-prefix"]
    assert issue.field == "a" and "'<tool' is a prefix of '<tool_call>'" in issue.message


def test_implicit_field_without_close_on_a_chatml_model() -> None:
    issues = rt.lint(template({"reasoning_content": {"open": "<think>", "close": "</think>"}, "content": {}}))
    assert codes(issues) == [("warning", "implicit-without-close", "content")]
    assert "<|im_end|>" in issues[0].message
    plain = rt.lint(template({"content": {}}, anchor="Assistant:"))
    assert plain == []


def test_extension_use_is_reported_even_though_the_template_does_not_load() -> None:
    issues = rt.lint(
        {
            "extensions": ["python-calls"],
            "start_anchor": "x",
            "fields": {
                "tool_calls": {
                    "open": "<a>",
                    "close": "</a>",
                    "content": "python-calls",
                    "into": "tool_calls",
                },
                "content": {"close": {"json": "value"}},
            },
        }
    )
    assert issues[0].level == "error" and issues[0].code == "load-error"
    extension = [str(i) for i in issues if i.code == "extension"]
    assert len(extension) == 4
    assert (
        any("E1" in s for s in extension)
        and any("E8" in s for s in extension)
        and any("E3" in s for s in extension)
    )


def test_accepts_compiled_templates_json_and_rejects_non_templates() -> None:
    data = template({"content": {"close": "<|im_end|>"}})
    assert rt.lint(rt.load_template(data)) == [] == rt.lint(json.dumps(data))
    assert codes(rt.lint("{not json")) == [("error", "load-error", None)]
    assert codes(rt.lint([1])) == [("error", "load-error", None)]  # type: ignore[arg-type]


def test_library_templates_are_portable() -> None:
    for name in rt.templates.names():
        assert not [i for i in rt.lint(rt.templates.get(name)) if i.level != "note"], name
