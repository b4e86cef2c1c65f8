"""Argument values the grammar writes beyond one spelling per type, each where the parser reads it (issue 32,
item 1; docs/grammar.md, "Argument values"):

* Python-call arguments hold Python literals at every depth (``{'city': 'Paris', 'ok': True}``), typed by
  the schema where it has one;
* a JSON body's scalar argument may be the string the parser's argument typing casts (``"2"``, ``"true"``);
* a string parameter may be a CDATA section where the template unwraps one (MiniCPM 5);
* a GCML/DSML string parameter may carry the JSON attribute (``string="false"``) or none at all.

Each output is checked in both forms (the Lark grammar in llguidance, the structural tag in xgrammar where
it is installed) and by the parser: accepted texts parse into calls valid for the tools. Random walks
through the grammars of these families, with tools whose schemas take these paths, parse likewise.
"""

from __future__ import annotations

import json
import random
import zlib
from typing import Any

import grammar_harness as gh
import pytest

import response_templates as rt
from response_templates import grammar, library


def _tool(name: str, properties: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    parameters: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        parameters["required"] = required
    return {"type": "function", "function": {"name": name, "parameters": parameters}}


REGISTER = _tool(
    "register_user",
    {
        "name": {"type": "string"},
        "address": {"type": "object"},
        "aliases": {"type": "array"},
        "role": {"type": "null"},
    },
)
PLACE = _tool(
    "set_place",
    {
        "place": {
            "type": "object",
            "properties": {
                "city": {"type": "string"},
                "zip": {"type": "integer"},
                "main": {"type": "boolean"},
            },
            "required": ["city"],
        },
        "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 2},
    },
    ["place"],
)
LOOKUP = _tool(
    "lookup",
    {
        "query": {"type": "string"},
        "limit": {"type": "integer"},
        "enabled": {"type": "boolean"},
        "ratio": {"type": ["number", "null"]},
    },
)
TYPED = _tool("f", {"note": {"type": "string"}, "n": {"type": "string"}, "k": {"type": "integer"}})
HTML = _tool("html", {"markup": {"type": "string"}}, ["markup"])

K2 = "<|ifm|im_start|>assistant\n<ifm|think>\n</ifm|think>\n"
GIGA = "user<|role_sep|>\nHi<|message_sep|>\n\nassistant<|role_sep|>\n"
MINICPM = "<|im_start|>assistant\n<think>\n\n</think>\n\n"
GCML_CALL = '<｜GCML｜tool_calls><｜GCML｜invoke name="f">{}</｜GCML｜invoke></｜GCML｜tool_calls>'
P = '<｜GCML｜parameter name="'
PY = "<|python_start|>[{}]<|python_end|>"
E = "</｜GCML｜parameter>"

#: (family, tools, prompt, output, whether the grammar accepts it)
CASES: list[tuple[str, list[dict[str, Any]], str | None, str, bool]] = [
    # Python literals inside Python-call arguments
    (
        "olmo-3",
        [REGISTER],
        None,
        "<function_calls>register_user(name='Jo', address={'city': 'Paris', "
        "'ok': True, 'n': [1, 2.5, None]}, aliases=['J', \"Joe\"], role=None)</function_calls>",
        True,
    ),
    (
        "olmo-3",
        [REGISTER],
        None,
        "<function_calls>register_user(address={\"a\": {'b': null}})</function_calls>",
        True,
    ),
    (
        "lfm2",
        [REGISTER],
        None,
        "<|tool_call_start|>[register_user(address={'on': False})]<|tool_call_end|>",
        True,
    ),
    (
        "pythonic",
        [PLACE],
        None,
        PY.format("set_place(place={'city': 'Paris', 'zip': 75001}, tags=['a', 'b'])"),
        True,
    ),
    # the schema still types a nested object: its integer is an integer, its required key is written
    ("pythonic", [PLACE], None, PY.format("set_place(place={'city': 'Paris', 'zip': '75001'})"), False),
    ("pythonic", [PLACE], None, PY.format("set_place(place={'zip': 75001})"), False),
    ("pythonic", [PLACE], None, PY.format("set_place(place={'city': 'P'}, tags=['a', 'b', 'c'])"), False),
    # a string never holds a line break (python-calls reads a call per line), nor an overlong integer
    (
        "olmo-3",
        [REGISTER],
        None,
        "<function_calls>register_user(address={'k': 'a\u2028b'})</function_calls>",
        False,
    ),
    (
        "olmo-3",
        [REGISTER],
        None,
        "<function_calls>register_user(address={'k': 12345678901234567})</function_calls>",
        False,
    ),
    # JSON bodies: scalars also as the strings the argument typing casts
    (
        "k2-horizon",
        [LOOKUP],
        K2,
        '<ifm|tool_call>{"name": "lookup", "arguments": {"limit": "2"}}</ifm|tool_call>',
        True,
    ),
    (
        "k2-horizon",
        [LOOKUP],
        K2,
        '<ifm|tool_call>{"name": "lookup", "arguments": {"limit": "-3", '
        '"enabled": "True", "ratio": "0.5"}}</ifm|tool_call>',
        True,
    ),
    (
        "k2-horizon",
        [LOOKUP],
        K2,
        '<ifm|tool_call>{"name": "lookup", "arguments": {"ratio": "None"}}</ifm|tool_call>',
        True,
    ),
    (
        "k2-horizon",
        [LOOKUP],
        K2,
        '<ifm|tool_call>{"name": "lookup", "arguments": {"limit": "2x"}}</ifm|tool_call>',
        False,
    ),
    (
        "k2-horizon",
        [LOOKUP],
        K2,
        '<ifm|tool_call>{"name": "lookup", "arguments": {"limit": "true"}}</ifm|tool_call>',
        False,
    ),
    (
        "qwen3",
        [LOOKUP],
        None,
        '<tool_call>\n{"name": "lookup", "arguments": {"enabled": "false"}}\n</tool_call>',
        True,
    ),
    # GCML: a string parameter under the JSON attribute, or with no attribute
    ("gigachat3.5", [TYPED], GIGA, GCML_CALL.format(f'{P}note" string="false">"hello"{E}'), True),
    (
        "gigachat3.5",
        [TYPED],
        GIGA,
        GCML_CALL.format(f'{P}note">plain{E}{P}n" string="false">not json{E}'),
        True,
    ),
    ("gigachat3.5", [TYPED], GIGA, GCML_CALL.format(f'{P}note" string="false">123{E}'), False),
    ("gigachat3.5", [TYPED], GIGA, GCML_CALL.format(f'{P}note" string="false">nullish{E}'), False),
]


def _judge(family: str, tools: list[dict[str, Any]], prompt: str | None, text: str, plain: bool) -> Any:
    prefix = library.family(family).generation_prompt if prompt is None else prompt
    # (content never holds a call opener: an output the call syntax refuses cannot pass as content)
    kwargs: dict[str, Any] = {"tools": tools, "tool_choice": "auto", "prefix": prefix}
    if plain:
        g = grammar.build(family, **kwargs)
        return g, gh.engine_for(()), prefix
    g, engine = gh.build_with_tokens(grammar, family, **kwargs)
    return g, engine, prefix


@pytest.mark.parametrize("plain", [False, True], ids=["special-tokens", "plain-text"])
@pytest.mark.parametrize(("family", "tools", "prompt", "text", "accepted"), CASES)
def test_lark_form(
    family: str, tools: list[dict[str, Any]], prompt: str | None, text: str, accepted: bool, plain: bool
) -> None:
    g, engine, prefix = _judge(family, tools, prompt, text, plain)
    ok, why = engine.accepts(g.lark, text)
    assert ok is accepted, why
    if accepted:  # what the grammar lets through, the parser reads as valid calls
        message = rt.parse_response(text, library.family(family).template(), prefix=prefix, tools=tools)
        assert message["tool_calls"]
        assert gh.check_message(message, tools) == []


@pytest.mark.parametrize(("family", "tools", "prompt", "text", "accepted"), CASES)
def test_structural_tag_form(
    family: str, tools: list[dict[str, Any]], prompt: str | None, text: str, accepted: bool
) -> None:
    pytest.importorskip("xgrammar")
    import xgrammar_harness as xh

    g, engine, _ = _judge(family, tools, prompt, text, False)
    xe = xh.xengine_for(engine)
    ok, why = xe.accepts(xe.compile(g.structural_tag), text)
    assert ok is accepted, why


def test_a_cdata_section_may_hold_the_close_tag_where_the_template_unwraps_it() -> None:
    """MiniCPM 5 reads ``<![CDATA[...]]>`` verbatim, ``</param>`` inside too. (Where ``</param>`` is a
    special token, free text never holds it: the grammar built with it as one rejects this output.)"""
    text = '<function name="html"><param name="markup"><![CDATA[<b>x</b> </param>]]></param></function>'
    g, engine, prefix = _judge("minicpm5", [HTML], MINICPM, text, True)
    assert engine.accepts(g.lark, text) == (True, "")
    message = rt.parse_response(text, library.family("minicpm5").template(), prefix=prefix, tools=[HTML])
    arguments = message["tool_calls"][0]["function"]["arguments"]
    assert (json.loads(arguments) if isinstance(arguments, str) else arguments) == {
        "markup": "<b>x</b> </param>"
    }
    # the section's text ends at its first ``]]>``, which the close tag must follow
    early = '<function name="html"><param name="markup"><![CDATA[a]]>b</param>]]></param></function>'
    assert not engine.accepts(g.lark, early)[0]
    if (xh := _xgrammar_harness()) is not None:
        xe = xh.xengine_for(engine)
        compiled = xe.compile(g.structural_tag)
        assert xe.accepts(compiled, text) == (True, "")
        assert not xe.accepts(compiled, early)[0]


def _xgrammar_harness() -> Any:
    try:
        import xgrammar_harness as xh
    except ImportError:
        return None
    return xh


#: (K2 Horizon's walks seldom finish within the cap: Qwen3 walks the JSON bodies.)
WALK_FAMILIES = [
    "olmo-3",
    "lfm2",
    "pythonic",
    "qwen3",
    "gigachat3.5",
    "deepseek-v3.2",
    "minicpm5",
    "qwen3-coder",
]


@pytest.mark.parametrize("family", WALK_FAMILIES)
def test_random_walks_with_these_values_parse_to_valid_calls(family: str) -> None:
    tools = [REGISTER, PLACE, LOOKUP, TYPED]
    fam = library.family(family)
    prompt = fam.generation_prompt
    g, engine = gh.build_with_tokens(grammar, family, tools=tools, tool_choice="required", prefix=prompt)
    rng = random.Random(zlib.crc32(family.encode()))
    finished = 0
    for _ in range(12):
        walk = engine.walk(g.lark, rng, max_tokens=400)
        if not walk.finished:
            continue
        finished += 1
        message = rt.parse_response(walk.text, fam.template(), prefix=prompt, tools=tools)
        assert gh.check_message(message, tools, tool_choice="required") == [], walk.text
    assert finished >= 4
