"""``parse --jsonl -j N``: the workers read their own parts of the file; the output must not show it.

Files here are larger than the part a worker is handed (about 1 MiB), so that parts end inside long
lines, right after line ends and inside multi-byte characters; every test compares ``-j 2`` (and stdin)
with ``-j 1`` byte for byte, and ``-j 1`` with what each record gives on its own.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import response_templates as rt

PROMPT = "<|im_start|>user\nWeather?<|im_end|>\n<|im_start|>assistant\n"
CALL = '\n<tool_call>\n{"name": "w", "arguments": {"city": "Zürich"}}\n</tool_call>'
TEMPLATE = rt.templates.get("qwen3")


def cli(
    *argv: Any, stdin: bytes | None = None, block_orjson: bool = False
) -> subprocess.CompletedProcess[bytes]:
    code = "import sys, runpy; sys.argv = ['response-templates', *sys.argv[1:]]; "
    if block_orjson:
        code += "sys.modules['orjson'] = None; "  # import orjson then fails, as when it is not installed
    code += "runpy.run_module('response_templates', run_name='__main__')"
    return subprocess.run(
        [sys.executable, "-c", code, *map(str, argv)],
        capture_output=True,
        input=stdin,
        timeout=300,
        check=False,
    )


def output(i: int) -> str:
    """A record's output: multi-byte text of varying length, a tool call now and then."""
    text = "é€😀 " * (i % 37) + "naïve café " * (1 + i % 11)
    return f"<think>\n{text}\n</think>\n\n{text}{CALL if i % 5 == 0 else ''}<|im_end|>"


