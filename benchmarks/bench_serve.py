"""``response-templates serve`` under load: the latency it adds per token, errors, and what it leaves behind.

Two real processes on loopback: the replay upstream of the serve tests (``tests/serve/replay_upstream.py``,
OpenAI's ``/v1/completions`` streaming a recorded Qwen3 generation with tool calls, one piece every
``--pace`` ms) and ``response-templates serve`` in front of it. At each concurrency, ``2 x concurrency``
clients stream the same conversation:

* **direct**: straight from the upstream (``/v1/completions``), the baseline;
* **served**: through ``serve`` (``/v1/chat/completions``, tools, ``stream: true``); one client in five
  leaves after five chunks, as a user closing the tab.

Reported per concurrency: time to first chunk (p50/p99) of both, the latency ``serve`` adds per upstream
token (the served stream's total time minus the direct median, divided by the pieces the upstream sent;
p50/p99 over the clients that read to the end), errors (a status other than 200, a stream that ended
without ``[DONE]``), and what the upstream saw: every request ended, and the leavers' requests were
cancelled (their connections closed early). Usage::

    .venv/bin/python benchmarks/bench_serve.py                       # concurrency 50 and 200
    .venv/bin/python benchmarks/bench_serve.py --concurrency 20 --pace 5
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx2

from _common import format_table

ROOT = Path(__file__).resolve().parents[1]
UPSTREAM = ROOT / "tests" / "serve" / "replay_upstream.py"
CHAT_TEMPLATE = ROOT / "tests" / "data" / "Qwen-Qwen3-0.6B.jinja"
MODEL = "Qwen/Qwen3-0.6B"
LEAVE_EVERY = 5  # one client in this many leaves mid-stream
LEAVE_AFTER = 5  # chunks


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


class Processes:
    """The upstream and the server, stopped (and waited for) on exit whatever happens."""

    def __init__(self, concurrency: int, log: Path) -> None:
        self.log = log
        self.upstream = subprocess.Popen(
            [sys.executable, str(UPSTREAM), "--log", str(log)], stdout=subprocess.PIPE, text=True
        )
        assert self.upstream.stdout is not None
        line = self.upstream.stdout.readline()
        if not line.startswith("PORT "):
            self.close()
            raise SystemExit(f"the replay upstream did not start: {line!r}")
        self.upstream_url = f"http://127.0.0.1:{int(line.split()[1])}/v1"
        port = _free_port()
        self.server = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "response_templates",
                "serve",
                "--upstream",
                self.upstream_url,
                "--model",
                MODEL,
                "--chat-template",
                str(CHAT_TEMPLATE),
                "--max-concurrency",
                str(concurrency),
                "--max-queue",
                str(concurrency * 2),
                "--port",
                str(port),
                "--log-level",
                "warning",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        self.base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        with httpx2.Client(timeout=2.0, trust_env=False) as client:
            while True:
                if self.server.poll() is not None:
                    error = self.server.stderr.read().decode() if self.server.stderr else ""
                    self.close()
                    raise SystemExit(f"serve exited: {error}")
                try:
                    if client.get(f"{self.base}/v1/models").status_code == 200:
                        break
                except httpx2.HTTPError:
                    pass
                if time.monotonic() > deadline:
                    self.close()
                    raise SystemExit("serve did not start")
                time.sleep(0.1)

    def close(self) -> None:
        for process in (getattr(self, "server", None), self.upstream):
            if process is None or process.poll() is not None:
                continue
            process.terminate()
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        for process in (getattr(self, "server", None), self.upstream):
            if process is not None:
                for stream in (process.stdout, process.stderr):
                    if stream is not None:
                        stream.close()

    def endings(self) -> dict[int, str]:
        out: dict[int, str] = {}
        for line in self.log.read_text(encoding="utf-8").splitlines():
            entry = json.loads(line)
            if entry["event"] != "request":
                out[entry["id"]] = entry["event"]
        return out


async def _stream(client: httpx2.AsyncClient, url: str, body: dict[str, Any], leave: bool) -> dict[str, Any]:
    start = time.perf_counter()
    first = None
    chunks = 0
    done = False
    try:
        async with client.stream("POST", url, json=body) as response:
            if response.status_code != 200:
                await response.aread()
                return {"error": f"status {response.status_code}"}
            async for line in response.aiter_lines():
                if not line.startswith("data: "):
                    continue
                if line == "data: [DONE]":
                    done = True
                    break
                chunks += 1
                if first is None:
                    first = time.perf_counter() - start
                if leave and chunks >= LEAVE_AFTER:
                    return {"left": True, "first": first}
    except httpx2.HTTPError as exc:
        return {"error": f"{type(exc).__name__}: {exc}"}
    total = time.perf_counter() - start
    if not done:
        return {"error": "the stream ended without [DONE]"}
    return {"first": first, "total": total, "chunks": chunks}


async def _run(base: str, upstream: str, concurrency: int, pace: int) -> dict[str, Any]:
    from response_templates.demo import load_demo_data, token_chunks

    demo = load_demo_data()
    pieces = len(list(token_chunks(demo.output.removesuffix("<|im_end|>"))))
    marker = f" [pace={pace}]"
    chat = {
        "model": MODEL,
        "stream": True,
        "tools": demo.tools,
        "messages": [{"role": "user", "content": "What is the weather in Paris and Tokyo?" + marker}],
    }
    direct = {"model": MODEL, "stream": True, "prompt": "<|im_start|>user\nWhat is the weather?" + marker}
    limits = httpx2.Limits(max_connections=concurrency * 2, max_keepalive_connections=concurrency * 2)
    async with httpx2.AsyncClient(timeout=120, trust_env=False, limits=limits) as client:
        gate = asyncio.Semaphore(concurrency)

        async def one(url: str, body: dict[str, Any], leave: bool) -> dict[str, Any]:
            async with gate:
                return await _stream(client, url, body, leave)

        n = concurrency * 2
        base_runs = await asyncio.gather(*(one(f"{upstream}/completions", direct, False) for _ in range(n)))
        served = await asyncio.gather(
            *(one(f"{base}/v1/chat/completions", chat, i % LEAVE_EVERY == 0) for i in range(n))
        )
    base_ok = [r for r in base_runs if "total" in r]
    direct_total = statistics.median(r["total"] for r in base_ok) if base_ok else float("nan")
    ok = [r for r in served if "total" in r]
    added = [(r["total"] - direct_total) / pieces * 1e3 for r in ok]
    return {
        "concurrency": concurrency,
        "requests": n,
        "pieces": pieces,
        "direct_first_p50": _percentile([r["first"] for r in base_ok], 0.5) * 1e3,
        "direct_first_p99": _percentile([r["first"] for r in base_ok], 0.99) * 1e3,
        "served_first_p50": _percentile([r["first"] for r in ok], 0.5) * 1e3,
        "served_first_p99": _percentile([r["first"] for r in ok], 0.99) * 1e3,
        "added_ms_per_token_p50": _percentile(added, 0.5),
        "added_ms_per_token_p99": _percentile(added, 0.99),
        "left": sum(1 for r in served if r.get("left")),
        "errors": [r["error"] for r in [*base_runs, *served] if "error" in r],
    }


def main(argv: list[str] | None = None) -> int:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--concurrency", default="50,200", help="comma-separated concurrencies")
    options.add_argument("--pace", type=int, default=10, help="ms between the upstream's pieces")
    options.add_argument("--json", type=Path, help="also write the rows as JSON")
    args = options.parse_args(argv)
    rows = []
    for concurrency in (int(c) for c in args.concurrency.split(",")):
        with tempfile.TemporaryDirectory() as tmp:
            processes = Processes(concurrency, Path(tmp) / "requests.jsonl")
            try:
                row = asyncio.run(_run(processes.base, processes.upstream_url, concurrency, args.pace))
                time.sleep(1.0)  # let the upstream log the cancelled requests
                endings = processes.endings()
                row["upstream_requests"] = len(endings)
                row["upstream_closed_early"] = sum(1 for e in endings.values() if e == "closed_early")
                row["upstream_unfinished"] = row["requests"] * 2 - len(endings)
                row["server_alive"] = processes.server.poll() is None
            finally:
                processes.close()
            rows.append(row)
    headers = [
        "concurrency",
        "requests",
        "first chunk p50/p99 ms, direct",
        "served",
        "added ms/token p50",
        "p99",
        "left mid-stream",
        "cancelled upstream",
        "errors",
    ]
    table = [
        [
            str(r["concurrency"]),
            str(r["requests"]),
            f"{r['direct_first_p50']:.1f} / {r['direct_first_p99']:.1f}",
            f"{r['served_first_p50']:.1f} / {r['served_first_p99']:.1f}",
            f"{r['added_ms_per_token_p50']:.2f}",
            f"{r['added_ms_per_token_p99']:.2f}",
            str(r["left"]),
            str(r["upstream_closed_early"]),
            str(len(r["errors"])),
        ]
        for r in rows
    ]
    print(format_table(headers, table))
    for r in rows:
        print(
            f"concurrency {r['concurrency']}: {r['pieces']} upstream pieces per request, paced {args.pace} ms; "
            f"upstream requests not ended: {r['upstream_unfinished']}; server alive after: {r['server_alive']}"
        )
        if r["errors"]:
            print(f"  errors: {sorted(set(r['errors']))[:5]}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
