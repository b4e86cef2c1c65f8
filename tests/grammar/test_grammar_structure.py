"""The grammar's structure where the template reads more than one layout (issue 32, item 1).

* XML parameters of a tool with more than four parameters, in any order: the required ones each exactly
  once, optional ones anywhere between them, possibly repeated (the parser keeps the last value). Both
  forms write the same bounded repetition; random walks through a large tool parse into valid calls.
* A reasoning block reopened after content where calls may be written inside reasoning (DeepSeek V4.1).
* Delimiters with a session suffix (Hy: ``<think:opensource>``, ``</think:6124c78e>``), and free text
  that must not hold a suffixed call opener (the parser would read a call there).
"""

from __future__ import annotations

import json
import random
from typing import Any

import grammar_harness as gh
import pytest

import response_templates as rt
from response_templates import grammar
from response_templates.grammar.spelling import suffix_spelling, suffixed_starts


def _tool(name: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "parameters": {
                "type": "object",
                "properties": properties,
                "required": required,
                "additionalProperties": False,
            },
        },
    }


#: Six parameters, two of them required.
CONFIGURE = _tool(
    "configure",
    {
        "name": {"type": "string"},
        "size": {"type": "integer", "minimum": 0},
        "mode": {"type": "string", "enum": ["fast", "slow"]},
        "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 2},
        "note": {"type": "string"},
        "flag": {"type": "boolean"},
    },
    ["name", "size"],
)

#: Eight parameters, none required.
EIGHT = _tool("eight", {f"p{i}": {"type": "integer" if i % 2 else "string"} for i in range(8)}, [])

#: Families whose calls carry XML parameters, with a prompt (the last one leaves reasoning open, and
#: its calls may be written inside the reasoning).
XML_FAMILIES = {
    "qwen3-coder": "",
    "minimax-m2": "",
    "glm-4.7": "",
    "deepseek-v3.2": "",
    "solar-open-2": "<|im:start|>assistant<|im:content|><|think:start|>",
}


def _qwen_call(*params: tuple[str, str]) -> str:
    body = "".join(f"<parameter={key}>\n{value}\n</parameter>\n" for key, value in params)
    return f"<tool_call>\n<function=configure>\n{body}</function>\n</tool_call>"


def _accepts(family: str, text: str, prefix: str = "", tools: list[dict[str, Any]] | None = None) -> bool:
    g, engine = gh.build_with_tokens(grammar, family, tools=tools or [CONFIGURE], prefix=prefix)
    return engine.accepts(g.lark, text)[0]


@pytest.mark.parametrize(
    ("params", "accepted"),
    [
        ((("name", "a"), ("size", "1")), True),  # the schema's order
        ((("size", "1"), ("name", "a")), True),  # required ones swapped
        ((("note", "x"), ("size", "1"), ("flag", "true"), ("name", "a"), ("mode", "slow")), True),
        ((("tags", '["t"]'), ("flag", "false"), ("size", "2"), ("note", "n"), ("name", "a")), True),
        ((("note", "x"), ("name", "a"), ("note", "y"), ("size", "1")), True),  # an optional one twice
        ((("name", "a"),), False),  # a required one missing
        ((("note", "x"), ("flag", "true")), False),
        ((("name", "a"), ("size", "1"), ("name", "b")), False),  # a required one twice
        ((("name", "a"), ("size", "-1")), False),  # a value against its schema
        ((("name", "a"), ("size", "1"), ("other", "1")), False),  # a parameter the tool has not
    ],
)
def test_xml_parameters_of_a_large_tool_in_any_order(
    params: tuple[tuple[str, str], ...], accepted: bool
) -> None:
    text = _qwen_call(*params)
    assert _accepts("qwen3-coder", text) is accepted, text
    if accepted:  # and the parser reads it into a valid call
        message = rt.parse_response(text, rt.templates.get("qwen3-coder"), prefix="", tools=[CONFIGURE])
        assert not gh.check_message(message, [CONFIGURE], tool_choice="auto", parallel_tool_calls=True)


def test_the_two_forms_write_the_same_bounded_run() -> None:
    small = grammar.build("qwen3-coder", tools=[gh.WALK_TOOLS[0]])
    assert '"repeat"' not in json.dumps(small.structural_tag)  # up to four parameters: exact
    g = grammar.build("qwen3-coder", tools=[CONFIGURE])
    tag = json.dumps(g.structural_tag)
    # one run of the four optional parameters, bounded by their number, in both forms
    assert '"type": "repeat", "min": 0, "max": 4' in tag
    assert "{0,4}" in g.lark
    assert '"star"' not in tag


