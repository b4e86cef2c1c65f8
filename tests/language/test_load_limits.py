"""Every template loads, or fails with a TemplateError, in bounded time and memory (issue 12 hole 2).

The limits are the constants of response_templates.language.limits (listed in docs/usage.md). No timed
assertions: each case asserts the typed error, or a bound on the size of what loading built.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import regex

import response_templates as rt
from response_templates import matching
from response_templates.language import limits
from response_templates.matching import Delimiter, WatchSet


def template(fields: dict[str, Any], **top: Any) -> dict[str, Any]:
    return {"start_anchor": "<A>", "fields": fields, **top}


def test_a_megabyte_literal_is_refused() -> None:
    big = "x" * 1_000_000
    with pytest.raises(rt.TemplateError, match="larger than 1,000,000 characters"):
        rt.load_template(template({"c": {"open": big, "close": "</c>"}}))
    with pytest.raises(rt.TemplateError, match="4,096") as info:
        rt.load_template(template({"c": {"open": big[:100_000], "close": "</c>"}}))
    assert (info.value.field, info.value.key) == ("c", "open")


def test_delimiter_length_limit_is_exact() -> None:
    ok = "<" + "x" * (limits.MAX_DELIMITER_LENGTH - 1)
    rt.load_template(template({"c": {"open": ok, "close": "</c>"}}))
    with pytest.raises(rt.TemplateError):
        rt.load_template(template({"c": {"open": ok + "x", "close": "</c>"}}))
    with pytest.raises(rt.TemplateError) as info:
        rt.load_template(template({"c": {"open_pattern": ok + "x", "close": "</c>"}}))
    assert info.value.key == "open_pattern"
    with pytest.raises(rt.TemplateError) as info:
        rt.load_template({"start_anchor": ok + "x", "fields": {"c": {}}})
    assert info.value.key == "start_anchor"


@pytest.mark.pure_python("compiled objects have no instance __dict__ to inspect")
def test_long_literal_hold_back_is_linear() -> None:
    """The watch set keeps no table of every prefix; hold-back of a long literal is still exact."""
    lit = "".join(chr(ord("a") + i % 26) for i in range(limits.MAX_DELIMITER_LENGTH))
    d = Delimiter.literal(lit, field="c", kind="open", key="open")
    watch = WatchSet.build([d])
    stored = sum(len(v) for v in vars(watch).values() if isinstance(v, (frozenset, set)) for v in v)
    assert stored <= 2 * len(lit)  # the old table held every prefix: about len(lit) ** 2 / 2 characters
    text = "hello " + lit[:-1]
    assert watch.scan(text, 0, False, -1, 1.0) == (None, 6)
    m, _ = watch.scan(text + lit[-1] + "!", 0, False, -1, 1.0)
    assert m is not None and (m.start, m.end) == (6, 6 + len(lit))


@pytest.mark.parametrize(
    ("pattern", "what"),
    [
        ("a{1000000000}", "1,000 repetitions"),
        ("a{1001}", "1,000 repetitions"),
        ("x{2,99999999999999999999}", "1,000 repetitions"),
        ("(?:(?:a{100}){100}){100}", "multiply"),
        ("(?:a{1000}b){11}", "multiply"),
        ("((a{50}){50}){5}", "multiply"),
    ],
)
def test_counted_repeats_are_bounded(pattern: str, what: str) -> None:
    with pytest.raises(rt.TemplateError, match=what) as info:
        rt.load_template(template({"c": {"open_pattern": pattern, "close": "</c>"}}))
    assert (info.value.field, info.value.key) == ("c", "open_pattern")


@pytest.mark.parametrize(
    "pattern", ["a{1000}", "(?:a{100}){100}", r"[\{]{9}x{,5}", r"\{1000000\}", "[{]99999}]x"]
)
def test_counts_within_the_limits_load(pattern: str) -> None:
    rt.load_template(template({"c": {"open_pattern": pattern, "close": "</c>"}}))


def test_memory_error_from_the_regex_engine_is_a_template_error(monkeypatch: pytest.MonkeyPatch) -> None:
    real = regex.compile

    def compile_or_fail(source: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(source, str) and "<boom>" in source:
            raise MemoryError
        return real(source, *args, **kwargs)

    monkeypatch.setattr(regex, "compile", compile_or_fail)
    with pytest.raises(rt.TemplateError, match="too large to compile") as info:
        matching.compile_pattern("<boom>", field="c", key="open_pattern")
    assert (info.value.field, info.value.key) == ("c", "open_pattern")


def _nested(depth: int) -> Any:
    value: Any = "x"
    for _ in range(depth):
        value = [value]
    return value


def test_deep_json_text_is_a_template_error() -> None:
    text = (
        '{"start_anchor": "A", "fields": {"c": {}}, "defaults": {"x": ' + "[" * 100_000 + "]" * 100_000 + "}}"
    )
    with pytest.raises(rt.TemplateError, match="nested more than 100 levels"):
        rt.load_template(text)


@pytest.mark.parametrize("where", ["defaults", "transform"])
def test_deep_data_is_a_template_error(where: str) -> None:
    deep = _nested(100_000)
    if where == "defaults":
        spec = template({"c": {}}, defaults={"x": deep})
    else:
        spec = template({"c": {"open": "<c>", "close": "</c>", "transform": {"a": deep}}})
    with pytest.raises(rt.TemplateError, match="nested more than") as info:
        rt.load_template(spec)
    assert info.value.key == ("defaults" if where == "defaults" else "fields")


def test_nesting_limit_is_exact() -> None:
    # the template object is level 1 and "defaults" level 2: a value of depth d under it reaches 2 + d
    ok = template({"c": {}}, defaults={"x": _nested(limits.MAX_NESTING - 2)})
    rt.load_template(ok)
    rt.load_template(json.dumps(ok))
    too_deep = template({"c": {}}, defaults={"x": _nested(limits.MAX_NESTING - 1)})
    with pytest.raises(rt.TemplateError):
        rt.load_template(too_deep)


def test_cyclic_data_is_a_template_error() -> None:
    loop: dict[str, Any] = {}
    loop["again"] = loop
    with pytest.raises(rt.TemplateError, match="nested more than"):
        rt.load_template(template({"c": {}}, defaults=loop))


def test_size_limits() -> None:
    with pytest.raises(rt.TemplateError, match="JSON text"):
        rt.load_template(json.dumps(template({"c": {}})) + " " * limits.MAX_TEMPLATE_SIZE)
    with pytest.raises(rt.TemplateError, match="larger than") as info:
        rt.load_template(template({"c": {}}, defaults={"x": "y" * limits.MAX_TEMPLATE_SIZE}))
    assert info.value.key == "defaults"


def test_field_count_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(limits, "MAX_FIELDS", 3)
    rt.load_template(template({f"f{i}": {"open": f"<{i}>"} for i in range(3)}))
    with pytest.raises(rt.TemplateError, match="at most 3") as info:
        rt.load_template(template({f"f{i}": {"open": f"<{i}>"} for i in range(4)}))
    assert info.value.key == "fields"
    assert limits.MAX_FIELDS == 3  # the check reads the one constant


def test_literal_list_limit() -> None:
    many = [f"<{i}>" for i in range(limits.MAX_LITERALS + 1)]
    with pytest.raises(rt.TemplateError, match="at most 1,000") as info:
        rt.load_template(template({"c": {"open": many, "close": "</c>"}}))
    assert info.value.key == "open"
    rt.load_template(template({"c": {"open": many[:-1], "close": "</c>"}}))
