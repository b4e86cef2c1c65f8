"""Internal: run a task over chunks of work, in this process or on a pool of processes, in order.

:func:`ordered_map` submits chunks to a :class:`~concurrent.futures.ProcessPoolExecutor` as the input is
read, keeps at most ``prefetch`` chunks per worker in flight (so memory stays bounded whatever the input's
size) and yields each chunk's results in input order. Every worker builds its state once, when it starts,
by calling ``make()`` (e.g. a :class:`~response_templates.batch.records.RecordParser`: templates compiled
once per process), and keeps it for every chunk it is given.

A task is a module-level function ``task(state, chunk) -> result`` (it must pickle by name), and ``make``
a picklable callable (a class, or a :func:`functools.partial` of one).
"""

from __future__ import annotations

import itertools
import os
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from typing import Any, TypeVar

__all__ = ["chunked", "cpu_count", "ordered_map"]

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


def _init_worker(make: Callable[[], Any]) -> None:
    _WORKER["state"] = make()


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
) -> Iterator[R]:
    """``task(state, chunk)`` for each chunk, in order, on ``workers`` processes (1: this one).

    Each worker's ``state`` is ``make()``; ``local``, if given, is the state this process uses
    (``workers=1``). Stopping the iteration early cancels the chunks not started.
    """
    if workers <= 1:
        state = local if local is not None else make()
        for chunk in chunks:
            yield task(state, chunk)
        return
    executor = ProcessPoolExecutor(max_workers=workers, initializer=_init_worker, initargs=(make,))
    pending: deque[Future[R]] = deque()
    try:
        limit = workers * max(1, prefetch)
        for chunk in chunks:
            pending.append(executor.submit(_run_chunk, task, chunk))
            while len(pending) >= limit or (pending and pending[0].done()):
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
    finally:
        executor.shutdown(wait=True, cancel_futures=True)
