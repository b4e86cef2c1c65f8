"""The library commands of the CLI (issue 4, item 6): list, show, detect, verify, lint, parse --model."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

import response_templates as rt
from cli_runs import run

CHAT_TEMPLATES = Path(__file__).resolve().parents[1] / "data" / "chat_templates"
QWEN3_CODER = CHAT_TEMPLATES / "Qwen3-Coder.jinja"


@pytest.fixture
def needs_extension(monkeypatch: pytest.MonkeyPatch) -> None:
    """MiniMax-M1 as it was before json-value-end (E3): no library family needs an extension any more."""
    fam = dataclasses.replace(
        rt.library.family("minimax-m1"), status="needs-extension", needs=("E3",), uses=(), template_data=None
    )
    monkeypatch.setitem(rt.library._families(), "minimax-m1", fam)


def test_help_lists_the_library_commands(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--help")
    assert code == 0
    for command in ("list", "show", "detect", "verify", "lint"):
        assert command in out


def test_list(capsys: pytest.CaptureFixture[str], needs_extension: None) -> None:
    code, out, _ = run(capsys, "list")
    assert code == 0
    names = [line.split()[0] for line in out.splitlines()]
    assert names == rt.templates.names(include_unsupported=True)  # every family, with or without template
    minimax = next(line for line in out.splitlines() if line.startswith("minimax-m1 "))
    assert "needs-extension" in minimax and "[needs the extension json-value-end]" in minimax
    assert "[same format as hermes]" in next(line for line in out.splitlines() if line.startswith("qwen3 "))
    code, out, _ = run(capsys, "list", "--json")
    records = [json.loads(line) for line in out.splitlines()]
    assert {r["name"] for r in records} == set(rt.templates.names(include_unsupported=True))
    minimax = next(r for r in records if r["name"] == "minimax-m1")
    assert minimax["needs"] == ["E3"] and minimax["extension_codes"] == {"E3": rt.library.EXTENSIONS["E3"]}
    assert next(r for r in records if r["name"] == "apertus")["needs"] == []


def test_show(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, _ = run(capsys, "show", "qwq")
    assert code == 0
    data = json.loads(out)
    assert data["name"] == "qwen3" and data["template"] == rt.templates.get("hermes").to_dict()
    code, out, _ = run(capsys, "show", "gpt-oss", "--template")
    path = tmp_path / "gpt-oss.json"
    path.write_text(out, encoding="utf-8")
    assert rt.load_template(json.loads(out)).to_dict() == rt.templates.get("gpt-oss").to_dict()
    code, _, err = run(capsys, "show", "qwen-3")
    assert code == 2 and "near matches: qwen3" in err


def test_detect(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, _ = run(capsys, "detect", QWEN3_CODER)
    assert code == 0 and out.startswith("qwen3-coder\t") and "fingerprint" in out
    config = tmp_path / "tokenizer_config.json"
    config.write_text(
        json.dumps({"chat_template": QWEN3_CODER.read_text(encoding="utf-8") + "\n"}), encoding="utf-8"
    )
    code, out, _ = run(capsys, "detect", config, "--json")
    assert json.loads(out) == {
        "file": str(config), "name": "qwen3-coder", "title": rt.library.family("qwen3-coder").title,
        "status": "supported", "matched_by": "fingerprint", "confidence": 1.0, "near_matches": [],
        "error": None,
    }  # fmt: skip
    code, out, err = run(capsys, "detect", CHAT_TEMPLATES / "Apertus-8B-Instruct.jinja")
    assert code == 0 and out.startswith("apertus") and "needs" not in err
    code, out, err = run(capsys, "detect", CHAT_TEMPLATES / "microsoft-Phi-3.5-mini-instruct.jinja")
    assert code == 0 and out.startswith("generic-json") and "needs" not in err
    unknown = tmp_path / "unknown.jinja"
    unknown.write_text("{{ messages[0].content }}", encoding="utf-8")
    code, out, err = run(capsys, "detect", unknown)
    assert code == 1 and out == "" and "unknown model" in err


def test_verify_with_the_detected_family(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "verify", QWEN3_CODER)
    assert code == 0, out
    assert "using the library template of qwen3-coder" in err
    assert out.splitlines()[-1].startswith("5 cases: 5 passed, 0 failed")


def test_verify_reports_known_issues_and_failures(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, _ = run(capsys, "verify", CHAT_TEMPLATES / "Qwen-QwQ-32B.jinja")
    assert code == 0 and "known issue:" in out and "5 known issues" in out
    wrong = tmp_path / "wrong.json"
    wrong.write_text(json.dumps(rt.templates.get("gemma-4").to_dict()), encoding="utf-8")
    code, out, _ = run(capsys, "verify", QWEN3_CODER, "--template", wrong, "--json")
    report = json.loads(out)
    assert code == 1 and report["ok"] is False
    code, _, err = run(capsys, "verify", QWEN3_CODER, "--kwargs", "[1]")
    assert code == 2 and "JSON object" in err


def test_verify_with_a_named_template_and_kwargs(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys,
        "verify",
        CHAT_TEMPLATES / "Qwen3.5-4B.jinja",
        "-t",
        "qwen3-coder",
        "--kwargs",
        '{"enable_thinking": true}',
    )
    assert code == 0, out


def test_lint(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, err = run(capsys, "lint", "qwen3")
    assert code == 0 and out.strip() == "0 errors, 0 warnings, 0 notes" and err == ""
    bad = tmp_path / "bad.json"
    bad.write_text(
        json.dumps(
            {
                "start_anchor": "<|im_start|>assistant\n",
                "fields": {"a": {"open_pattern": "(?>x)", "close": "y"}, "content": {}},
            }
        ),
        encoding="utf-8",
    )
    code, out, err = run(capsys, "lint", bad)
    assert code == 1
    assert "warning atomic-group [a.open_pattern]" in out and "implicit-without-close" in out
    code, out, _ = run(capsys, "lint", bad, "--json")
    (report,) = [json.loads(line) for line in out.splitlines()]
    assert [issue["code"] for issue in report["issues"]] == ["atomic-group", "implicit-without-close"]


def test_parse_with_a_model_id(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, needs_extension: None
) -> None:
    output = tmp_path / "out.txt"
    output.write_text(
        'Checking.<tool_call>\n{"name": "f", "arguments": {"x": 1}}\n</tool_call><|im_end|>', encoding="utf-8"
    )
    code, out, _ = run(
        capsys, "parse", "--model", "Qwen/Qwen3-8B", "--prefix-text", "<|im_start|>assistant\n", output
    )
    assert code == 0
    assert json.loads(out) == {
        "role": "assistant", "content": "Checking.",
        "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": {"x": 1}}}],
    }  # fmt: skip
    code, out, _ = run(capsys, "parse", "-m", "hermes", "--no-prefix", output)  # a family name works too
    assert code == 0
    code, _, err = run(capsys, "parse", "--model", "acme/unknown-7b", "--no-prefix", output)
    assert code == 2 and "unknown model" in err and "list" in err
    code, _, err = run(capsys, "parse", "--model", "MiniMaxAI/MiniMax-M1-80k", "--no-prefix", output)
    assert code == 2 and "E3" in err
    code, _, err = run(capsys, "parse", "--no-prefix", output)
    assert code == 2 and "--template" in err and "--model" in err
