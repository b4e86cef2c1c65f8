"""The ``grammar`` command: a template and a request's tools as a structural tag or a Lark grammar."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import response_templates as rt
from cli_runs import run
from response_templates import grammar

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    }
]


@pytest.fixture
def tools_file(tmp_path: Path) -> Path:
    path = tmp_path / "tools.json"
    path.write_text(json.dumps(TOOLS), encoding="utf-8")
    return path


def test_help_lists_grammar(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--help")
    assert code == 0 and "grammar" in out
    code, out, _ = run(capsys, "grammar", "--help")
    assert code == 0 and "--tool-choice" in out and "exit codes" in out


def test_prints_the_structural_tag(capsys: pytest.CaptureFixture[str], tools_file: Path) -> None:
    code, out, err = run(capsys, "grammar", "Qwen/Qwen3-8B", "--tools", tools_file)
    assert code == 0 and err == ""
    assert json.loads(out) == grammar.build("qwen3", tools=TOOLS).structural_tag


def test_options_reach_the_build(
    capsys: pytest.CaptureFixture[str], tools_file: Path, tmp_path: Path
) -> None:
    prefix = tmp_path / "prompt.txt"
    prefix.write_text("<|im_start|>assistant\n<think>\n", encoding="utf-8")
    code, out, _ = run(
        capsys,
        "grammar",
        "qwen3",
        "--tools",
        tools_file,
        "--tool-choice",
        "get_weather",
        "--no-parallel",
        "--reasoning",
        "forbidden",
        "--prefix",
        prefix,
    )
    expected = grammar.build(
        "qwen3",
        tools=TOOLS,
        tool_choice="get_weather",
        parallel_tool_calls=False,
        reasoning="forbidden",
        prefix=prefix.read_text(encoding="utf-8"),
    )
    assert code == 0 and json.loads(out) == expected.structural_tag
    assert json.loads(out)["format"]["elements"][0] == {"type": "const_string", "value": "</think>"}


def test_lark_format_and_output_file(
    capsys: pytest.CaptureFixture[str], tools_file: Path, tmp_path: Path
) -> None:
    code, out, _ = run(capsys, "grammar", "qwen3-coder", "--tools", tools_file, "--format", "lark")
    assert code == 0 and out == grammar.build("qwen3-coder", tools=TOOLS).lark
    target = tmp_path / "g.lark"
    code, out, _ = run(
        capsys, "grammar", "qwen3-coder", "--tools", tools_file, "--format", "lark", "-o", target
    )
    assert code == 0 and out == "" and target.read_text(encoding="utf-8").startswith("%llguidance {}")


def test_template_file(capsys: pytest.CaptureFixture[str], tools_file: Path, tmp_path: Path) -> None:
    path = tmp_path / "template.json"
    path.write_text(json.dumps(rt.templates.get("hermes").to_dict()), encoding="utf-8")
    code, out, _ = run(capsys, "grammar", path, "--tools", tools_file)
    assert code == 0 and json.loads(out) == grammar.build("hermes", tools=TOOLS).structural_tag


def test_a_format_that_cannot_be_written_exits_1_with_the_reason(
    capsys: pytest.CaptureFixture[str], tools_file: Path
) -> None:
    # MiniMax M3's nested XML values (a tag per object key) have no grammar yet
    code, out, err = run(capsys, "grammar", "minimax-m3", "--tools", tools_file)
    assert code == 1 and out == ""
    assert err.startswith("error: field 'tool_calls', key 'content_args'")


@pytest.mark.parametrize(
    "argv",
    [
        ["grammar", "no-such-model-anywhere", "--tools"],
        ["grammar", "qwen3", "--tools", "/no/such/tools.json"],
        ["grammar", "qwen3", "--format", "gbnf"],
    ],
)
def test_usage_errors_exit_2(capsys: pytest.CaptureFixture[str], tools_file: Path, argv: list[str]) -> None:
    if argv[-1] == "--tools":
        argv = [*argv, str(tools_file)]
    code, _, err = run(capsys, *argv)
    assert code == 2 and "error:" in err


def test_unknown_tool_choice_exits_1(capsys: pytest.CaptureFixture[str], tools_file: Path) -> None:
    code, _, err = run(capsys, "grammar", "qwen3", "--tools", tools_file, "--tool-choice", "nope")
    assert code == 1 and "nope" in err
