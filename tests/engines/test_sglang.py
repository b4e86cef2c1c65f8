"""The SGLang plugin inside SGLang 0.5.23's own chat serving (``OpenAIServingChat``), with a tokenizer
manager stand-in that replays recorded generations as SGLang's detokenized text (``sglang_harness``).
Run with the SGLang venv: ``.venv-sglang/bin/python -m pytest tests/engines/test_sglang.py -q -p no:xdist``.
"""

from __future__ import annotations

import argparse
import json
import logging
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("sglang")
pytest.importorskip("sglang.srt.function_call.function_call_parser")

import sglang_harness as H

from response_templates import grammar
from response_templates.engines import sglang as plugin
from response_templates.engines.common import TEMPLATE_ENV

#: Up to this many recorded outputs per family here (the benchmark runs all of them).
PER_FAMILY = 3

#: Families whose client message cannot equal our parse, with the reason (none at present: unlike
#: vLLM's harness, generic-json matches here, as SGLang hands the detectors text).
KNOWN: dict[str, str] = {}

FAMILIES = H.families_with_samples()


@pytest.fixture(scope="module", autouse=True)
def _registered() -> None:
    plugin.register()


def _server(family: str, monkeypatch: pytest.MonkeyPatch, **names: Any) -> H.Server:
    monkeypatch.setenv(TEMPLATE_ENV, family)
    names.setdefault("tool_parser", plugin.NAME)
    names.setdefault("reasoning_parser", plugin.NAME)
    return H.server(family, **names)


def _same(got: dict[str, Any], case: H.Case) -> bool:
    """The client's message is our parse (tool-call ids aside: SGLang makes its own)."""
    return H.without_ids(got) == H.without_ids(case.ours)


def _run_python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )


# ------------------------------------------------------------------------------------------- registration


def test_register_is_idempotent() -> None:
    from sglang.srt.entrypoints.openai.serving_chat import OpenAIServingChat
    from sglang.srt.function_call.function_call_parser import FunctionCallParser
    from sglang.srt.function_call.parser_names import TOOL_CALL_PARSER_NAMES
    from sglang.srt.parser.reasoning_parser import ReasoningParser
    from sglang.srt.parser.reasoning_parser_names import REASONING_PARSER_NAMES

    from response_templates.engines.sglang.detectors import (
        ResponseTemplatesDetector,
        ResponseTemplatesReasoningDetector,
        install,
    )

    patched = OpenAIServingChat._patch_reasoning_skip_special_tokens
    plugin.register()
    install()
    assert OpenAIServingChat._patch_reasoning_skip_special_tokens is patched
    assert getattr(patched, "_response_templates_original", None) is not None
    assert FunctionCallParser.ToolCallParserEnum[plugin.NAME] is ResponseTemplatesDetector
    assert ReasoningParser.DetectorMap[plugin.NAME] is ResponseTemplatesReasoningDetector
    assert TOOL_CALL_PARSER_NAMES.count(plugin.NAME) == 1
    assert REASONING_PARSER_NAMES.count(plugin.NAME) == 1
    # SGLang's own vendored parser keeps its name and class.
    assert FunctionCallParser.ToolCallParserEnum["response_template"].__module__.startswith("sglang.")


def test_entry_point_is_what_sglang_loads() -> None:
    """SGLang loads the ``sglang.srt.plugins`` group with ``ep.load()`` and calls what it gets."""
    from sglang.srt.plugins import GENERAL_PLUGINS_GROUP, load_plugins_by_group

    assert GENERAL_PLUGINS_GROUP == "sglang.srt.plugins"
    plugins = load_plugins_by_group(GENERAL_PLUGINS_GROUP)
    func, dist = plugins[plugin.NAME]
    assert func is plugin.register and dist == "response-templates"


def test_flags_are_accepted_by_the_server_args_parser() -> None:
    """In this process the registries are imported: SGLang takes the choices from them."""
    from sglang.srt.server_args import ServerArgs

    parser = argparse.ArgumentParser()
    ServerArgs.add_cli_args(parser)
    flags = ["--model-path", "m", "--tool-call-parser", plugin.NAME, "--reasoning-parser", plugin.NAME]
    args = parser.parse_args(flags)
    assert args.tool_call_parser == plugin.NAME and args.reasoning_parser == plugin.NAME


