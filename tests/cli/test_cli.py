"""The command line (`response-templates`, `python -m response_templates`), run in-process via `cli.main`."""

from __future__ import annotations

import io
import json
import re
import runpy
import sys
from pathlib import Path
from typing import Any

import pytest

import response_templates as rt
from cli_runs import run
from response_templates import cli, demo

DATA = Path(demo.__file__).parent / "data"
TEMPLATE = DATA / demo.TEMPLATE_FILE
PROMPT = DATA / demo.PROMPT_FILE
OUTPUT = DATA / demo.OUTPUT_FILE
TOOLS = DATA / demo.TOOLS_FILE


def set_stdin(monkeypatch: pytest.MonkeyPatch, text: str, *, binary: bool = True) -> None:
    stream = io.TextIOWrapper(io.BytesIO(text.encode()), encoding="utf-8") if binary else io.StringIO(text)
    monkeypatch.setattr(sys, "stdin", stream)


def expected_message() -> dict[str, Any]:
    data = demo.load_demo_data()
    message = rt.parse_response(data.output, data.template, prefix=data.prompt, tools=data.tools)
    assert isinstance(message, dict)
    return message


def write(tmp_path: Path, name: str, content: Any) -> Path:
    path = tmp_path / name
    path.write_text(content if isinstance(content, str) else json.dumps(content), encoding="utf-8")
    return path


# ---------------------------------------------------------------------------------------------- basics


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--version")
    assert code == 0
    assert out.strip() == f"response-templates {rt.__version__}"


def test_help_lists_commands(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--help")
    assert code == 0
    assert "demo" in out and "parse" in out


def test_no_command_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys)
    assert code == 2
    assert out == ""
    assert "COMMAND" in err


def test_unknown_option_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "parse", "--template", TEMPLATE, "--no-prefix", "--bogus", OUTPUT)
    assert code == 2
    assert "error: unrecognized arguments: --bogus" in err
    assert "usage: response-templates parse" in err


