"""Per-chunk streaming cost against the peers: ours (full server path), transformers 5.25, openai-harmony.

The same outputs are streamed through each implementation's own streaming entry point, as a server calls
it, interleaved in one process:

* **ours**: ``ChatCompletionsAdapter.step(parser, text)``, which returns what
  ``adapter.feed(parser.feed(text))`` returns, i.e. the full path from model text to
  ``chat.completion.chunk`` dicts (tool-call arguments streamed as JSON deltas), as ``run_stream`` runs it;
* **ours, to SSE text**: the same, and ``adapter.encode`` on each call's chunks: the text a server
  writes, ``data: {...}`` lines;
* **transformers 5.25**: ``transformers.utils.chat_parsing.ResponseParser.feed`` with the same template
  (the reference; parser only, no wire chunks);
* **openai-harmony** (gpt-oss only; Rust): ``StreamableParser.process(token_id)``.

Outputs: for ``qwen3`` (Hermes JSON calls), ``deepseek-r1`` and ``gpt-oss``, a mixed output (reasoning,
tool calls, answer) of 2 KB and 20 KB, a 200 KB output whose bulk is one tool argument, and a 200 KB output
whose bulk is reasoning. gpt-oss is fed real token ids of the harmony encoding (o200k_harmony), one token
a chunk (ours and transformers get each token's text); the others are fed 4-character chunks.

Every implementation's final message is checked against the message the output was generated from
(reasoning, answer, calls with their arguments; whitespace at the ends of texts ignored): a fast wrong
answer is not a win. Each cell says whether it is right (✓/✗), and the script exits 1 if ours is wrong.

openai-harmony needs the ``o200k_base`` vocabulary, which it normally downloads. Here it is rebuilt from
the ranks shipped in the npm package ``js-tiktoken`` (``--vocab-from PATH`` to its
``dist/ranks/o200k_base.js``, or the environment variable ``TIKTOKEN_ENCODINGS_BASE`` pointing to a folder
that already holds ``o200k_base.tiktoken``); ``make bench-peers`` fetches it with npm and runs this script.
Without it, the harmony column says so and gpt-oss is fed 4-character chunks.

Usage::

    python benchmarks/bench_peers.py                      # all cases
    python benchmarks/bench_peers.py --quick              # 2 KB and 20 KB only
    python benchmarks/bench_peers.py --families gpt-oss --vocab-from node_modules/js-tiktoken/dist/ranks/o200k_base.js
"""

from __future__ import annotations

import argparse
import base64
import codecs
import json
import os
import random
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import response_templates as rt
from _common import (
    KB,
    Trial,
    best_interleaved,
    chunked,
    fmt_num,
    fmt_ratio,
    gc_disabled,
    reference_label,
)
from response_templates.compiled import is_compiled
from response_templates.wire import ChatCompletionsAdapter

CHUNK = 4
MIN_REPS, MAX_REPS, REP_BUDGET = 5, 25, 1.2
SHAPES = ("2KB", "20KB", "200KB args", "200KB reasoning")
QUICK_SHAPES = ("2KB", "20KB")
FAMILIES = ("qwen3", "deepseek-r1", "gpt-oss")

PREFIXES = {
    "qwen3": "<|im_start|>user\nWeather in Paris?<|im_end|>\n<|im_start|>assistant\n",
    "deepseek-r1": "<｜User｜>Weather in Paris?<｜Assistant｜><think>\n",
    "gpt-oss": "<|start|>user<|message|>Weather in Paris?<|end|><|start|>assistant",
}

_WORDS = tuple(
    [
        "the",
        "a",
        "of",
        "to",
        "and",
        "in",
        "is",
        "that",
        "it",
        "for",
        "on",
        "with",
        "as",
        "be",
        "this",
        "are",
        "by",
        "we",
        "or",
        "from",
        "at",
        "which",
        "can",
        "not",
        "should",
        "then",
        "so",
        "because",
        "however",
        "user",
        "weather",
        "forecast",
        "city",
        "tool",
        "call",
        "function",
        "argument",
        "result",
        "value",
        "check",
        "maybe",
        "wait",
        "let",
        "me",
        "think",
        "about",
        "approach",
        "answer",
        "question",
        "data",
        "table",
        "stream",
        "chunk",
        "token",
        "model",
        "output",
        "format",
        "naïve",
        "café",
        "Zürich",
        "東京",
        "京都",
        "天気",
        "a<b",
        "x<=y",
        "<t",
        "<th",
        "</th",
        "</thi",
        "<tool",
        "<|",
        "<|im",
        "<｜",
        "to=",
        "```",
    ]
)