def big_file(path: Path, *, crlf: bool = False, last_newline: bool = True) -> list[bytes | None]:
    """About 2.5 MB of records with every kind of line; the lines that are records, as written (None
    for the records that are not JSON)."""
    end = b"\r\n" if crlf else b"\n"
    chunks: list[bytes] = []
    records: list[bytes | None] = []
    for i in range(2200):
        if i == 1000:  # a line longer than a worker's part
            line = json.dumps({"id": "huge", "prompt": PROMPT, "output": output(1) * 900}, ensure_ascii=False)
        elif i % 97 == 13:
            line = '{"id": "broken", "output": '  # not JSON
        elif i % 89 == 5:
            line = json.dumps({"id": f"r{i}", "prompt": PROMPT, "output": None})
        elif i % 83 == 7:
            line = json.dumps(
                {"id": f"r{i}", "prompt": PROMPT, "output": "<tool_call>\n{x}\n</tool_call><|im_end|>"}
            )
        else:  # ASCII escapes for some records, raw UTF-8 for the others
            line = json.dumps({"id": f"r{i}", "prompt": PROMPT, "output": output(i)}, ensure_ascii=i % 2 == 0)
        raw = line.encode("utf-8")
        chunks.append((b" \t" if i % 61 == 3 else b"") + raw + end)  # JSON may start with whitespace
        records.append(None if line.endswith(": ") else raw)
        if i % 71 == 0:  # blank lines, of every whitespace byte: not records
            chunks.append([b"", b"   \t", b"\x0b", b"\x0c \r"][i // 71 % 4] + end)
    data = b"".join(chunks)
    if not last_newline:
        data = data[: -len(end)]
    path.write_bytes(data)
    return records


def expected_lines(records: list[bytes | None]) -> list[dict[str, Any]]:
    """What each record gives on its own: its result, as parse_batch has it."""
    out: list[dict[str, Any]] = []
    for index, raw in enumerate(records):
        if raw is None:
            out.append({"index": index, "error_type": "RecordError"})
            continue
        (result,) = rt.parse_batch([json.loads(raw)], TEMPLATE)
        out.append(json.loads(json.dumps({**result.to_dict(), "index": index}, default=str)))
    return out


def summary(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {"index": line["index"], "error_type": line["error"]["type"]}
        if line.get("error", {}).get("message", "").startswith("line ")
        else line
        for line in lines
    ]


@pytest.mark.parametrize(
    ("crlf", "last_newline"), [(False, True), (True, False)], ids=["lf", "crlf-no-last-eol"]
)
def test_jobs_2_and_stdin_write_the_bytes_of_jobs_1(tmp_path: Path, crlf: bool, last_newline: bool) -> None:
    src = tmp_path / "in.jsonl"
    records = big_file(src, crlf=crlf, last_newline=last_newline)
    assert src.stat().st_size > 2 * 2**20
    one = cli("parse", "--jsonl", src, "--model", "qwen3", "-j", "1")
    two = cli("parse", "--jsonl", src, "--model", "qwen3", "-j", "2")
    three = cli("parse", "--jsonl", src, "--model", "qwen3", "-j", "3")
    piped = cli("parse", "--jsonl", "-", "--model", "qwen3", "-j", "2", stdin=src.read_bytes())
    assert one.returncode == 3, one.stderr
    assert two.stdout == one.stdout and three.stdout == one.stdout and piped.stdout == one.stdout
    for proc in (two, three, piped):
        assert proc.returncode == 3
        assert proc.stderr.split(b";")[0] == one.stderr.split(b";")[0]  # the counts of the summary
    lines = [json.loads(line) for line in one.stdout.decode("utf-8").splitlines()]
    assert summary(lines) == expected_lines(records)
    assert lines[1000]["id"] == "huge" and "message" in lines[1000]


def test_a_bad_line_is_named_by_its_line_number_in_any_part(tmp_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    big_file(src)
    numbered = src.read_bytes().split(b"\n")
    bad = [n for n, line in enumerate(numbered, 1) if line.startswith(b'{"id": "broken"')]
    proc = cli("parse", "--jsonl", src, "--model", "qwen3", "-j", "2")
    said = [
        json.loads(line)["error"]["message"]
        for line in proc.stdout.decode("utf-8").splitlines()
        if '"line ' in line and "is not a JSON object" in line
    ]
    assert [int(message.split()[1]) for message in said] == bad
    assert all(message.endswith("line 2 column 1 (char 28)") for message in said)  # json.loads of the line


def test_output_without_orjson_is_the_same(tmp_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    big_file(src, crlf=True)
    with_it = cli("parse", "--jsonl", src, "--model", "qwen3", "-j", "2")
    without = cli("parse", "--jsonl", src, "--model", "qwen3", "-j", "2", block_orjson=True)
    assert with_it.returncode == without.returncode == 3
    assert with_it.stdout == without.stdout


def test_resume_after_a_kill_in_a_later_part(tmp_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    big_file(src)
    full = tmp_path / "full.jsonl"
    assert cli("parse", "--jsonl", src, "--model", "qwen3", "-o", full, "-j", "2").returncode == 3
    expected = full.read_bytes()
    cut = expected.index(b'"id": "r1500"') + 40  # inside a line, in the third part of the input
    out = tmp_path / "out.jsonl"
    out.write_bytes(expected[:cut])
    proc = cli("parse", "--jsonl", src, "--model", "qwen3", "-o", out, "--resume", "-j", "2")
    assert proc.returncode in (0, 3), proc.stderr
    assert out.read_bytes() == expected
    done_before = expected[:cut].count(b"\n")
    assert f"{done_before:,} skipped".encode() in proc.stderr


def test_a_lone_surrogate_is_written_as_an_escape(tmp_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    src.write_text(
        '{"id": "s\\ud800", "prompt": "", "output": "<think>a\\udfff</think>b<|im_end|>"}\n'
        '{"id": "t", "prompt": "", "output": "<think>é</think>b<|im_end|>"}\n',
        encoding="utf-8",
    )
    for jobs in ("1", "2"):
        proc = cli("parse", "--jsonl", src, "--model", "qwen3", "-j", jobs)
        assert proc.returncode == 0, proc.stderr
        first, second = proc.stdout.decode("utf-8").splitlines()  # valid UTF-8
        assert json.loads(first) == {
            "index": 0,
            "id": "s\ud800",
            "message": {"role": "assistant", "reasoning_content": "a\udfff", "content": "b"},
        }
        assert (
            second
            == '{"index": 1, "id": "t", "message": {"role": "assistant", "reasoning_content": "é", "content": "b"}}'
        )
