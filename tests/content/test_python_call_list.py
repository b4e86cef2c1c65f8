"""``python-call-list`` against the reference (transformers 5.24), rule by rule.

Every text in ``CASES`` is parsed by our ``python-call-list`` and by the reference's, directly and
through a whole template (``parse_response`` of both); they must agree (the same value, with scalar
types compared, or both an error), and each case also states the rule's answer (accepted or rejected)
so that the table fails if both implementations drift the same way. Hypothesis then generates valid
call lists (random names, nested values, quoting, escapes and whitespace) and random mutations of them.
"""

from __future__ import annotations

import copy
import json
import math
import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import response_templates as rt
from call_list_gen import MAX, Writer, calls, expected_calls
from hypothesis_profiles import examples
from response_templates.content import MAX_CALL_LIST_DEPTH, get_content_parser, parse_content
from response_templates.errors import ContentError, ParseError

try:
    from transformers.utils import chat_parsing as reference
    from transformers.utils.chat_parsing.content_parsers import CONTENT_PARSERS as REFERENCE_PARSERS
except ImportError:  # pragma: no cover - the reference is a test dependency
    reference = None
    REFERENCE_PARSERS = {}

needs_reference = pytest.mark.skipif(
    reference is None, reason="transformers (the reference) is not installed"
)

ACCEPT, REJECT = "accept", "reject"


