"""Grammars from tool schemas that use ``$ref`` (issue 28, item 10), and from every tool shape (item 5).

A tool's schema is checked and read once, by the same code, for parsing and for ``grammar.build``
(the refusals themselves are tested in ``tests/test_tools.py``). Here: a schema with references (one of
them recursive, an enum and an integer behind ``$ref``, as Pydantic writes them) gives every family a
grammar that llguidance compiles, where each reference still resolves once the schema is placed in the
grammar (a whole call object, or one parameter standing alone in an XML or Python call); random walks
through it parse back, with the same tools, to arguments valid for the schema (typed through the
references); and the Anthropic shape of the tool gives the same grammar as the chat shape.
"""

from __future__ import annotations

import random
import zlib
from typing import Any

import grammar_harness as gh
import jsonschema
import pytest

import response_templates as rt
from response_templates import grammar, library

#: Walks per family at most (it stops once three calls are checked).
WALKS = 16
FAMILIES = sorted(name for name, cov in grammar.coverage().items() if cov.compiles and cov.calls)

ROUTE = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "enum": ["Paris", "Rome"]},
        "days": {"$ref": "#/$defs/Days"},
        "unit": {"$ref": "#/$defs/Unit"},
        "stops": {"$ref": "#/$defs/Node"},
    },
    "required": ["city", "days", "unit", "stops"],
    "additionalProperties": False,
    "$defs": {
        "Days": {"type": "integer", "minimum": 1, "maximum": 9},
        "Unit": {"type": "string", "enum": ["C", "F"]},
        "Node": {
            "type": "object",
            "properties": {
                "at": {"type": "integer"},
                "next": {"anyOf": [{"$ref": "#/$defs/Node"}, {"type": "null"}]},
            },
            "required": ["at", "next"],
            "additionalProperties": False,
        },
    },
}
CHAT = [{"type": "function", "function": {"name": "plan_route", "parameters": ROUTE}}]
ANTHROPIC = [{"name": "plan_route", "description": "Plan a route.", "input_schema": ROUTE}]


@pytest.mark.parametrize("family", FAMILIES)
def test_schemas_with_references_make_grammars_that_hold(family: str) -> None:
    fam = library.family(family)
    prompt = fam.generation_prompt
    # No reasoning and no free text in the arguments (the city is an enum): walks then finish.
    request: dict[str, Any] = {"tool_choice": "required", "reasoning": "forbidden", "prefix": prompt}
    g, engine = gh.build_with_tokens(grammar, family, tools=CHAT, **request)
    engine.matcher(g.lark)  # llguidance compiles it: every reference resolves where the schema now sits
    same = grammar.build(family, tools=ANTHROPIC, **request)
    plain = grammar.build(family, tools=CHAT, **request)
    assert same.lark == plain.lark and same.structural_tag == plain.structural_tag
    rng = random.Random(zlib.crc32(family.encode()))
    template = fam.template()
    checked = 0
    for _ in range(WALKS):
        if checked >= 3:
            break
        walk = engine.walk(g.lark, rng, max_tokens=600, p_close=0.7)
        if not walk.finished:
            continue
        message: dict[str, Any] = rt.parse_response(walk.text, template, prefix=prompt, tools=ANTHROPIC)
        calls = message.get("tool_calls") or []
        assert calls, walk.text
        for call in calls:
            arguments = call.get("function", call)["arguments"]
            jsonschema.validate(arguments, ROUTE)  # typed through the references, whatever the syntax
            checked += 1
    assert checked, "no walk finished"
