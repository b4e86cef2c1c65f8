"""Extension ``json-value-end``: a region that ends where its JSON value ends (docs/extensions.md)."""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import response_templates as rt
from extension_templates import pieces as _pieces
from extension_templates import template
from hypothesis_profiles import examples
from response_templates import library
from response_templates.errors import TemplateError

# ------------------------------------------------------------------------------------- json-value-end


def _jv_template(content: str = "text", **extra: Any) -> dict[str, Any]:
    field: dict[str, Any] = {"open": "<j>", "close_json": True, "repeats": True, "content": content, **extra}
    if content == "text":
        field["content_args"] = {"strip": False}
    return template({"j": field, "rest": {"content_args": {"strip": False}}}, ["json-value-end"])


def _run_all(t: dict[str, Any], pieces: list[str]) -> tuple[Any, list[Any], dict[str, str]]:
    """Message (or finalize's error) with every error recorded on the way (``parser.errors``), the
    open/close events, and the chunk text per field: all of this is the same for every chunking. (How many
    calls raise is not: several regions failing in one call raise once, with all of them in
    ``parser.errors``.)"""
    p = rt.ResponseParser(t, prefix="")
    events: list[Any] = []
    for piece in pieces:
        try:
            events += p.feed(piece)
        except rt.ParseError as exc:
            events += exc.events
    try:
        message, final = p.finalize()
        events += final
    except rt.ParseError as exc:
        events += exc.events
        message = ("error", str(exc))
    recorded = [str(exc).split(" (")[0] for exc in p.errors]
    if recorded:
        message = (message, recorded)
    chunks: dict[str, str] = {}
    for e in events:
        if isinstance(e, dict) and e["type"] == "region_chunk":
            chunks[e["field"]] = chunks.get(e["field"], "") + e["text"]
    boundaries = [
        e if isinstance(e, tuple) else (e["type"], e["field"], e.get("value"))
        for e in events
        if isinstance(e, tuple) or e["type"] != "region_chunk"
    ]
    return message, boundaries, chunks


_JV_VOCAB = [
    "<j>",
    " ",
    "\n",
    "{",
    "}",
    "[",
    "]",
    '"',
    "\\",
    '"}"',
    "12",
    "true",
    "x",
    ";",
    ",",
    ":",
    '\\"',
    "-3.5e2",
]


@settings(max_examples=examples(300), deadline=None)
@given(
    st.lists(st.sampled_from(_JV_VOCAB), max_size=16),
    st.integers(0, 2**16),
    st.sampled_from(["text", "json"]),
)
def test_json_value_end_chunking_never_changes_the_result(words: list[str], seed: int, content: str) -> None:
    t = _jv_template(content)
    text = "".join(words)
    whole = _run_all(t, [text])
    assert _run_all(t, list(text)) == whole
    assert _run_all(t, _pieces(text, random.Random(seed))) == whole
    # Nothing lost: every character is in some region or in an open delimiter.
    message, _, chunks = whole
    if not isinstance(message, tuple):  # after an error the rest is read by later calls
        # (a "<j>" inside a region's JSON string is routed as text, hence >=)
        assert sum(map(len, chunks.values())) + 3 * text.count("<j>") >= len(text)


_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(alphabet='ab"\\}]{[ ;\n\u00e9', max_size=6),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(alphabet='k"}', max_size=3), inner, max_size=3)
    ),
    max_leaves=8,
)


@settings(max_examples=examples(300), deadline=None)
@given(
    _JSON,
    st.sampled_from(["", " ", "\n  "]),
    st.sampled_from([" tail", ";x", "<j>[1] y", "\n", ""]),
    st.integers(0, 2**16),
)
def test_json_value_end_ends_exactly_where_the_value_ends(value: Any, ws: str, after: str, seed: int) -> None:
    import json

    dumped = json.dumps(value, ensure_ascii=False)
    text = "<j>" + ws + dumped + after
    t = _jv_template()
    message, _, _ = _run_all(t, _pieces(text, random.Random(seed)))
    first = ws + dumped
    assert message["j"][0] == first
    # The text after the value goes back to the outer state (another region, or the implicit field).
    rest = after.replace("<j>[1]", "")
    assert message.get("rest", "") == rest
    assert message["j"][1:] == (["[1]"] if "<j>" in after else [])
    parsed = rt.parse_response(text, _jv_template("json"), prefix="")
    assert parsed["j"][0] == value or (value in ({}, [], "", None) and not parsed.get("j"))