Call = tuple[str, dict[str, Any]]


# --------------------------------------------------------------------------------------------------------
# Outputs
# --------------------------------------------------------------------------------------------------------


def _text(rng: random.Random, size: int) -> str:
    words: list[str] = []
    n = 0
    while n < size:
        word = rng.choice(_WORDS)
        if rng.random() < 0.08:
            word += rng.choice((".", ",", "\n", ".\n\n"))
        words.append(word)
        n += len(word) + 1
    return " ".join(words)[:size].strip()


def _code(rng: random.Random, size: int) -> str:
    lines: list[str] = []
    n = 0
    while n < size:
        i = len(lines)
        line = rng.choice(
            (
                f'    if a < b: x[{i}] = "<th" + "{i}"  # café',
                f"    return '\\\\'.join(str(v) for v in x[:{i}])",
                f'    data = {{"key": "{i}", "tab": "\\t", "nested": [1, 2.5, null]}}',
                f"def f{i}(a, b):",
            )
        )
        lines.append(line)
        n += len(line) + 1
    return "\n".join(lines)[:size] + "\n"


def make_case(shape: str, seed: int = 0) -> tuple[str, list[Call], str]:
    """``(reasoning, calls, answer)`` for a shape."""
    rng = random.Random(f"peers-{shape}-{seed}")
    weather: Call = ("get_weather", {"city": "Zürich", "days": 3, "metric": True})
    if shape == "200KB args":
        return (
            _text(rng, 400),
            [("run_code", {"language": "python", "code": _code(rng, 200 * KB)})],
            _text(rng, 200),
        )
    if shape == "200KB reasoning":
        return _text(rng, 200 * KB), [weather], _text(rng, 400)
    size = 2 * KB if shape == "2KB" else 20 * KB
    calls: list[Call] = [weather, ("run_code", {"language": "python", "code": _code(rng, 300)})]
    budget = size - 500
    return _text(rng, int(budget * 0.75)), calls, _text(rng, budget // 4)


def render(family: str, reasoning: str, calls: list[Call], answer: str) -> str:
    if family == "qwen3":
        out = f"<think>\n{reasoning}\n</think>\n\n"
        for name, args in calls:
            out += f"<tool_call>\n{json.dumps({'name': name, 'arguments': args}, ensure_ascii=False)}\n</tool_call>\n"
        return out + f"{answer}<|im_end|>"
    if family == "deepseek-r1":
        out = f"{reasoning}\n</think>\n\n<｜tool▁calls▁begin｜>"
        for name, args in calls:
            body = json.dumps(args, ensure_ascii=False)
            out += (
                f"<｜tool▁call▁begin｜>function<｜tool▁sep｜>{name}\n```json\n{body}\n```<｜tool▁call▁end｜>"
            )
        return out + f"<｜tool▁calls▁end｜>{answer}<｜end▁of▁sentence｜>"
    out = f"<|channel|>analysis<|message|>{reasoning}<|end|>"
    for name, args in calls:
        body = json.dumps(args, ensure_ascii=False)
        out += f"<|start|>assistant<|channel|>commentary to=functions.{name} <|constrain|>json<|message|>{body}<|call|>"
    return out + f"<|start|>assistant<|channel|>final<|message|>{answer}<|return|>"


def tools() -> list[dict[str, Any]]:
    """The request's tools: those of ``bench_families`` (``get_weather``, ``run_code``)."""
    from bench_families import _tools

    return _tools()


def expected(reasoning: str, calls: list[Call], answer: str) -> dict[str, Any]:
    return {"reasoning": reasoning.strip(), "content": answer.strip(), "calls": [[n, a] for n, a in calls]}


def normalize(message: dict[str, Any]) -> dict[str, Any]:
    """A chat message (ours, the reference's, or an OpenAI-shaped one) in the shape of :func:`expected`."""
    calls = []
    for call in message.get("tool_calls") or []:
        fn = call.get("function", call)
        args = fn.get("arguments")
        calls.append([fn.get("name"), json.loads(args) if isinstance(args, str) else args])
    return {
        "reasoning": (message.get("reasoning_content") or message.get("reasoning") or "").strip(),
        "content": (message.get("content") or "").strip(),
        "calls": calls,
    }


# --------------------------------------------------------------------------------------------------------
# openai-harmony
# --------------------------------------------------------------------------------------------------------


def tiktoken_from_js(ranks_js: Path, folder: Path) -> Path:
    """Write ``o200k_base.tiktoken`` (one ``base64 rank`` line per token) into ``folder`` from js-tiktoken's
    ``o200k_base.js``, whose ``bpe_ranks`` is lines of ``<label> <first rank> <base64 tokens...>``."""
    source = ranks_js.read_text(encoding="utf-8")
    data = json.loads(source[source.index("{") : source.rindex("}") + 1])
    out = []
    for line in data["bpe_ranks"].split("\n"):
        _, first, *tokens = line.split(" ")
        out.extend(f"{token} {int(first) + i}" for i, token in enumerate(tokens))
    target = folder / "o200k_base.tiktoken"
    target.write_text("\n".join(out) + "\n", encoding="utf-8")
    return target


def load_harmony(vocab_from: str | None) -> tuple[Any, str]:
    """``(encoding, label)``; the encoding is None (and the label says why) when unavailable."""
    try:
        from importlib.metadata import version

        import openai_harmony as oh
    except ImportError as exc:
        return None, f"openai-harmony not installed ({exc})"
    if vocab_from:
        folder = Path(tempfile.mkdtemp(prefix="o200k-"))
        tiktoken_from_js(Path(vocab_from), folder)
        os.environ["TIKTOKEN_ENCODINGS_BASE"] = str(folder)
    try:
        encoding = oh.load_harmony_encoding(oh.HarmonyEncodingName.HARMONY_GPT_OSS)
    except Exception as exc:
        return None, f"openai-harmony has no o200k_base vocabulary ({type(exc).__name__}); see --vocab-from"
    return encoding, f"openai-harmony {version('openai-harmony')}"


def harmony_message(parser: Any) -> dict[str, Any]:
    """The chat message of a finished harmony stream."""
    reasoning, content, calls = [], [], []
    for message in parser.messages:
        text = "".join(part.text for part in message.content)
        recipient = message.recipient or ""
        if recipient.startswith("functions."):
            calls.append({"function": {"name": recipient.removeprefix("functions."), "arguments": text}})
        elif message.channel == "analysis":
            reasoning.append(text)
        elif message.channel == "final":
            content.append(text)
    return {"reasoning_content": "".join(reasoning), "content": "".join(content), "tool_calls": calls}


def _token_bytes() -> dict[int, bytes]:
    """Rank -> bytes of the ordinary tokens, read from the ``o200k_base.tiktoken`` file in use."""
    path = Path(os.environ["TIKTOKEN_ENCODINGS_BASE"]) / "o200k_base.tiktoken"
    table = {}
    for line in path.read_text(encoding="ascii").splitlines():
        token, rank = line.split()
        table[int(rank)] = base64.b64decode(token)
    return table


def token_pieces(encoding: Any, text: str) -> tuple[list[int], list[str]]:
    """The output's token ids and each token's text (UTF-8 decoded incrementally, as a server would)."""
    ids = encoding.encode(text, allowed_special="all")
    table = _token_bytes()
    decoder = codecs.getincrementaldecoder("utf-8")()
    pieces = [decoder.decode(table[i]) if i in table else encoding.decode([i]) for i in ids]
    pieces[-1] += decoder.decode(b"", final=True)
    assert "".join(pieces) == text
    return ids, pieces


# --------------------------------------------------------------------------------------------------------
# Contenders
# --------------------------------------------------------------------------------------------------------


@dataclass
class Contender:
    name: str
    #: (chunks) -> (seconds per chunk, normalized final message)
    run: Callable[[Sequence[Any]], tuple[float, dict[str, Any]]]
    #: what it is fed: "text" chunks or token "ids"
    feeds: str = "text"


def _time_stream(
    make: Callable[[], Any], step: Callable[[Any, Any], Any], chunks: Sequence[Any]
) -> tuple[float, Any]:
    import time

    with gc_disabled():
        t0 = time.perf_counter()
        state = make()
        for chunk in chunks:
            step(state, chunk)
        seconds = time.perf_counter() - t0
    return seconds / max(len(chunks), 1), state


def ours(family: str, sse: bool = False) -> Contender:
    """Our full path to chunk dicts; with ``sse``, on to the text a server writes (``adapter.encode``)."""
    template = rt.templates.get(family)
    prefix, tool_list = PREFIXES[family], tools()

    def make() -> tuple[Any, Any]:
        parser = rt.ResponseParser(template, prefix=prefix, tools=tool_list)
        adapter = ChatCompletionsAdapter(template, model="bench", tools=tool_list)
        adapter.feed(parser.initial_events)
        return parser, adapter

    def step(state: tuple[Any, Any], chunk: str) -> None:
        state[1].step(state[0], chunk)

    def step_sse(state: tuple[Any, Any], chunk: str) -> None:
        state[1].encode(state[1].step(state[0], chunk))

    def run(chunks: Sequence[str]) -> tuple[float, dict[str, Any]]:
        per_chunk, (parser, adapter) = _time_stream(make, step_sse if sse else step, chunks)
        _, final_events = parser.finalize()
        adapter.finish(final_events, finish_reason="stop")
        return per_chunk, normalize(adapter.final()["choices"][0]["message"])

    return Contender("ours-sse" if sse else "ours", run)


def reference(family: str) -> Contender | str:
    try:
        from transformers.utils.chat_parsing import ResponseParser
        from transformers.utils.chat_parsing.response_templates import load_response_template

        exported = rt.templates.export(family, target="transformers").template
        template = load_response_template(exported)
    except Exception as exc:
        return f"{type(exc).__name__}: {str(exc).splitlines()[0][:100]}"
    prefix, tool_list = PREFIXES[family], tools()

    def run(chunks: Sequence[str]) -> tuple[float, dict[str, Any]]:
        per_chunk, parser = _time_stream(
            lambda: ResponseParser(template, prefix=prefix, tools=tool_list), lambda p, c: p.feed(c), chunks
        )
        message, _ = parser.finalize()
        return per_chunk, normalize(message)

    return Contender("transformers", run)


def harmony(encoding: Any) -> Contender:
    import openai_harmony as oh

    def run(ids: Sequence[int]) -> tuple[float, dict[str, Any]]:
        per_chunk, parser = _time_stream(
            lambda: oh.StreamableParser(encoding, role=oh.Role.ASSISTANT), lambda p, t: p.process(t), ids
        )
        parser.process_eos()
        return per_chunk, normalize(harmony_message(parser))

    return Contender("harmony", run, feeds="ids")


# --------------------------------------------------------------------------------------------------------
# Measurement
# --------------------------------------------------------------------------------------------------------


@dataclass
class Row:
    family: str
    shape: str
    size: int
    chunks: int
    unit: str
    us: dict[str, float] = field(default_factory=dict)
    right: dict[str, bool] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def measure(family: str, shape: str, contenders: list[Contender], encoding: Any) -> Row:
    reasoning, calls, answer = make_case(shape)
    text = render(family, reasoning, calls, answer)
    want = expected(reasoning, calls, answer)
    ids: list[int] = []
    if family == "gpt-oss" and encoding is not None:
        ids, pieces = token_pieces(encoding, text)
        unit = "token"
    else:
        pieces, unit = chunked(text, CHUNK), f"{CHUNK} chars"
    row = Row(family, shape, len(text.encode()), len(pieces), unit)
    trials: dict[str, Trial] = {}
    for contender in contenders:
        feed = ids if contender.feeds == "ids" else pieces

        def run(c: Contender = contender, feed: Sequence[Any] = feed) -> tuple[float, Any, bool]:
            per_chunk, message = c.run(feed)
            return per_chunk, message, True

        trials[contender.name] = Trial(run)
    best_interleaved(list(trials.values()), max_reps=MAX_REPS, min_reps=MIN_REPS, time_budget=REP_BUDGET)
    for name, trial in trials.items():
        if trial.error is not None:
            row.notes.append(f"{name}: {type(trial.error).__name__}: {trial.error}")
            continue
        assert trial.best is not None
        row.us[name] = trial.best * 1e6
        row.right[name] = trial.payload == want
        if not row.right[name]:
            where = next((k for k in want if trial.payload.get(k) != want[k]), "?")
            row.notes.append(f"{name}: wrong message ({where} differs)")
    return row


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="2 KB and 20 KB only")
    parser.add_argument("--families", default=",".join(FAMILIES))
    parser.add_argument("--shapes", help=f"comma-separated, from: {', '.join(SHAPES)}")
    parser.add_argument(
        "--vocab-from", metavar="O200K_BASE_JS", help="js-tiktoken's dist/ranks/o200k_base.js"
    )
    parser.add_argument("--no-reference", action="store_true", help="leave transformers out")
    parser.add_argument("--json", metavar="FILE", help="also write the rows as JSON")
    args = parser.parse_args(argv)
    shapes = args.shapes.split(",") if args.shapes else list(QUICK_SHAPES if args.quick else SHAPES)
    encoding, harmony_label = load_harmony(args.vocab_from)
    build = "compiled build (mypyc)" if is_compiled() else "pure Python"
    labels = {
        "ours": f"response-templates {rt.__version__}, {build} (parser + Chat Completions chunks)",
        "ours-sse": "the same, and each chunk written as server-sent events (adapter.encode)",
    }
    if not args.no_reference:
        labels["transformers"] = reference_label()
    labels["harmony"] = harmony_label
    rows: list[Row] = []
    for family in args.families.split(","):
        contenders = [ours(family), ours(family, sse=True)]
        if not args.no_reference:
            ref = reference(family)
            if isinstance(ref, str):
                print(f"NOTE: transformers cannot run the {family} template: {ref}", file=sys.stderr)
            else:
                contenders.append(ref)
        if family == "gpt-oss" and encoding is not None:
            contenders.append(harmony(encoding))
        for shape in shapes:
            print(f"  {family} {shape}", file=sys.stderr, flush=True)
            rows.append(measure(family, shape, contenders, encoding))
    names = [n for n in ("ours", "ours-sse", "transformers", "harmony") if any(n in r.us for r in rows)]
    peers = [n for n in names if not n.startswith("ours")]
    print(
        "bench_peers: µs per chunk, best of", f"{MIN_REPS}-{MAX_REPS}", "interleaved runs; ✓ = right message"
    )
    for name in names:
        print(f"  {name}: {labels.get(name, name)}")
    headers = ["family", "output", "chunks", "unit", *[f"{n} µs" for n in names]]
    headers += [f"ours/{n}" for n in peers]
    table = []
    for r in rows:
        cells = [r.family, r.shape, f"{r.chunks:,}", r.unit]
        for n in names:
            cells.append(f"{fmt_num(r.us[n])} {'✓' if r.right[n] else '✗'}" if n in r.us else "–")
        for n in peers:
            ratio = r.us["ours"] / r.us[n] if "ours" in r.us and n in r.us else None
            cells.append(fmt_ratio(ratio))
        table.append(cells)
    from _common import format_table

    print(format_table(headers, table, align="llrl" + "r" * (len(headers) - 4)))
    for family in args.families.split(","):
        mine = {r.shape: r for r in rows if r.family == family}
        if "2KB" in mine and len(mine) > 1:
            for name in names:
                first = mine["2KB"].us.get(name)
                measured = [r for r in mine.values() if name in r.us]
                biggest = max(measured, key=lambda r: r.size) if measured else None
                if first and biggest is not None and biggest.shape != "2KB":
                    growth = biggest.us[name] / first
                    print(f"growth 2KB -> {biggest.shape}, {family}, {name}: {growth:.2f}x")
    for r in rows:
        for note in r.notes:
            print(f"NOTE {r.family} {r.shape}: {note}")
    if args.json:
        Path(args.json).write_text(json.dumps([r.__dict__ for r in rows], indent=2, ensure_ascii=False))
    # Only our own wrong answer fails the run; a peer's is reported in its column and the notes.
    return 0 if all(r.right.get("ours", False) and r.right.get("ours-sse", True) for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
