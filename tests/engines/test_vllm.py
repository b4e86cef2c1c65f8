"""The vLLM plugin inside vLLM 0.34's own chat serving (``OpenAIServingChat``), with an engine stand-in that
replays recorded generations as token ids (``vllm_harness``). Run with the vLLM venv:
``/tmp/venv-vllm/bin/python -m pytest tests/engines/test_vllm.py -q -p no:cacheprovider -p no:xdist``.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest

pytest.importorskip("vllm")
pytest.importorskip("vllm.parser")

import vllm_harness as H

from response_templates import grammar
from response_templates.engines import vllm as plugin
from response_templates.engines.common import TEMPLATE_ENV

#: Up to this many recorded outputs per family here (the benchmark runs all of them).
PER_FAMILY = 3

#: Families whose served message cannot equal our own parse, with the reason (none today).
KNOWN: dict[str, str] = {}


@pytest.fixture(scope="module", autouse=True)
def _registered() -> None:
    plugin.register()


def _server(family: str, monkeypatch: pytest.MonkeyPatch, **names: Any) -> H.Server:
    monkeypatch.setenv(TEMPLATE_ENV, family)
    names.setdefault("tool_parser", plugin.NAME)
    names.setdefault("reasoning_parser", plugin.NAME)
    return H.server(family, **names)


FAMILIES = [f for f in H.families_with_samples() if f != "gpt-oss"]


# ------------------------------------------------------------------------------------------- registration


def test_register_is_idempotent() -> None:
    from vllm.parser.parser_manager import ParserManager
    from vllm.reasoning import ReasoningParserManager
    from vllm.tool_parsers import ToolParserManager

    plugin.register()
    wrapped = ParserManager.__dict__["_compose_parser"].__func__
    plugin.register()
    assert ParserManager.__dict__["_compose_parser"].__func__ is wrapped
    assert getattr(wrapped, "_response_templates_original", None) is not None
    assert plugin.NAME in ToolParserManager.list_registered()
    assert plugin.NAME in ReasoningParserManager.list_registered()
    from response_templates.engines.vllm.parsers import (
        ResponseTemplatesReasoningParser,
        ResponseTemplatesToolParser,
    )

    assert ToolParserManager.get_tool_parser(plugin.NAME) is ResponseTemplatesToolParser
    assert ReasoningParserManager.get_reasoning_parser(plugin.NAME) is ResponseTemplatesReasoningParser


def test_vllm_loads_the_plugin_from_its_entry_point() -> None:
    """In a fresh process, vLLM's own plugin loading (what ``vllm serve`` does while building its
    command line) registers both names, and its argument check then accepts them."""
    import subprocess
    import sys

    code = (
        "import argparse, types\n"
        "from vllm.plugins import load_general_plugins\n"
        "load_general_plugins()\n"
        "from vllm.entrypoints.common.cli_args import validate_api_server_args\n"
        "args = argparse.Namespace(enable_auto_tool_choice=True, tool_call_parser='response_templates',\n"
        "    structured_outputs_config=types.SimpleNamespace(reasoning_parser='response_templates'))\n"
        "validate_api_server_args(args)\n"
        "print('accepted')\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0 and "accepted" in result.stdout, result.stderr[-2000:]


def test_other_names_are_left_to_vllm(monkeypatch: pytest.MonkeyPatch) -> None:
    from vllm.parser.abstract_parser import DelegatingParser
    from vllm.parser.parser_manager import ParserManager

    cls = ParserManager.get_parser(
        tool_parser_name="hermes", reasoning_parser_name="qwen3", enable_auto_tools=True
    )
    assert cls is not None and issubclass(cls, DelegatingParser)
    assert cls.__module__.startswith("vllm.")


def test_unsupported_vllm_fails_only_when_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    from vllm.reasoning import ReasoningParserManager
    from vllm.tool_parsers import ToolParserManager

    monkeypatch.setattr(ToolParserManager, "lazy_parsers", dict(ToolParserManager.lazy_parsers))
    monkeypatch.setattr(ToolParserManager, "tool_parsers", {})
    monkeypatch.setattr(ReasoningParserManager, "lazy_parsers", dict(ReasoningParserManager.lazy_parsers))
    monkeypatch.setattr(ReasoningParserManager, "reasoning_parsers", {})
    monkeypatch.setattr(plugin.metadata, "version", lambda name: "0.33.2")
    plugin.register()  # no error: an installed plugin does not break other servers
    with pytest.raises(ImportError, match=r"vllm>=0\.34,<0\.35"):
        ToolParserManager.get_tool_parser(plugin.NAME)
    assert plugin.supported_version("0.34.0") and plugin.supported_version("0.34.2.dev5+gabc")
    assert not plugin.supported_version("0.35.0") and not plugin.supported_version("1.0")


def test_mixed_names_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    from vllm.parser.parser_manager import ParserManager

    with pytest.raises(TypeError, match="cannot be combined"):
        ParserManager.get_parser(
            tool_parser_name=plugin.NAME, reasoning_parser_name="qwen3", enable_auto_tools=True
        )


def test_gpt_oss_defers_to_harmony(caplog: pytest.LogCaptureFixture) -> None:
    from vllm.parser.harmony import HarmonyParser
    from vllm.parser.parser_manager import ParserManager

    with caplog.at_level(logging.WARNING, logger="response_templates.engines.vllm"):
        cls = ParserManager.get_parser(
            tool_parser_name=plugin.NAME,
            reasoning_parser_name=plugin.NAME,
            enable_auto_tools=True,
            is_harmony=True,
        )
    assert cls is HarmonyParser
    assert (
        type(cls.reasoning_parser_cls).__name__
        and cls.reasoning_parser_cls.__name__ == "GptOssReasoningParser"
    )
    assert cls.tool_parser_cls is not None and cls.tool_parser_cls.__name__ == "GptOssToolParser"
    assert "Harmony" in caplog.text


def test_no_template_is_a_startup_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(TEMPLATE_ENV, raising=False)
    with pytest.raises(TypeError, match="no response template for this model"):
        H.server("hermes", tool_parser=plugin.NAME, reasoning_parser=None)


def test_model_id_chooses_the_template(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from response_templates.engines.vllm.parsers import serving_for

    monkeypatch.delenv(TEMPLATE_ENV, raising=False)
    tok = H.hf_tokenizer("qwen3")
    with caplog.at_level(logging.INFO, logger="response_templates.engines.vllm"):
        serving = serving_for(tok, H.ModelConfig("Qwen/Qwen3-8B", "qwen3"))
        assert serving_for(tok) is serving
    assert serving.choice.source == "model id" and serving.choice.family is not None
    assert serving.choice.family.name == "qwen3"
    assert caplog.text.count("parsing with") == 1


# ------------------------------------------------------------------------------------------- the proof


@pytest.mark.parametrize("family", FAMILIES)
def test_serving_returns_our_parse(family: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """What vLLM's serving code returns to the client, whole and streamed, is our own parse of the output."""
    if family in KNOWN:
        pytest.xfail(KNOWN[family])
    srv = _server(family, monkeypatch)
    cases = H.cases(family, PER_FAMILY)
    assert cases
    for case in cases:
        for stream in (False, True):
            got = srv.run(case, stream=stream)
            assert got == case.ours, (case.id, stream)