def test_the_run_stays_small() -> None:
    """The structural tag has no shared rules: its size grows with the orders of the required ones."""
    for tool in (CONFIGURE, EIGHT):
        g = grammar.build("qwen3-coder", tools=[tool])
        assert len(json.dumps(g.structural_tag)) < 200_000
    many = _tool("many", {f"r{i}": {"type": "integer"} for i in range(10)}, [f"r{i}" for i in range(5)])
    assert len(json.dumps(grammar.build("qwen3-coder", tools=[many]).structural_tag)) < 400_000


def test_eight_parameters_in_any_order() -> None:
    params = [(f"p{i}", str(i) if i % 2 else f"s{i}") for i in reversed(range(8))]
    body = "".join(f"<parameter={key}>\n{value}\n</parameter>\n" for key, value in params)
    text = f"<tool_call>\n<function=eight>\n{body}</function>\n</tool_call>"
    assert _accepts("qwen3-coder", text, tools=[EIGHT])


@pytest.mark.parametrize("family", sorted(XML_FAMILIES))
def test_xgrammar_compiles_the_run(family: str) -> None:
    xgr = pytest.importorskip("xgrammar")
    info = xgr.TokenizerInfo(
        [f"<t{i}>" for i in range(64)] + list("abcdefghijklmnopqrstuvwxyz<>/=\n {}:,0123")
    )
    compiler = xgr.GrammarCompiler(info)
    for tool in (CONFIGURE, EIGHT):
        g = grammar.build(family, tools=[tool], prefix=XML_FAMILIES[family] or None)
        compiler.compile_structural_tag(json.dumps(g.structural_tag))  # raises if refused


@pytest.mark.parametrize("family", sorted(XML_FAMILIES))
def test_random_walks_through_a_large_tool_parse_to_valid_calls(family: str) -> None:
    """The looser run stays sound: every finished walk parses into calls valid for the request."""
    tools = [CONFIGURE, EIGHT]
    template = rt.templates.get(family)
    prefix = XML_FAMILIES[family]
    rng = random.Random(family)
    checked = 0
    for choice in ("required", "auto"):
        g, engine = gh.build_with_tokens(grammar, family, tools=tools, tool_choice=choice, prefix=prefix)
        for _ in range(4):
            walk = engine.walk(g.lark, rng, max_tokens=500)
            if not walk.finished:
                continue
            checked += 1
            message = rt.parse_response(walk.text, template, prefix=prefix, tools=tools)
            problems = gh.check_message(message, tools, tool_choice=choice, parallel_tool_calls=True)
            assert not problems, (problems, walk.text)
    assert checked


# ------------------------------------------------------------------------------------------- reasoning


def test_a_second_reasoning_block_after_content_where_calls_sit_in_reasoning() -> None:
    tools = [_tool("write_file", {"content": {"type": "string"}}, [])]
    prefix = "<｜User｜>Write it.<｜Assistant｜><think>"
    call = (
        '<｜DSML｜ calls><｜DSML｜ invoke name="write_file"><｜DSML｜ parameter name="content" '
        'string="true">x</｜DSML｜ parameter></｜DSML｜ invoke></｜DSML｜ calls>'
    )
    for text in (
        "first</think>Writing now.<think>recheck</think>" + call,
        "first</think>Writing now.<think>recheck " + call + " more</think>Done.",
    ):
        assert _accepts("deepseek-v4.1", text, prefix, tools), text
        message = rt.parse_response(text, rt.templates.get("deepseek-v4.1"), prefix=prefix, tools=tools)
        assert "recheck" in message["reasoning_content"] and message["tool_calls"]


def test_session_suffixes_hy() -> None:
    prefix = "<｜hy_User:opensource｜>Hi<｜hy_Assistant:opensource｜><think:opensource>"
    tools = [_tool("get_time", {}, [])]
    # the opener written once more, and the closer, with the suffix the template reads
    text = "<think:opensource>\nHmm.\n</think:opensource>\n\nHello!"
    assert _accepts("hy3", text, prefix, tools)
    assert _accepts("hy-v4", "Hmm.</think:6124c78e>Hello!", prefix, tools)
    assert not _accepts("hy-v4", "Hmm.</think:>Hello!", prefix, tools)  # a suffix is a run
    # free content never holds a suffixed call opener: the parser would read a call there
    message = rt.parse_response(
        "Ok</think>Hi <tool_call:x>nope</tool_call:x>",
        rt.templates.get("hy-v4"),
        prefix=prefix,
        errors="keep",
    )
    assert message.get("tool_calls")
    assert not _accepts("hy-v4", "Ok</think>Hi <tool_call:x>nope</tool_call:x>", prefix, tools)


