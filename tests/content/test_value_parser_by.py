"""``value_parser_by`` of ``xml-inline`` (transformers 5.25): a value parser per tag, chosen by a group's capture.

The expected values are what transformers 5.25.0 gives for the same input (recorded by running it; the
differential cases are ``ref525/value-parser-by-*`` in ``tests/conformance/cases.py``). Ours checks the
argument when the template loads (``value-parser-by-at-load`` in docs/differences.md), where 5.25 fails
only when a tag needs it, with ``AttributeError`` or ``KeyError``.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

import response_templates as rt
from response_templates import grammar
from response_templates.content import parse_content
from response_templates.toolstream import ToolCallStreamer

DSML_TAG = (
    r'<｜DSML｜parameter name="(?P<key>[^"]+)"(?: string="(?P<string>true|false)")?>(?P<value>.*?)'
    r"</｜DSML｜parameter>"
)
BY_STRING = {"group": "string", "parsers": {"false": {"name": "json"}}}
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "f",
            "parameters": {
                "type": "object",
                "properties": {"a": {"type": "array"}, "b": {"type": "integer"}, "c": {"type": "integer"}},
            },
        },
    }
]


def dsml(**args: Any) -> dict[str, Any]:
    return {
        "start_anchor": "<A>",
        "fields": {
            "tool_calls": {
                "open_pattern": r'<｜DSML｜invoke name="(?P<name>[^"]+)">',
                "close": "</｜DSML｜invoke>",
                "repeats": True,
                "content": "xml-inline",
                "content_args": {"tag_pattern": DSML_TAG, **args},
                "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}},
            },
            "content": {},
        },
    }


def param(key: str, value: str, string: str | None = None) -> str:
    attr = f' string="{string}"' if string is not None else ""
    return f'<｜DSML｜parameter name="{key}"{attr}>{value}</｜DSML｜parameter>'


def invoke(*params: str) -> str:
    return '<｜DSML｜invoke name="f">' + "".join(params) + "</｜DSML｜invoke>"


def arguments(message: Any) -> Any:
    return message["tool_calls"][0]["function"]["arguments"]


def exact(value: Any) -> str:
    return json.dumps(value)  # tells 7 from "7" and from 7.0


# ---------------------------------------------------------------------------------------------- reading


@pytest.mark.parametrize(
    ("args", "text", "tools", "expected"),
    [
        pytest.param(
            {"value_parser_by": BY_STRING},
            invoke(param("a", "[1, 2]", "false"), param("b", "7", "true")),
            None,
            {"a": [1, 2], "b": "7"},
            id="picks-per-tag",
        ),
        pytest.param(
            {"value_parser_by": BY_STRING},
            invoke(param("a", "[1, 2]", "false"), param("b", "7", "true"), param("c", "8")),
            TOOLS,
            {"a": [1, 2], "b": "7", "c": "8"},
            id="the-schemas-type-nothing",
        ),
        pytest.param(
            {"value_parser_by": BY_STRING, "value_parser": {"name": "int"}},
            invoke(param("a", "[3]", "false"), param("b", "9", "true"), param("c", "8")),
            None,
            {"a": [3], "b": 9, "c": 8},
            id="no-entry-or-no-capture-falls-back",
        ),
        pytest.param(
            {
                "value_parser_by": {"group": "string", "parsers": {"true": None}},
                "value_parser": {"name": "int"},
            },
            invoke(param("a", "5", "true"), param("b", "6")),
            None,
            {"a": "5", "b": 6},
            id="a-null-entry-keeps-the-raw-text",
        ),
        pytest.param(
            {"value_parser_by": {"group": "key", "parsers": {"a": {"name": "json"}, "c": {"name": "int"}}}},
            invoke(param("a", "[1]", "true"), param("c", "4"), param("b", "5")),
            TOOLS,
            {"a": [1], "c": 4, "b": "5"},
            id="keyed-by-the-key-group",
        ),
        pytest.param(
            {"value_parser_by": BY_STRING, "merge_duplicates": True},
            invoke(param("a", "1", "false"), param("a", "2", "true"), param("a", "[3]", "false")),
            None,
            {"a": [1, "2", [3]]},
            id="each-duplicate-by-its-own-capture",
        ),
        pytest.param(
            {"value_parser_by": None},
            invoke(param("b", "7", "true")),
            TOOLS,
            {"b": "7"},
            id="null-reads-nothing-but-turns-typing-off",
        ),
    ],
)
def test_reads_as_transformers_5_25(args: dict[str, Any], text: str, tools: Any, expected: Any) -> None:
    template = dsml(**args)
    message = rt.parse_response(text, template, prefix="<A>", tools=tools)
    assert exact(arguments(message)) == exact(expected)
    # streamed one character at a time: the same message, and the region_close carries the value
    parser = rt.ResponseParser(template, prefix="<A>", tools=tools)
    events = [e for char in text for e in parser.feed(char)]
    streamed, final = parser.finalize()
    closes = [e for e in events + final if e["type"] == "region_close"]
    assert exact(dict(streamed)) == exact(dict(message))
    assert exact(closes[0]["value"]["function"]["arguments"]) == exact(expected)


def test_parse_content_reads_it_directly() -> None:
    args = {"tag_pattern": r"<(?P<key>\w+)(?: as=(?P<as>\w+))?>(?P<value>.*?)</(?P=key)>"}
    args["value_parser_by"] = {"group": "as", "parsers": {"n": {"name": "int"}, "j": {"name": "json"}}}
    value = parse_content("<a as=n>4</a><b as=j>[true]</b><c as=x>5</c><d>6</d>", "xml-inline", args)
    assert exact(value) == exact({"a": 4, "b": [True], "c": "5", "d": "6"})


def test_in_a_nested_value_parser() -> None:
    args = {
        "tag_pattern": r"<(?P<key>\w+)>(?P<value>.*?)</(?P=key)>",
        "value_parser": {
            "name": "xml-inline",
            "args": {
                "tag_pattern": r"\[(?P<key>\w+)(?: (?P<t>j))?\](?P<value>[^\[]*)",
                "value_parser_by": {"group": "t", "parsers": {"j": {"name": "json"}}},
            },
        },
    }
    assert exact(parse_content("<x>[a j]1[b]2</x>", "xml-inline", args)) == exact({"x": {"a": 1, "b": "2"}})


def test_with_the_xml_values_extension() -> None:
    """value_parser_by works with the extension's other arguments (unescape, nested) as type_group does."""
    template = dsml(value_parser_by=BY_STRING, unescape=True)
    template["extensions"] = ["xml-values"]
    text = invoke(param("a", "[&quot;x&quot;]", "false"), param("b", "&lt;b&gt;", "true"))
    assert arguments(rt.parse_response(text, template, prefix="")) == {"a": ["x"], "b": "<b>"}