def strict_equal(a: Any, b: Any) -> bool:
    """Equality that also compares scalar types (``1`` is not ``1.0`` nor ``True``) and the sign of zero."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(strict_equal(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(strict_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float):
        return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)
    return bool(a == b)


def ours(text: str) -> tuple[str, Any]:
    try:
        return "ok", parse_content(text, "python-call-list")
    except ContentError as exc:
        return "error", exc


def theirs(text: str) -> tuple[str, Any]:
    try:
        return "ok", REFERENCE_PARSERS["python-call-list"](text, {})
    except Exception as exc:  # the reference raises ValueError
        return "error", exc


def assert_same(text: str) -> str:
    """Both parse ``text`` to the same value or both fail; the common outcome."""
    (kind, value), (ref_kind, ref_value) = ours(text), theirs(text)
    assert kind == ref_kind, f"{text!r}: ours {kind} {value!r}, reference {ref_kind} {ref_value!r}"
    if kind == "ok":
        assert strict_equal(value, ref_value), f"{text!r}: ours {value!r}, reference {ref_value!r}"
    return ACCEPT if kind == "ok" else REJECT


def call_of(value: str) -> str:
    """A call list with one argument ``x`` whose value is written ``value``."""
    return f"[f(x={value})]"


# (rule, text, accepted?) -- every rule of the grammar, with inputs on both sides of it.
CASES: list[tuple[str, str, str]] = [
    # the outer list and what may surround it
    *[("outer", t, ACCEPT) for t in ["[]", "[ ]", "[\t\n\r ]", " \t\n\r[f()] \t\n\r", "[f()]\n\n"]],
    *[
        ("outer", t, REJECT)
        for t in [
            "",
            "   ",
            "f()",
            "f(a=1)",
            "(f())",
            "[f()]x",
            "[f()];",
            "[f()] .",
            "x[f()]",
            "[f()]\x0b",
            "\x0c[f()]",
            "\u00a0[f()]",
            "[f()]\u2028",
            "[f()][g()]",
            "[f()",
            "[f(),",
            "[",
            "]",
            "[[f()]]",
            "[f()]]",
            "{f()}",
        ]
    ],
    # names
    *[
        ("names", t, ACCEPT)
        for t in [
            "[a.b-c(x=1)]",
            "[_()]",
            "[A1_b.c2-d3.e_4()]",
            "[ns.tool-name(a=1)]",
            "[f(a-b=1, c.d=2)]",
            "[True(None=1, null=2)]",
            "[class(from='SFO', to='JFK', import=1, def=2, lambda=3)]",
            "[__init__(_=1)]",
            "[a-1(b-2=1)]",
        ]
    ],
    *[
        ("names", t, REJECT)
        for t in [
            "[1f()]",
            "[a..b()]",
            "[a.-b()]",
            "[a.()]",
            "[a-()]",
            "[-a()]",
            "[.a()]",
            "[é()]",
            "[fé()]",
            "[a b()]",
            "[a/b()]",
            "[a:b()]",
            "[a::b()]",
            "[f(é=1)]",
            "[f(1a=1)]",
            "[f(a.=1)]",
            "[f(a-=1)]",
            "[()]",
            "['f'()]",
            "[f[0]()]",
            "[f.call()()]",
        ]
    ],
    # keyword arguments only
    *[
        ("arguments", t, ACCEPT)
        for t in [
            "[ f ( a = 1 , b = 2 ) , g ( ) ]",
            "[f(a=1),g(b=2)]",
            "[f(\n  a=1,\n  b=2\n)]",
            "[f(a=1), f(a=2)]",
            "[f(a=1, A=2)]",
        ]
    ],
    *[
        ("arguments", t, REJECT)
        for t in [
            "[f(1)]",
            "[f('a')]",
            "[f(a=1, 2)]",
            "[f(a=1,)]",
            "[f(,)]",
            "[f(a=1,,b=2)]",
            "[f(a=1, a=2)]",
            "[f(a=1, b=2, a=1)]",
            "[f(**k)]",
            "[f(*a)]",
            "[f(a)]",
            "[f(a=)]",
            "[f(=1)]",
            "[f(a==1)]",
            "[f(a:1)]",
            "[f()()]",
            "[f(a=1),]",
            "[,f()]",
            "[f() g()]",
            "[f(a=1 b=2)]",
            "[f(a=1;b=2)]",
            "[f(a=1)",
            "[f(a=1]",
        ]
    ],
    # strings
    *[
        ("strings", call_of(v), ACCEPT)
        for v in [
            "'x'",
            '"x"',
            "'a\"b'",
            '"a\'b"',
            "''",
            '""',
            "'tab\there'",
            "'nul\x00and\x1bcontrol\x7f'",
            "'é 😀 漢'",
            "'ends with space '",
            "'(, ] } =)'",
        ]
    ],
    *[
        ("strings", call_of(v), REJECT)
        for v in [
            "'a\nb'",
            "'a\rb'",
            '"a\r\nb"',
            "'unterminated",
            "'unterminated)]",
            "\"mixed'",
            "'''triple'''",
            '"""triple"""',
            "r'x'",
            "b'x'",
            "f'x'",
            "u'x'",
            "'a' 'b'",
            "'a''b'",
            "'raw \ud800 surrogate'",
            "'raw \udc00 surrogate'",
            "'raw pair \ud83d\ude00'",
            "`x`",
        ]
    ],
    # escapes
    *[
        ("escapes", call_of(v), ACCEPT)
        for v in [
            r"'\\ \' \" \/ \b \f \n \r \t'",
            r'"\\ \' \" \/ \b \f \n \r \t"',
            r"'\u00e9\u0000\u0041\uFFFF\uffff'",
            r"'\uD83D\uDE00'",
            r"'\ud83d\ude00 and \uDBFF\uDFFF'",
            r"'\ud800\udc00'",
            r"'\u0027 and \u0022'",
            r"'a\\'",
            r"'\\\\'",
        ]
    ],
    *[
        ("escapes", call_of(v), REJECT)
        for v in [
            r"'\x41'",
            r"'\a'",
            r"'\0'",
            r"'\101'",
            r"'\v'",
            r"'\N{DASH}'",
            r"'\U0001F600'",
            r"'\u12'",
            r"'\u12G4'",
            r"'\u 123'",
            r"'\uD83D'",
            r"'\uDE00'",
            r"'\uD83D\u0041'",
            r"'\uD83D\uD83D\uDE00'",
            r"'\uD83Dx'",
            r"'\uDE00\uD83D'",
            r"'\ud83d\\ude00'",
            "'line\\\ncontinued'",
            "'cr\\\rx'",
            r"'\s'",
            r"'\d+'",
            r"'\e'",
            r"'\q'",
            r"'a\'",
            "'\\\ud800'",
        ]
    ],
    # numbers
    *[
        ("numbers", call_of(v), ACCEPT)
        for v in [
            "0",
            "-0",
            "1",
            "-1",
            "42",
            str(MAX),
            str(-MAX),
            "1111111111111111",
            "-1111111111111111",
            "0.5",
            "-0.0",
            "0.0",
            "1e5",
            "1E+5",
            "1e-5",
            "-2.5E-3",
            "1.5e300",
            "1e308",
            "1e-400",
            "0e0",
            "0e99999999999999999999",
            "1e-99999999999999999999",
            "9007199254740993.0",
            "12345678901234567890.5",
            "1" * 300 + ".0",
            "1" * 400 + ".0e-200",
        ]
    ],
    *[
        ("numbers", call_of(v), REJECT)
        for v in [
            str(MAX + 1),
            str(-MAX - 1),
            "10000000000000000",
            "-10000000000000000",
            "1" * 20,
            "-" + "1" * 17,
            "1" * 5000,
            "00",
            "01",
            "-01",
            "+1",
            ".5",
            "1.",
            "-.5",
            "1e",
            "1e+",
            "1.e5",
            "0x10",
            "0o7",
            "0b1",
            "1_000",
            "1j",
            "inf",
            "-inf",
            "nan",
            "Infinity",
            "-Infinity",
            "NaN",
            "1e400",
            "-1e400",
            "1.0e309",
            "1" * 400,
            "1" * 400 + ".0",
            "--1",
            "-",
            "- 1",
            "1-1",
            "1+1",
            "1 2",
            "١",
        ]
    ],
    # lists and dicts
    *[
        ("containers", call_of(v), ACCEPT)
        for v in [
            "[]",
            "{}",
            "[1, 'a', [2], {'k': None}]",
            "{\"a\": 1, 'b': [true, false, null]}",
            "[ 1 , [ ] , { } ]",
            "{ 'a' : { 'b' : [ ] } }",
            "{'a': 1, 'A': 2, \"b\": 3}",
            "{'': 0}",
            r"{'\u00e9': 1}",
            "[[[[]]]]",
        ]
    ],
    *[
        ("containers", call_of(v), REJECT)
        for v in [
            "[1,]",
            "{'a': 1,}",
            "{1: 2}",
            "{a: 1}",
            "{True: 1}",
            "{None: 1}",
            "{'a': 1, 'a': 2}",
            "{'a': 1, \"a\": 2}",
            r"{'a': 1, '\u0061': 2}",
            "{'a' 1}",
            "{'a'}",
            "{'a':}",
            "{,}",
            "[,]",
            "[1 2]",
            "[1,,2]",
            "(1, 2)",
            "()",
            "(1,)",
            "{1, 2}",
            "{'a', 'b'}",
            "{**d}",
            "[*a]",
            "[1",
            "{'a': 1",
            "[1}",
            "{'a': 1]",
        ]
    ],
    # constants
    *[("constants", call_of(v), ACCEPT) for v in ["True", "true", "False", "false", "None", "null"]],
    *[
        ("constants", call_of(v), REJECT)
        for v in [
            "TRUE",
            "NULL",
            "none",
            "Null",
            "Truex",
            "True1",
            "True_",
            "True.x",
            "True-x",
            "null.null",
            "undefined",
            "x",
            "nil",
            "True()",
            "None.real",
        ]
    ],
    # expressions and other Python syntax
    *[
        ("expressions", call_of(v), REJECT)
        for v in [
            "1+2",
            "-x",
            "a.b",
            "g()",
            "lambda: 1",
            "...",
            "not True",
            "'a' + 'b'",
            "[1][0]",
            "{'a': 1}['a']",
            "True if 1 else 2",
            "[i for i in x]",
            "(1)",
            "-True",
            "-'a'",
            "~1",
            "1 if True",
            "x := 1",
        ]
    ],
    # nesting
    ("depth", call_of("[" * MAX_CALL_LIST_DEPTH + "]" * MAX_CALL_LIST_DEPTH), ACCEPT),
    ("depth", call_of("[" * (MAX_CALL_LIST_DEPTH + 1) + "]" * (MAX_CALL_LIST_DEPTH + 1)), REJECT),
    ("depth", call_of("{'a': " * MAX_CALL_LIST_DEPTH + "1" + "}" * MAX_CALL_LIST_DEPTH), ACCEPT),
    ("depth", call_of("{'a': " * (MAX_CALL_LIST_DEPTH + 1) + "1" + "}" * (MAX_CALL_LIST_DEPTH + 1)), REJECT),
    ("depth", call_of("[{'a': " * 50 + "[]" + "}]" * 50), REJECT),
    ("depth", call_of("[{'a': " * 49 + "[]" + "}]" * 49), ACCEPT),
    ("depth", call_of("[" * 5000 + "]" * 5000), REJECT),
    ("depth", call_of("{'a': " * 5000), REJECT),
    ("depth", "[" + ", ".join(call_of("[" * 100 + "]" * 100)[1:-1] for _ in range(3)) + "]", ACCEPT),
]


def _case_id(case: tuple[str, str, str]) -> str:
    rule, text, answer = case
    shown = text if len(text) <= 40 else text[:30] + f"...({len(text)})"
    return f"{rule}-{answer}-{shown!r}"


def test_cases_cover_every_rule_both_ways() -> None:
    answers = {(rule, answer) for rule, _, answer in CASES}
    for rule in ("outer", "names", "arguments", "strings", "escapes", "numbers", "containers", "constants"):
        assert (rule, ACCEPT) in answers and (rule, REJECT) in answers, rule
    assert len({text for _, text, _ in CASES}) == len(CASES), "a text is listed twice"


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_rule(case: tuple[str, str, str]) -> None:
    _, text, answer = case
    kind, value = ours(text)
    assert ("ok" if answer == ACCEPT else "error") == kind, f"{text!r}: {kind} {value!r}"
    if kind == "ok":
        json.dumps(value)  # plain JSON data
        assert all(list(call) == ["name", "arguments"] for call in value)


@needs_reference
@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_rule_against_reference(case: tuple[str, str, str]) -> None:
    _, text, answer = case
    assert assert_same(text) == answer


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[]", []),
        (
            "[get_weather(city='Paris', days=3), ns.get-time()]",
            [
                {"name": "get_weather", "arguments": {"city": "Paris", "days": 3}},
                {"name": "ns.get-time", "arguments": {}},
            ],
        ),
        (
            "[book_flight(from=\"SFO\", to='JFK')]",
            [{"name": "book_flight", "arguments": {"from": "SFO", "to": "JFK"}}],
        ),
        (
            r"[f(s='\'\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00', n=-0, m=-0.0, e=1E+2, t=true, F=False, z=null)]",
            [
                {
                    "name": "f",
                    "arguments": {
                        "s": "'\"\\/\b\f\n\r\té\U0001f600",
                        "n": 0,
                        "m": -0.0,
                        "e": 100.0,
                        "t": True,
                        "F": False,
                        "z": None,
                    },
                }
            ],
        ),
        (
            "[f(x={'b': 1, 'a': [1, {'c': None}]})]",
            [{"name": "f", "arguments": {"x": {"b": 1, "a": [1, {"c": None}]}}}],
        ),
        (f"[f(a={MAX}, b={-MAX})]", [{"name": "f", "arguments": {"a": MAX, "b": -MAX}}]),
    ],
)
def test_values(text: str, expected: list[dict[str, Any]]) -> None:
    kind, value = ours(text)
    assert kind == "ok" and strict_equal(value, expected), value


@pytest.mark.parametrize(
    ("text", "what", "offset"),
    [
        ("f()", "expected '['", 0),
        ("  [f()] x", "unexpected text after the closing ']'", 8),
        ("[f(1)]", "positional arguments are not supported", 3),
        ("[f(a=1,)]", "trailing commas", 7),
        ("[f(a=1, a=2)]", "the argument 'a' is given twice", 8),
        ("[f(x={'k': 1, 'k': 2})]", "the dict key 'k' is given twice", 14),
        ("[f(x={1: 2})]", "dict keys must be strings", 6),
        ("[f(x='a\nb')]", "a raw line break inside a string", 7),
        ("[f(x='abc)]", "a string is not closed", 5),
        (r"[f(x='ab\x41')]", r"an unsupported escape '\\x' in a string", 8),
        (r"[f(x='\ud800')]", "a lone surrogate escape", 6),
        ("[f(x='\ud800')]", "a lone surrogate code point", 6),
        (f"[f(x={MAX + 1})]", "an integer outside", 5),
        ("[f(x=1e999)]", "a number too large", 5),
        ("[f(x=(1, 2))]", "expected a value", 5),
        ("[f(x=" + "[" * 101, "nest more than 100 levels deep", 105),
        ("[f(a=1", "expected ',' or ')'", 6),
    ],
)
def test_errors_say_what_and_where(text: str, what: str, offset: int) -> None:
    with pytest.raises(ContentError, match=r"^python-call-list: ") as info:
        parse_content(text, "python-call-list")
    message = str(info.value)
    assert what in message and f"at offset {offset} of the region" in message, message


def test_is_a_base_parser_that_does_not_stream() -> None:
    parser = get_content_parser("python-call-list", "tool_calls")
    assert parser.streamable is False
    assert parser.validate({}, "tool_calls") == {}
    if REFERENCE_PARSERS:
        from transformers.utils.chat_parsing.content_parsers import STREAMABLE_PARSERS

        assert "python-call-list" not in STREAMABLE_PARSERS


@needs_reference
def test_content_args_are_ignored_as_the_reference_ignores_them() -> None:
    """The reference's parser takes no arguments and ignores any it is given; so does ours (lint warns)."""
    args = {"strip": False, "name_suffix": ".call"}
    text = "[f.call(a=1)]"
    assert parse_content(text, "python-call-list", args) == REFERENCE_PARSERS["python-call-list"](text, args)
    template = copy.deepcopy(TEMPLATE)
    template["fields"]["tool_calls"]["content_args"] = args
    output = f"<tool_calls>{text}</tool_calls>"
    assert strict_equal(
        dict(rt.parse_response(output, template, prefix="")),
        reference.parse_response(output, copy.deepcopy(template), prefix=""),
    )