def test_suffix_spellings() -> None:
    assert suffix_spelling(r"</think(?::\w+)?>") == ("</think>", "</think:", "[\\w]+>")
    assert suffix_spelling(r"</think>") is None
    assert suffix_spelling(r"```(?:json)?\n") is None  # an optional word is no suffix run
    opener = r"(?:<tool_calls(?::\w+)?>\s*)?<tool_call(?::\w+)?>\s*(?P<name>[^<\s]+)"
    assert suffixed_starts(opener) == ["<tool_calls:", "<tool_call:"]
    assert suffixed_starts(r"```(?:json)?\n\[") == []


def test_inkling_bare_recipient() -> None:
    """``(?:<|message_model|>[^<]*)?``: a recipient after the joiner, which the parser skips (the call is
    named by its JSON body), is written before each region's marker."""
    tools = [_tool("get_weather", {"city": {"type": "string"}}, ["city"])]
    prefix = "<|message_model|>"
    text = (
        "<|content_text|>Checking.<|end_message|><|message_model|>get_weather"
        '<|content_invoke_tool_json|>{"name":"get_weather","args":{"city":"Tokyo"}}<|end_message|>'
    )
    assert _accepts("inkling", text, prefix, tools)
    assert not _accepts(
        "inkling", text.replace("get_weather<|content", "get weather<|content"), prefix, tools
    )
    # and nowhere else: harmony's joiner reads no recipient
    assert "[A-Za-z0-9_][A-Za-z0-9_.-]*" not in grammar.build("gpt-oss", tools=tools).lark


def test_section_opener_spellings_deepseek_r1() -> None:
    """DeepSeek R1's section opener reads five spellings, and each call's ``<｜tool▁call▁begin｜>`` is
    optional: a section opened by a later spelling, with calls that leave the start out."""
    tools = [_tool("special_function", {"arg1": {"type": "integer"}}, [])]
    call = 'function<｜tool▁sep｜>special_function\n```json\n{"arg1": 1}\n```<｜tool▁call▁end｜>'
    template = rt.templates.get("deepseek-r1")
    for text in (
        "<｜tool▁calls｜>" + call + "<｜tool▁calls▁end｜>",
        "<｜tool▁calls▁begin｜>" + call + "<｜tool▁call▁begin｜>" + call + "<｜tool▁calls▁end｜>",
        "<｜tool_calls_begin｜><｜tool▁call▁begin｜>" + call + call + "<｜tool▁calls▁end｜>",
    ):
        assert _accepts("deepseek-r1", text, "<｜Assistant｜>", tools), text
        message = rt.parse_response(text, template, prefix="<｜Assistant｜>", tools=tools)
        assert message["tool_calls"] and not gh.check_message(message, tools, tool_choice="auto")
    # a call outside a section keeps its start
    assert not _accepts("deepseek-r1", "Hi " + call, "<｜Assistant｜>", tools)


def test_suffixed_call_section_hy() -> None:
    """Hy's section opener and closer carry the session suffix too (``<tool_calls:6124c78e>``): a section
    of its own, its run of calls bounded (xgrammar needs a bounded content in a tag without an end)."""
    prefix = "<｜hy_Assistant:6124c78e｜><think:6124c78e>"
    tools = [_tool("get_time", {}, []), _tool("w", {"city": {"type": "string"}}, ["city"])]
    call = "<tool_call:s1>w<tool_sep><arg_key:s1>city</arg_key:s1><arg_value:s1>Paris</arg_value:s1></tool_call:s1>"
    template = rt.templates.get("hy-v4")
    for text in (
        "Ok</think:s1><tool_calls:s1><tool_call:s1>get_time</tool_call:s1></tool_calls:s1>",
        "Ok</think:s1><tool_calls:s1>" + call + "\n" + call + "</tool_calls>",
        "Ok</think><tool_calls:s1>" + call * 16 + "</tool_calls:s1>",
    ):
        assert _accepts("hy-v4", text, prefix, tools), text
        message = rt.parse_response(text, template, prefix=prefix, tools=tools)
        assert message["tool_calls"] and not gh.check_message(message, tools, tool_choice="auto")
    assert not _accepts("hy-v4", "Ok</think><tool_calls:s1>" + call * 17 + "</tool_calls:s1>", prefix, tools)
    assert not _accepts("hy-v4", "Ok</think><tool_calls:s1></tool_calls:s1>", prefix, tools)