def test_python_dash_m(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(sys, "argv", ["response_templates", "--version"])
    monkeypatch.delitem(sys.modules, "response_templates.__main__", raising=False)
    with pytest.raises(SystemExit) as exit_info:
        runpy.run_module("response_templates", run_name="__main__")
    assert exit_info.value.code == 0
    assert rt.__version__ in capsys.readouterr().out


# ----------------------------------------------------------------------------------------------- parse


def test_parse_file(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(
        capsys, "parse", "--template", TEMPLATE, "--prefix", PROMPT, "--tools", TOOLS, OUTPUT
    )
    assert code == 0, err
    assert err == ""
    message = json.loads(out)
    assert message == expected_message()
    assert message["tool_calls"][1]["function"]["arguments"]["days"] == 3  # typed by --tools


def test_parse_without_tools_keeps_strings(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "parse", "-t", TEMPLATE, "--prefix", PROMPT, OUTPUT)
    assert code == 0
    assert json.loads(out)["tool_calls"][1]["function"]["arguments"]["days"] == "3"


@pytest.mark.parametrize("binary", [True, False], ids=["bytes-stdin", "text-stdin"])
def test_parse_stdin(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], binary: bool
) -> None:
    set_stdin(monkeypatch, OUTPUT.read_text(encoding="utf-8"), binary=binary)
    code, out, _ = run(capsys, "parse", "--template", TEMPLATE, "--prefix", PROMPT, "--tools", TOOLS)
    assert code == 0
    assert json.loads(out) == expected_message()


def test_parse_dash_means_stdin(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    set_stdin(monkeypatch, "<think>a</think>b")
    code, out, _ = run(capsys, "parse", "--template", TEMPLATE, "--no-prefix", "-")
    assert code == 0
    assert json.loads(out) == {"role": "assistant", "reasoning_content": "a", "content": "b"}


def test_prefix_text(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    set_stdin(monkeypatch, "thinking</think>answer")
    code, out, err = run(capsys, "parse", "-t", TEMPLATE, "--prefix-text", "<|im_start|>assistant\n<think>\n")
    assert code == 0
    assert err == ""
    assert json.loads(out) == {"role": "assistant", "reasoning_content": "thinking", "content": "answer"}


def test_prefix_without_anchor_warns(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    set_stdin(monkeypatch, "hello")
    code, out, err = run(
        capsys,
        "parse",
        "-t",
        TEMPLATE,
        "--prefix-text",
        "<|im_start|>assistant\\n",
        "--missing-anchor",
        "parse",
    )
    assert code == 0
    assert "warning: the start anchor" in err
    assert "backslash" in err  # the hint about a literal \n typed on the shell
    assert json.loads(out)["content"] == "<|im_start|>assistant\\nhello"


def test_missing_prefix_explains_why(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "parse", "--template", TEMPLATE, OUTPUT)
    assert code == 2
    assert out == ""
    assert err.startswith("error: the prompt is required")
    assert "--no-prefix" in err and "<think>" in err


def test_prefix_options_are_exclusive(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "parse", "-t", TEMPLATE, "--no-prefix", "--prefix", PROMPT, OUTPUT)
    assert code == 2
    assert "not allowed with" in err


def test_prefix_and_input_cannot_both_be_stdin(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "parse", "-t", TEMPLATE, "--prefix", "-")
    assert code == 2
    assert "--prefix -" in err


def test_tokenizer_config_as_template(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = {"model_max_length": 4096, "response_template": json.loads(TEMPLATE.read_text())}
    path = write(tmp_path, "tokenizer_config.json", config)
    code, out, _ = run(capsys, "parse", "-t", path, "--prefix", PROMPT, "--tools", TOOLS, OUTPUT)
    assert code == 0
    assert json.loads(out) == expected_message()


def test_tools_file_may_be_a_request_body(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    body = write(tmp_path, "request.json", {"model": "m", "tools": json.loads(TOOLS.read_text())})
    code, out, _ = run(capsys, "parse", "-t", TEMPLATE, "--prefix", PROMPT, "--tools", body, OUTPUT)
    assert code == 0
    assert json.loads(out) == expected_message()


# ------------------------------------------------------------------------------------- template errors


def test_invalid_template_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = write(
        tmp_path, "bad.json", {"start_anchor": "A", "fields": {"x": {"open": "<x>", "content": "jsn"}}}
    )
    code, out, err = run(capsys, "parse", "--template", bad, "--no-prefix", OUTPUT)
    assert code == 2
    assert out == ""
    assert err.startswith("error: invalid template")
    assert "field 'x', key 'content'" in err


def test_template_not_json_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = write(tmp_path, "bad.json", "{fields: }")
    code, _, err = run(capsys, "parse", "--template", bad, "--no-prefix", OUTPUT)
    assert code == 2
    assert "not valid JSON" in err


def test_missing_files_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "parse", "--template", tmp_path / "nope.json", "--no-prefix", OUTPUT)
    assert code == 2
    assert "cannot read the template" in err
    code, _, err = run(capsys, "parse", "--template", TEMPLATE, "--no-prefix", tmp_path / "nope.txt")
    assert code == 2
    assert "cannot read the input" in err


def test_bad_tools_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tools = write(tmp_path, "tools.json", [{"type": "function", "function": {"description": "no name"}}])
    code, _, err = run(capsys, "parse", "-t", TEMPLATE, "--no-prefix", "--tools", tools, OUTPUT)
    assert code == 2
    assert "invalid tools file" in err and "tool #0" in err


def test_chunk_size_needs_stream(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "parse", "-t", TEMPLATE, "--no-prefix", "--chunk-size", "3", OUTPUT)
    assert code == 2
    assert "--stream" in err


# ---------------------------------------------------------------------------------------- parse errors

BROKEN = '<think>ok</think>Sure.<tool_call>\n{"name": oops}\n</tool_call> Sorry.<|im_end|>'


def test_parse_error_exits_1_without_traceback(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    set_stdin(monkeypatch, BROKEN)
    code, out, err = run(capsys, "parse", "--template", TEMPLATE, "--no-prefix")
    assert code == 1
    assert out == ""
    assert err.startswith("error: field 'tool_calls'")
    assert "offset 33" in err
    assert "oops" in err  # the raw text
    assert err.count("\n") == 1


def test_invalid_utf8_input_is_an_unreadable_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "out.txt"
    path.write_bytes(b"abc\xff")
    code, _, err = run(capsys, "parse", "--template", TEMPLATE, "--no-prefix", path)
    assert code == 2  # not "the output does not fit the template" (1): it could not be read as text
    assert "not valid UTF-8 at byte 3" in err


# ---------------------------------------------------------------------------------------------- stream


def lines(out: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.splitlines()]


@pytest.mark.parametrize("chunking", [[], ["--chunk-size", "1"], ["--chunk-size", "5"]], ids=str)
def test_stream(capsys: pytest.CaptureFixture[str], chunking: list[str]) -> None:
    args = ["parse", "--stream", *chunking, "-t", TEMPLATE, "--prefix", PROMPT, "--tools", TOOLS, OUTPUT]
    code, out, err = run(capsys, *args)
    assert code == 0, err
    records = lines(out)
    assert records[-1] == {"type": "message", "message": expected_message()}
    events = records[:-1]
    assert {e["type"] for e in events} == {"region_open", "region_chunk", "region_close"}
    closes = [e for e in events if e["type"] == "region_close" and e["field"] == "tool_calls"]
    assert [c["value"] for c in closes] == expected_message()["tool_calls"]
    reasoning = "".join(
        e["text"] for e in events if e["type"] == "region_chunk" and e["field"] == "reasoning_content"
    )
    assert reasoning.strip() == expected_message()["reasoning_content"]


def test_stream_from_stdin(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    set_stdin(monkeypatch, OUTPUT.read_text(encoding="utf-8"))
    code, out, _ = run(capsys, "parse", "--stream", "-t", TEMPLATE, "--prefix", PROMPT, "--tools", TOOLS)
    assert code == 0
    assert lines(out)[-1]["message"] == expected_message()


def test_stream_shows_initial_events(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    prompt = write(tmp_path, "prompt.txt", "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\n")
    output = write(tmp_path, "out.txt", "hmm</think>hello")
    code, out, _ = run(capsys, "parse", "--stream", "-t", TEMPLATE, "--prefix", prompt, output)
    assert code == 0
    assert lines(out)[0] == {"type": "region_open", "field": "reasoning_content"}
    assert lines(out)[-1]["message"] == {"role": "assistant", "reasoning_content": "hmm", "content": "hello"}


def test_stream_parse_error_keeps_going(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    set_stdin(monkeypatch, BROKEN)
    code, out, err = run(capsys, "parse", "--stream", "--chunk-size", "4", "-t", TEMPLATE, "--no-prefix")
    assert code == 1
    assert err.startswith("error: field 'tool_calls'")
    records = lines(out)
    errors = [r for r in records if r["type"] == "error"]
    assert len(errors) == 1
    assert errors[0]["error"]["type"] == "ParseError"
    assert errors[0]["error"]["field"] == "tool_calls"
    assert errors[0]["error"]["offset"] == 33
    assert "oops" in errors[0]["error"]["raw"]
    # the failed region was opened before the error line; the parser went on to the end
    position = records.index(errors[0])
    assert {"type": "region_open", "field": "tool_calls"} in records[:position]
    assert records[-1] == {
        "type": "message",
        "message": {"role": "assistant", "reasoning_content": "ok", "content": "Sure. Sorry."},
    }


def test_stream_error_at_finalize(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    template = json.loads(TEMPLATE.read_text())
    template["fields"]["tool_calls"]["optional"] = False
    path = write(tmp_path, "t.json", template)
    output = write(tmp_path, "out.txt", "no tools here")
    code, out, err = run(capsys, "parse", "--stream", "-t", path, "--no-prefix", output)
    assert code == 1
    assert "required field" in err
    assert lines(out)[-1]["type"] == "error"


# ------------------------------------------------------------------------------------------------ demo


def test_demo(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "demo")
    assert code == 0, err
    assert "\x1b[" not in out  # not a terminal: no colors
    assert "region" not in err
    for field in ("reasoning_content", "content", "tool_calls"):  # each region's events are shown
        assert re.search(rf"^ +{field} +open$", out, re.MULTILINE)
        assert re.search(rf"^ +{field} +close ", out, re.MULTILINE)
    # The final message is printed as pretty JSON starting on a line of its own.
    start = out.index("\n{\n") + 1
    message, _ = json.JSONDecoder().raw_decode(out[start:])
    assert message == expected_message()
    assert message["reasoning_content"] and message["content"]
    calls = message["tool_calls"]
    assert len(calls) == 2
    assert [c["function"]["arguments"]["city"] for c in calls] == ["Paris", "Tokyo"]
    assert all(isinstance(c["function"]["arguments"]["days"], int) for c in calls)
    assert "-> OK" in out


def test_demo_data_is_real_format() -> None:
    data = demo.load_demo_data()
    assert data.prompt.endswith("<|im_start|>assistant\n")
    assert data.prompt.startswith("<|im_start|>system\n# Tools")
    assert data.output.startswith("<think>\n")
    assert data.output.endswith("</tool_call><|im_end|>")
    assert data.output.count("<tool_call>\n{") == 2


def test_demo_chunks_split_delimiters() -> None:
    data = demo.load_demo_data()
    chunks = list(demo.token_chunks(data.output))
    assert "".join(chunks) == data.output
    assert all(1 <= len(c) <= 6 for c in chunks)
    assert chunks == list(demo.token_chunks(data.output))  # deterministic
    assert not any("</think>" in c or "<tool_call>" in c for c in chunks)  # delimiters arrive split


def test_demo_color_only_when_asked() -> None:
    out = io.StringIO()
    assert demo.run(out, color=True) == 0
    assert "\x1b[" in out.getvalue()


# ------------------------------------------------------------------------------------- no tracebacks


def test_internal_error_has_no_traceback(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def boom(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("kaboom")

    monkeypatch.delenv("RESPONSE_TEMPLATES_TRACEBACK", raising=False)
    monkeypatch.setattr(cli, "parse_response", boom)
    code, _, err = run(capsys, "parse", "-t", TEMPLATE, "--no-prefix", OUTPUT)
    assert code == 2
    assert err.startswith("error: internal error: RuntimeError: kaboom")


def test_keyboard_interrupt(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    def interrupted(*args: Any, **kwargs: Any) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "parse_response", interrupted)
    code, _, _ = run(capsys, "parse", "-t", TEMPLATE, "--no-prefix", OUTPUT)
    assert code == 130


def test_commands_are_pluggable(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    def add_hello(subparsers: Any) -> None:
        parser = subparsers.add_parser("hello", help="say hello")
        cli.add_template_argument(parser)
        parser.set_defaults(handler=lambda args, streams: streams.stdout.write("hello\n") and 0)

    monkeypatch.setattr(cli, "COMMANDS", [*cli.COMMANDS, add_hello])
    code, out, _ = run(capsys, "hello", "-t", TEMPLATE)
    assert (code, out) == (0, "hello\n")