def test_linear_time_inputs_stay_cheap() -> None:
    """Long regions of each kind are read in one pass (no quadratic rescans, no huge conversions)."""
    n = 200_000
    long_string = call_of("'" + "ab\\n" * n + "'")
    assert ours(long_string)[1][0]["arguments"]["x"] == "ab\n" * n
    many_args = "[f(" + ", ".join(f"a{i}={i}" for i in range(20_000)) + ")]"
    assert len(ours(many_args)[1][0]["arguments"]) == 20_000
    assert ours(call_of("1" * 1_000_000))[0] == "error"
    assert ours(call_of("[" + "1, " * n + "1]"))[0] == "ok"
    assert ours("[" + " " * n)[0] == "error"


# ------------------------------------------------------------------------------------ whole templates

CALL = {"type": "function", "function": {"name": "{name}", "arguments": "{arguments}"}}
TEMPLATE = {
    "start_anchor": "<|im_start|>assistant\n",
    "defaults": {"role": "assistant"},
    "fields": {
        "tool_calls": {
            "open": "<tool_calls>",
            "close": "</tool_calls>",
            "content": "python-call-list",
            "transform_each": True,
            "transform": CALL,
        },
        "content": {"close": "<|im_end|>"},
    },
}


def both_messages(text: str) -> tuple[tuple[str, Any], tuple[str, Any]]:
    try:
        mine: tuple[str, Any] = ("ok", rt.parse_response(text, copy.deepcopy(TEMPLATE), prefix=""))
    except ParseError as exc:
        mine = ("error", exc)
    assert reference is not None
    try:
        ref: tuple[str, Any] = ("ok", reference.parse_response(text, copy.deepcopy(TEMPLATE), prefix=""))
    except Exception as exc:
        ref = ("error", exc)
    return mine, ref


