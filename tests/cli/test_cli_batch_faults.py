"""``parse --jsonl/--parquet`` when things go wrong: nothing lost, nothing left running (issue 28).

Resume by position (duplicate ids, an OUT of another input), ``--retry-failed``, output that does not
depend on ``-j``, SIGTERM / Ctrl-C / SIGKILL of the main process and SIGKILL of a worker (the worker
processes checked gone), a full disk, corrupt Parquet data and tools stored as JSON text in Parquet.

The signal tests feed the records through a pipe: the command parses and writes what it was given, then
waits for more, and the signal comes while it waits. Nothing here times the command; the waits poll with
generous upper bounds.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

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

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc, sends signals")


def cli(*argv: Any, stdin: bytes | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "response_templates", *map(str, argv)],
        capture_output=True,
        input=stdin,
        timeout=300,
        check=False,
    )


def parse(capsys: pytest.CaptureFixture[str], *argv: Any) -> tuple[int, bytes, str]:
    """``(exit code, stdout, stderr)`` of ``response-templates parse ARGV``: in this process (quicker), or
    in a subprocess for ``-j 2`` (its workers fork from a small process, not from pytest)."""
    if "2" in argv:
        proc = cli("parse", *argv)
        return proc.returncode, proc.stdout, text(proc)
    code, out, err = run(capsys, "parse", *argv)
    return code, out.encode("utf-8"), err


def text(proc: subprocess.CompletedProcess[Any]) -> str:
    err = proc.stderr
    return err.decode("utf-8", "replace") if isinstance(err, bytes) else err


def jsonl(records: list[Any]) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in records).encode("utf-8")


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


def go_on_command(stderr: str) -> list[str]:
    """The command the message says to run to go on (without the program name)."""
    (line,) = [line for line in stderr.splitlines() if line.startswith("go on")]
    argv = shlex.split(line.split(" with: ", 1)[1])
    assert argv[0] == "response-templates" and ("--resume" in argv or "--retry-failed" in argv)
    return argv[1:]


# ------------------------------------------------------------------------- resume by position


def test_resume_with_duplicate_ids_writes_every_remaining_record(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Several generations per prompt id (RL rollouts, n-sample evals) share an id.
    records = [
        {"id": rid, "prompt": PROMPT, "output": f"answer {i}<|im_end|>"}
        for i, rid in enumerate(["same", "x", "same"])
    ]
    src = tmp_path / "in.jsonl"
    src.write_bytes(jsonl(records))
    full, out = tmp_path / "full.jsonl", tmp_path / "out.jsonl"
    assert run(capsys, "parse", "--jsonl", src, "--model", "qwen3", "-o", full)[0] == 0
    out.write_bytes(full.read_bytes().splitlines(keepends=True)[0])  # a run that stopped after one line
    code, _, err = run(capsys, "parse", "--jsonl", src, "--model", "qwen3", "-o", out, "--resume")
    assert code == 0, err
    assert "2 records" in err and "1 skipped" in err
    assert out.read_bytes() == full.read_bytes()


def test_resume_into_the_output_of_another_input_refuses(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ours = [{"id": f"a{i}", "prompt": PROMPT, "output": GOOD} for i in range(4)]
    theirs = [{"id": f"b{i}", "prompt": PROMPT, "output": GOOD} for i in range(4)]
    (tmp_path / "ours.jsonl").write_bytes(jsonl(ours))
    (tmp_path / "theirs.jsonl").write_bytes(jsonl(theirs))
    out = tmp_path / "out.jsonl"
    assert run(capsys, "parse", "--jsonl", tmp_path / "theirs.jsonl", "--model", "qwen3", "-o", out)[0] == 0
    before = out.read_bytes()
    for option in ("--resume", "--retry-failed"):
        code, _, err = run(
            capsys, "parse", "--jsonl", tmp_path / "ours.jsonl", "--model", "qwen3", "-o", out, option
        )
        assert code == 2
        assert "cannot resume" in err and '"b0"' in err and '"a0"' in err and "another input" in err
        assert out.read_bytes() == before  # not appended to, not rewritten
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ours.jsonl", "out.jsonl", "theirs.jsonl"]
    # An OUT with more results than the input has records is not this input's either.
    (tmp_path / "short.jsonl").write_bytes(jsonl(theirs[:2]))
    code, _, err = run(
        capsys, "parse", "--jsonl", tmp_path / "short.jsonl", "--model", "qwen3", "-o", out, "--resume"
    )
    assert code == 2 and "holds the results of 4 records" in err and "only 2" in err
    assert out.read_bytes() == before


# ------------------------------------------------------------------------------ --retry-failed


def test_retry_failed_writes_what_a_fresh_run_writes_for_any_jobs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "in.jsonl"
    src.write_bytes(jsonl(mixed(40)))
    code, fresh, _ = parse(capsys, "--jsonl", src, "--model", "qwen3", "-j", "1")
    assert code == 3
    assert parse(capsys, "--jsonl", src, "--model", "qwen3", "-j", "2")[1] == fresh  # whatever -j is
    lines = fresh.splitlines(keepends=True)
    # An earlier run in which two good records failed for a passing reason, and that stopped in line 31.
    for n in (5, 12):
        line = json.loads(lines[n])
        del line["message"]
        line["error"] = {"type": "PatternTimeoutError", "message": "the regex budget ran out"}
        lines[n] = (json.dumps(line) + "\n").encode("utf-8")
    for jobs in ("1", "2"):
        out = tmp_path / f"out{jobs}.jsonl"
        out.write_bytes(b"".join(lines[:30]) + lines[30][:25])
        code, _, _ = parse(capsys, "--jsonl", src, "--model", "qwen3", "-o", out, "--resume", "-j", jobs)
        assert code == 3
        assert out.read_bytes() != fresh  # --resume keeps the failures it finds
        out.write_bytes(b"".join(lines[:30]) + lines[30][:25])
        code, _, err = parse(
            capsys, "--jsonl", src, "--model", "qwen3", "-o", out, "--retry-failed", "-j", jobs
        )
        assert code == 3, err
        assert out.read_bytes() == fresh
        # 2 passing failures and the 6 real ones of the first 30 records were parsed again
        assert "22 skipped" in err and "8 failed before and parsed again" in err
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary file left


# ----------------------------------------------------------------------------------- signals


def _stat(pid: int) -> list[str] | None:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            return f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None


def children(pid: int) -> list[int]:
    """The processes whose parent is ``pid``."""
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            fields = _stat(int(name))
            if fields is not None and int(fields[1]) == pid:
                found.append(int(name))
    return found


def running(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie waiting to be reaped does not)."""
    fields = _stat(pid)
    return fields is not None and fields[0] != "Z"


