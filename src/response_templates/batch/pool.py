"""Internal: run a task over chunks of records, in this process or on a pool of processes, in order.

:func:`ordered_map` submits chunks to a :class:`~concurrent.futures.ProcessPoolExecutor` as the input is
read, keeps at most ``prefetch`` chunks per worker in flight (so memory stays bounded whatever the input's
size) and yields each chunk's results in input order. Every worker builds one
:class:`~response_templates.batch.records.RecordParser` when it starts (templates compiled once per
process) and keeps it for every chunk it is given.

A task is a module-level function ``task(parser, chunk) -> list`` (it must pickle by name).
"""

from __future__ import annotations

import itertools
import os
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from typing import Any, TypeVar

from .records import RecordParser

__all__ = ["chunked", "cpu_count", "ordered_map"]

T = TypeVar("T")
R = TypeVar("R")

#: The worker's parser, built by :func:`_init_worker` in each worker process.
_WORKER: dict[str, RecordParser] = {}


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


def _init_worker(settings: dict[str, Any]) -> None:
    _WORKER["parser"] = RecordParser(**settings)


def _run_chunk(task: Callable[[RecordParser, list[Any]], list[Any]], chunk: list[Any]) -> list[Any]:
    return task(_WORKER["parser"], chunk)


def ordered_map(
    task: Callable[[RecordParser, list[Any]], list[R]],
    chunks: Iterable[list[Any]],
    settings: dict[str, Any],
    *,
    workers: int = 1,
    prefetch: int = 2,
    parser: RecordParser | None = None,
) -> Iterator[list[R]]:
    """``task(parser, chunk)`` for each chunk, in order, on ``workers`` processes (1: this one).

    ``settings`` are the keyword arguments of :class:`RecordParser`; ``parser``, if given, is the one
    this process uses (``workers=1``). Stopping the iteration early cancels the chunks not started.
    """
    if workers <= 1:
        local = parser if parser is not None else RecordParser(**settings)
        for chunk in chunks:
            yield task(local, chunk)
        return
    executor = ProcessPoolExecutor(max_workers=workers, initializer=_init_worker, initargs=(settings,))
    pending: deque[Future[list[R]]] = deque()
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
