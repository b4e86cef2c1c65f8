"""The layer the engine plugins share (response_templates.engines.common), without any engine installed:
the template choice and its order, and a session's deltas equal to the whole parse however the ids come."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import response_templates as rt
from hf_fixtures import encode, hf_tokenizer, prompt_ids
from response_templates.engines.common import (
    TEMPLATE_ENV,
    EngineSetupError,
    Serving,
    Session,
    choose_template,
)

QWEN3_CHAT = (Path(__file__).resolve().parent.parent / "data" / "Qwen-Qwen3-0.6B.jinja").read_text(
    encoding="utf-8"
)

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
            },
        },
    }
]

OUTPUT = (
    "<think>\nCold, probably.\n</think>\n\nLet me check.\n<tool_call>\n"
    '{"name": "get_weather", "arguments": {"city": "Paris", "days": "3"}}\n</tool_call>'
)


class Bare:
    """A tokenizer stand-in with nothing but what the test gives it."""

    def __init__(self, **attrs: Any) -> None:
        self.__dict__.update(attrs)


@pytest.fixture(scope="module")
def tokenizer() -> Any:
    return hf_tokenizer()


# --- the template choice ------------------------------------------------------------------------------


def test_the_override_names_a_library_family_and_wins_over_everything() -> None:
    tok = Bare(response_template=rt.templates.get("qwen3").to_dict())
    choice = choose_template(tok, model_id="deepseek-ai/DeepSeek-R1", environ={TEMPLATE_ENV: "gpt-oss"})
    assert choice.source == "override"
    assert choice.family is not None and choice.family.name == "gpt-oss"
    assert "RESPONSE_TEMPLATES_TEMPLATE=gpt-oss" in choice.describe()


def test_the_override_may_be_a_template_file_or_a_tokenizer_config(tmp_path: Path) -> None:
    data = rt.templates.get("deepseek-r1").to_dict()
    bare = tmp_path / "template.json"
    bare.write_text(json.dumps(data), encoding="utf-8")
    config = tmp_path / "tokenizer_config.json"
    config.write_text(json.dumps({"response_template": data, "eos_token": "x"}), encoding="utf-8")
    for path in (bare, config):
        choice = choose_template(Bare(), model_id=None, environ={TEMPLATE_ENV: str(path)})
        assert choice.source == "override"
        assert choice.template.to_dict() == data


@pytest.mark.parametrize("value", ["no-such-family-xyz", "/nowhere/template.json"])
def test_a_bad_override_is_a_setup_error_that_names_it(value: str) -> None:
    with pytest.raises(EngineSetupError, match=TEMPLATE_ENV):
        choose_template(Bare(), model_id="Qwen/Qwen3-8B", environ={TEMPLATE_ENV: value})


def test_the_tokenizer_template_comes_before_the_model_id() -> None:
    data = rt.templates.get("hermes").to_dict()
    for tok in (Bare(response_template=data), Bare(init_kwargs={"response_template": data})):
        choice = choose_template(tok, model_id="deepseek-ai/DeepSeek-R1", environ={})
        assert choice.source == "tokenizer"
        assert choice.template.to_dict() == data


def test_an_invalid_tokenizer_template_is_a_setup_error() -> None:
    with pytest.raises(EngineSetupError, match="tokenizer's response_template"):
        choose_template(Bare(response_template={"fields": 3}), model_id=None, environ={})


@pytest.mark.parametrize("model_id", ["Qwen/Qwen3-8B", "/models/Qwen/Qwen3-8B", "/srv/weights/Qwen3-8B"])
def test_the_model_id_or_a_local_path_named_after_it(model_id: str) -> None:
    choice = choose_template(Bare(), model_id=model_id, environ={})
    assert choice.source == "model id"
    assert choice.family is not None and choice.family.name == "qwen3"


def test_the_chat_template_is_the_last_resort() -> None:
    choice = choose_template(Bare(chat_template=QWEN3_CHAT), model_id="/models/my-finetune", environ={})
    assert choice.source == "chat template"
    assert choice.template.to_dict() == rt.templates.get("qwen3").to_dict()


def test_nothing_found_says_what_was_tried() -> None:
    with pytest.raises(EngineSetupError) as info:
        choose_template(Bare(chat_template="{{ messages }}"), model_id="acme/unknown", environ={})
    text = str(info.value)
    assert "no response_template" in text and "'acme/unknown'" in text and TEMPLATE_ENV in text


# --- sessions -------------------------------------------------------------------------------------------


def _collect(session: Session, pieces: list[Any], ids: bool) -> dict[str, Any]:
    """The message the deltas of ``pieces`` add up to (as a client reassembles a stream)."""
    reasoning, content, calls = "", "", {}
    deltas = [session.feed_ids(p) if ids else session.feed_text(p) for p in pieces] + [session.finish()]
    for d in deltas:
        reasoning += d.reasoning
        content += d.content
        for c in d.tool_calls:
            call = calls.setdefault(c.index, {"name": None, "arguments": ""})
            if c.name is not None:
                assert call["name"] is None, "a call is announced once"
                call["name"] = c.name
            call["arguments"] += c.arguments
    return {"reasoning": reasoning, "content": content, "calls": [calls[i] for i in sorted(calls)]}


def _cuts(n: int) -> st.SearchStrategy[list[int]]:
    return st.lists(st.integers(1, max(1, n - 1)), max_size=12).map(lambda xs: sorted(set(xs)))


@given(data=st.data())
def test_the_deltas_of_any_id_chunking_add_up_to_the_whole_parse(tokenizer: Any, data: Any) -> None:
    serving = Serving(tokenizer, choose_template(tokenizer, model_id="Qwen/Qwen3-8B", environ={}))
    prompt = prompt_ids(tokenizer)
    ids = encode(tokenizer, OUTPUT)
    cuts = data.draw(_cuts(len(ids)))
    pieces = [ids[a:b] for a, b in zip([0, *cuts], [*cuts, len(ids)], strict=True)]
    got = _collect(serving.session(prompt_ids=prompt, tools=TOOLS), pieces, ids=True)
    whole = rt.parse_response(ids, tokenizer=tokenizer, prefix=prompt, tools=TOOLS, template="qwen3")
    assert got["reasoning"] == whole["reasoning_content"]
    assert got["content"] == whole["content"]
    [call] = whole["tool_calls"]
    assert got["calls"] == [{"name": "get_weather", "arguments": json.dumps(call["function"]["arguments"])}]
    assert json.loads(got["calls"][0]["arguments"]) == {"city": "Paris", "days": 3}  # typed by the schema


def test_a_control_token_spelled_in_ordinary_tokens_does_not_open_a_call(tokenizer: Any) -> None:
    serving = Serving(tokenizer, choose_template(tokenizer, model_id="Qwen/Qwen3-8B", environ={}))
    session = serving.session(prompt_ids=prompt_ids(tokenizer), tools=TOOLS)
    ids = encode(tokenizer, "Write ") + tokenizer.encode("<tool", add_special_tokens=False)
    ids += tokenizer.encode("_call> like this.", add_special_tokens=False)
    session.feed_ids(ids)
    result = session.result()
    assert result.tool_calls == []
    assert result.content == "Write <tool_call> like this."


def test_output_that_does_not_parse_is_kept_as_content_and_recorded(tokenizer: Any) -> None:
    serving = Serving(tokenizer, choose_template(tokenizer, model_id="Qwen/Qwen3-8B", environ={}))
    session = serving.session(prompt_ids=prompt_ids(tokenizer), tools=TOOLS)
    session.feed_ids(encode(tokenizer, "<think>a</think>Hi <tool_call>\n{not json}\n</tool_call>"))
    result = session.result()
    assert result.tool_calls == []
    assert "{not json}" in (result.content or "")
    assert result.errors


def test_without_reasoning_or_tool_parsing_the_text_stays_as_written() -> None:
    serving = Serving(None, choose_template(Bare(), model_id="Qwen/Qwen3-8B", environ={}))
    session = serving.session(tools=TOOLS, parse_reasoning=False, parse_tools=False)
    session.feed_text(OUTPUT)
    result = session.result()
    assert result.reasoning is None and result.tool_calls == []
    assert result.content == OUTPUT


def test_without_a_prompt_the_generation_prompt_of_the_family_is_assumed() -> None:
    qwen = Serving(None, choose_template(Bare(), model_id="Qwen/Qwen3-8B", environ={}))
    assert qwen.generation_prompt(thinking=None) == "<|im_start|>assistant\n"
    assert qwen.generation_prompt(thinking=False).endswith("</think>\n\n")
    assert qwen.generation_prompt(thinking=True, opens_reasoning=True).endswith("<think>\n")
    # DeepSeek-R1's prompt opens the reasoning: an output with only the closer is read right.
    r1 = Serving(None, choose_template(Bare(), model_id="deepseek-ai/DeepSeek-R1", environ={}))
    session = r1.session(tools=None)
    session.feed_text("Two plus two.</think>\n\nFour.")
    result = session.result()
    assert (result.reasoning, result.content) == ("Two plus two.", "Four.")
