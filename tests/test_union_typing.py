"""Tool typing of ``json`` and ``python-call-list`` arguments whose schema admits a string (transformers 5.25).

In those fields the syntax already says what is a string: ``"7"`` written where the schema allows a string
or an integer stays ``"7"``; ``xml-inline`` and ``kv-lines`` values are all text and are cast as before.
The expected values are what transformers 5.25.0 gives (recorded by running it; the differential cases
are ``ref525/*-a-string-schema-admits-stay`` in ``tests/conformance/cases.py``). The streaming paths (the
tool-call streamer and the wire adapters) send what the parser types: each piece of argument text is a
prefix of the final arguments, and a member that keeps its string is not held back.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

import response_templates as rt
from response_templates.calls import argument_cast
from response_templates.tools import tool_parameters, type_tool_calls
from response_templates.toolstream import ToolCallStreamer
from response_templates.wire import ChatCompletionsAdapter, run_stream

SCHEMAS: dict[str, Any] = {
    "sl": {"type": ["string", "integer"]},
    "ls": {"type": ["integer", "string"]},
    "any": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
    "one": {"oneOf": [{"type": "object"}, {"type": "string"}]},
    "ns": {"type": "string", "nullable": True},
    "as": {"type": ["array", "string"]},
    "bs": {"type": ["boolean", "string"]},
    "inull": {"type": ["integer", "null"]},
    "i": {"type": "integer"},
    "ni": {"type": "integer", "nullable": True},
    "s": {"type": "string"},
}
TOOLS = [
    {"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": SCHEMAS}}}
]
WRITTEN = {
    "sl": "7",
    "ls": "7",
    "any": "7",
    "one": '{"a": 1}',
    "ns": "null",
    "as": "[1, 2]",
    "bs": "true",
    "inull": "7",
    "i": "7",
    "ni": "None",
    "s": "7",
}
#: transformers 5.25 for a json or python-call-list field.
KEPT = {**WRITTEN, "inull": 7, "i": 7, "ni": None}
#: transformers 5.25 (and 5.24) for an xml-inline or kv-lines field.
CAST = {
    "sl": 7,
    "ls": 7,
    "any": 7,
    "one": {"a": 1},
    "ns": None,
    "as": [1, 2],
    "bs": True,
    "inull": 7,
    "i": 7,
    "ni": None,
    "s": "7",
}


def _field(**spec: Any) -> dict[str, Any]:
    return {
        "start_anchor": "<A>",
        "fields": {"tool_calls": {"repeats": True, **spec}, "content": {}},
    }


_CALL = {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}}
_EACH = {"type": "function", "function": {"name": "{name}", "arguments": "{arguments}"}}
JSON_CALLS = _field(
    open="<tool_call>",
    close="</tool_call>",
    content="json",
    transform={"type": "function", "function": "{content}"},
)
CALL_LIST = {
    "start_anchor": "<A>",
    "fields": {
        "tool_calls": {
            "open": "<calls>",
            "close": "</calls>",
            "content": "python-call-list",
            "transform_each": True,
            "transform": _EACH,
        },
        "content": {},
    },
}
PYTHON_CALLS = copy.deepcopy(CALL_LIST)
PYTHON_CALLS["fields"]["tool_calls"]["content"] = "python-calls"
PYTHON_CALLS["extensions"] = ["python-calls"]
XML_CALLS = _field(
    open_pattern=r"<function=(?P<name>\w+)>",
    close="</function>",
    content="xml-inline",
    content_args={"tag_pattern": r"<parameter=(?P<key>\w+)>(?P<value>.*?)</parameter>"},
    transform=_CALL,
)
KV_CALLS = _field(open_pattern=r"<call (?P<name>\w+)>", close="</call>", content="kv-lines", transform=_CALL)

JSON_TEXT = "<tool_call>" + json.dumps({"name": "f", "arguments": WRITTEN}) + "</tool_call>"
CALL_LIST_TEXT = "<calls>[f(" + ", ".join(f"{k}={json.dumps(v)}" for k, v in WRITTEN.items()) + ")]</calls>"
XML_TEXT = (
    "<function=f>" + "".join(f"<parameter={k}>{v}</parameter>" for k, v in WRITTEN.items()) + "</function>"
)
KV_TEXT = "<call f>" + "\n".join(f"{k}: {v}" for k, v in WRITTEN.items()) + "</call>"


def exact(value: Any) -> str:
    return json.dumps(value, sort_keys=True)  # tells 7 from "7", 7.0 and True


def arguments(message: Any) -> Any:
    return message["tool_calls"][0]["function"]["arguments"]


CASES = [
    ("json", JSON_CALLS, JSON_TEXT, KEPT),
    ("python-call-list", CALL_LIST, CALL_LIST_TEXT, KEPT),
    ("python-calls", PYTHON_CALLS, CALL_LIST_TEXT, KEPT),
    ("xml-inline", XML_CALLS, XML_TEXT, CAST),  # cast as before
    ("kv-lines", KV_CALLS, KV_TEXT, CAST),  # cast as before
]


def test_typing_by_content_parser() -> None:
    """Whole and streamed one character at a time (the region_close value), for each content parser."""
    for name, template, text, expected in CASES:
        message = rt.parse_response(text, template, prefix="", tools=TOOLS)
        assert exact(arguments(message)) == exact(expected), name
        parser = rt.ResponseParser(template, prefix="", tools=TOOLS)
        events = [e for char in text for e in parser.feed(char)]
        events += parser.finalize()[1]
        [close] = [e for e in events if e["type"] == "region_close" and e["field"] == "tool_calls"]
        value = close["value"][0] if isinstance(close["value"], list) else close["value"]
        assert exact(value["function"]["arguments"]) == exact(expected), name


def test_argument_typing_of_each_content_parser() -> None:
    template = rt.load_template(PYTHON_CALLS)
    assert template.by_name["tool_calls"].argument_typing == "non-string"
    for source, typing in (
        (JSON_CALLS, "non-string"),
        (CALL_LIST, "non-string"),
        (XML_CALLS, "all"),
        (KV_CALLS, "all"),
    ):
        assert rt.load_template(source).by_name["tool_calls"].argument_typing == typing


def test_python_callables_unions() -> None:
    def lookup(item_id: int | str, label: str | None = None, count: int | None = None) -> None:
        """Look an item up.

        Args:
            item_id: The item.
            label: A label.
            count: How many.
        """

    text = '<tool_call>{"name": "lookup", "arguments": {"item_id": "42", "label": "None", "count": "5"}}</tool_call>'
    message = rt.parse_response(text, JSON_CALLS, prefix="", tools=[lookup])
    assert exact(arguments(message)) == exact({"item_id": "42", "label": "None", "count": 5})
    text = "<function=lookup><parameter=item_id>42</parameter><parameter=label>None</parameter></function>"
    message = rt.parse_response(text, XML_CALLS, prefix="", tools=[lookup])
    assert exact(arguments(message)) == exact({"item_id": 42, "label": None})


def test_type_tool_calls_and_argument_cast_keep_strings() -> None:
    params = tool_parameters(TOOLS)
    call = {"type": "function", "function": {"name": "f", "arguments": dict(WRITTEN)}}
    assert exact(type_tool_calls(call, params, keep_strings=True)["function"]["arguments"]) == exact(KEPT)
    assert exact(type_tool_calls(call, params)["function"]["arguments"]) == exact(CAST)
    assert argument_cast(params, "f", "sl", "string", keep_strings=True) is None
    assert argument_cast(params, "f", "as", "array", keep_strings=True) is None
    cast = argument_cast(params, "f", "i", "string", keep_strings=True)
    assert cast is not None and cast("7") == 7
    assert argument_cast(params, "f", "sl", "string") is not None


# ------------------------------------------------------------------------------------------- streaming


def _stream(text: str, chunks: list[str], **options: Any) -> list[dict[str, Any]]:
    parser = rt.ResponseParser(JSON_CALLS, prefix="", tools=TOOLS)
    streamer = ToolCallStreamer(JSON_CALLS, tools=TOOLS, **options)
    out: list[dict[str, Any]] = []
    for chunk in chunks:
        for event in parser.feed(chunk):
            out.extend(streamer.process(event))
            if event["type"] == "region_close":
                out.append({"type": "(region_close)"})
    out.extend(streamer.finish(parser.finalize()[1]))
    return out


@pytest.mark.parametrize("size", [1, 3, 7, 1000])
def test_streamed_arguments_are_prefixes_of_the_typed_arguments(size: int) -> None:
    chunks = [JSON_TEXT[i : i + size] for i in range(0, len(JSON_TEXT), size)]
    out = _stream(JSON_TEXT, chunks)
    [end] = [e for e in out if e["type"] == "tool_call_end"]
    assert end["complete"], end.get("error")
    assert exact(end["input"]) == exact(KEPT)
    deltas = [e["arguments"] for e in out if e["type"] == "tool_call_delta"]
    sent = ""
    for delta in deltas:
        sent += delta
        assert end["arguments"].startswith(sent)
    assert sent == end["arguments"] and exact(json.loads(sent)) == exact(KEPT)
    if size == 1:
        # A member whose string is kept streams as it is written; one typing changes waits for its value.
        before_close = "".join(
            e["arguments"]
            for e in out[: out.index({"type": "(region_close)"})]
            if e["type"] == "tool_call_delta"
        )
        assert '"sl": "7"' in before_close and '"one": "{\\"a\\": 1}"' in before_close
        assert '"ni": null' in before_close  # held back, then sent typed before the call closed


def test_wire_adapter_arguments_equal_the_message() -> None:
    parser = rt.ResponseParser(JSON_CALLS, prefix="", tools=TOOLS)
    adapter = ChatCompletionsAdapter(JSON_CALLS, tools=TOOLS, seed=1)
    chunks = list(run_stream(parser, adapter, list(JSON_TEXT)))
    streamed = "".join(
        call["function"].get("arguments", "")
        for chunk in chunks
        for choice in chunk["choices"]
        for call in choice["delta"].get("tool_calls") or []
    )
    assert exact(json.loads(streamed)) == exact(KEPT)
    final = adapter.final()["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"]
    assert final == streamed


def test_a_field_with_value_parser_by_streams_untyped() -> None:
    """The key turns typing off for any field (as in 5.25): a json field's members are neither held nor cast."""
    template = copy.deepcopy(JSON_CALLS)
    template["fields"]["tool_calls"]["content_args"] = {"value_parser_by": {}}
    parser = rt.ResponseParser(template, prefix="", tools=TOOLS)
    streamer = ToolCallStreamer(template, tools=TOOLS)
    out = [e for char in JSON_TEXT for e in streamer.feed(parser.feed(char))]
    message, final = parser.finalize()
    out += streamer.finish(final)
    [end] = [e for e in out if e["type"] == "tool_call_end"]
    assert end["complete"] and exact(end["input"]) == exact(WRITTEN) == exact(arguments(message))
    assert "".join(e["arguments"] for e in out if e["type"] == "tool_call_delta") == end["arguments"]