def wait_gone(pids: list[int], *, bound: float = 60.0) -> list[int]:
    """Poll until none of ``pids`` runs, or ``bound`` seconds passed; the ones still running."""
    deadline = time.monotonic() + bound
    while (alive := [p for p in pids if running(p)]) and time.monotonic() < deadline:
        time.sleep(0.1)
    return alive


def record(i: int) -> dict[str, Any]:
    return {
        "id": f"r{i % 700}",
        "prompt": PROMPT,
        "output": f"<think>\n{'x' * 1500}\n</think>\n\nanswer {i}<|im_end|>",
    }


@pytest.fixture(scope="module")
def records_file(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, bytes]:
    """About 6.5 MB of records (ids repeat), and the output of a fresh run."""
    path = tmp_path_factory.mktemp("records") / "in.jsonl"
    path.write_bytes(jsonl([record(i) for i in range(4000)]))
    fresh = cli("parse", "--jsonl", path, "--model", "qwen3", "-j", "1")
    assert fresh.returncode == 0, text(fresh)
    return path, fresh.stdout


def _foreground_signals() -> None:
    """The run gets SIGINT and SIGTERM as a command started from a shell in the foreground does: a test
    runner's process may ignore SIGINT (some earlier test in the same worker, Ray's start-up), and an
    ignored disposition is inherited across exec, which the command then respects (a background job)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


class Running:
    """``parse --jsonl - -o OUT -j 2`` fed 6.5 MB through a pipe that stays open: it parses and writes
    what it has, then waits for more."""

    def __init__(self, data: bytes, out: Path, *extra: str) -> None:
        self.argv = ["parse", "--jsonl", "-", "--model", "qwen3", "-o", str(out), "-j", "2", *extra]
        # stderr goes to a file: a pipe would stay open as long as a leftover worker holds it
        self.stderr = out.with_name("stderr.txt")
        with self.stderr.open("wb") as err:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "response_templates", *self.argv],
                stdin=subprocess.PIPE,
                stderr=err,
                preexec_fn=_foreground_signals,
            )
        assert self.proc.stdin is not None
        self.proc.stdin.write(data[: int(6.5 * 2**20)])
        self.proc.stdin.flush()
        deadline = time.monotonic() + 120
        written = out.with_name(f".{out.name}.retry-failed") if extra else out  # where the new lines go
        while (
            not (written.exists() and written.stat().st_size > 0)
            and self.proc.poll() is None
            and time.monotonic() < deadline
        ):
            time.sleep(0.05)
        assert written.exists() and written.stat().st_size > 0, "no output before the deadline"
        self.workers = children(self.proc.pid)
        assert len(self.workers) >= 2

    def wait(self) -> tuple[int, str]:
        assert self.proc.stdin is not None
        with contextlib.suppress(BrokenPipeError):
            self.proc.stdin.close()
        code = self.proc.wait(timeout=120)
        return code, self.stderr.read_text(encoding="utf-8", errors="replace")

    def cleanup(self) -> None:
        for pid in [self.proc.pid, *self.workers]:  # only what this test started
            if running(pid):
                os.kill(pid, signal.SIGKILL)
        self.proc.wait(timeout=60)


@pytest.fixture
def started(records_file: tuple[Path, bytes], tmp_path: Path) -> Iterator[tuple[Running, Path]]:
    out = tmp_path / "out.jsonl"
    job = Running(records_file[0].read_bytes(), out)
    try:
        yield job, out
    finally:
        job.cleanup()


def assert_prefix_then_resume(out: Path, records_file: tuple[Path, bytes], argv: list[str]) -> None:
    path, fresh = records_file
    written = out.read_bytes()
    assert written and fresh.startswith(written[: written.rfind(b"\n") + 1])  # whole results, in order
    assert written.count(b"\n") < fresh.count(b"\n")
    resumed = cli(*argv, stdin=path.read_bytes())
    assert resumed.returncode == 0, text(resumed)
    assert out.read_bytes() == fresh


@linux_only
@pytest.mark.parametrize(
    ("signum", "code", "words"),
    [(signal.SIGTERM, 143, "stopped by SIGTERM"), (signal.SIGINT, 130, "interrupted (Ctrl-C)")],
)
def test_sigterm_and_ctrl_c_keep_the_lines_say_how_to_resume_and_leave_no_worker(
    started: tuple[Running, Path], records_file: tuple[Path, bytes], signum: int, code: int, words: str
) -> None:
    job, out = started
    os.kill(job.proc.pid, signum)  # the main process only, as `kill` and schedulers do
    exit_code, stderr = job.wait()
    assert exit_code == code, stderr
    assert wait_gone(job.workers) == []
    written = out.read_bytes()
    assert written.endswith(b"\n")  # whole lines: a signal waits for the block being written
    lines = written.count(b"\n")
    assert f"{words}: the results of the first {lines:,} records are in {str(out)!r}" in stderr
    argv = go_on_command(stderr)
    assert argv == [*job.argv, "--resume"]
    assert_prefix_then_resume(out, records_file, argv)


@linux_only
def test_sigkill_of_the_main_process_ends_its_workers(
    started: tuple[Running, Path], records_file: tuple[Path, bytes]
) -> None:
    job, out = started
    os.kill(job.proc.pid, signal.SIGKILL)
    job.proc.wait(timeout=60)
    assert wait_gone(job.workers) == [], "worker processes outlived the main process"
    assert_prefix_then_resume(out, records_file, [*job.argv, "--resume"])


@linux_only
def test_a_killed_worker_is_reported_and_the_lines_written_are_kept(
    started: tuple[Running, Path], records_file: tuple[Path, bytes]
) -> None:
    job, out = started
    victim = job.workers[0]
    os.kill(victim, signal.SIGKILL)
    assert wait_gone([victim]) == []
    exit_code, stderr = job.wait()  # the end of the input: the command finds the worker gone
    assert exit_code == 6, stderr
    assert "internal error" not in stderr and "this is a bug" not in stderr
    assert f"worker process {victim} was killed by SIGKILL" in stderr
    lines = out.read_bytes().count(b"\n")
    assert f"the results of the first {lines:,} records are in {str(out)!r}, kept" in stderr
    assert wait_gone(job.workers) == []
    assert_prefix_then_resume(out, records_file, go_on_command(stderr))


# --------------------------------------------------------------------------------- full disk


@linux_only
def test_a_full_device_is_reported_not_a_bug(tmp_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    src.write_bytes(jsonl(mixed(5)))
    to_file = cli("parse", "--jsonl", src, "--model", "qwen3", "-o", "/dev/full")
    with open("/dev/full", "wb") as full:
        to_stdout = subprocess.run(
            [sys.executable, "-m", "response_templates", "parse", "--jsonl", str(src), "--model", "qwen3"],
            stdout=full,
            stderr=subprocess.PIPE,
            timeout=120,
            check=False,
        )
    for proc, where in ((to_file, "'/dev/full'"), (to_stdout, "to stdout")):
        stderr = text(proc)
        assert proc.returncode == 4, stderr
        assert f"cannot write {where}: No space left on device" in stderr
        assert (
            "internal error" not in stderr and "Traceback" not in stderr and "Exception ignored" not in stderr
        )


@pytest.fixture
def small_tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A 64 KiB tmpfs (root only: skipped where it cannot be mounted)."""
    if not sys.platform.startswith("linux") or os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root on Linux")
    mount = tmp_path / "small"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount)], capture_output=True, check=False
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr!r}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], check=False)


