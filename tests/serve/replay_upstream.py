"""A stand-in upstream engine for the serve tests: OpenAI's ``POST /v1/completions``, replaying a recording.

Run as a script (``python replay_upstream.py --log FILE``): it listens on a free port of 127.0.0.1 and
prints ``PORT <n>`` on its first line. Whatever the prompt, it answers with the bundled Qwen3 generation
(``response_templates.demo``), without the final ``<|im_end|>`` (an engine does not write the end-of-sequence
token into the text), cut into token-sized pieces: with ``stream: true`` as server-sent events the way
vLLM's completions endpoint sends them (a ``text_completion`` chunk per piece, the finish reason on the
last, a usage chunk when ``stream_options.include_usage``, then ``data: [DONE]``), otherwise as one JSON
object. ``max_tokens`` cuts the pieces (finish reason ``length``).

Markers in the prompt change the behaviour: ``[slow]`` waits 50 ms before each piece, ``[pace=MS]`` MS ms, ``[fail]`` answers
500, ``[stall]`` waits 8 s before answering, ``[break]`` sends five pieces and closes the connection (no finish reason, no ``[DONE]``). Every request is logged as a JSON line (``{"id", "event": "request", "payload"}``), and how it ended
(``"event": "done"``, or ``"closed_early"`` when the client closed the connection before the end).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from response_templates.demo import load_demo_data, token_chunks

OUTPUT = load_demo_data().output.removesuffix("<|im_end|>")
PIECES = list(token_chunks(OUTPUT))
LOCK = threading.Lock()
COUNTER = [0]
LOG_PATH = ""
PACE = re.compile(r"\[pace=(\d+)\]")


def log(entry: dict[str, Any]) -> None:
    with LOCK, open(LOG_PATH, "a", encoding="utf-8") as f:
        f.write(json.dumps(entry) + "\n")


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"  # the body ends when the connection closes

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("content-length") or 0))
        if self.path != "/v1/completions":
            self.send_error(404)
            return
        payload = json.loads(body)
        with LOCK:
            COUNTER[0] += 1
            request_id = COUNTER[0]
        log({"id": request_id, "event": "request", "payload": payload})
        prompt = payload.get("prompt") or ""
        if "[fail]" in prompt:
            self.answer_json(500, {"error": {"message": "the engine failed", "type": "internal_error"}})
            log({"id": request_id, "event": "done"})
            return
        if "[stall]" in prompt:  # an engine that does not answer (the server's --timeout is shorter)
            time.sleep(8)
        delay = 0.05 if "[slow]" in prompt else 0.0
        paced = PACE.search(prompt)  # [pace=MS]: an engine that writes a token every MS milliseconds
        if paced:
            delay = int(paced.group(1)) / 1000
        limit = payload.get("max_tokens") or len(PIECES)
        if "[break]" in prompt:  # the engine dies mid-stream: a few pieces, then the connection closes
            limit = min(limit, 5)
        pieces = PIECES[:limit]
        finish = "stop" if len(pieces) == len(PIECES) else "length"
        usage = {
            "prompt_tokens": len(prompt) // 4,
            "completion_tokens": len(pieces),
            "total_tokens": len(prompt) // 4 + len(pieces),
        }
        if not payload.get("stream"):
            choice = {"index": 0, "text": "".join(pieces), "logprobs": None, "finish_reason": finish}
            self.answer_json(
                200, {"id": "cmpl-1", "object": "text_completion", "choices": [choice], "usage": usage}
            )
            log({"id": request_id, "event": "done"})
            return
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.end_headers()
        model = payload.get("model")
        try:
            for n, piece in enumerate(pieces, 1):
                if delay:
                    time.sleep(delay)
                last = n == len(pieces) and "[break]" not in prompt
                choice = {
                    "index": 0,
                    "text": piece,
                    "logprobs": None,
                    "finish_reason": finish if last else None,
                }
                self.event(
                    {
                        "id": "cmpl-1",
                        "object": "text_completion",
                        "created": 0,
                        "model": model,
                        "choices": [choice],
                    }
                )
            if "[break]" in prompt:
                log({"id": request_id, "event": "broken"})
                return
            if (payload.get("stream_options") or {}).get("include_usage"):
                self.event(
                    {
                        "id": "cmpl-1",
                        "object": "text_completion",
                        "created": 0,
                        "model": model,
                        "choices": [],
                        "usage": usage,
                    }
                )
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            log({"id": request_id, "event": "closed_early"})
            return
        log({"id": request_id, "event": "done"})

    def event(self, data: dict[str, Any]) -> None:
        self.wfile.write(f"data: {json.dumps(data)}\n\n".encode())
        self.wfile.flush()

    def answer_json(self, status: int, data: dict[str, Any]) -> None:
        body = json.dumps(data).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


class Server(ThreadingHTTPServer):
    request_queue_size = 1024  # hundreds of clients connect at once in benchmarks/bench_serve.py


def main() -> None:
    global LOG_PATH
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--log", required=True, help="the JSON-lines file of requests and how they ended")
    args = options.parse_args()
    LOG_PATH = args.log
    server = Server(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    print(f"PORT {server.server_address[1]}", flush=True)
    try:
        server.serve_forever(poll_interval=0.05)
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    sys.exit(0)


if __name__ == "__main__":
    main()
