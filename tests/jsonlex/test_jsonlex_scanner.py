"""The incremental JSON scanner (``JsonScanner``) against ``json.loads`` (and the ``json`` content parser
for its dialect) on generated documents, formatted and escaped in many ways, cut into random pieces: the
reported name, raw arguments text and canonical arguments text agree with the parse of the whole text;
invalid text is reported invalid exactly when ``json.loads`` rejects it; each feed costs time proportional
to its text.
"""

from __future__ import annotations

import json
import random
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hypothesis_profiles import examples
from response_templates.content import get_content_parser
from response_templates.jsonlex.canonical import strict_equal as _strict_equal
from response_templates.toolstream import (
    JsonScanner,
    dumps_arguments,
)
from toolstream_fixtures import VALUES, pieces, serialize

SETTINGS = settings(max_examples=examples(400), deadline=None, suppress_health_check=list(HealthCheck))


def scan(scanner: JsonScanner, chunks: list[str]) -> list[dict]:
    reports = []
    for chunk in chunks:
        reports += scanner.feed(chunk)
    return reports + scanner.end()


def joined(reports: list[dict], key: str, item: int = 0) -> str:
    return "".join(r[key] for r in reports if r["type"] == "arguments" and r["item"] == item)


# ------------------------------------------------------------------------------------------------------
# JsonScanner


@SETTINGS
@given(VALUES, st.text(max_size=8), st.integers(0, 2**32), st.booleans())
def test_scanner_agrees_with_json_loads(arguments: Any, name: str, seed: int, arguments_first: bool) -> None:
    rng = random.Random(seed)
    if arguments_first:
        document = {"arguments": arguments, "name": name}
    else:
        document = {"name": name, "other": [1, {"arguments": "decoy"}], "arguments": arguments}
    text = rng.choice(["", " ", "\n"]) + serialize(document, rng) + rng.choice(["", " \n"])
    whole = json.loads(text)
    scanner = JsonScanner(name_paths=[("name",)], arguments_paths=[("arguments",)])
    reports = scan(scanner, pieces(text, rng))
    assert scanner.done and not scanner.failed
    assert [r["value"] for r in reports if r["type"] == "name"] == [whole["name"]]
    assert _strict_equal(json.loads(joined(reports, "raw")), whole["arguments"])
    assert joined(reports, "json") == dumps_arguments(whole["arguments"])
    assert [r["type"] for r in reports].count("arguments_done") == 1
    # every canonical prefix is valid partial JSON for a client (no escape is ever cut)
    assert all(
        not r["json"].endswith("\\") or r["json"].endswith("\\\\")
        for r in reports
        if r["type"] == "arguments"
    )


@SETTINGS
@given(VALUES, st.integers(0, 2**32), st.sampled_from(["cut", "insert", "delete", "replace"]))
def test_scanner_rejects_exactly_what_json_loads_rejects(value: Any, seed: int, how: str) -> None:
    rng = random.Random(seed)
    text = serialize({"name": "f", "arguments": value}, rng)
    at = rng.randrange(len(text) + 1)
    char = rng.choice('{}[],:"\\ a0-.eE\x01tnu\ud800')
    if how == "cut":
        text = text[:at]
    elif how == "insert":
        text = text[:at] + char + text[at:]
    elif how == "delete":
        text = text[:at] + text[at + 1 :]
    else:
        text = text[:at] + char + text[at + 1 :]
    try:
        json.loads(text)
        valid = True
    except ValueError:
        valid = False
    reports = scan(JsonScanner(name_paths=[("name",)], arguments_paths=[("arguments",)]), pieces(text, rng))
    errors = [r for r in reports if r["type"] == "error"]
    assert (not errors) == valid, (text, reports)
    assert len(errors) <= 1 and (not errors or reports[-1] is errors[0])


_WORDS = st.text(alphabet="abcxyz_09é", min_size=1, max_size=6)
_DIALECT_VALUES = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-999, 999), st.text(max_size=8)),
    lambda children: st.one_of(st.lists(children, max_size=3), st.dictionaries(_WORDS, children, max_size=3)),
    max_leaves=8,
)


def gemma(value: Any, rng: random.Random) -> str:
    """Gemma 4's dialect: bare keys, strings between <|"|> markers (verbatim, no escapes)."""
    if isinstance(value, dict):
        return "{" + ",".join(f"{k}:{gemma(v, rng)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(gemma(v, rng) for v in value) + "]"
    if isinstance(value, str):
        return f'<|"|>{value}<|"|>' if "<|" not in value and rng.random() < 0.8 else json.dumps(value)
    return json.dumps(value)