def test_json_value_end_scalars_wait_for_the_next_character() -> None:
    p = rt.ResponseParser(_jv_template("json"), prefix="")
    events = p.feed("<j>12")
    assert [e["type"] for e in events] == ["region_open", "region_chunk"]
    events = p.feed("3 ok")
    assert [e for e in events if e["type"] == "region_close"] == [
        {"type": "region_close", "field": "j", "value": [123][0]}
    ]
    message, _ = p.finalize()
    assert message["j"] == [123] and message["rest"] == " ok"
    p = rt.ResponseParser(_jv_template("json"), prefix="")
    p.feed('<j>{"a": 1}')  # an object is final at its closing brace: no wait
    assert p.finalize()[0]["j"] == [{"a": 1}]


def test_json_value_end_malformed_runs_to_the_end_and_the_parser_reports_it() -> None:
    for text in ("<j>{]} more", "<j>) more", '<j>{"a": "unterminated'):
        with pytest.raises(rt.ParseError) as info:
            rt.parse_response(text, _jv_template("json"), prefix="")
        assert info.value.field == "j"
    message = rt.parse_response("<j>{]} more", _jv_template(), prefix="")
    assert message["j"] == ["{]} more"]


@pytest.mark.parametrize(
    ("fields", "key", "needle"),
    [
        ({"j": {"close_json": True}}, "close_json", "implicit"),
        ({"j": {"open": "<j>", "close": "</j>", "close_json": True}}, "close_json", "cannot be combined"),
        ({"j": {"open": "<j>", "close_json": 1}}, "close_json", "true or false"),
    ],
)
def test_json_value_end_rules(fields: dict[str, Any], key: str, needle: str) -> None:
    with pytest.raises(TemplateError, match=needle) as info:
        rt.load_template(template(fields, ["json-value-end"]))
    assert info.value.field == "j" and info.value.key == key


def test_json_value_end_without_declaration_names_field_key_and_extension() -> None:
    with pytest.raises(TemplateError, match="json-value-end") as info:
        rt.load_template(template({"j": {"open": "<j>", "close_json": True}}))
    assert info.value.field == "j" and info.value.key == "close_json"


def test_json_value_end_is_linear() -> None:
    import time

    def cost(n: int) -> float:
        text = "<j>" + '{"a": [' + ", ".join(['"x\\"}]"'] * n) + "]}" + " tail"
        p = rt.ResponseParser(_jv_template("json"), prefix="")
        start = time.perf_counter()
        for i in range(0, len(text), 7):
            p.feed(text[i : i + 7])
        p.finalize()
        return time.perf_counter() - start

    small, big = cost(2000), cost(16000)
    assert big < small * 8 * 4


def test_llama_3_json_ends_each_call_where_its_json_ends() -> None:
    fam = library.family("llama-3-json")
    assert "E3" in fam.uses and "json-value-end" in fam.template().extensions
    text = (
        '<|python_tag|>{"name": "f", "parameters": {"q": "a; b } {\\"name\\": x"}}; '
        '{"type": "function", "name": "g", "parameters": {}}<|eom_id|>'
    )
    whole = None
    for size in (len(text), 1, 5):
        p = rt.ResponseParser(fam.template(), prefix=fam.generation_prompt)
        for start in range(0, len(text), size):
            p.feed(text[start : start + size])
        message, _ = p.finalize()
        assert "content" not in message
        assert [c["function"] for c in message["tool_calls"]] == [
            {"name": "f", "arguments": {"q": 'a; b } {"name": x'}},
            {"name": "g", "arguments": {}},
        ]
        whole = whole or message
        assert message == whole
