"""``response_templates.grammar.build``: the shape of the structural tag and of the Lark grammar it writes.

These tests read the generated structures (begin and end strings, schemas, flags, escaping, names); that
the grammars accept what the parser reads and reject what it does not is proved in the other modules of
this directory.
"""

from __future__ import annotations

import json
from typing import Any

import grammar_harness as gh
import pytest

import response_templates as rt
from response_templates import grammar
from response_templates.grammar.arguments import Tool, cast_tolerant
from response_templates.grammar.lark import regex_escape
from response_templates.grammar.nodes import example

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
            "required": ["city"],
        },
    },
}
SEARCH = {
    "type": "function",
    "function": {"name": "search", "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}},
}
TOOLS = [WEATHER, SEARCH]
#: WEATHER's parameters as a JSON body holds them: the integer may also be the string the parser casts.
WEATHER_BODY = cast_tolerant(Tool("get_weather", WEATHER["function"]["parameters"])).parameters


def fmt(g: grammar.Grammar) -> dict[str, Any]:
    assert g.structural_tag["type"] == "structural_tag"
    return g.structural_tag["format"]


#: Every format object of a kind in a structural tag, depth first.
find = gh.tag_formats


def outer(node: Any, kind: str) -> list[dict[str, Any]]:
    """As :func:`find`, without looking inside tags (calls written inside a reasoning block are not the
    calls after it)."""
    found: list[dict[str, Any]] = []
    if isinstance(node, dict):
        if node.get("type") == kind:
            found.append(node)
        if node.get("type") != "tag":
            for value in node.values():
                found.extend(outer(value, kind))
    elif isinstance(node, list):
        for value in node:
            found.extend(outer(value, kind))
    return found


def calls_of(g: grammar.Grammar) -> dict[str, Any]:
    (calls,) = outer(fmt(g), "triggered_tags")
    return calls


# ------------------------------------------------------------------------------------------- the API


def test_grammar_error_is_a_template_error_and_a_value_error() -> None:
    assert issubclass(grammar.GrammarError, rt.ResponseTemplateError)
    assert issubclass(grammar.GrammarError, ValueError)


@pytest.mark.parametrize("source", ["hermes", "Qwen/Qwen3-8B", "qwen3"])
def test_builds_from_a_family_name_or_a_model_id(source: str) -> None:
    g = grammar.build(source, tools=TOOLS)
    assert g.family in ("hermes", "qwen3")
    assert calls_of(g)["triggers"] == ["<tool_call>"]


def test_builds_from_template_data_and_a_compiled_template() -> None:
    data = rt.templates.get("hermes").to_dict()
    assert (
        grammar.build(data, tools=TOOLS).structural_tag
        == grammar.build(rt.load_template(data), tools=TOOLS).structural_tag
    )


def test_tools_may_be_python_functions() -> None:
    def get_weather(city: str, days: int = 1) -> str:
        """Weather.

        Args:
            city: The city.
            days: How many days.
        """
        return city

    (tag,) = calls_of(grammar.build("hermes", tools=[get_weather]))["tags"]
    schema = find(tag, "json_schema")[0]["json_schema"]
    assert schema["properties"]["days"]["anyOf"][0]["type"] == "integer" and schema["required"] == ["city"]


# ------------------------------------------------------------------------------------- call syntaxes


def test_json_call_names_the_tool_in_the_content() -> None:
    calls = calls_of(grammar.build("hermes", tools=TOOLS))
    assert [t["begin"] for t in calls["tags"]] == ["<tool_call>", "<tool_call>"]
    assert all(t["end"] == "</tool_call>" for t in calls["tags"])
    # the call object's head, with any JSON whitespace, the name first or last
    heads = [r["pattern"] for t in calls["tags"] for r in find(t, "regex") if '"name"' in r["pattern"]]
    assert [h for h in heads if h.startswith('\\{[ \\t\\r\\n]*"name"')] == [
        '\\{[ \\t\\r\\n]*"name"[ \\t\\r\\n]*:[ \\t\\r\\n]*"get_weather"[ \\t\\r\\n]*,[ \\t\\r\\n]*"arguments"[ \\t\\r\\n]*:',
        '\\{[ \\t\\r\\n]*"name"[ \\t\\r\\n]*:[ \\t\\r\\n]*"search"[ \\t\\r\\n]*,[ \\t\\r\\n]*"arguments"[ \\t\\r\\n]*:',
    ]
    schema = find(calls["tags"][0], "json_schema")[0]["json_schema"]
    assert schema == WEATHER_BODY


def test_tool_names_are_json_escaped_in_the_content() -> None:
    tool = {"name": 'say"hi\\', "parameters": {"type": "object", "properties": {}}}
    (tag,) = calls_of(grammar.build("hermes", tools=[tool]))["tags"]
    head, *_ = [r["pattern"] for r in find(tag, "regex") if r["pattern"].startswith("\\{")]
    assert regex_escape(json.dumps('say"hi\\')) in head


def test_name_captured_by_the_opener_is_written_into_the_begin_string() -> None:
    calls = calls_of(grammar.build("functionary-v3.1", tools=TOOLS))
    assert calls["triggers"] == ["<function="]
    assert [t["begin"] for t in calls["tags"]] == ["<function=get_weather>", "<function=search>"]
    assert {t["end"] for t in calls["tags"]} == {"</function>"}


def test_a_tool_name_the_opener_cannot_hold_is_refused_naming_field_and_key() -> None:
    tool = {"name": "bad>name", "parameters": {"type": "object", "properties": {}}}
    with pytest.raises(grammar.GrammarError) as info:
        grammar.build("functionary-v3.1", tools=[tool])
    assert info.value.field == "tool_calls" and info.value.key == "open_pattern"
    assert "bad>name" in str(info.value)


def test_xml_parameters_strings_raw_up_to_the_close_others_json() -> None:
    g = grammar.build("qwen3-coder", tools=[WEATHER])
    calls = calls_of(g)
    # <tool_call> wraps the calls: a section written once, the function tags inside it; its opener is
    # optional, so a function tag may also stand alone
    section, *bare = calls["tags"]
    assert calls["triggers"] == ["<tool_call>", "<function="] and section["begin"] == "<tool_call>"
    assert section["end"] == "</tool_call>" and [t["begin"] for t in bare] == ["<function=get_weather>"]
    params = [t for t in find(section, "tag") if t["begin"].startswith("<parameter=")]
    # the parameters in any order: each tag once per order
    assert list(dict.fromkeys(p["begin"] for p in params)) == ["<parameter=city>", "<parameter=days>"]
    assert {p["end"] for p in params} == {"</parameter>"}
    city = next(p for p in params if p["begin"] == "<parameter=city>")
    days = next(p for p in params if p["begin"] == "<parameter=days>")
    # The parser ends a value without </parameter> at the next <parameter=: a string may not hold it.
    assert city["content"] == {"type": "any_text", "excludes": ["<parameter=", "</tool_call>"]}
    assert find(days, "json_schema")[0]["json_schema"] == {"type": "integer"}


def test_xml_values_exclude_the_next_opener_only_where_the_parser_ends_a_value_there() -> None:
    def city_content(family: str) -> Any:
        g = grammar.build(family, tools=[WEATHER])
        (city, *_) = [t for t in find(fmt(g), "tag") if t["begin"].startswith("<parameter")]
        return city["content"]

    # (after it, the closers of the tags around the value: the parser ends the call at the first one)
    assert city_content("qwen3-coder-instruct")["excludes"][0] == "<parameter="
    assert city_content("seed-oss")["excludes"][0] == "<parameter="
    # minimax-m2 reads a value only up to </parameter>: its values may hold the next opener.
    assert "<parameter" not in str(city_content("minimax-m2").get("excludes", []))
    # The Lark grammar's value text refuses it too (the text up to </parameter> is that terminal).
    rules = grammar.build("qwen3-coder", tools=[WEATHER]).lark.splitlines()
    (text,) = [r.split(":", 1)[0] for r in rules if r.endswith("~/(?s:.*)(?:<parameter=)(?s:.*)/")]
    assert any(r.split(":", 1)[1].strip().startswith(text) for r in rules if r.startswith("t"))


def test_typed_xml_parameters_write_the_type_attribute() -> None:
    g = grammar.build("deepseek-v3.2", tools=[WEATHER])
    begins = [t["begin"] for t in find(fmt(g), "tag") if "parameter name=" in t["begin"]]
    assert list(dict.fromkeys(begins)) == [
        '<｜DSML｜parameter name="city" string="true">',
        # a string also as JSON under string="false", or raw without the attribute (the parser reads both)
        '<｜DSML｜parameter name="city" string="false">',
        '<｜DSML｜parameter name="city">',
        '<｜DSML｜parameter name="days" string="false">',
    ]


def test_sections_wrap_the_calls_kimi() -> None:
    g = grammar.build("kimi-k2", tools=TOOLS)
    calls = calls_of(g)
    # the section's opener is optional: a call may also stand alone
    assert calls["triggers"] == ["<|tool_calls_section_begin|>", "<|tool_call_begin|>"]
    section, *bare = calls["tags"]
    assert {t["begin"] for t in bare} == {"<|tool_call_begin|>"}
    assert section["end"] == "<|tool_calls_section_end|>"
    inner = find(section, "tags_with_separator")[0]
    assert {t["begin"] for t in inner["tags"]} == {"<|tool_call_begin|>"}


def test_python_call_lists() -> None:
    g = grammar.build("lfm2", tools=TOOLS, parallel_tool_calls=True)
    (region,) = [t for t in calls_of(g)["tags"] if t["begin"] == "<|tool_call_start|>"]
    assert region["begin"] == "<|tool_call_start|>" and region["end"] == "<|tool_call_end|>"
    (listing,) = [t for t in find(region, "tag") if t["begin"] == "["]
    (run,) = find(listing, "tags_with_separator")
    assert run["separator"] == ", " and [t["begin"] for t in run["tags"]] == ["get_weather(", "search("]
    text = example(g.tree)
    message = rt.parse_response(text, rt.templates.get("lfm2"), prefix="")
    assert message["tool_calls"][0]["function"] == {
        "name": "get_weather",
        "arguments": {"city": "Paris", "days": 3},
    }


def test_a_json_list_of_calls_in_one_region() -> None:
    g = grammar.build("apriel-1.5", tools=TOOLS, parallel_tool_calls=False)
    (region,) = [t for t in find(fmt(g), "tag") if t["begin"] == "<tool_calls>"]
    assert region["end"] == "</tool_calls>"
    (schema,) = [n.schema for n in _json_nodes(g.tree)]
    assert schema["type"] == "array" and schema["minItems"] == 1 and schema["maxItems"] == 1
    names = [item["properties"]["name"]["const"] for item in schema["items"]["anyOf"]]
    assert list(dict.fromkeys(names)) == ["get_weather", "search"]
    # xgrammar reads an anyOf of objects in its first branch's key order only: the tag writes the list
    # out, each item a choice of call objects (the keys in either order)
    items = [f["json_schema"] for f in find(fmt(g), "json_schema")]
    assert [next(iter(i["properties"])) for i in items] == ["name", "arguments"] * 2  # one item at most


def _json_nodes(node: Any) -> list[Any]:
    from response_templates.grammar.nodes import Json

    if isinstance(node, Json):
        return [node]
    children = [getattr(node, a, None) for a in ("items", "options", "content", "tags")]
    found: list[Any] = []
    for child in children:
        for item in child if isinstance(child, tuple) else (child,) if child is not None else ():
            found.extend(_json_nodes(item))
    return found


def test_tool_name_as_object_key_apertus() -> None:
    schema = find(fmt(grammar.build("apertus", tools=[WEATHER])), "json_schema")[0]["json_schema"]
    assert schema["items"]["required"] == ["get_weather"]
    assert schema["items"]["properties"]["get_weather"] == WEATHER_BODY


# ---------------------------------------------------------------------------------------- tool_choice


def test_auto_required_named_none() -> None:
    auto = calls_of(grammar.build("hermes", tools=TOOLS, tool_choice="auto"))
    assert auto["at_least_one"] is False and len(auto["tags"]) == 2
    required = calls_of(grammar.build("hermes", tools=TOOLS, tool_choice="required"))
    assert required["at_least_one"] is True and len(required["tags"]) == 2
    for choice in ("search", {"type": "function", "function": {"name": "search"}}):
        named = calls_of(grammar.build("hermes", tools=TOOLS, tool_choice=choice))
        assert named["at_least_one"] is True and len(named["tags"]) == 1
        heads = {r["pattern"] for r in find(named, "regex") if '"name"' in r["pattern"]}
        assert heads and all('"search"' in h for h in heads)
    none = fmt(grammar.build("hermes", tools=TOOLS, tool_choice="none"))
    # no call syntax (the content may hold another reasoning block, the one kind of tag left)
    assert not find(none, "json_schema")
    assert [t["triggers"] for t in find(none, "triggered_tags")] == [["<think>"]]
    texts = [t for t in find(none, "any_text") if t.get("excludes")]
    assert texts and all("<tool_call>" in t["excludes"] for t in texts)


def test_no_parallel_calls_stops_after_the_first() -> None:
    assert (
        calls_of(grammar.build("hermes", tools=TOOLS, parallel_tool_calls=False))["stop_after_first"] is True
    )
    assert calls_of(grammar.build("hermes", tools=TOOLS))["stop_after_first"] is False


@pytest.mark.parametrize(
    ("choice", "tools"),
    [("missing_tool", TOOLS), ("required", []), (42, TOOLS), ({"type": "function"}, TOOLS)],
)
def test_bad_tool_choice_is_a_grammar_error(choice: Any, tools: list[Any]) -> None:
    with pytest.raises(grammar.GrammarError):
        grammar.build("hermes", tools=tools, tool_choice=choice)


# ------------------------------------------------------------------------------------------ reasoning


def test_reasoning_allowed_required_forbidden() -> None:
    allowed = fmt(grammar.build("hermes", tools=TOOLS))
    think = [t for t in find(allowed, "tag") if t["begin"] == "<think>"]
    assert think and think[0]["end"] == "</think>" and find(allowed, "or")
    required = fmt(grammar.build("hermes", tools=TOOLS, reasoning="required"))
    # the whole output, or (no call) one that ends inside the reasoning block: both open it
    whole, unclosed = required["elements"]
    assert whole["elements"][1]["begin"] == "<think>"  # after optional whitespace, not optional
    assert unclosed["elements"][1] == {"type": "const_string", "value": "<think>"}
    forbidden = fmt(grammar.build("hermes", tools=TOOLS, reasoning="forbidden"))
    assert not [t for t in find(forbidden, "tag") if t["begin"] == "<think>"]
    assert "<think>" in calls_of(grammar.build("hermes", tools=TOOLS, reasoning="forbidden"))["excludes"]


def test_a_prompt_that_opens_the_reasoning_starts_inside_it() -> None:
    prompt = "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\n"
    g = grammar.build("qwen3", tools=TOOLS, prefix=prompt)
    assert g.reasoning_open
    first = fmt(g)["elements"][0]["elements"][0]  # (or the output ends inside the block)
    assert (first["type"], first["begin"], first["end"]) == ("tag", "", "</think>")
    # calls written in the block are reasoning text to the parser: the grammar spells them all the same
    # (after the opener written once more, which the parser reads as one: a block may be reopened in the
    # content, so the opener is a delimiter of the grammar)
    doubled, inner = first["content"]["elements"]
    assert inner["type"] == "triggered_tags" and "<think>" in json.dumps(doubled)
    named = fmt(grammar.build("qwen3", tools=TOOLS, prefix=prompt, tool_choice="search"))
    assert named["elements"][0] == {
        "type": "tag",
        "begin": "",
        "content": {"type": "any_text"},
        "end": "</think>",
    }
    forced = fmt(grammar.build("qwen3", tools=TOOLS, prefix=prompt, reasoning="forbidden"))
    assert forced["elements"][0] == {"type": "const_string", "value": "</think>"}


def test_a_prompt_that_closed_the_reasoning_leaves_none() -> None:
    prompt = "<|im_start|>assistant\n<think>\n\n</think>\n\n"
    g = grammar.build("qwen3", tools=TOOLS, prefix=prompt)
    assert not g.reasoning_open and not [t for t in find(fmt(g), "tag") if t["begin"] == "<think>"]
    with pytest.raises(grammar.GrammarError, match="already closed"):
        grammar.build("qwen3", tools=TOOLS, prefix=prompt, reasoning="required")


def test_bad_reasoning_value() -> None:
    with pytest.raises(grammar.GrammarError):
        grammar.build("hermes", tools=TOOLS, reasoning="sometimes")


# --------------------------------------------------------------------------------------------- lark


def test_lark_starts_with_the_llguidance_marker_and_embeds_schemas() -> None:
    lark = grammar.build("hermes", tools=TOOLS).lark
    assert lark.startswith("%llguidance {}\n")
    assert "%json " + json.dumps(WEATHER_BODY) in lark
    assert '"<tool_call>"' in lark


def test_lark_writes_special_tokens_as_token_references() -> None:
    by_text = grammar.build("hermes", tools=TOOLS, special_tokens=["<tool_call>", "</tool_call>"]).lark
    assert " <tool_call> " in by_text and '"<tool_call>"' not in by_text
    by_id = grammar.build("hermes", tools=TOOLS, special_tokens={"<tool_call>": 151657}).lark
    assert "<[151657]>" in by_id and '"<tool_call>"' not in by_id
    # a token llguidance cannot name without its id stays text
    mistral = grammar.build("mistral-v11", tools=TOOLS, special_tokens=["[TOOL_CALLS]"]).lark
    assert '"[TOOL_CALLS]' in mistral


def test_lark_escapes_quotes_backslashes_and_newlines() -> None:
    gh = pytest.importorskip("grammar_harness")
    tool = {"name": 'q"\\', "parameters": {"type": "object", "properties": {"a\nb": {"type": "string"}}}}
    g, engine = gh.build_with_tokens(grammar, "hermes", tools=[tool], tool_choice="required", prefix="")
    call = '<tool_call>\n{"name": ' + json.dumps('q"\\') + ', "arguments": {"a\\nb": "x"}}\n</tool_call>'
    assert engine.accepts(g.lark, call)[0], call
    wrong = call.replace('q\\"', "q")
    assert not engine.accepts(g.lark, wrong)[0]


llguidance = pytest.importorskip("llguidance")


@pytest.mark.parametrize("family", [n for n, c in grammar.coverage().items() if c.compiles])
def test_llguidance_accepts_the_lark_grammar_of_every_compiled_family(family: str) -> None:
    calls = grammar.coverage()[family].calls
    for choice in ("auto", "required", "none") if calls else ("auto", "none"):
        g = grammar.build(family, tools=grammar.COVERAGE_TOOLS, tool_choice=choice)
        error = llguidance.LLMatcher.validate_grammar(llguidance.LLMatcher.grammar_from_lark(g.lark))
        assert error == "", f"{family} {choice}: {error}"


# ----------------------------------------------------------------------------------------- coverage


def test_coverage_of_the_library() -> None:
    table = grammar.coverage()
    assert set(table) == {f.name for f in rt.library.families()}
    assert sum(c.compiles for c in table.values()) >= 40
    for name, cov in table.items():
        assert cov.compiles == (cov.reason is None), name
    assert table["gemma-4"].compiles and table["functiongemma"].compiles  # the JSON dialect
    assert [name for name, cov in table.items() if not cov.calls] == sorted(
        ["gemma-3", "generic-json", "kimi-k1.5"]
    )


@pytest.mark.parametrize("family", ["kimi-k1.5", "gemma-3", "generic-json"])
def test_a_family_without_tool_calls_compiles_only_without_calls(family: str) -> None:
    for choice in ("required", "get_weather", {"type": "function", "function": {"name": "search"}}):
        with pytest.raises(grammar.GrammarError, match="no tool-call field"):
            grammar.build(family, tools=TOOLS, tool_choice=choice)
    none = grammar.build(family, tools=TOOLS, tool_choice="none")
    # no call syntax: the only tags in the content are reasoning blocks (which it may hold again)
    assert not find(fmt(none), "json_schema")
    assert all("think" in t for tags in find(fmt(none), "triggered_tags") for t in tags["triggers"])
    assert grammar.build(family, tools=TOOLS) == none  # auto, with nothing to call, is none
    assert grammar.coverage()[family] == grammar.Coverage(True, calls=False)


def test_json_dialect_arguments() -> None:
    # Gemma 4 and FunctionGemma: bare keys, strings between markers (grammar/dialects.py)
    gh = pytest.importorskip("grammar_harness")
    properties = {"city": {"type": "string"}, "days": {"type": "integer"}, "unit": {"enum": ["celsius", "f"]}}
    tools = [
        {
            "name": "get_weather",
            "parameters": {"type": "object", "properties": properties, "required": ["city", "days"]},
        }
    ]
    for family, quote, close in (
        ("gemma-4", '<|"|>', "<tool_call|>"),
        ("functiongemma", "<escape>", "<end_function_call>"),
    ):
        prefix = rt.library.family(family).generation_prompt
        g, engine = gh.build_with_tokens(grammar, family, tools=tools, tool_choice="required", prefix=prefix)
        begin = "<|tool_call>" if family == "gemma-4" else "<start_function_call>"
        good = f"{begin}call:get_weather{{city:{quote}Paris, FR{quote},days:3,unit:{quote}celsius{quote}}}{close}"
        assert engine.accepts(g.lark, good)[0], good
        message = rt.parse_response(good, rt.library.family(family).template(), prefix=prefix, tools=tools)
        assert message["tool_calls"][0]["function"]["arguments"] == {
            "city": "Paris, FR",
            "days": 3,
            "unit": "celsius",
        }
        standard = f'{begin}call:get_weather{{city:"Paris",days:3}}{close}'  # a JSON string reads too
        assert engine.accepts(g.lark, standard)[0], standard
        for bad in (
            good.replace("days:3", 'days:"3"'),  # not an integer
            good.replace("celsius", "kelvin"),  # not in the enum
            good.replace(",days:3", ""),  # a required key left out
            good.replace(f"{quote}Paris, FR{quote}", f"{quote}Paris{close}{quote}"),  # the call's closer
        ):
            assert not engine.accepts(g.lark, bad)[0], bad


def test_examples_parse_back_to_the_calls_for_every_compiled_family() -> None:
    for name, cov in grammar.coverage().items():
        if not cov.compiles or not cov.calls:
            continue
        family = rt.library.family(name)
        g = grammar.build(name, tools=TOOLS, tool_choice="get_weather", prefix=family.generation_prompt)
        text = example(g.tree)
        message = rt.parse_response(text, family.template(), prefix=family.generation_prompt, tools=TOOLS)
        first = message["tool_calls"][0]["function"]
        assert first["name"] == "get_weather" and "city" in first["arguments"], (name, text)


def test_harmony_channels_gpt_oss() -> None:
    g = grammar.build("gpt-oss", tools=TOOLS, tool_choice="required", prefix="<|start|>assistant")
    begins = {t["begin"] for t in find(fmt(g), "tag")}
    # the first message follows the prompt's <|start|>assistant; later ones write it themselves
    assert {"<|channel|>analysis", "<|start|>assistant<|channel|>analysis"} <= begins
    assert {"<|channel|>commentary", "<|start|>assistant<|channel|>commentary"} <= begins
    # the recipient before or after the channel, as the template reads both, with or without a space
    # before it (after <|start|>assistant, whitespace the template allows: none, or some)
    assert {"to=functions.get_weather", " to=functions.get_weather"} <= begins
    assert "<|start|>assistant" in begins
    calls = [t for t in find(fmt(g), "tag") if "to=functions." in json.dumps(t) and t["end"] != ""]
    # a call ends with <|call|> or <|end|>, as the template reads both
    assert {json.dumps(t["end"]) for t in calls} == {json.dumps(["<|call|>", "<|end|>"])}
    text = example(g.tree)
    message = rt.parse_response(text, rt.templates.get("gpt-oss"), prefix="<|start|>assistant", tools=TOOLS)
    assert [c["function"]["name"] for c in message["tool_calls"]] == ["get_weather", "search"]


def test_regions_only_templates_solar_open() -> None:
    g = grammar.build("solar-open", tools=TOOLS, tool_choice="search")
    (call,) = [t for t in find(fmt(g), "tag") if t["begin"].startswith("<|tool_call:begin|>")]
    # a run of regions: each with whitespace after it, inside the region's own closer
    (inner,) = [t for t in find(call, "tag") if t["begin"] == ""]
    assert inner["end"] == "<|tool_call:end|>" and "search" in json.dumps(call)
    assert find(call, "regex")  # the call id is written as the pattern the template reads