@SETTINGS
@given(st.dictionaries(_WORDS, _DIALECT_VALUES, max_size=4), st.integers(0, 2**32))
def test_scanner_dialect_agrees_with_the_json_content_parser(arguments: dict, seed: int) -> None:
    rng = random.Random(seed)
    parser = get_content_parser("json", "tool_calls")
    args = parser.validate({"unquoted_keys": True, "string_delims": [['<|"|>', '<|"|>']]}, "tool_calls")
    text = gemma(arguments, rng)
    expected = parser.parse(text, args)
    scanner = JsonScanner(arguments_paths=[()], unquoted_keys=True, string_delims=[['<|"|>', '<|"|>']])
    reports = scan(scanner, pieces(text, rng))
    assert not any(r["type"] == "error" for r in reports), reports
    assert joined(reports, "raw") == text
    assert joined(reports, "json") == dumps_arguments(expected)


def test_scanner_each_document_reports_every_element() -> None:
    text = '[{"name": "a", "arguments": {"x": 1}}, {"arguments": {"y": [2]}, "name": "b"}, {"name": "c"}]'
    scanner = JsonScanner(name_paths=[("name",)], arguments_paths=[("arguments",)], each=True)
    for chunks in ([text], list(text)):
        scanner = JsonScanner(name_paths=[("name",)], arguments_paths=[("arguments",)], each=True)
        reports = scan(scanner, chunks)
        assert [(r["item"], r["value"]) for r in reports if r["type"] == "name"] == [
            (0, "a"),
            (1, "b"),
            (2, "c"),
        ]
        assert joined(reports, "json", 0) == '{"x": 1}' and joined(reports, "json", 1) == '{"y": [2]}'
        assert [r["item"] for r in reports if r["type"] == "arguments_done"] == [0, 1]


def test_scanner_holds_members_for_typing() -> None:
    calls = []

    def hold(item: int, key: str, kind: str) -> Any:
        calls.append((item, key, kind))
        return int if key == "n" else None

    scanner = JsonScanner(arguments_paths=[("arguments",)], hold=hold)
    reports = scan(scanner, list('{"arguments": {"n": "42", "s": "x", "o": {"n": "1"}, "l": [1]}}'))
    canonical = [r["json"] for r in reports if r["type"] == "arguments" and r["json"]]
    assert "".join(canonical) == '{"n": 42, "s": "x", "o": {"n": "1"}, "l": [1]}'
    assert '"4' not in canonical and "42" in canonical  # held until complete, then written once
    assert calls == [(0, "n", "string"), (0, "s", "string"), (0, "l", "array")]  # only top-level members


def test_scanner_surrogate_escapes_split_anywhere() -> None:
    text = '{"arguments": {"e": "\\ud83d\\ude00 \\ud83d x \\udc00 \\ud83d\\u0041"}}'
    expected = json.loads(text)["arguments"]
    for cut in range(len(text) + 1):
        scanner = JsonScanner(arguments_paths=[("arguments",)])
        reports = scan(scanner, [text[:cut], text[cut:]])
        assert joined(reports, "json") == dumps_arguments(expected)
        assert json.loads(joined(reports, "json")) == expected
        joined(reports, "json").encode("utf-8")  # lone surrogates stay escapes: always encodable


def test_scanner_errors_carry_the_offset() -> None:
    reports = JsonScanner().feed('{"a": tru e}')
    assert reports == [{"type": "error", "message": "invalid number or literal 'tru'", "offset": 6}]
    assert JsonScanner().feed("{} x")[-1]["offset"] == 3
    scanner = JsonScanner()
    scanner.feed('{"a": "b')
    assert scanner.end()[0]["type"] == "error" and not scanner.done


def test_scanner_nesting_limit_matches_the_parser() -> None:
    deep = "[" * 513 + "]" * 513
    assert JsonScanner().feed(deep)[0]["type"] == "error"
    ok = JsonScanner()
    assert ok.feed("[" * 512 + "]" * 512) == [] and ok.done


def test_scanner_cost_per_feed_is_flat() -> None:
    """Each feed costs time proportional to its own text, never to what came before: the state the
    scanner keeps between feeds stays bounded however far into a long argument it is (no timing here:
    benchmarks/bench_tool_streaming.py measures the cost per chunk)."""
    code = "".join(f'line {i}: x = "a\\tb" \\ {{}} café\n' for i in range(6000))  # ~250 KB, many escapes
    text = json.dumps({"name": "write_file", "arguments": {"path": "a.py", "content": code}})
    chunks = [text[i : i + 4] for i in range(0, len(text), 4)]
    scanner = JsonScanner(name_paths=[("name",)], arguments_paths=[("arguments",)])
    feed = scanner.feed
    for chunk in chunks:
        feed(chunk)
        # nothing grows with the position: only the escape carry and the current output are kept
        assert len(scanner._carry) < 12 and not scanner._out
        assert sum(map(len, scanner._cap)) < 16 and not scanner._tok and len(scanner._stack) <= 2
    assert scanner.done
