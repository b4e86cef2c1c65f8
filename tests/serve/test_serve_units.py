"""The pieces of ``response-templates serve`` without a network: request readers, prompts, grammar fields,
configuration and the command line's refusals."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

import response_templates as rt
from response_templates import cli
from response_templates.demo import load_demo_data
from response_templates.serve import ConfigError, load_config
from response_templates.serve.prompts import render_prompt, upstream_prompt
from response_templates.serve.requests import RequestError, read_request
from response_templates.serve.upstream import completion_payload, grammar_fields

CHAT_TEMPLATE = Path(__file__).resolve().parent.parent / "data" / "Qwen-Qwen3-0.6B.jinja"
DEMO = load_demo_data()
FUNCTION = DEMO.tools[0]["function"]


def config(**options: Any) -> rt.serve.ServeConfig:
    return load_config(
        upstream="http://127.0.0.1:1/v1", model="Qwen/Qwen3-0.6B", chat_template=str(CHAT_TEMPLATE), **options
    )


# ------------------------------------------------------------------------------------------- requests


def test_the_three_apis_give_the_same_conversation() -> None:
    chat = read_request(
        "chat",
        {
            "messages": [
                {"role": "developer", "content": "Be brief."},
                {
                    "role": "user",
                    "content": [{"type": "text", "text": "Weather in "}, {"type": "text", "text": "Paris?"}],
                },
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "c1",
                            "type": "function",
                            "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                        }
                    ],
                },
                {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
            ],
            "tools": DEMO.tools,
        },
    )
    responses = read_request(
        "responses",
        {
            "instructions": "Be brief.",
            "input": [
                {"role": "user", "content": [{"type": "input_text", "text": "Weather in Paris?"}]},
                {
                    "type": "function_call",
                    "call_id": "c1",
                    "name": "get_weather",
                    "arguments": '{"city": "Paris"}',
                },
                {"type": "function_call_output", "call_id": "c1", "output": "sunny"},
            ],
            "tools": [{"type": "function", **FUNCTION}],
        },
    )
    messages = read_request(
        "messages",
        {
            "max_tokens": 10,
            "system": [{"type": "text", "text": "Be brief."}],
            "messages": [
                {"role": "user", "content": "Weather in Paris?"},
                {
                    "role": "assistant",
                    "content": [
                        {"type": "tool_use", "id": "c1", "name": "get_weather", "input": {"city": "Paris"}}
                    ],
                },
                {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": "c1", "content": "sunny"}],
                },
            ],
            "tools": [
                {
                    "name": FUNCTION["name"],
                    "description": FUNCTION["description"],
                    "input_schema": FUNCTION["parameters"],
                }
            ],
        },
    )
    expected = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather in Paris?"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "type": "function",
                    "id": "c1",
                    "function": {"name": "get_weather", "arguments": {"city": "Paris"}},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
    ]
    for generation in (chat, responses, messages):
        assert generation.messages == expected
        assert generation.tools == DEMO.tools
    prompts = {render_prompt(config(), g) for g in (chat, responses, messages)}
    assert len(prompts) == 1


def test_tool_choices_of_each_api() -> None:
    tools = {"tools": DEMO.tools}
    named = {"type": "function", "function": {"name": "get_weather"}}
    assert (
        read_request(
            "chat", {"messages": [{"role": "user", "content": "x"}], **tools, "tool_choice": named}
        ).tool_choice
        == named
    )
    responses = read_request(
        "responses", {"input": "x", "tools": [{"type": "function", **FUNCTION}], "tool_choice": "required"}
    )
    assert responses.forced_tool and responses.tool_choice == "required"
    anthropic_tools = [{"name": "get_weather", "input_schema": FUNCTION["parameters"]}]
    choice = {"type": "any", "disable_parallel_tool_use": True}
    anthropic = read_request(
        "messages",
        {
            "max_tokens": 5,
            "messages": [{"role": "user", "content": "x"}],
            "tools": anthropic_tools,
            "tool_choice": choice,
        },
    )
    assert anthropic.tool_choice == "required" and anthropic.parallel_tool_calls is False
    thinking = read_request(
        "messages",
        {"max_tokens": 5, "messages": [{"role": "user", "content": "x"}], "thinking": {"type": "disabled"}},
    )
    assert thinking.chat_template_kwargs == {"enable_thinking": False}


@pytest.mark.parametrize(
    ("api", "body", "param"),
    [
        ("chat", [], None),
        ("chat", {"messages": []}, "messages"),
        ("chat", {"messages": [{"role": "robot", "content": "x"}]}, "messages[0].role"),
        ("chat", {"messages": [{"role": "user", "content": "x"}], "n": 2}, "n"),
        ("chat", {"messages": [{"role": "user", "content": "x"}], "max_tokens": 0}, "max_tokens"),
        ("chat", {"messages": [{"role": "user", "content": "x"}], "temperature": "hot"}, "temperature"),
        ("chat", {"messages": [{"role": "user", "content": "x"}], "stream": "yes"}, "stream"),
        ("chat", {"messages": [{"role": "user", "content": "x"}], "tool_choice": "required"}, "tool_choice"),
        (
            "chat",
            {"messages": [{"role": "user", "content": [{"type": "image_url"}]}]},
            "messages[0].content[0].type",
        ),
        ("responses", {}, "input"),
        ("responses", {"input": "x", "previous_response_id": "resp_1"}, "previous_response_id"),
        ("responses", {"input": "x", "tools": [{"type": "web_search"}]}, "tools[0].type"),
        ("messages", {"messages": [{"role": "user", "content": "x"}]}, "max_tokens"),
        (
            "messages",
            {"max_tokens": 5, "messages": [{"role": "assistant", "content": "The answer is"}]},
            "messages[0]",
        ),
        ("messages", {"max_tokens": 5, "messages": [{"role": "system", "content": "x"}]}, "messages[0].role"),
        (
            "messages",
            {"max_tokens": 5, "messages": [{"role": "user", "content": "x"}], "tools": [{"name": "f"}]},
            "tools[0].input_schema",
        ),
    ],
)
def test_bad_requests_name_the_field(api: Any, body: Any, param: str | None) -> None:
    with pytest.raises(RequestError) as info:
        read_request(api, body)
    assert info.value.param == param


def test_a_template_that_refuses_the_conversation_is_a_bad_request(tmp_path: Path) -> None:
    strict = tmp_path / "strict.jinja"
    strict.write_text(
        "{% if messages[0].role != 'user' %}{{ raise_exception('start with a user turn') }}{% endif %}"
    )
    served = load_config(upstream="http://x/v1", model="m", chat_template=str(strict), template="qwen3")
    generation = read_request("chat", {"messages": [{"role": "assistant", "content": "x"}]})
    with pytest.raises(RequestError, match="refused the conversation: start with a user turn") as info:
        render_prompt(served, generation)
    assert info.value.param == "messages"


def test_tool_choice_none_leaves_the_tools_out_of_the_prompt() -> None:
    body = {"messages": [{"role": "user", "content": "x"}], "tools": DEMO.tools}
    with_tools = render_prompt(config(), read_request("chat", body))
    without = render_prompt(config(), read_request("chat", {**body, "tool_choice": "none"}))
    assert "get_weather" in with_tools and "get_weather" not in without


def test_chat_template_kwargs_reach_the_template() -> None:
    body = {
        "messages": [{"role": "user", "content": "x"}],
        "chat_template_kwargs": {"enable_thinking": False},
    }
    assert render_prompt(config(), read_request("chat", body)).endswith("<think>\n\n</think>\n\n")
    server_wide = config(chat_template_kwargs={"enable_thinking": False})
    assert render_prompt(server_wide, read_request("chat", {"messages": body["messages"]})).endswith(
        "</think>\n\n"
    )


def test_the_bos_token_is_left_to_the_upstream_tokenizer() -> None:
    served = config()
    served.bos_token = "<s>"
    assert upstream_prompt(served, "<s>[INST] x") == "[INST] x"
    assert upstream_prompt(served, "[INST] x") == "[INST] x"


# ------------------------------------------------------------------------------------- grammar fields


def forced(kind: str) -> dict[str, Any]:
    served = config(upstream_kind=kind)
    generation = read_request(
        "chat",
        {"messages": [{"role": "user", "content": "x"}], "tools": DEMO.tools, "tool_choice": "required"},
    )
    prompt = render_prompt(served, generation)
    return completion_payload(served, generation, prompt, grammar_fields(served, generation, prompt))


def test_forced_tool_choice_per_upstream_kind() -> None:
    vllm = forced("vllm")
    assert json.loads(vllm["structured_outputs"]["structural_tag"])["type"] == "structural_tag"
    assert vllm["skip_special_tokens"] is False
    sglang = forced("sglang")
    assert sglang["response_format"]["type"] == "structural_tag"
    llama = forced("llama.cpp")
    assert llama["grammar"].startswith("%llguidance")
    assert "skip_special_tokens" not in llama
    with pytest.raises(RequestError, match="no grammar parameter"):
        forced("openai")


def test_auto_sends_no_grammar() -> None:
    served = config(upstream_kind="vllm")
    generation = read_request("chat", {"messages": [{"role": "user", "content": "x"}], "tools": DEMO.tools})
    assert grammar_fields(served, generation, "") == {}


# ------------------------------------------------------------------------------------- configuration


def test_the_response_template_comes_from_the_folder_then_the_library(tmp_path: Path) -> None:
    (tmp_path / "tokenizer_config.json").write_text(
        json.dumps(
            {"chat_template": CHAT_TEMPLATE.read_text(encoding="utf-8"), "bos_token": {"content": "<s>"}}
        )
    )
    by_model = load_config(upstream="http://x/v1", model="Qwen/Qwen3-8B", model_dir=str(tmp_path))
    assert by_model.template is rt.templates.for_model("Qwen/Qwen3-8B") and by_model.bos_token == "<s>"
    by_chat_template = load_config(upstream="http://x/v1", model="my-finetune", model_dir=str(tmp_path))
    assert by_chat_template.template is rt.templates.detect(CHAT_TEMPLATE.read_text(encoding="utf-8"))
    own = {"start_anchor": "<|im_start|>assistant\n", "fields": {"content": {"close": "<|im_end|>"}}}
    data = json.loads((tmp_path / "tokenizer_config.json").read_text())
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({**data, "response_template": own}))
    from_folder = load_config(upstream="http://x/v1", model="Qwen/Qwen3-8B", model_dir=str(tmp_path))
    assert list(from_folder.template.by_name) == ["content"]


def test_configuration_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="chat template"):
        load_config(upstream="http://x/v1", model="m")
    with pytest.raises(ConfigError, match="URL"):
        load_config(upstream="x:8000", model="m", chat_template=str(CHAT_TEMPLATE))
    with pytest.raises(ConfigError, match="holds no chat template"):
        load_config(upstream="http://x/v1", model="m", model_dir=str(tmp_path))
    (tmp_path / "t.jinja").write_text("{{ messages[0].content }}")
    with pytest.raises(ConfigError, match="no response template"):
        load_config(upstream="http://x/v1", model="unknown/model", chat_template=str(tmp_path / "t.jinja"))


def run_cli(*argv: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = cli.main(list(argv))
    return code, capsys.readouterr().err


def test_the_command_line_refuses_what_cannot_start(capsys: pytest.CaptureFixture[str]) -> None:
    code, err = run_cli("serve", "--upstream", "http://127.0.0.1:1/v1", "--model", "m", capsys=capsys)
    assert code == 2 and "--model-dir DIR or --chat-template FILE" in err
    code, err = run_cli(
        "serve", "--upstream", "http://x/v1", "--model", "m", "--chat-template", str(CHAT_TEMPLATE),
        "--chat-template-kwargs", "[1]", capsys=capsys,
    )  # fmt: skip
    assert code == 2 and "must be a JSON object" in err
    code, err = run_cli(
        "serve", "--upstream", "http://x/v1", "--model", "m", "--chat-template", str(CHAT_TEMPLATE),
        "--max-concurrency", "0", capsys=capsys,
    )  # fmt: skip
    assert code == 2 and "--max-concurrency" in err
    code, err = run_cli(
        "serve", "--upstream", "http://x/v1", "--model", "m", "--upstream-kind", "tgi", capsys=capsys
    )
    assert code == 2 and "invalid choice" in err
    assert "serve" in io.StringIO(cli.build_parser().format_help()).getvalue()
