"""Internal: run a task over chunks of work, in this process or on a pool of processes, in order.

:func:`ordered_map` submits chunks to a :class:`~concurrent.futures.ProcessPoolExecutor` as the input is
read, keeps at most ``prefetch`` chunks per worker in flight (so memory stays bounded whatever the input's
size) and yields each chunk's results in input order. Every worker builds its state once, when it starts,
by calling ``make()`` (e.g. a :class:`~response_templates.batch.records.RecordParser`: templates compiled
once per process), and keeps it for every chunk it is given.

A task is a module-level function ``task(state, chunk) -> result`` (it must pickle by name), and ``make``
a picklable callable (a class, or a :func:`functools.partial` of one).

Nothing is left running. A worker ignores SIGINT (Ctrl-C reaches every process of the terminal's group:
the calling process decides what happens) and ends as soon as the process that started it dies, even by
SIGKILL: on Linux the kernel kills it (``prctl(PR_SET_PDEATHSIG, SIGKILL)``), and on every platform a
watchdog thread checks every half second that the calling process is still alive. When the iteration
stops before the end (an exception, Ctrl-C, ``close()``), the workers are killed at once instead of
finishing their chunks. A worker that dies while it holds chunks (killed, out of memory) raises
:class:`WorkerDiedError`, after the results of the chunks before.
"""

from __future__ import annotations

import contextlib
import ctypes
import itertools
import multiprocessing
import multiprocessing.connection
import os
import signal
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Generator, Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, TypeVar

from ..errors import ResponseTemplateError

__all__ = ["WorkerDiedError", "chunked", "cpu_count", "ordered_map"]

T = TypeVar("T")
S = TypeVar("S")
C = TypeVar("C")
R = TypeVar("R")

#: The worker's state, built by :func:`_init_worker` in each worker process.
_WORKER: dict[str, Any] = {}


def cpu_count() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on Linux
        return os.cpu_count() or 1


def chunked(items: Iterable[T], size: int) -> Iterator[list[T]]:
    """``items`` in lists of ``size`` (the last one shorter), read lazily."""
    iterator = iter(items)
    while chunk := list(itertools.islice(iterator, size)):
        yield chunk


class WorkerDiedError(ResponseTemplateError):
    """A worker process died while it held chunks of the input (killed by a signal, out of memory).

    The results of every chunk before were yielded; ``signal`` is the signal that ended the worker (e.g.
    ``9`` for SIGKILL), None if it is not known.
    """

    def __init__(self, message: str, *, signal: int | None = None) -> None:
        super().__init__(message)
        self.signal = signal


#: How often (seconds) a worker's watchdog looks at the process that started it.
_WATCH_EVERY = 0.5

#: Linux's ``PR_SET_PDEATHSIG`` option of ``prctl``.
_PR_SET_PDEATHSIG = 1


def _init_worker(make: Callable[[], Any], parent: int) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # not a handler the calling process installed
    _die_with(parent)
    _WORKER["state"] = make()


def _die_with(parent: int) -> None:
    """End this process when ``parent`` (the process that runs the pool) dies."""
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):  # pragma: no cover - no prctl: the watchdog alone
            pass
    # The portable way: multiprocessing gives every child the read end of a pipe whose other end only
    # the parent holds (the "sentinel"), so it becomes readable (EOF) when the parent dies; a forked
    # child also sees its parent pid change when it is adopted.
    process = multiprocessing.parent_process()
    watch = _Watch(parent, os.getppid() == parent, getattr(process, "sentinel", None))
    if not watch.alive(0):  # it died before the lines above took effect
        os._exit(1)
    threading.Thread(target=watch.run, name="parent-watchdog", daemon=True).start()


class _Watch:
    """Whether the process that started this one still runs: its sentinel is not readable, and (for a
    forked worker) it is still this process's parent."""

    def __init__(self, parent: int, forked: bool, sentinel: Any) -> None:
        self.parent = parent
        self.forked = forked
        self.sentinel = sentinel

    def alive(self, wait: float) -> bool:
        """Whether the parent runs, after waiting up to ``wait`` seconds for a sign that it died."""
        if self.sentinel is not None:
            try:
                if multiprocessing.connection.wait([self.sentinel], timeout=wait):
                    return False
            except (OSError, ValueError):  # pragma: no cover - the sentinel is unusable: the pid alone
                self.sentinel = None
                time.sleep(wait)
        elif wait:
            time.sleep(wait)
        return not self.forked or os.getppid() == self.parent

    def run(self) -> None:
        while self.alive(_WATCH_EVERY):
            pass
        os._exit(1)


def _kill_workers(executor: ProcessPoolExecutor) -> None:
    """Kill the pool's workers (their chunks are not wanted) and wait until they are gone."""
    workers = list((getattr(executor, "_processes", None) or {}).values())
    for process in workers:
        with contextlib.suppress(OSError, ValueError, AttributeError):  # already gone
            process.kill()
    _unblock(executor)  # a worker killed while it sent a result would keep shutdown() waiting
    executor.shutdown(wait=True, cancel_futures=True)
    for process in workers:
        with contextlib.suppress(OSError, ValueError, AssertionError):  # already joined
            process.join()