@needs_reference
@pytest.mark.parametrize("case", CASES[::3], ids=_case_id)
def test_rule_through_a_template(case: tuple[str, str, str]) -> None:
    _, text, answer = case
    if "<" in text:
        pytest.skip("the text would close the region")
    output = f"Checking.<tool_calls>{text}</tool_calls><|im_end|>"
    (kind, mine), (ref_kind, ref) = both_messages(output)
    assert (kind, ref_kind) == (("ok", "ok") if answer == ACCEPT else ("error", "error")), (mine, ref)
    if kind == "ok":
        assert strict_equal(dict(mine), ref), (mine, ref)
        assert all(c["type"] == "function" for c in mine.get("tool_calls", []))


@needs_reference
def test_stream_chunks_are_dirty_and_the_value_comes_at_close() -> None:
    text = "<tool_calls>[get_weather(city='Paris'), now()]</tool_calls>done<|im_end|>"
    parser = rt.ResponseParser(copy.deepcopy(TEMPLATE), prefix="")
    events = list(parser.initial_events)
    for char in text:
        events.extend(parser.feed(char))
    message, final = parser.finalize()
    events.extend(final)
    chunks = [e for e in events if e["type"] == "region_chunk" and e["field"] == "tool_calls"]
    assert chunks and all(e["dirty"] for e in chunks)
    closes = [e for e in events if e["type"] == "region_close" and e["field"] == "tool_calls"]
    assert [c["value"] for c in closes] == [
        [
            {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}},
            {"type": "function", "function": {"name": "now", "arguments": {}}},
        ]
    ]
    assert strict_equal(dict(message), reference.parse_response(text, copy.deepcopy(TEMPLATE), prefix=""))


