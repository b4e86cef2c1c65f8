"""``parse --errors raise|keep`` and ``--missing-anchor raise|parse`` (issue 12, holes 3 and 5)."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from cli_runs import run

QWEN3 = {
    "defaults": {"role": "assistant"},
    "start_anchor": "<|im_start|>assistant\n",
    "fields": {
        "reasoning_content": {"open": "<think>", "close": "</think>"},
        "tool_calls": {"open": "<tool_call>", "close": "</tool_call>", "repeats": True, "content": "json"},
        "content": {"close": "<|im_end|>"},
    },
}
BAD = "<tool_call>{oops}</tool_call>"
OUTPUT = f"<think>hm</think>Sure.{BAD}<tool_call>[1]</tool_call><|im_end|>"


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    template = tmp_path / "t.json"
    template.write_text(json.dumps(QWEN3), encoding="utf-8")
    output = tmp_path / "out.txt"
    output.write_bytes(OUTPUT.encode())
    return template, output


def error_lines(err: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in err.splitlines() if line.startswith("{")]


def test_default_raise_exits_1(capsys: pytest.CaptureFixture[str], files: tuple[Path, Path]) -> None:
    template, output = files
    code, out, err = run(capsys, "parse", "-t", template, "--no-prefix", output)
    assert code == 1 and out == "" and err.startswith("error: field 'tool_calls'")


def test_keep_exits_0_with_the_message_on_stdout_and_errors_on_stderr(
    capsys: pytest.CaptureFixture[str], files: tuple[Path, Path]
) -> None:
    template, output = files
    code, out, err = run(capsys, "parse", "-t", template, "--no-prefix", "--errors", "keep", output)
    assert code == 0
    assert json.loads(out) == {
        "role": "assistant",
        "reasoning_content": "hm",
        "content": "Sure." + BAD,
        "tool_calls": [[1]],
    }
    (line,) = error_lines(err)
    assert line["type"] == "parse_error" and line["error"] == "ParseError"
    assert line["field"] == "tool_calls" and line["raw"] == "{oops}" and "json" in line["message"]


@pytest.mark.parametrize("chunk", [None, 1, 7])
def test_keep_stream(capsys: pytest.CaptureFixture[str], files: tuple[Path, Path], chunk: int | None) -> None:
    template, output = files
    extra = [] if chunk is None else ["--chunk-size", chunk]
    code, out, err = run(
        capsys, "parse", "-t", template, "--no-prefix", "--errors", "keep", "--stream", *extra, output
    )
    assert code == 0
    events = [json.loads(line) for line in out.splitlines()]
    assert [e["text"] for e in events if e["type"] == "unparsed"] == [BAD]
    assert events[-1]["type"] == "message" and events[-1]["message"]["content"] == "Sure." + BAD
    assert [line["field"] for line in error_lines(err)] == ["tool_calls"]


def test_keep_with_invalid_utf8(
    capsys: pytest.CaptureFixture[str], files: tuple[Path, Path], tmp_path: Path
) -> None:
    template, _ = files
    output = tmp_path / "bad.bin"
    output.write_bytes(b"caf\xc3 ok<|im_end|>")
    code, out, err = run(capsys, "parse", "-t", template, "--no-prefix", output)
    assert code == 2 and "--errors keep" in err  # unreadable as text; the hint says what keeps it
    code, out, err = run(capsys, "parse", "-t", template, "--no-prefix", "--errors", "keep", output)
    assert code == 0 and json.loads(out)["content"] == "caf\ufffd ok"
    assert "invalid UTF-8" in error_lines(err)[0]["message"]


def test_prompt_without_anchor_is_refused(
    capsys: pytest.CaptureFixture[str], files: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    template, output = files
    prompt = "<|im_start|>system\nSECRET<|im_end|>\n<|im_start|>assistant"
    code, out, err = run(capsys, "parse", "-t", template, "--prefix-text", prompt, output)
    assert code == 2 and out == ""
    assert err.startswith("error: the prefix does not contain the start anchor")
    assert "--missing-anchor parse" in err and "--no-prefix" in err and "keep_trailing_newline" in err
    code, out, err = run(
        capsys,
        "parse",
        "-t",
        template,
        "--prefix-text",
        prompt,
        "--missing-anchor",
        "parse",
        "--errors",
        "keep",
        output,
    )
    assert code == 0 and "SECRET" in json.loads(out)["content"]
    assert "warning: the start anchor" in err
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(OUTPUT.encode()), encoding="utf-8"))
    code, _, _ = run(capsys, "parse", "-t", template, "--prefix-text", prompt, "--stream")
    assert code == 2


def test_bad_choice(capsys: pytest.CaptureFixture[str], files: tuple[Path, Path]) -> None:
    template, output = files
    code, _, err = run(capsys, "parse", "-t", template, "--no-prefix", "--errors", "ignore", output)
    assert code == 2 and "invalid choice" in err