def test_known_differences_still_differ(monkeypatch: pytest.MonkeyPatch) -> None:
    for family in KNOWN:
        srv = _server(family, monkeypatch)
        case = H.cases(family, 1)[0]
        assert srv.run(case, stream=False) != case.ours, f"{family} is fixed: drop it from KNOWN"


def test_streams_token_by_token_and_in_large_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    srv = _server("qwen3", monkeypatch)
    for chunk in (1, 7, 1000):
        srv.engine.chunk = chunk
        for case in H.cases("qwen3", PER_FAMILY):
            assert srv.run(case, stream=True) == case.ours, (case.id, chunk)


def test_special_tokens_reach_the_parser(monkeypatch: pytest.MonkeyPatch) -> None:
    srv = _server("kimi-k2", monkeypatch)
    case = next(c for c in H.cases("kimi-k2") if c.expected.get("tool_calls"))
    assert srv.run(case, stream=False) == case.ours
    params, _ = srv.engine.sent[-1]
    assert params.skip_special_tokens is False
    assert params.spaces_between_special_tokens is False


def test_kimi_tool_call_ids(monkeypatch: pytest.MonkeyPatch) -> None:
    """Kimi K2 servers use ``functions.NAME:INDEX`` ids; a model-written id is kept."""
    srv = _server("kimi-k2", monkeypatch)
    for case in H.cases("kimi-k2"):
        for stream in (False, True):
            got = srv.run(case, stream=stream)
            for call in got.get("tool_calls", []):
                assert call["id"].startswith("functions."), call


