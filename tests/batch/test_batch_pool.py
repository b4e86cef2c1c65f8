"""The worker pool of ``parse_batch(workers=N)`` and ``parse --jsonl -j N`` leaves nothing running.

A script runs :func:`ordered_map` over an endless input and prints its workers' pids; the script is then
killed with SIGKILL (no handler, no cleanup runs) and its workers must end on their own. Once with Linux's
``prctl(PR_SET_PDEATHSIG)``, once without it (``ctypes`` made unusable, as where there is no prctl), so
that the portable watchdog alone ends them. The waits poll with a generous upper bound.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import response_templates as rt

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc, sends signals")

SCRIPT = """
import ctypes, os, sys, time
if sys.argv[1] == "no-prctl":
    def no_library(*args, **kwargs):
        raise OSError("no prctl here")
    ctypes.CDLL = no_library  # the workers fork from here: they find no prctl either
from response_templates.batch.pool import ordered_map

def task(state, chunk):
    time.sleep(0.01)
    return os.getpid()

def make():
    return None

seen = set()
for pid in ordered_map(task, iter(int, 1), make, workers=2):
    if pid not in seen:
        seen.add(pid)
        print(pid, flush=True)
"""


def running(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie waiting to be reaped does not)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.parametrize("how", ["prctl", "no-prctl"])
def test_workers_end_when_the_calling_process_is_killed(tmp_path: Path, how: str) -> None:
    script = tmp_path / "pool_script.py"
    script.write_text(SCRIPT, encoding="utf-8")
    proc = subprocess.Popen([sys.executable, str(script), how], stdout=subprocess.PIPE, text=True)
    workers: list[int] = []
    try:
        assert proc.stdout is not None
        while len(workers) < 2:
            line = proc.stdout.readline()
            assert line, "the script ended before both workers ran"
            workers.append(int(line))
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)
        deadline = time.monotonic() + 60
        while any(map(running, workers)) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert [pid for pid in workers if running(pid)] == [], "workers outlived the calling process"
    finally:
        for pid in [proc.pid, *workers]:  # only what this test started
            if running(pid):
                os.kill(pid, signal.SIGKILL)
        proc.wait(timeout=60)


def test_a_dead_worker_is_a_typed_error_after_the_results_before_it() -> None:
    def records():
        for i in range(10_000):
            if i == 700:
                os.kill(worker_pids()[0], signal.SIGKILL)
                time.sleep(0.5)
            yield {"id": i, "prompt": "", "output": "hi"}

    def worker_pids() -> list[int]:
        me = os.getpid()
        found = []
        for name in os.listdir("/proc"):
            if name.isdigit():
                try:
                    with open(f"/proc/{name}/stat", encoding="ascii", errors="replace") as f:
                        fields = f.read().rsplit(")", 1)[1].split()
                except OSError:
                    continue
                if int(fields[1]) == me and fields[0] != "Z":
                    found.append(int(name))
        return sorted(found)

    results = []
    with pytest.raises(rt.batch.WorkerDiedError) as caught:
        for result in rt.parse_batch(records(), model="qwen3", workers=2, chunk_size=100):
            results.append(result)
    assert caught.value.signal == signal.SIGKILL and "killed by SIGKILL" in str(caught.value)
    assert [r.index for r in results] == list(range(len(results)))  # the results before it, in order
    deadline = time.monotonic() + 60
    while worker_pids() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert worker_pids() == []


# A worker that dies (or hangs) in the middle of sending its result: it writes the start of a message
# on the pool's result pipe, as a worker does when the out-of-memory killer or a scheduler ends it while
# it sends a large result, and the rest never comes.
HALF_MESSAGE = """
import gc, multiprocessing.queues, os, signal, struct, sys, time
from response_templates.batch.pool import ordered_map, WorkerDiedError

how, flag = sys.argv[1], sys.argv[2]

def task(state, chunk):
    if chunk != 1:
        return chunk
    queue = next(o for o in gc.get_objects() if isinstance(o, multiprocessing.queues.SimpleQueue))
    os.write(queue._writer.fileno(), struct.pack("!i", 1 << 20) + b"x" * 10)  # 1 MB announced, 10 bytes sent
    open(flag, "w").close()
    if how == "dies":
        os.kill(os.getpid(), signal.SIGKILL)
    time.sleep(3600)

def make():
    return None

results = ordered_map(task, iter(range(4)), make, workers=2, prefetch=1)
print(next(results), flush=True)
if how == "dies":
    try:
        for result in results:
            print(result, flush=True)
    except WorkerDiedError as exc:
        print("died:", exc.signal, flush=True)
else:
    while not os.path.exists(flag):
        time.sleep(0.01)
    results.close()
    print("closed", flush=True)
"""


@pytest.mark.parametrize("how", ["dies", "closed"])
def test_a_worker_cut_off_while_sending_its_result_does_not_hang_the_pool(tmp_path: Path, how: str) -> None:
    """``dies``: the worker is killed mid-message: a WorkerDiedError, not an endless wait for the rest.
    ``closed``: the run stops (Ctrl-C, SIGTERM) while a worker is mid-message: stopping ends."""
    script = tmp_path / "half_message.py"
    script.write_text(HALF_MESSAGE, encoding="utf-8")
    try:
        done = subprocess.run(
            [sys.executable, str(script), how, str(tmp_path / "flag")],
            capture_output=True,
            text=True,
            timeout=120,  # a bound on a hang, not a measurement: the script ends in about a second
        )
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"the pool hung: {exc}")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.split()
    assert lines[0] == "0"
    expected = ["died:", str(int(signal.SIGKILL))] if how == "dies" else ["closed"]
    assert lines[-len(expected) :] == expected, done.stdout
