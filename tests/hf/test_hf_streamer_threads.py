"""``ResponseStreamer.run()`` and its generation thread (issue 12, hole 6).

The documented pattern (``streamer.run(model.generate, ...)``, then ``for event in streamer``) must end
only once ``generate`` has returned: ``result`` is set when the loop ends, an exception ``generate``
raises after ``end()`` reaches the consumer, and a consumer that stops early (``close()``, ``with``, or
just leaving at interpreter exit) does not leave the thread running, which with torch aborts the
process (``terminate called without an active exception``, exit code 134). The fake ``generate`` calls
``put``/``end`` from the thread with random sleeps, also after ``end()``; the exit checks run the
pattern in fresh interpreters. A real-torch run is at the end, skipped without torch.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("tokenizers")
np = pytest.importorskip("numpy")

from tokenizers import Tokenizer, decoders, models  # noqa: E402

import response_templates as rt  # noqa: E402
from response_templates import hf  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
WORDS = ["<|im_start|>", "assistant", "\n", "<think>", "Hmm", "</think>", "Hi!", " there", "<|im_end|>"]
TEMPLATE = {
    "start_anchor": "<|im_start|>assistant\n",
    "fields": {
        "reasoning_content": {"open": "<think>", "close": "</think>"},
        "content": {"close": "<|im_end|>"},
    },
}
PROMPT = [[0, 1, 2]]
NEW = [3, 4, 5, 6, 7, 7, 7, 8]
MESSAGE = {"reasoning_content": "Hmm", "content": "Hi! there there there"}


def tokenizer() -> Tokenizer:
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(WORDS)}, unk_token="Hi!"))
    tok.decoder = decoders.Fuse()
    return tok


class SleepyModel:
    """``generate`` that sleeps at random between tokens and after ``end()`` (where torch frees its
    caches), returns its ids, and records how many tokens it produced."""

    def __init__(self, seed: int, *, fail_after_end: bool = False, call_end: bool = True) -> None:
        self.rng = random.Random(seed)
        self.fail_after_end = fail_after_end
        self.call_end = call_end
        self.produced = 0
        self.returned = threading.Event()

    def nap(self) -> None:
        if self.rng.random() < 0.5:
            time.sleep(self.rng.random() * 0.003)

    def generate(self, input_ids: Any, streamer: Any, new_ids: list[int], repeat: int = 1) -> Any:
        try:
            streamer.put(np.asarray(input_ids))
            for _ in range(repeat):
                for token in new_ids:
                    self.nap()
                    streamer.put(np.array([token]))
                    self.produced += 1
            if self.call_end:
                streamer.end()
            self.nap()
            time.sleep(self.rng.random() * 0.01)  # work after end(), before returning
            if self.fail_after_end:
                raise RuntimeError("device lost after the last token (simulated)")
            return np.array([list(input_ids[0]) + list(new_ids) * repeat])
        finally:
            self.returned.set()


def test_the_loop_ends_after_generate_returned() -> None:
    for seed in range(40):
        model = SleepyModel(seed)
        streamer = hf.ResponseStreamer(tokenizer(), TEMPLATE, timeout=10)
        thread = streamer.run(model.generate, np.array(PROMPT), new_ids=NEW)
        events = list(streamer)
        assert not thread.is_alive() and model.returned.is_set(), seed
        assert streamer.result is not None and streamer.result.shape == (1, len(PROMPT[0]) + len(NEW))
        assert streamer.message == MESSAGE and events[-1]["type"] == "region_close"


def test_an_error_after_end_reaches_the_consumer() -> None:
    model = SleepyModel(1, fail_after_end=True)
    streamer = hf.ResponseStreamer(tokenizer(), TEMPLATE, timeout=10)
    thread = streamer.run(model.generate, np.array(PROMPT), new_ids=NEW)
    events: list[Any] = []
    with pytest.raises(RuntimeError, match="device lost"):
        for event in streamer:
            events.append(event)
    assert streamer.message == MESSAGE and events[-1]["type"] == "region_close"  # all delivered first
    assert not thread.is_alive() and streamer.result is None
    with pytest.raises(StopIteration):
        next(streamer)


def test_a_fatal_error_is_raised_after_the_thread_stopped() -> None:
    class Failing(SleepyModel):
        def generate(self, input_ids: Any, streamer: Any, new_ids: list[int], repeat: int = 1) -> Any:
            streamer.put(np.asarray(input_ids))
            streamer.put(np.array([3]))
            self.nap()
            raise RuntimeError("CUDA out of memory (simulated)")

    for seed in range(10):
        streamer = hf.ResponseStreamer(tokenizer(), TEMPLATE, timeout=10)
        thread = streamer.run(Failing(seed).generate, np.array(PROMPT), new_ids=NEW)
        with pytest.raises(RuntimeError, match="out of memory"):
            list(streamer)
        assert not thread.is_alive()


def test_close_stops_generate_and_joins_its_thread() -> None:
    model = SleepyModel(2)
    streamer = hf.ResponseStreamer(tokenizer(), TEMPLATE, timeout=10)
    thread = streamer.run(model.generate, np.array(PROMPT), new_ids=NEW, repeat=10_000)
    for i, _event in enumerate(streamer):
        if i == 5:
            break
    assert thread.is_alive() or model.produced < len(NEW) * 10_000  # still generating after the break
    streamer.close()
    assert not thread.is_alive() and model.produced < len(NEW) * 10_000  # stopped early
    assert streamer.result is None and streamer.message is None
    assert list(streamer) == []  # a closed stream yields nothing more
    streamer.close()  # twice: nothing more


def test_leaving_a_with_block_early_closes() -> None:
    model = SleepyModel(3)
    with hf.ResponseStreamer(tokenizer(), TEMPLATE, timeout=10) as streamer:
        thread = streamer.run(model.generate, np.array(PROMPT), new_ids=NEW, repeat=10_000)
        next(streamer)
    assert not thread.is_alive() and model.produced < len(NEW) * 10_000
    with pytest.raises(rt.ParserStateError, match="closed"):
        streamer.put(np.array([3]))


def test_a_with_block_that_runs_to_the_end() -> None:
    with hf.ResponseStreamer(tokenizer(), TEMPLATE, timeout=10) as streamer:
        thread = streamer.run(SleepyModel(4).generate, np.array(PROMPT), new_ids=NEW)
        events = list(streamer)
    assert events and not thread.is_alive()
    assert streamer.message == MESSAGE and streamer.result is not None  # close() after the end keeps both


def test_generate_that_returns_without_end() -> None:
    streamer = hf.ResponseStreamer(tokenizer(), TEMPLATE, timeout=10)
    thread = streamer.run(SleepyModel(5, call_end=False).generate, np.array(PROMPT), new_ids=NEW)
    assert list(streamer)[-1]["type"] == "region_close"
    assert streamer.message == MESSAGE and streamer.result is not None and not thread.is_alive()


def test_run_twice_is_refused() -> None:
    streamer = hf.ResponseStreamer(tokenizer(), TEMPLATE, timeout=10)
    streamer.run(SleepyModel(6).generate, np.array(PROMPT), new_ids=NEW)
    with pytest.raises(rt.ParserStateError, match="run\\(\\) called twice"):
        streamer.run(SleepyModel(6).generate, np.array(PROMPT), new_ids=NEW)
    list(streamer)


def test_a_timeout_while_generate_finishes_keeps_the_end() -> None:
    gate = threading.Event()

    def generate(input_ids: Any, streamer: Any) -> str:
        streamer.put(np.asarray(input_ids))
        streamer.put(np.array([6]))
        streamer.end()
        gate.wait(10)  # generate() is still busy after end()
        return "done"

    streamer = hf.ResponseStreamer(tokenizer(), TEMPLATE, timeout=0.01)
    streamer.run(generate, np.array(PROMPT))
    events: list[Any] = []
    while True:
        try:
            events.append(next(streamer))
        except hf.StreamTimeout as exc:
            if "had not returned" in str(exc):
                break
    gate.set()
    assert list(streamer) == [] and streamer.result == "done"  # iterating again waits for the thread
    assert [e["type"] for e in events] == ["region_open", "region_chunk", "region_close"]


# ------------------------------------------------------------------------------------------------------
# at interpreter exit, in fresh interpreters

SCRIPT = textwrap.dedent(
    """
    import atexit, json, sys, threading

    def check_at_exit():  # registered first, so it runs last
        alive = [t.name for t in threading.enumerate() if t.name == "response-templates-generate" and t.is_alive()]
        sys.stdout.write(json.dumps({"alive_at_exit": alive}) + "\\n")
        sys.stdout.flush()

    atexit.register(check_at_exit)

    sys.path.insert(0, {tests!r})
    import numpy as np
    from response_templates import hf
    from test_hf_streamer_threads import NEW, PROMPT, TEMPLATE, SleepyModel, tokenizer

    seed, mode = int(sys.argv[1]), sys.argv[2]
    results = []
    for k in range(8):
        model = SleepyModel(seed * 100 + k)
        streamer = hf.ResponseStreamer(tokenizer(), TEMPLATE, timeout=30)
        streamer.run(model.generate, np.array(PROMPT), new_ids=NEW)
        for event in streamer:
            pass
        results.append(streamer.result is not None and streamer.message is not None)
    if mode == "break":  # the last consumer leaves early and never calls close()
        model = SleepyModel(seed)
        streamer = hf.ResponseStreamer(tokenizer(), TEMPLATE, timeout=30)
        streamer.run(model.generate, np.array(PROMPT), new_ids=NEW, repeat=10_000)
        for i, event in enumerate(streamer):
            if i == 3:
                break
    print(json.dumps({"results": results}))
    """
)


@pytest.mark.parametrize("mode", ["full", "break"])
def test_the_documented_pattern_in_fresh_interpreters(mode: str, tmp_path: Path) -> None:
    script = tmp_path / "pattern.py"
    script.write_text(SCRIPT.replace("{tests!r}", repr(str(Path(__file__).parent))))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT / "tests")])}
    for seed in range(6):
        run = subprocess.run(
            [sys.executable, str(script), str(seed), mode],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
        assert run.returncode == 0, run.stderr
        lines = [json.loads(line) for line in run.stdout.splitlines()]
        assert lines[0] == {"results": [True] * 8}  # result and message set right after every loop
        assert lines[1] == {"alive_at_exit": []}  # the atexit hook closed the early-left stream


# ------------------------------------------------------------------------------------------------------
# a real model (tiny, random weights), when torch is installed

TORCH_SCRIPT = textwrap.dedent(
    """
    import sys
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM
    from tokenizers import Tokenizer, decoders, models
    from response_templates import hf

    words = ["<|im_start|>", "assistant", "\\n", "Hi!", "<|im_end|>"] + [f"w{i}" for i in range(59)]
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="Hi!"))
    tok.decoder = decoders.Fuse()
    template = {"start_anchor": "<|im_start|>assistant\\n", "fields": {"content": {"close": "<|im_end|>"}}}
    torch.manual_seed(int(sys.argv[1]))
    config = LlamaConfig(vocab_size=64, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                         num_attention_heads=2, num_key_value_heads=2, eos_token_id=4, pad_token_id=4)
    model = LlamaForCausalLM(config).eval()
    streamer = hf.ResponseStreamer(tok, template, timeout=60)
    streamer.run(model.generate, input_ids=torch.tensor([[0, 1, 2]]), max_new_tokens=40, do_sample=True)
    for event in streamer:
        pass
    assert streamer.result is not None and streamer.message is not None
    if sys.argv[2] == "break":
        streamer = hf.ResponseStreamer(tok, template, timeout=60)
        streamer.run(model.generate, input_ids=torch.tensor([[0, 1, 2]]), max_new_tokens=10_000,
                     min_new_tokens=10_000, do_sample=True)
        next(streamer)
    print("ok")
    """
)


@pytest.mark.parametrize("mode", ["full", "break"])
def test_a_real_generate_exits_cleanly(mode: str, tmp_path: Path) -> None:
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    script = tmp_path / "torch_pattern.py"
    script.write_text(TORCH_SCRIPT)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    for seed in range(3):
        run = subprocess.run(
            [sys.executable, str(script), str(seed), mode],
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
        )
        assert run.returncode == 0 and run.stdout.strip() == "ok", (run.returncode, run.stderr[-2000:])