def test_reasoning_switches(monkeypatch: pytest.MonkeyPatch) -> None:
    """``include_reasoning=False`` drops it; only ``--tool-call-parser``: reasoning is content as written."""
    case = next(
        c for c in H.cases("qwen3") if c.ours.get("reasoning_content") and not c.ours.get("tool_calls")
    )
    srv = _server("qwen3", monkeypatch)
    for stream in (False, True):
        got = srv.run(case, stream=stream, include_reasoning=False)
        assert "reasoning_content" not in got and got.get("content") == case.ours.get("content")
    tools_only = _server("qwen3", monkeypatch, reasoning_parser=None)
    for stream in (False, True):
        got = tools_only.run(case, stream=stream)
        assert "reasoning_content" not in got
        assert case.ours["reasoning_content"] in got["content"]


def test_thinking_off_by_chat_template_kwargs(monkeypatch: pytest.MonkeyPatch) -> None:
    """``enable_thinking=False``: the prompt (here the recorded one that closes the block) decides."""
    srv = _server("qwen3", monkeypatch)
    case = H.cases("qwen3", 1)[0]
    case.prefix = "<|im_start|>assistant\n<think>\n\n</think>\n\n"
    case.raw = "Paris is sunny.<|im_end|>"
    for stream in (False, True):
        got = srv.run(case, stream=stream, chat_template_kwargs={"enable_thinking": False})
        assert got == {"role": "assistant", "content": "Paris is sunny."}
    _, kwargs = srv.engine.sent[-1]
    assert kwargs["reasoning_ended"] is True  # structured outputs start at the first token


def test_prompt_opened_reasoning(monkeypatch: pytest.MonkeyPatch) -> None:
    srv = _server("qwen3", monkeypatch)
    case = H.cases("qwen3", 1)[0]
    case.prefix = "<|im_start|>assistant\n<think>\n"
    case.raw = "Sunny, I think.\n</think>\n\nIt is sunny.<|im_end|>"
    for stream in (False, True):
        got = srv.run(case, stream=stream)
        assert got == {"role": "assistant", "reasoning_content": "Sunny, I think.", "content": "It is sunny."}


def test_truncated_output_is_flushed(monkeypatch: pytest.MonkeyPatch) -> None:
    """A stream cut inside a possible delimiter still reaches the client at the end (finished=True)."""
    srv = _server("qwen3", monkeypatch)
    case = H.cases("qwen3", 1)[0]
    case.prefix = "<|im_start|>assistant\n"
    case.raw = "The answer is 4 <tool"
    for stream in (False, True):
        got = srv.run(case, stream=stream)
        assert got.get("content") == "The answer is 4 <tool", stream


def test_bad_output_is_not_a_server_error(monkeypatch: pytest.MonkeyPatch) -> None:
    srv = _server("qwen3", monkeypatch)
    case = H.cases("qwen3", 1)[0]
    case.prefix = "<|im_start|>assistant\n"
    case.raw = (
        'Checking.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": }\n</tool_call><|im_end|>'
    )
    for stream in (False, True):
        got = srv.run(case, stream=stream)
        assert "error" not in got and "get_weather" in got.get("content", ""), got


