"""``response-templates parse --jsonl/--parquet``: many records, one line each, resume, exit codes.

Most tests run the real command in a subprocess (as a user or a job script would); the option checks run
in-process.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import response_templates as rt
from cli_runs import run

PROMPT = "<|im_start|>user\nWeather?<|im_end|>\n<|im_start|>assistant\n"
GOOD = '<think>\nCheck.\n</think>\n\nSure.\n<tool_call>\n{"name": "w", "arguments": {"days": "3"}}\n</tool_call><|im_end|>'
BAD_JSON = "<tool_call>\n{oops}\n</tool_call><|im_end|>"
TOOLS = [
    {
        "type": "function",
        "function": {"name": "w", "parameters": {"properties": {"days": {"type": "integer"}}}},
    }
]


def cli(*argv: Any, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "response_templates", *map(str, argv)],
        capture_output=True,
        text=True,
        input=stdin,
        timeout=120,
        check=False,
    )


def write_jsonl(path: Path, records: list[Any], *, raw_lines: tuple[str, ...] = ()) -> Path:
    with path.open("w", encoding="utf-8") as f:
        for record in records:
            f.write(json.dumps(record) + "\n")
        for line in raw_lines:
            f.write(line + "\n")
    return path


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def mixed(n: int) -> list[Any]:
    records: list[Any] = []
    for i in range(n):
        if i % 10 == 3:
            records.append({"id": f"r{i}", "prompt": PROMPT, "output": None})
        elif i % 10 == 7:
            records.append({"id": f"r{i}", "prompt": PROMPT, "output": BAD_JSON})
        else:
            records.append({"id": f"r{i}", "prompt": PROMPT, "output": GOOD})
    return records


def test_all_good_exits_0_with_one_line_per_record(tmp_path: Path) -> None:
    src = write_jsonl(tmp_path / "in.jsonl", [{"id": i, "prompt": PROMPT, "output": GOOD} for i in range(5)])
    proc = cli("parse", "--jsonl", src, "--model", "Qwen/Qwen3-8B")
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    expected = rt.parse_response(GOOD, rt.templates.get("qwen3"), prefix=PROMPT)
    assert lines == [{"index": i, "id": i, "message": expected} for i in range(5)]
    assert "5 records: 5 ok, 0 failed" in proc.stderr
    assert "\r" not in proc.stderr  # no progress line when stderr is not a terminal


def test_bad_lines_are_reported_and_the_run_goes_on(tmp_path: Path) -> None:
    src = write_jsonl(
        tmp_path / "in.jsonl",
        [{"id": "a", "prompt": PROMPT, "output": GOOD}, {"id": "b", "prompt": PROMPT}],
        raw_lines=("", "{not json", "[1, 2]", json.dumps({"id": "c", "prompt": PROMPT, "output": 5})),
    )
    out = tmp_path / "out.jsonl"
    proc = cli("parse", "--jsonl", src, "--model", "qwen3", "-o", out)
    assert proc.returncode == 3, proc.stderr
    assert proc.stdout == ""
    lines = read_jsonl(out)
    assert [line["index"] for line in lines] == [0, 1, 2, 3, 4]  # the blank line is not a record
    assert "message" in lines[0]
    assert lines[1]["error"] == {
        "type": "RecordError",
        "message": "the record has no 'output'",
        "key": "output",
    }
    assert lines[2]["error"]["type"] == "RecordError" and "line 4" in lines[2]["error"]["message"]
    assert "must be a string, a mapping" in lines[3]["error"]["message"]
    assert lines[4]["id"] == "c" and "must be a string, got int" in lines[4]["error"]["message"]
    assert "5 records: 1 ok, 4 failed" in proc.stderr


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_errors_keep_and_raise_and_jobs_keep_the_order(tmp_path: Path, jobs: str) -> None:
    src = write_jsonl(tmp_path / "in.jsonl", mixed(150))
    raised = cli("parse", "--jsonl", src, "--model", "qwen3", "-j", jobs)
    assert raised.returncode == 3
    lines = [json.loads(line) for line in raised.stdout.splitlines()]
    assert [line["id"] for line in lines] == [f"r{i}" for i in range(150)]
    assert lines[7]["error"]["type"] == "ParseError" and lines[7]["error"]["field"] == "tool_calls"
    assert "150 records: 120 ok, 30 failed" in raised.stderr
    kept = cli("parse", "--jsonl", src, "--model", "qwen3", "-j", jobs, "--errors", "keep")
    assert kept.returncode == 3  # the null outputs still fail
    lines = [json.loads(line) for line in kept.stdout.splitlines()]
    assert "{oops}" in lines[7]["message"]["content"] and lines[7]["errors"][0]["field"] == "tool_calls"
    assert "150 records: 135 ok, 15 failed (15 ok with errors kept in the message)" in kept.stderr


def test_tools_prefix_and_field_names(tmp_path: Path) -> None:
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps(TOOLS), encoding="utf-8")
    src = write_jsonl(tmp_path / "in.jsonl", [{"key": "k1", "completion": GOOD}])
    proc = cli(
        "parse", "--jsonl", src, "--model", "qwen3", "--tools", tools, "--prefix-text", PROMPT,
        "--field", "output=completion", "--field", "id=key",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    (line,) = [json.loads(x) for x in proc.stdout.splitlines()]
    assert line["id"] == "k1"
    assert line["message"]["tool_calls"][0]["function"]["arguments"] == {"days": 3}


def test_model_per_record(tmp_path: Path) -> None:
    src = write_jsonl(
        tmp_path / "in.jsonl",
        [
            {"model_id": "Qwen/Qwen3-8B", "output": "<think>a</think>b<|im_end|>"},
            {"model_id": "nobody/none-1", "output": "x"},
        ],
    )
    proc = cli("parse", "--jsonl", src, "--field", "model=model_id", "--no-prefix")
    assert proc.returncode == 3, proc.stderr
    first, second = (json.loads(x) for x in proc.stdout.splitlines())
    assert first["message"]["reasoning_content"] == "a"
    assert "nobody/none-1" in second["error"]["message"]


def test_resume_skips_what_out_holds_and_drops_a_cut_line(tmp_path: Path) -> None:
    records = mixed(40)
    src = write_jsonl(tmp_path / "in.jsonl", records)
    full = tmp_path / "full.jsonl"
    assert cli("parse", "--jsonl", src, "--model", "qwen3", "-o", full).returncode == 3
    expected = read_jsonl(full)
    # An interrupted run: the first 25 results and half of the 26th line.
    out = tmp_path / "out.jsonl"
    text = full.read_text(encoding="utf-8").splitlines(keepends=True)
    out.write_text("".join(text[:25]) + text[25][:30], encoding="utf-8")
    proc = cli("parse", "--jsonl", src, "--model", "qwen3", "-o", out, "--resume", "-j", "2")
    assert proc.returncode == 3, proc.stderr
    assert "15 records" in proc.stderr and "25 skipped" in proc.stderr
    assert read_jsonl(out) == expected
    again = cli("parse", "--jsonl", src, "--model", "qwen3", "-o", out, "--resume")
    assert again.returncode == 0 and "0 records" in again.stderr and "40 skipped" in again.stderr
    assert read_jsonl(out) == expected


def test_resume_without_ids_uses_the_index(tmp_path: Path) -> None:
    src = write_jsonl(tmp_path / "in.jsonl", [{"prompt": PROMPT, "output": GOOD}] * 6)
    out = tmp_path / "out.jsonl"
    assert cli("parse", "--jsonl", src, "--model", "qwen3", "-o", out).returncode == 0
    lines = read_jsonl(out)
    out.write_text("".join(json.dumps(line) + "\n" for line in lines[:2]), encoding="utf-8")
    proc = cli("parse", "--jsonl", src, "--model", "qwen3", "-o", out, "--resume")
    assert proc.returncode == 0 and "4 records" in proc.stderr
    assert read_jsonl(out) == lines


def test_resume_refuses_a_foreign_file(tmp_path: Path) -> None:
    src = write_jsonl(tmp_path / "in.jsonl", [{"prompt": PROMPT, "output": GOOD}])
    out = tmp_path / "out.jsonl"
    out.write_text('{"something": "else"}\n', encoding="utf-8")
    proc = cli("parse", "--jsonl", src, "--model", "qwen3", "-o", out, "--resume")
    assert proc.returncode == 2 and "line 1" in proc.stderr
    assert out.read_text(encoding="utf-8") == '{"something": "else"}\n'


def test_stdin_and_progress(tmp_path: Path) -> None:
    stdin = "".join(json.dumps(r) + "\n" for r in mixed(12))
    proc = cli("parse", "--jsonl", "-", "--model", "qwen3", "--progress", "always", stdin=stdin)
    assert proc.returncode == 3
    assert len(proc.stdout.splitlines()) == 12
    drawn = [line for line in proc.stderr.splitlines() if line.startswith("\x1b[K")]  # \r, then erase
    assert drawn and all("/s" in line and "failed" in line for line in drawn)
    assert "12 records" in drawn[-1] and "2 failed" in drawn[-1]


def test_parquet(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    table = pa.Table.from_pylist(mixed(20))
    src = tmp_path / "in.parquet"
    pq.write_table(table, src)
    from_parquet = cli("parse", "--parquet", src, "--model", "qwen3")
    from_jsonl = cli("parse", "--jsonl", write_jsonl(tmp_path / "in.jsonl", mixed(20)), "--model", "qwen3")
    assert from_parquet.returncode == 3
    assert from_parquet.stdout == from_jsonl.stdout


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["--jsonl", "missing.jsonl", "--model", "qwen3"], "cannot read the input"),
        (["--jsonl", "in.jsonl"], "--template FILE or --model"),
        (["--jsonl", "in.jsonl", "--model", "qwen3", "--resume"], "--resume needs -o"),
        (["--jsonl", "in.jsonl", "--model", "qwen3", "--field", "text=x"], "--field takes ROLE=NAME"),
        (["--jsonl", "in.jsonl", "--model", "qwen3", "--stream"], "--stream"),
        (["--jsonl", "in.jsonl", "--model", "no-such/model-x"], "no-such/model-x"),
        (["--model", "qwen3", "--no-prefix", "-j", "2", "in.jsonl"], "--jsonl or --parquet"),
        (["--jsonl", "in.jsonl", "--model", "qwen3", "-j", "-1"], "number of processes"),
    ],
)
def test_could_not_run_exits_2(
    argv: list[str],
    words: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    write_jsonl(tmp_path / "in.jsonl", [{"prompt": PROMPT, "output": GOOD}])
    code, out, err = run(capsys, "parse", *argv)
    assert code == 2 and out == "" and words in err


def test_single_output_parse_is_unchanged(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    output = tmp_path / "out.txt"
    output.write_text(GOOD, encoding="utf-8")
    code, out, _ = run(capsys, "parse", "--model", "qwen3", "--prefix-text", PROMPT, output)
    assert code == 0 and json.loads(out) == rt.parse_response(GOOD, rt.templates.get("qwen3"), prefix=PROMPT)
    code, _, err = run(capsys, "parse", "--no-prefix", output)
    assert code == 2 and "-t/--template -m/--model is required" in err