# ---------------------------------------------------------------------------------------- typing switch


@pytest.mark.parametrize(
    ("content", "args", "typing"),
    [
        ("xml-inline", {"tag_pattern": DSML_TAG, "value_parser_by": BY_STRING}, "none"),
        ("xml-inline", {"tag_pattern": DSML_TAG, "value_parser_by": None}, "none"),
        ("kv-lines", {"value_parser_by": ["anything"]}, "none"),
        ("json", {"value_parser_by": {}}, "none"),
        ("xml-inline", {"tag_pattern": DSML_TAG}, "all"),
    ],
)
def test_the_key_alone_turns_the_fields_typing_off(content: str, args: dict[str, Any], typing: str) -> None:
    template = {"start_anchor": "<A>", "fields": {"v": {"open": "<v>", "close": "</v>", "content": content}}}
    template["fields"]["v"]["content_args"] = args
    assert rt.load_template(template).by_name["v"].argument_typing == typing


def test_kv_lines_ignores_it_and_lint_says_what_it_still_does() -> None:
    template = {
        "start_anchor": "<A>",
        "fields": {
            "tool_calls": {
                "open_pattern": r"<call (?P<name>\w+)>",
                "close": "</call>",
                "repeats": True,
                "content": "kv-lines",
                "content_args": {"value_parser_by": BY_STRING},
                "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}},
            },
            "content": {},
        },
    }
    message = rt.parse_response("<call f>a: [1]\nb: 7</call>", template, prefix="", tools=TOOLS)
    assert exact(arguments(message)) == exact({"a": "[1]", "b": "7"})  # 5.25: neither read nor typed
    [issue] = [i for i in rt.lint(template) if i.code == "ignored-content-arg"]
    assert (issue.field, issue.key) == ("tool_calls", "content_args")
    assert "only 'xml-inline'" in issue.message and "typing" in issue.message


def test_lint_warns_about_keys_it_does_not_read() -> None:
    template = dsml(value_parser_by={**BY_STRING, "default": {"name": "json"}})
    [issue] = [i for i in rt.lint(template) if i.code == "ignored-content-arg"]
    assert "'value_parser_by.default'" in issue.message and "'group' and 'parsers'" in issue.message


# ------------------------------------------------------------------------------------------ validation