def test_a_full_disk_keeps_the_lines_written_and_resume_completes_them(
    tmp_path: Path, small_tmpfs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "in.jsonl"
    src.write_bytes(jsonl(mixed(1000)))  # about 250 KB of results
    _, fresh, _ = parse(capsys, "--jsonl", src, "--model", "qwen3")
    out = small_tmpfs / "out.jsonl"
    code, _, stderr = parse(capsys, "--jsonl", src, "--model", "qwen3", "-o", out)
    assert code == 4, stderr
    assert "No space left on device" in stderr and "internal error" not in stderr
    written = out.read_bytes()
    whole = written[: written.rfind(b"\n") + 1]
    assert whole and fresh.startswith(whole) and len(whole) < len(fresh)
    lines = whole.count(b"\n")
    assert f"the results of the first {lines:,} records are in {str(out)!r}, kept" in stderr
    subprocess.run(["mount", "-o", "remount,size=4m", str(small_tmpfs)], check=True)  # space freed
    code, _, err = parse(capsys, *go_on_command(stderr)[1:])
    assert code == 3, err
    assert out.read_bytes() == fresh


# ----------------------------------------------------------------------------------- Parquet


def test_corrupt_parquet_data_is_reported_and_the_rows_before_are_kept(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    rows = [{"id": f"r{i}", "prompt": PROMPT, "output": f"answer {i}<|im_end|>"} for i in range(2000)]
    src = tmp_path / "in.parquet"
    pq.write_table(pa.Table.from_pylist(rows), src, row_group_size=512)
    page = pq.ParquetFile(src).metadata.row_group(2).column(2).data_page_offset
    data = bytearray(src.read_bytes())
    data[page : page + 40] = bytes(b ^ 0xFF for b in data[page : page + 40])  # the third row group's
    src.write_bytes(bytes(data))
    out = tmp_path / "out.jsonl"
    code, _, stderr = parse(capsys, "--parquet", src, "--model", "qwen3", "-o", out)
    assert code == 5, stderr
    assert "internal error" not in stderr
    assert f"cannot read the Parquet file {str(src)!r} beyond its first 1,024 rows" in stderr
    lines = out.read_bytes().splitlines()
    assert len(lines) == 1024 and [json.loads(line)["id"] for line in lines] == [f"r{i}" for i in range(1024)]
    assert "the results of the first 1,024 records" in stderr


def test_parquet_tools_stored_as_json_text(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    rows = [
        {"id": "a", "prompt": PROMPT, "output": GOOD, "tools": json.dumps(TOOLS)},
        {"id": "b", "prompt": PROMPT, "output": GOOD, "tools": None},
        {"id": "c", "prompt": PROMPT, "output": GOOD, "tools": "[{not json"},
    ]
    src = tmp_path / "in.parquet"
    pq.write_table(pa.Table.from_pylist(rows), src)
    assert pq.read_schema(src).field("tools").type == pa.string()
    code, out, err = parse(capsys, "--parquet", src, "--model", "qwen3")
    assert code == 3, err
    a, b, c = (json.loads(line) for line in out.splitlines())
    assert a["message"]["tool_calls"][0]["function"]["arguments"] == {"days": 3}  # typed by the schema
    assert b["message"]["tool_calls"][0]["function"]["arguments"] == {"days": "3"}  # no tools: as written
    assert c["error"]["key"] == "tools" and "not JSON text of a list of tools" in c["error"]["message"]


@linux_only
def test_sigterm_during_retry_failed_keeps_out_whole(
    records_file: tuple[Path, bytes], tmp_path: Path
) -> None:
    path, fresh = records_file
    lines = fresh.splitlines(keepends=True)
    for n in (10, 3990):  # failed in the earlier run, which stopped after 3,995 records
        line = json.loads(lines[n])
        del line["message"]
        line["error"] = {"type": "PatternTimeoutError", "message": "the regex budget ran out"}
        lines[n] = (json.dumps(line) + "\n").encode("utf-8")
    out = tmp_path / "out.jsonl"
    out.write_bytes(b"".join(lines[:3995]))
    job = Running(path.read_bytes(), out, "--retry-failed")
    try:
        os.kill(job.proc.pid, signal.SIGTERM)
        code, stderr = job.wait()
        assert code == 143, stderr
        assert wait_gone(job.workers) == []
    finally:
        job.cleanup()
    # OUT: the new lines (record 10 parsed again), then the earlier run's lines the run did not reach
    now = out.read_bytes().splitlines(keepends=True)
    assert len(now) == 3995 and now[10] == fresh.splitlines(keepends=True)[10] and now[3990] == lines[3990]
    assert "the results of the first 3,995 records are in" in stderr
    assert not out.with_name(f".{out.name}.retry-failed").exists()
    argv = go_on_command(stderr)
    assert argv == job.argv  # the same command goes on
    again = cli(*argv, stdin=path.read_bytes())
    assert again.returncode == 0, text(again)
    assert out.read_bytes() == fresh
