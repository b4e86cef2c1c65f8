"""The tool-call streamer with bare-shaped calls: typed exactly as the parser types them.

The streamer types arguments before sending them (a member whose schema may change it is held back until
complete); the parser types the value it closes the region with. Both read a call through
``response_templates.calls``, so a bare call ``{"name": ..., "arguments": ...}`` is typed like a
chat-shaped one, and what was sent agrees with the parsed value. (When the parser left bare calls
untyped, the streamer sent ``{"n": 3`` and then found ``{"n": "3"}`` in the parsed value: the call ended
incomplete.)
"""

from __future__ import annotations

import json
from typing import Any

import pytest

import response_templates as rt
from call_shapes import CAPTURE_TRANSFORMS, JSON_TEMPLATE, TOOLS, TYPED, WRITTEN, capture_template
from response_templates.calls import call_parts
from response_templates.toolstream import ToolCallStreamer, tool_call_plan

#: The chat shape and the bare shape, with either arguments key.
TRANSFORMS: dict[str, Any] = {k: CAPTURE_TRANSFORMS[k] for k in ("chat", "bare", "bare-parameters")}

CASES = {
    **{
        shape: (capture_template(t, repeats=True), f"<call name=f>{WRITTEN}</call>")
        for shape, t in TRANSFORMS.items()
    },
    "model-json": (JSON_TEMPLATE, f'<tool_call>{{"name": "f", "arguments": {WRITTEN}}}</tool_call>'),
    "model-json-parameters": (
        JSON_TEMPLATE,
        f'<tool_call>{{"name": "f", "parameters": {WRITTEN}}}</tool_call>',
    ),
}


def stream(template: Any, text: str, size: int, *, eager: bool = True) -> tuple[list[dict[str, Any]], Any]:
    parser = rt.ResponseParser(template, prefix="", tools=TOOLS)
    streamer = ToolCallStreamer(template, tools=TOOLS, eager=eager)
    events = streamer.feed(parser.initial_events)
    for start in range(0, len(text), size):
        events += streamer.feed(parser.feed(text[start : start + size]))
    message, final = parser.finalize()
    events += streamer.finish(final)
    assert streamer.errors == []
    return [dict(event) for event in events], message


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("size", [1, 3, 1000])
def test_bare_calls_stream_typed_arguments(case: str, size: int) -> None:
    template, text = CASES[case]
    events, message = stream(template, text, size)
    ends = [event for event in events if event["type"] == "tool_call_end"]
    assert len(ends) == 1
    end = ends[0]
    assert end["complete"] is True, end
    assert end["name"] == "f"
    assert end["input"] == TYPED
    assert json.loads(end["arguments"]) == TYPED
    deltas = "".join(event["arguments"] for event in events if event["type"] == "tool_call_delta")
    assert deltas == end["arguments"]
    # the parsed message holds the same typed arguments
    (call,) = message["tool_calls"]
    parts = call_parts(call)
    assert parts is not None
    assert parts[2] == TYPED


@pytest.mark.parametrize("eager", [True, False])
def test_both_shapes_give_the_same_call_events(eager: bool) -> None:
    results = {shape: stream(*CASES[shape], 2, eager=eager)[0] for shape in TRANSFORMS}
    assert results["bare"] == results["chat"] == results["bare-parameters"]


@pytest.mark.parametrize(
    "transform",
    [
        TRANSFORMS["chat"],
        TRANSFORMS["bare"],
        TRANSFORMS["bare-parameters"],
        {"type": "function", "function": {"name": "{name}", "parameters": "{content}"}},
        {"id": "{name}", "name": "{name}", "arguments": "{content}"},
        {"type": "function", "function": {"name": "{name}"}},  # no arguments: {}
        {"type": "function", "function": "{content}"},  # the model writes name and arguments
        {"name": "{content.tool}", "arguments": "{content.args}"},
    ],
    ids=repr,
)
def test_the_plan_reads_a_transform_as_call_parts_reads_the_value(transform: Any) -> None:
    """Where the plan says a part comes from is where call_parts finds it in the parsed value."""
    template = capture_template(transform, repeats=True)
    content = {"tool": "f", "args": {"n": 1}, "name": "f", "arguments": {"n": 1}}
    text = f"<call name=f>{json.dumps(content)}</call>"
    (value,) = rt.parse_response(text, template, prefix="")["tool_calls"]
    parts = call_parts(value)
    assert parts is not None
    name, _, arguments = parts
    plan = tool_call_plan(rt.load_template(template).by_name["tool_calls"])

    def resolve(source: Any) -> Any:
        assert source is not None
        kind, where = source
        if kind == "literal":
            return where
        if kind == "capture":
            return {"name": "f"}[where]
        assert kind == "json"
        for path in where:
            node: Any = content
            for key in path:
                if not isinstance(node, dict) or key not in node:
                    break
                node = node[key]
            else:
                return node
        raise AssertionError(f"no path of {where} in the content")

    assert resolve(plan.name) == name
    assert resolve(plan.arguments) == arguments