@pytest.mark.parametrize(
    ("value_parser_by", "fragment"),
    [
        (["string"], "'value_parser_by' of content parser 'xml-inline' must be an object"),
        ("string", "'value_parser_by' of content parser 'xml-inline' must be an object"),
        ({"parsers": {}}, "'value_parser_by.group' must name a named group"),
        ({"group": 1, "parsers": {}}, "'value_parser_by.group' must name a named group"),
        ({"group": "kind", "parsers": {}}, "names the group 'kind', which 'tag_pattern'"),
        ({"group": "string"}, "'value_parser_by.parsers' must be an object"),
        ({"group": "string", "parsers": ["json"]}, "'value_parser_by.parsers' must be an object"),
        ({"group": "string", "parsers": {"false": {"name": "yaml"}}}, "parsers['false']: value_parser"),
        ({"group": "string", "parsers": {"false": "json"}}, "parsers['false']: value_parser"),
        (
            {"group": "string", "parsers": {"false": {"name": "json", "args": {"strip": "no"}}}},
            "parsers['false']: in value_parser",
        ),
    ],
)
def test_refused_at_load(value_parser_by: Any, fragment: str) -> None:
    """Refused when the template loads, also when no tag would ever use it (5.25: at the tag, if ever)."""
    with pytest.raises(rt.TemplateError) as info:
        rt.load_template(dsml(value_parser_by=value_parser_by))
    assert (info.value.field, info.value.key) == ("tool_calls", "content_args")
    assert fragment in str(info.value)
    with pytest.raises(rt.TemplateError):
        rt.parse_response("just text", dsml(value_parser_by=value_parser_by), prefix="")


def test_a_key_that_is_not_a_string_is_refused() -> None:
    """Only outside a template (template data is JSON, whose keys are strings): a key that is not a string
    never equals a capture."""
    args = {"tag_pattern": DSML_TAG, "value_parser_by": {"group": "string", "parsers": {1: {"name": "json"}}}}
    with pytest.raises(rt.TemplateError, match=r"keys of content_args 'value_parser_by\.parsers'"):
        parse_content("", "xml-inline", args)


def test_with_type_group_it_is_refused() -> None:
    template = dsml(value_parser_by=BY_STRING, type_group="string", type_parsers={"true": {"name": "text"}})
    template["extensions"] = ["xml-values"]
    with pytest.raises(rt.TemplateError, match="give one of them"):
        rt.load_template(template)


def test_extension_arguments_inside_it_need_their_extension() -> None:
    inner = {"name": "xml-inline", "args": {"tag_pattern": r"<(?P<key>\w+)/>", "cdata": True}}
    template = dsml(value_parser_by={"group": "string", "parsers": {"false": inner}})
    with pytest.raises(rt.TemplateError, match="extension 'xml-values'"):
        rt.load_template(template)
    template["extensions"] = ["xml-values"]
    assert rt.load_template(template)


def test_nesting_through_it_is_bounded() -> None:
    spec: dict[str, Any] = {"name": "text"}
    for _ in range(40):
        spec = {
            "name": "xml-inline",
            "args": {
                "tag_pattern": r"<(?P<key>\w+)(?P<t>)>(?P<value>.*?)</(?P=key)>",
                "value_parser_by": {"group": "t", "parsers": {"": spec}},
            },
        }
    with pytest.raises(rt.TemplateError, match="nested more than"):
        parse_content("<a>x</a>", "xml-inline", spec["args"])


# ------------------------------------------------------------------------------ streaming and grammar


def test_tool_streaming_sends_the_values_it_picked() -> None:
    template = dsml(value_parser_by=BY_STRING)
    text = invoke(param("a", "[1, 2]", "false"), param("b", "7", "true"), param("c", "8"))
    parser = rt.ResponseParser(copy.deepcopy(template), prefix="", tools=TOOLS)
    streamer = ToolCallStreamer(template, tools=TOOLS)
    out = [e for char in text for e in streamer.feed(parser.feed(char))]
    out += streamer.finish(parser.finalize()[1])
    [end] = [e for e in out if e["type"] == "tool_call_end"]
    assert end["complete"] and exact(end["input"]) == exact({"a": [1, 2], "b": "7", "c": "8"})
    sent = "".join(e["arguments"] for e in out if e["type"] == "tool_call_delta")
    assert sent == end["arguments"] and json.loads(sent) == end["input"]


def test_the_grammar_reads_it_as_it_reads_type_group() -> None:
    """The library's DSML template written with value_parser_by (what export writes for transformers)
    compiles to the same grammar: an integer parameter gets string="false" and a JSON value."""
    data = rt.templates.get("deepseek-v3.2").to_dict()
    args = data["fields"]["tool_calls"]["content_args"]
    args["value_parser_by"] = {"group": args.pop("type_group"), "parsers": args.pop("type_parsers")}
    data.pop("extensions")
    tools = [
        {
            "type": "function",
            "function": {
                "name": "f",
                "parameters": {
                    "type": "object",
                    "properties": {"n": {"type": "integer"}, "s": {"type": "string"}},
                    "required": ["n", "s"],
                },
            },
        }
    ]
    lark = grammar.build(data, tools=tools).lark
    assert lark == grammar.build("deepseek-v3.2", tools=tools).lark
    assert 'name="n" string="false"' in lark and 'name="s" string="true"' in lark
    # a choice keyed by the key group, or with no entries, is not an attribute to write: still builds
    for by in ({"group": "key", "parsers": {"n": {"name": "json"}}}, {"group": "string", "parsers": {}}):
        args["value_parser_by"] = by
        assert grammar.build(data, tools=tools).lark