# ------------------------------------------------------------------------------------------- forced tool use

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
CALL = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call><|im_end|>'


@pytest.mark.parametrize(
    ("request_args", "build_args"),
    [
        ({"tool_choice": "required"}, {"tool_choice": "required"}),
        (
            {"tool_choice": {"type": "function", "function": {"name": "get_weather"}}},
            {"tool_choice": "get_weather"},
        ),
        (
            {"tool_choice": "auto", "parallel_tool_calls": False},
            {"tool_choice": "auto", "parallel_tool_calls": False},
        ),
        ({"tool_choice": "auto", "strict": True}, {"tool_choice": "auto"}),
    ],
)
def test_forced_tool_use_sends_our_grammar(
    request_args: dict[str, Any], build_args: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    from vllm.v1.structured_output.backend_xgrammar import validate_xgrammar_grammar

    srv = _server("qwen3", monkeypatch)
    case = H.cases("qwen3", 1)[0]
    case.prefix = "<|im_start|>assistant\n"
    case.raw = CALL
    tool = json.loads(json.dumps(WEATHER))
    if request_args.pop("strict", False):
        tool["function"]["strict"] = True
    case.tools = [tool]
    for stream in (False, True):
        got = srv.run(case, stream=stream, **request_args)
        assert got["tool_calls"] == [
            {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}
        ]
        params, kwargs = srv.engine.sent[-1]
        want = grammar.build("qwen3", tools=[tool], prefix=case.prefix, **build_args).structural_tag
        assert params.structured_outputs is not None
        assert json.loads(params.structured_outputs.structural_tag) == want
        assert kwargs["reasoning_ended"] is True  # the grammar includes the reasoning block
        validate_xgrammar_grammar(params)  # xgrammar accepts it (raises otherwise)


def test_xgrammar_compiles_the_grammar_for_the_tokenizer(monkeypatch: pytest.MonkeyPatch) -> None:
    import xgrammar

    srv = _server("qwen3", monkeypatch)
    case = H.cases("qwen3", 1)[0]
    case.prefix, case.raw, case.tools = "<|im_start|>assistant\n", CALL, [WEATHER]
    srv.run(case, stream=False, tool_choice="required")
    params, _ = srv.engine.sent[-1]
    info = xgrammar.TokenizerInfo.from_huggingface(srv.tokenizer)
    compiled = xgrammar.GrammarCompiler(info).compile_structural_tag(params.structured_outputs.structural_tag)
    matcher = xgrammar.GrammarMatcher(compiled)
    text = CALL.removesuffix("<|im_end|>")
    assert matcher.accept_string(text)


def test_forced_tool_use_without_grammar_is_a_400(monkeypatch: pytest.MonkeyPatch) -> None:
    from vllm.entrypoints.serve.exception_handling.error_response import create_error_response
    from vllm.exceptions import VLLMValidationError

    srv = _server("minimax-m3", monkeypatch)
    case = H.cases("minimax-m3", 1)[0]
    case.tools = [WEATHER]
    with pytest.raises(VLLMValidationError) as info:
        srv.run(case, stream=False, tool_choice="required")
    assert "response_templates cannot enforce tool_choice=required for the minimax-m3 format" in str(
        info.value
    )
    response = create_error_response(info.value)
    assert response.error.code == 400 and response.error.param == "tool_choice"


def test_auto_tool_choice_sends_no_grammar(monkeypatch: pytest.MonkeyPatch) -> None:
    srv = _server("qwen3", monkeypatch)
    case = H.cases("qwen3", 1)[0]
    case.prefix, case.raw, case.tools = "<|im_start|>assistant\n", CALL, [WEATHER]
    srv.run(case, stream=False)
    params, _ = srv.engine.sent[-1]
    assert params.structured_outputs is None


# ------------------------------------------------------------------------------------------- standalone


def test_reasoning_parser_standalone(monkeypatch: pytest.MonkeyPatch) -> None:
    """What vLLM's structured-output manager asks the reasoning parser (tokenizer and kwargs only)."""
    from response_templates.engines.vllm.parsers import ResponseTemplatesReasoningParser

    monkeypatch.setenv(TEMPLATE_ENV, "qwen3")
    tok = H.hf_tokenizer("qwen3")
    enc = lambda text: list(tok.encode(text, add_special_tokens=False))  # noqa: E731
    parser = ResponseTemplatesReasoningParser(tokenizer=tok, chat_template_kwargs={})
    assert not parser.is_reasoning_end(
        enc("<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\n")
    )
    assert parser.is_reasoning_end(enc("<|im_start|>assistant\n<think>\n\n</think>\n\n"))
    output = enc("<think>\nhm\n</think>\n\nHi")
    end = output.index(tok.convert_tokens_to_ids("</think>"))
    assert not parser.is_reasoning_end_streaming(output[:end], output[end - 2 : end])
    assert parser.is_reasoning_end_streaming(output[: end + 1], output[end - 1 : end + 1])
    assert parser.extract_content_ids(output) == output[end + 1 :]
    assert parser.reasoning_end_str == "</think>"
    assert parser.extract_reasoning("<think>\nhm\n</think>\n\nHi", None) == ("hm", "Hi")
    assert parser.count_reasoning_tokens(output) > 0


def test_tool_parser_standalone(monkeypatch: pytest.MonkeyPatch) -> None:
    from response_templates.engines.vllm.parsers import ResponseTemplatesToolParser

    monkeypatch.setenv(TEMPLATE_ENV, "qwen3")
    parser = ResponseTemplatesToolParser(H.hf_tokenizer("qwen3"), None)
    info = parser.extract_tool_calls("Checking.\n" + CALL.removesuffix("<|im_end|>"), None)
    assert info.tools_called and info.content == "Checking."
    assert info.tool_calls[0].function.name == "get_weather"
    assert json.loads(info.tool_calls[0].function.arguments) == {"city": "Paris"}


def test_reasoning_tokens_are_counted_as_the_stream_is_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """vLLM asks ``count_reasoning_tokens`` after every step (continuous usage): the stream's own count,
    without parsing again, equals the count of reading the ids afresh."""
    from vllm.parser.parser_manager import ParserManager

    from response_templates.engines.vllm import parsers

    monkeypatch.setenv(TEMPLATE_ENV, "qwen3")
    tok = H.hf_tokenizer("qwen3")
    cls = ParserManager.get_parser(
        tool_parser_name=plugin.NAME, reasoning_parser_name=plugin.NAME, enable_auto_tools=True, tokenizer=tok
    )
    prompt = list(tok.encode("<|im_start|>assistant\n", add_special_tokens=False))
    output = list(
        tok.encode("<think>\nLet me think. Sunny.\n</think>\n\nIt is sunny.", add_special_tokens=False)
    )
    parser = cls(tok)
    parser.set_prompt_token_ids(prompt)
    afresh = parsers._count_reasoning(parser.serving, prompt, output, None)
    assert 0 < afresh < len(output)
    request = H.chat_request("qwen3")
    for n, token in enumerate(output):
        parser.parse_delta(tok.decode([token]), [token], request, prompt, finished=n == len(output) - 1)
        assert parser.count_reasoning_tokens(output[: n + 1]) <= afresh
    assert parser.count_reasoning_tokens(output) == afresh


@pytest.mark.parametrize("family", ["qwen3", "kimi-k2", "glm-4.5", "mistral-v11", "deepseek-v3.1"])
def test_the_responses_api_returns_our_parse(family: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """``/v1/responses`` builds the same parser: its output items are our parse, whole and streamed."""
    srv = _server(family, monkeypatch)
    responses = H.responses_server(srv, tool_parser=plugin.NAME, reasoning_parser=plugin.NAME)
    for case in H.cases(family, PER_FAMILY):
        for stream in (False, True):
            assert H.run_responses(srv, responses, case, stream=stream) == case.ours, (case.id, stream)
