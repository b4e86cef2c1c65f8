"""Rough edges of the command line found by its users: each error said once with the right exit code,
stdout always holding the answer, options that do what their help says, and a demo whose "try it"
command runs as printed."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from cli_runs import run
from response_templates import demo, verify

DATA = Path(demo.__file__).parent / "data"
TEMPLATE = DATA / demo.TEMPLATE_FILE
ROOT = Path(__file__).resolve().parents[2]
QWEN3_CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
)


# ------------------------------------------------------------------------------------- verify, no jinja2


@pytest.fixture
def without_jinja2(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """As if jinja2 were not installed (an import of it raises ImportError)."""
    for name in [m for m in sys.modules if m == "jinja2" or m.startswith("jinja2.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "jinja2", None)
    monkeypatch.setattr(verify, "_ENV_CACHE", {})
    verify._compile_chat_template.cache_clear()
    yield
    verify._compile_chat_template.cache_clear()


def test_verify_without_jinja2_says_so_once_and_exits_2(
    without_jinja2: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    chat_template = tmp_path / "chat.jinja"
    chat_template.write_text(QWEN3_CHAT_TEMPLATE, encoding="utf-8")
    code, out, err = run(capsys, "verify", chat_template, "--template", "qwen3")
    assert code == 2  # the check could not run; 1 would say a case failed
    assert err.count("jinja2") == 1 and "response-templates[verify]" in err
    assert out == ""


# ------------------------------------------------------------------------------------------ invalid UTF-8


@pytest.mark.parametrize(
    "mode", [[], ["--stream"], ["--stream", "--chunk-size", "2"]], ids=["whole", "stream", "chunked"]
)
def test_invalid_utf8_exits_2_in_every_mode(
    mode: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "out.txt"
    path.write_bytes("héllo ".encode() * 3 + b"\xff ok")
    code, _, err = run(capsys, "parse", "-t", TEMPLATE, "--no-prefix", *mode, path)
    assert code == 2
    assert "not valid UTF-8 at byte 21" in err and "--errors keep" in err
    assert err.count("error:") == 1


def test_a_character_cut_at_the_end_is_invalid_utf8(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "out.txt"
    path.write_bytes(b"caf\xc3")
    code, _, err = run(capsys, "parse", "-t", TEMPLATE, "--no-prefix", "--stream", path)
    assert code == 2 and "not valid UTF-8 at byte 3" in err


@pytest.mark.parametrize("mode", [[], ["--stream"]], ids=["whole", "stream"])
def test_invalid_utf8_with_errors_keep_is_replaced(
    mode: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "out.txt"
    path.write_bytes(b"caf\xff ok")
    code, out, err = run(capsys, "parse", "-t", TEMPLATE, "--no-prefix", "--errors", "keep", *mode, path)
    assert code == 0
    message = json.loads(out) if not mode else json.loads(out.splitlines()[-1])["message"]
    assert message["content"] == "caf\ufffd ok"
    assert "invalid UTF-8" in err


# ------------------------------------------------------------------------------------------------ detect


def test_detect_json_says_no_family_on_stdout(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    unknown = tmp_path / "unknown.jinja"
    unknown.write_text("{{ messages[0].content }}", encoding="utf-8")
    code, out, err = run(capsys, "detect", unknown, "--json")
    assert code == 1
    assert json.loads(out) == {
        "file": str(unknown),
        "name": None,
        "title": None,
        "status": None,
        "matched_by": None,
        "confidence": 0.0,
        "near_matches": [],
        "error": None,
    }
    assert "unknown model" in err


# -------------------------------------------------------------------------------------------- lint, list


def test_lint_summary_is_on_stdout_with_the_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(
        json.dumps(
            {"start_anchor": "A", "fields": {"a": {"open_pattern": "(?>x)", "close": "y"}, "content": {}}}
        ),
        encoding="utf-8",
    )
    code, out, err = run(capsys, "lint", bad)
    assert code == 1 and err == ""
    assert out.splitlines()[-1].startswith("0 errors, 1 warning,")


def test_list_shows_every_family_and_all_is_only_a_deprecated_spelling(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, plain, err = run(capsys, "list")
    assert code == 0 and err == ""
    code, with_all, err = run(capsys, "list", "--all")
    assert code == 0 and with_all == plain and "--all is no longer needed" in err
    code, help_text, _ = run(capsys, "list", "--help")
    assert "--all" not in help_text


# ---------------------------------------------------------------------------------------------- --chunk-size


@pytest.mark.parametrize("size", ["0", "-3"])
def test_chunk_size_below_1_is_a_clear_error(size: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(
        capsys, "parse", "-t", TEMPLATE, "--no-prefix", "--stream", "--chunk-size", size, TEMPLATE
    )
    assert code == 2 and out == ""
    assert (
        err == f"error: --chunk-size must be at least 1 (characters per piece), got {size}\n"
    )  # no usage dump


# ------------------------------------------------------------------------------------------------- demo


def try_it_command(output: str) -> str:
    lines = output.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("try it"))
    text = "\n".join(lines[start:]).removeprefix("try it")
    return text.replace("\\\n", " ").strip()


@pytest.mark.parametrize("cwd", ["root", "elsewhere"])
def test_the_demo_try_it_command_runs_as_printed(cwd: str, tmp_path: Path) -> None:
    """``make demo`` runs ``.venv/bin/python -m response_templates demo``: ``.venv/bin`` is not on PATH."""
    env = {**os.environ, "PATH": "/usr/bin:/bin", "NO_COLOR": "1"}
    env.pop("VIRTUAL_ENV", None)
    where = ROOT if cwd == "root" else tmp_path
    shown = subprocess.run(
        [sys.executable, "-m", "response_templates", "demo"],
        cwd=where,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    command = try_it_command(shown)
    ran = subprocess.run(
        ["/bin/sh", "-c", command], cwd=where, env=env, capture_output=True, text=True, timeout=120
    )
    assert ran.returncode == 0, (command, ran.stderr)
    message = json.loads(ran.stdout)
    assert [c["function"]["arguments"]["city"] for c in message["tool_calls"]] == ["Paris", "Tokyo"]
    assert shlex.split(command)[0] != "response-templates"  # not on this PATH