def _died(processes: dict[int, Any], executor: ProcessPoolExecutor) -> WorkerDiedError:
    """What to say when the pool broke: which worker died, and of what."""
    # The pool's own thread reaps the workers once it sees one die; their exit codes are known (and
    # not half read by two threads at once) when it has ended.
    manager = getattr(executor, "_executor_manager_thread", None)
    if isinstance(manager, threading.Thread) and manager is not threading.current_thread():
        manager.join(timeout=30)
    dead = [(pid, p.exitcode) for pid, p in processes.items() if p.exitcode is not None and p.exitcode != 0]
    # The pool ends the other workers with SIGTERM once one died: name the one that died first.
    killed = sorted(
        ((pid, code) for pid, code in dead if code is not None and code < 0),
        key=lambda item: item[1] == -signal.SIGTERM,
    )
    if killed:
        pid, code = killed[0]
        number = -code
        try:
            name = signal.Signals(number).name
        except ValueError:  # pragma: no cover - a signal Python has no name for
            name = f"signal {number}"
        return WorkerDiedError(
            f"worker process {pid} was killed by {name} (by a user, a scheduler or the out-of-memory killer)",
            signal=number,
        )
    if dead:
        pid, code = dead[0]
        return WorkerDiedError(f"worker process {pid} exited with status {code} during the run")
    return WorkerDiedError("a worker process ended abruptly during the run")


def _run_chunk(task: Callable[[Any, Any], Any], chunk: Any) -> Any:
    return task(_WORKER["state"], chunk)


def ordered_map(
    task: Callable[[S, C], R],
    chunks: Iterable[C],
    make: Callable[[], S],
    *,
    workers: int = 1,
    prefetch: int = 2,
    local: S | None = None,
) -> Generator[R, None, None]:
    """``task(state, chunk)`` for each chunk, in order, on ``workers`` processes (1: this one).

    Each worker's ``state`` is ``make()``; ``local``, if given, is the state this process uses
    (``workers=1``). Stopping the iteration early (``close()``, an exception) kills the workers; a worker
    that dies raises :class:`WorkerDiedError` once the results before are yielded.
    """
    if workers <= 1:
        state = local if local is not None else make()
        for chunk in chunks:
            yield task(state, chunk)
        return
    executor = ProcessPoolExecutor(
        max_workers=workers, initializer=_init_worker, initargs=(make, os.getpid())
    )
    pending: deque[Future[R]] = deque()
    processes: dict[int, Any] = {}  # the workers, kept to say which one died
    try:
        limit = workers * max(1, prefetch)
        for chunk in chunks:
            try:
                pending.append(executor.submit(_run_chunk, task, chunk))
            except BrokenProcessPool:  # a worker died while the others waited for work
                processes.update(getattr(executor, "_processes", None) or {})
                raise _died(processes, executor) from None
            if not processes:
                processes.update(getattr(executor, "_processes", None) or {})
            while len(pending) >= limit or (pending and pending[0].done()):
                yield _result(pending.popleft(), executor, processes)
        while pending:
            yield _result(pending.popleft(), executor, processes)
    except BaseException:  # an error, Ctrl-C, a signal, close(): the chunks in flight are not wanted
        _kill_workers(executor)
        raise
    executor.shutdown(wait=True)


def _result(future: Future[R], executor: ProcessPoolExecutor, processes: dict[int, Any]) -> R:
    dead_since: float | None = None
    while True:
        try:
            return future.result(timeout=_WATCH_EVERY)
        except BrokenProcessPool:
            processes.update(getattr(executor, "_processes", None) or {})
            raise _died(processes, executor) from None
        except TimeoutError:
            pass
        # The pool's thread notices a dead worker by itself, unless the worker died while sending a
        # result: then it waits for the rest of that message forever. A worker that has been dead for a
        # while with the pool not broken is that case: end the wait (see _unblock).
        processes.update(getattr(executor, "_processes", None) or {})
        if not any(process.exitcode is not None for process in processes.values()):
            continue
        now = time.monotonic()
        if dead_since is None:
            dead_since = now
        elif now - dead_since >= 2 * _WATCH_EVERY:
            _unblock(executor)


def _unblock(executor: ProcessPoolExecutor) -> None:
    """Close this process's write end of the result pipe, once no worker runs that could still write.

    A worker killed while it was sending a result leaves half a message in the pipe: the pool's thread
    would wait for the rest forever (and ``shutdown()`` with it), because this process holds the pipe's
    write end too. Closing it puts the read end at EOF, which the pool's thread takes as a broken pool.
    Only once the other workers are gone too: a live one could be in the middle of a message."""
    workers = list((getattr(executor, "_processes", None) or {}).values())
    if any(process.exitcode is None for process in workers):
        for process in workers:  # the pool is lost anyway: the others' chunks cannot be ordered after it
            with contextlib.suppress(OSError, ValueError, AttributeError):
                process.kill()
        sentinels = [getattr(process, "sentinel", None) for process in workers]
        with contextlib.suppress(OSError, ValueError):
            multiprocessing.connection.wait([s for s in sentinels if s is not None], timeout=30)
    writer = getattr(getattr(executor, "_result_queue", None), "_writer", None)
    with contextlib.suppress(OSError, AttributeError):
        if writer is not None:
            writer.close()
