"""A family name or model id wherever a template is taken, and templates that say their family
(issue 28, items 15 and 19).

``load_template`` is the one entry point: a one-word string is a name, looked up in the library (the
library registers the lookup when it is imported, so the core does not import it); anything else is JSON
text, and an error for text that is neither says which three things a string may be.
"""

from __future__ import annotations

import json

import pytest

import response_templates as rt
from response_templates.library import UnknownModelError
from response_templates.toolstream import ToolCallStreamer
from response_templates.wire import ChatCompletionsAdapter

PROMPT = "<|im_start|>user\nWeather in Paris?<|im_end|>\n<|im_start|>assistant\n"
OUTPUT = (
    '<think>\nUse the tool.\n</think>\n\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}'
    "\n</tool_call><|im_end|>"
)
EXPECTED = rt.parse_response(OUTPUT, rt.templates.get("qwen3"), prefix=PROMPT)


@pytest.mark.parametrize("name", ["qwen3", "Qwen/Qwen3-8B", "qwq", " qwen3 ", "QWEN3"])
def test_parse_response_takes_a_family_name_or_model_id(name: str) -> None:
    assert rt.parse_response(OUTPUT, name, prefix=PROMPT) == EXPECTED


def test_the_streaming_parser_takes_a_model_id() -> None:
    parser = rt.ResponseParser("Qwen/Qwen3-8B", prefix=PROMPT)
    for i in range(0, len(OUTPUT), 7):
        parser.feed(OUTPUT[i : i + 7])
    assert parser.finalize()[0] == EXPECTED
    assert parser.template is rt.templates.for_model("Qwen/Qwen3-8B")


def test_every_layer_that_takes_a_template_takes_a_name() -> None:
    assert rt.load_template("Qwen/Qwen3-8B") is rt.templates.get("qwen3")
    assert ChatCompletionsAdapter("qwen3", model="m").template is rt.templates.get("qwen3")
    streamer = ToolCallStreamer("qwen3")
    parser = rt.ResponseParser("qwen3", prefix=PROMPT)
    deltas = streamer.feed(parser.feed(OUTPUT))
    assert deltas
    assert rt.lint("qwen3") == []
    (result,) = rt.parse_batch([{"output": OUTPUT, "prompt": PROMPT}], template="qwen3")
    assert result.error is None and result.message == EXPECTED


def test_a_name_with_a_regex_timeout_keeps_its_family() -> None:
    t = rt.load_template("qwen3", regex_timeout=0.5)
    assert t.regex_timeout == 0.5 and t.family == "qwen3"
    assert t.to_dict() == rt.templates.get("qwen3").to_dict()


def test_an_unknown_name_says_what_a_string_may_be() -> None:
    with pytest.raises(UnknownModelError) as info:
        rt.parse_response(OUTPUT, "qwen-3", prefix=PROMPT)
    assert "qwen3" in info.value.near_matches
    assert "family name, a model id or JSON text" in str(info.value)
    assert isinstance(info.value, ValueError)
    with pytest.raises(rt.TemplateError, match="JSON text, a library family name or a model id"):
        rt.load_template("not a template")
    with pytest.raises(rt.TemplateError, match="must be an object"):
        rt.load_template("123")  # JSON all the same
    assert [i.code for i in rt.lint("qwen-3")] == ["load-error"]


def test_json_text_is_still_json_text() -> None:
    data = rt.templates.get("qwen3").to_dict()
    t = rt.load_template(json.dumps(data))
    assert t.family is None and t.to_dict() == data
    with pytest.raises(rt.TemplateError, match="not valid JSON"):
        rt.load_template('{"fields": ')


# ----------------------------------------------------------------------- item 19: a template's family


def test_a_template_says_which_family_it_is() -> None:
    qwen3 = rt.templates.get("qwq")  # an alias
    assert qwen3.family == "qwen3" and "family='qwen3'" in repr(qwen3)
    assert rt.templates.get("hermes").family == "hermes"  # the format qwen3 shares: named as asked
    assert rt.templates.for_model("Qwen/Qwen3-Coder-30B-A3B-Instruct").family == "qwen3-coder-instruct"
    own = rt.load_template(qwen3.to_dict())
    assert own.family is None and "family" not in repr(own)
    for name in rt.templates.names():
        assert rt.templates.get(name).family == name