def test_register_is_lazy_and_the_flags_parse_before_any_import() -> None:
    """A fresh process, as SGLang starts one: ``load_plugins()`` imports none of the parser registries,
    the command line (choices from SGLang's lists of names) accepts the flags, and importing the
    registries later registers the detectors."""
    result = _run_python(
        """
        import argparse, sys
        from sglang.srt.plugins import load_plugins
        load_plugins()
        heavy = [m for m in ("sglang.srt.function_call.function_call_parser", "sglang.srt.parser.reasoning_parser",
                             "sglang.srt.entrypoints.openai.serving_chat") if m in sys.modules]
        from sglang.srt.server_args import ServerArgs
        parser = argparse.ArgumentParser()
        ServerArgs.add_cli_args(parser)
        args = parser.parse_args(["--model-path", "m", "--tool-call-parser", "response_templates",
                                  "--reasoning-parser", "response_templates"])
        still = "sglang.srt.function_call.function_call_parser" in sys.modules
        from sglang.srt.function_call.function_call_parser import FunctionCallParser
        from sglang.srt.parser.reasoning_parser import ReasoningParser
        print(heavy, still, args.tool_call_parser, args.reasoning_parser,
              FunctionCallParser.ToolCallParserEnum["response_templates"].__name__,
              ReasoningParser.DetectorMap["response_templates"].__name__)
        """
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.split()[-6:] == [
        "[]",
        "False",
        "response_templates",
        "response_templates",
        "ResponseTemplatesDetector",
        "ResponseTemplatesReasoningDetector",
    ], result.stdout


def test_unsupported_sglang_fails_only_when_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    from sglang.srt.function_call.function_call_parser import FunctionCallParser
    from sglang.srt.parser.reasoning_parser import ReasoningParser

    monkeypatch.setattr(FunctionCallParser, "ToolCallParserEnum", dict(FunctionCallParser.ToolCallParserEnum))
    monkeypatch.setattr(ReasoningParser, "DetectorMap", dict(ReasoningParser.DetectorMap))
    del FunctionCallParser.ToolCallParserEnum[plugin.NAME]
    del ReasoningParser.DetectorMap[plugin.NAME]
    monkeypatch.setattr(plugin, "_registered", False)
    monkeypatch.setattr(plugin.metadata, "version", lambda name: "0.5.22")
    plugin.register()  # no error: an installed plugin does not break other servers
    assert ReasoningParser("qwen3").detector is not None  # SGLang's own parsers are untouched
    with pytest.raises(RuntimeError, match=r"sglang>=0\.5\.23,<0\.5\.24, this is SGLang 0\.5\.22"):
        ReasoningParser(plugin.NAME)
    with pytest.raises(RuntimeError, match=r"sglang>=0\.5\.23,<0\.5\.24"):
        FunctionCallParser([], plugin.NAME)
    assert plugin.supported_version("0.5.23") and plugin.supported_version("0.5.23.post1")
    assert not plugin.supported_version("0.5.24") and not plugin.supported_version("0.6.0")
    assert not plugin.supported_version("0.5.22")


def test_no_template_is_a_startup_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(TEMPLATE_ENV, raising=False)
    with pytest.raises(RuntimeError, match="no response template for this model"):
        H.server("hermes", tool_parser=plugin.NAME, reasoning_parser=plugin.NAME)


def test_model_id_chooses_the_template(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from response_templates.engines.sglang.detectors import serving_for

    monkeypatch.delenv(TEMPLATE_ENV, raising=False)
    H.install_config(served_model_name="Qwen/Qwen3-8B")
    tok = H.hf_tokenizer("qwen3")
    with caplog.at_level(logging.INFO, logger="response_templates.engines.sglang"):
        serving = serving_for(tok)
        assert serving_for(tok) is serving
    assert serving.choice.source == "model id" and serving.choice.family is not None
    assert serving.choice.family.name == "qwen3"
    assert caplog.text.count("parsing with") == 1


# ------------------------------------------------------------------------------------------- the proof


@pytest.mark.parametrize("family", FAMILIES)
def test_serving_returns_our_parse(family: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """What SGLang's serving code returns to the client, whole and streamed, is our own parse."""
    if family in KNOWN:
        pytest.xfail(KNOWN[family])
    srv = _server(family, monkeypatch)
    cases = H.cases(family, PER_FAMILY)
    assert cases
    for case in cases:
        for stream in (False, True):
            got = srv.run(case, stream=stream)
            assert _same(got, case), (case.id, stream, got, case.ours)


def test_known_differences_still_differ(monkeypatch: pytest.MonkeyPatch) -> None:
    for family in KNOWN:
        srv = _server(family, monkeypatch)
        case = H.cases(family, 1)[0]
        assert not _same(srv.run(case, stream=False), case), f"{family} is fixed: drop it from KNOWN"


def test_streams_token_by_token_and_in_large_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    srv = _server("qwen3", monkeypatch)
    for chunk in (1, 7, 1000):
        srv.manager.chunk = chunk
        for case in H.cases("qwen3", PER_FAMILY):
            assert _same(srv.run(case, stream=True), case), (case.id, chunk)


def test_special_tokens_reach_the_parser(monkeypatch: pytest.MonkeyPatch) -> None:
    """SGLang keeps special tokens for requests with tools only (and a few parsers of its own by name);
    ours keeps them for every request."""
    family = "kimi-k1.5"  # reasoning in ◁think▷ ... ◁/think▷, special tokens
    srv = _server(family, monkeypatch)
    case = next(c for c in H.cases(family) if c.ours.get("reasoning_content"))
    for stream in (False, True):
        got = srv.run(case, stream=stream, tools=None, tool_choice=None)
        assert _same(got, case), got
        assert srv.manager.sent[-1]["skip_special_tokens"] is False
        assert srv.manager.sent[-1]["spaces_between_special_tokens"] is False
    theirs = _server("qwen3", monkeypatch, tool_parser="qwen25", reasoning_parser="qwen3")
    theirs.run(H.cases("qwen3", 1)[0], stream=False, tools=None, tool_choice=None)
    assert theirs.manager.sent[-1]["skip_special_tokens"] is True
    assert theirs.manager.sent[-1]["spaces_between_special_tokens"] is True


def test_reasoning_and_tool_switches(monkeypatch: pytest.MonkeyPatch) -> None:
    """Only ``--tool-call-parser`` ours, or ``separate_reasoning=false``: reasoning is content as written;
    ``tool_choice=none``: tool-call text is content as written."""
    case = next(c for c in H.cases("qwen3") if c.ours.get("reasoning_content") and c.ours.get("tool_calls"))
    tools_only = _server("qwen3", monkeypatch, reasoning_parser=None)
    both = _server("qwen3", monkeypatch)
    for stream in (False, True):
        for srv, extra in ((tools_only, {}), (both, {"separate_reasoning": False})):
            got = srv.run(case, stream=stream, **extra)
            assert "reasoning_content" not in got, (stream, extra)
            assert case.ours["reasoning_content"] in got["content"]
            assert H.without_ids(got)["tool_calls"] == H.without_ids(case.ours)["tool_calls"]
        got = both.run(case, stream=stream, tool_choice="none")
        assert got.get("reasoning_content") == case.ours["reasoning_content"]
        assert "tool_calls" not in got and "<tool_call>" in got["content"]


def test_other_tool_parser_after_our_reasoning(monkeypatch: pytest.MonkeyPatch) -> None:
    """``--reasoning-parser`` ours with SGLang's ``qwen25`` tool parser: ours passes on only the rest, so
    the client gets what SGLang's own ``qwen3`` reasoning parser gives with it."""
    case = H.cases("qwen3", 1)[0]
    case.tools = [WEATHER]
    case.prefix = "<|im_start|>assistant\n"
    case.raw = "<think>\nNeed the weather.\n</think>\n\n" + CALL
    ours = _server("qwen3", monkeypatch, tool_parser="qwen25")
    theirs = _server("qwen3", monkeypatch, tool_parser="qwen25", reasoning_parser="qwen3")
    for stream in (False, True):
        got = ours.run(case, stream=stream)
        assert got == theirs.run(case, stream=stream)
        assert got["reasoning_content"] == "Need the weather." and H.without_ids(got)["tool_calls"] == PARIS


def test_prompt_opened_reasoning(monkeypatch: pytest.MonkeyPatch) -> None:
    """SGLang gives no prompt, only ``force_reasoning`` (the chat template opens the reasoning): the
    family's prompt that opens it is then read before the output, unless the output opens it itself."""
    srv = _server("glm-4.7", monkeypatch)
    case = H.cases("glm-4.7", 1)[0]
    case.tools = None
    case.prefix = "[gMASK]<sop><|user|>hi<|assistant|><think>"
    want = {"role": "assistant", "reasoning_content": "Sunny, I think.", "content": "It is sunny."}
    for raw in (
        "Sunny, I think.</think>It is sunny.<|user|>",
        "<think>Sunny, I think.</think>It is sunny.<|user|>",
    ):
        case.raw = raw
        for stream in (False, True):
            srv.manager.chunk = 1
            assert srv.run(case, stream=stream) == want, (raw, stream)


def test_continued_assistant_message(monkeypatch: pytest.MonkeyPatch) -> None:
    """``continue_final_message``: SGLang appends the last assistant message to the prompt and gives the
    reasoning detector its text; the output is read after it, as our parse reads it after that prompt."""
    import response_templates as rt
    from library_samples import normalize
    from response_templates import library

    srv = _server("qwen3", monkeypatch)
    case = H.cases("qwen3", 1)[0]
    case.tools = None
    prefill = "<think>\nLet me"
    case.prefix = "<|im_start|>assistant\n" + prefill
    case.raw = " see: sunny.\n</think>\n\nIt is sunny.<|im_end|>"
    want = normalize(rt.parse_response(case.raw, library.family("qwen3").template(), prefix=case.prefix))
    assert want.get("reasoning_content") and want.get("content") == "It is sunny."
    messages = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": prefill}]
    for stream in (False, True):
        got = srv.run(case, stream=stream, messages=messages, continue_final_message=True)
        assert got == want, (stream, got)


def test_truncated_output_is_flushed(monkeypatch: pytest.MonkeyPatch) -> None:
    """A stream cut inside a possible delimiter still reaches the client at the end (``finish()``)."""
    srv = _server("qwen3", monkeypatch)
    case = H.cases("qwen3", 1)[0]
    case.prefix, case.raw = "<|im_start|>assistant\n", "The answer is 4 <tool"
    for stream in (False, True):
        got = srv.run(case, stream=stream)
        assert got.get("content") == "The answer is 4 <tool", (stream, got)
    case.raw = "<think>Still thinking about it"
    for stream in (False, True):
        got = srv.run(case, stream=stream)
        assert got.get("reasoning_content") == "Still thinking about it", (stream, got)


def test_bad_output_is_not_a_server_error(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    srv = _server("qwen3", monkeypatch)
    case = H.cases("qwen3", 1)[0]
    case.prefix = "<|im_start|>assistant\n"
    case.raw = (
        'Checking.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": }\n</tool_call><|im_end|>'
    )
    for stream in (False, True):
        with caplog.at_level(logging.WARNING, logger="response_templates.engines.sglang"):
            got = srv.run(case, stream=stream)
        assert "error" not in got and "get_weather" in got.get("content", ""), got
    assert "did not parse" in caplog.text


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
PARIS = [{"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]


def srv_tools(case: H.Case) -> list[dict[str, Any]]:
    """The case's tools as SGLang's ``Tool`` model hands them on (``strict`` filled in)."""
    tools: list[dict[str, Any]] = json.loads(json.dumps(case.tools))
    for tool in tools:
        tool["function"].setdefault("strict", False)
    return tools


def _forced_case(monkeypatch: pytest.MonkeyPatch, **names: Any) -> tuple[H.Server, H.Case]:
    srv = _server("qwen3", monkeypatch, **names)
    case = H.cases("qwen3", 1)[0]
    case.prefix, case.raw, case.tools = "<|im_start|>assistant\n", CALL, [json.loads(json.dumps(WEATHER))]
    return srv, case


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
    """SGLang asks the detector for a structural tag (``get_structural_tag``, and
    ``get_auto_tool_call_structural_tag`` for automatic choice): ours is the template's grammar. With
    ``--reasoning-parser`` SGLang's reasoner backend starts it after the reasoning, so it has none."""
    srv, case = _forced_case(monkeypatch)
    assert case.tools is not None
    if request_args.pop("strict", False):
        case.tools[0]["function"]["strict"] = True
    for stream in (False, True):
        got = srv.run(case, stream=stream, **request_args)
        assert H.without_ids(got)["tool_calls"] == PARIS, got
        sent = srv.manager.sent[-1]
        want = grammar.build(
            "qwen3",
            tools=srv_tools(case),
            prefix="<|im_start|>assistant\n",
            reasoning="forbidden",
            **build_args,
        ).structural_tag
        assert json.loads(sent["structural_tag"]) == want
        assert "json_schema" not in sent


def test_forced_tool_use_grammar_includes_reasoning_without_a_reasoning_parser(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import xgrammar

    srv, case = _forced_case(monkeypatch, reasoning_parser=None)
    srv.run(case, stream=False, tool_choice="required")
    tag = srv.manager.sent[-1]["structural_tag"]
    assert (
        json.loads(tag)
        == grammar.build(
            "qwen3", tools=srv_tools(case), tool_choice="required", prefix="<|im_start|>assistant\n"
        ).structural_tag
    )
    info = xgrammar.TokenizerInfo.from_huggingface(srv.tokenizer)
    matcher = xgrammar.GrammarMatcher(xgrammar.GrammarCompiler(info).compile_structural_tag(tag))
    assert matcher.accept_string("<think>\nhm\n</think>\n\n" + CALL.removesuffix("<|im_end|>"))


@pytest.mark.parametrize(
    "request_args",
    [{"tool_choice": "required"}, {"tool_choice": {"type": "function", "function": {"name": "get_weather"}}}],
)
def test_forced_tool_use_without_grammar_is_a_400(
    request_args: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A template whose call syntax has no grammar: the request is refused (SGLang would otherwise force
    a bare JSON array of calls, which this template does not write), and nothing is generated."""
    srv = _server("minimax-m3", monkeypatch)
    case = H.cases("minimax-m3", 1)[0]
    case.tools = [WEATHER]
    sent = len(srv.manager.sent)
    got = srv.run(case, stream=False, **request_args)
    error = got["error"]
    assert error["code"] == 400, got
    assert "response_templates cannot enforce tool_choice=" in error["message"]
    assert "for the minimax-m3 format" in error["message"]
    assert len(srv.manager.sent) == sent
    assert "error" not in srv.run(case, stream=False, tool_choice="auto")  # automatic choice still serves


def test_auto_tool_choice_sends_no_grammar(monkeypatch: pytest.MonkeyPatch) -> None:
    srv, case = _forced_case(monkeypatch)
    srv.run(case, stream=False)
    sent = srv.manager.sent[-1]
    assert "structural_tag" not in sent and "json_schema" not in sent


def test_detectors_standalone(monkeypatch: pytest.MonkeyPatch) -> None:
    """What SGLang's ``/separate_reasoning`` endpoint and the scheduler ask of the reasoning detector."""
    from sglang.srt.parser.reasoning_parser import ReasoningParser

    monkeypatch.setenv(TEMPLATE_ENV, "qwen3")
    H.install_config()
    tok = H.hf_tokenizer("qwen3")
    parser = ReasoningParser(plugin.NAME, tokenizer=tok)
    assert parser.detector.think_end_token == "</think>"
    assert parser.detector.get_think_end_token_ids(tok) == [tok.convert_tokens_to_ids("</think>")]
    assert parser.parse_non_stream("<think>\nhm\n</think>\n\nHi") == ("hm", "Hi")


def test_module_imports_no_sglang() -> None:
    result = _run_python(
        """
        import sys
        import response_templates.engines.sglang
        print(sorted(m for m in sys.modules if m.split(".")[0] == "sglang"))
        """
    )
    assert result.returncode == 0 and result.stdout.strip() == "[]", result.stdout + result.stderr


def test_files_exist() -> None:
    assert (Path(__file__).parent / "sglang_harness.py").is_file()