# ------------------------------------------------------------------------------------ generated inputs
# (the generator is tests/call_list_gen.py)


@needs_reference
@settings(max_examples=examples(300))
@given(calls, st.randoms(use_true_random=False))
def test_generated_valid_calls_agree(data: list[tuple[str, dict[str, Any]]], rng: random.Random) -> None:
    text = Writer(rng).calls(data)
    kind, value = ours(text)
    assert kind == "ok", f"{text!r}: {value}"
    assert strict_equal(value, expected_calls(data)), (text, value)
    assert assert_same(text) == ACCEPT


MUTATION_PIECES = [
    *"[](){}=,:'\"\\ \n\t.-_+0e1xuTN",
    "True",
    "null",
    "\\u",
    "\\uD83D",
    "\\x",
    "'a'",
    "(1,)",
    "\ud800",
    "9" * 17,
    "1e400",
    "\u00a0",
]


@needs_reference
@settings(max_examples=examples(500))
@given(calls, st.randoms(use_true_random=False), st.data())
def test_mutated_calls_agree(data: list[tuple[str, dict[str, Any]]], rng: random.Random, draw: Any) -> None:
    text = Writer(rng).calls(data)
    for _ in range(draw.draw(st.integers(1, 3))):
        where = draw.draw(st.integers(0, len(text)))
        kind = draw.draw(st.sampled_from(["insert", "delete", "replace", "duplicate"]))
        piece = draw.draw(st.sampled_from(MUTATION_PIECES))
        span = draw.draw(st.integers(1, 4))
        if kind == "insert":
            text = text[:where] + piece + text[where:]
        elif kind == "delete":
            text = text[:where] + text[where + span :]
        elif kind == "replace":
            text = text[:where] + piece + text[where + span :]
        else:
            text = text[:where] + text[where : where + span] * 2 + text[where + span :]
    assert_same(text)


@needs_reference
@settings(max_examples=examples(300))
@given(st.lists(st.sampled_from(MUTATION_PIECES), max_size=30).map("".join))
def test_arbitrary_texts_agree(text: str) -> None:
    assert_same(text)
    assert_same("[f(x=" + text + ")]")
