"""Per-token cost of the token-stream path: ids in, exact text (and parser events) out.

For 1K, 10K and 50K generated tokens of a realistic ChatML output (reasoning, JSON tool calls, an
answer with non-ASCII text), with a byte-level BPE and a SentencePiece-style BPE with byte fallback
(both trained on the spot with ``tokenizers``; no download), it prints µs per token for

* ``decode all``: one ``tokenizer.decode`` of all the ids (the floor: no streaming at all);
* ``ours``: ``TokenDecoder.step`` once per token, then ``flush`` (exact incremental decoding);
* ``ours+parse``: ``TokenResponseParser.feed_tokens`` once per token, then ``finalize`` (decoding and
  parsing: what a streaming application pays);
* ``DecodeStream``: tokenizers' own incremental decoder (Rust; has no flush), for comparison;
* ``naive``: re-decode all ids so far on every token and emit the new suffix (what streaming code
  without an incremental decoder does). It is O(n) per token; above 2K tokens its mean is estimated
  from ``decode(ids[:k])`` timed at evenly spaced ``k`` (marked ``~``);

plus ``ours late``, the per-token cost over the last 10% of the stream (flat cost means it is no
higher than the mean), the ratios naive/ours and ours/decode-all, and PASS/FAIL lines for the targets:
flat per-token cost (50K vs 1K within 1.5x) and ours at least 10x cheaper than naive at 10K tokens.
Every run also checks that the streamed text equals ``tokenizer.decode`` and that the streamed message
equals parsing the decoded whole.

Usage::

    python benchmarks/bench_tokens.py                 # 1K, 10K, 50K tokens, both tokenizers (~20 s)
    python benchmarks/bench_tokens.py --quick         # 1K and 10K, byte-level only
    python benchmarks/bench_tokens.py --sizes 2k,20k --kinds sp --json results.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

from _common import (
    CHATML_PREFIX,
    CHATML_TEMPLATE,
    KB,
    Trial,
    best_interleaved,
    best_of,
    fmt_num,
    fmt_ratio,
    format_table,
    gc_disabled,
    generate_chatml_output,
    parse_size,
)

KINDS = ("byte_level", "sp")
SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
MARKERS = ["<think>", "</think>", "<tool_call>", "</tool_call>"]
NAIVE_FULL_LIMIT = 2000  # up to this many tokens the naive loop runs in full
NAIVE_SAMPLES = 24


# --------------------------------------------------------------------------------------------------------
# Tokenizers (trained on generated text, a second or so)
# --------------------------------------------------------------------------------------------------------


def build_tokenizer(kind: str, corpus: list[str]) -> Any:
    """A trained tokenizer of ``kind``, wrapped in transformers' fast tokenizer when available."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers

    if kind == "byte_level":
        tok = Tokenizer(models.BPE())
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.decoder = decoders.ByteLevel()
        trainer = trainers.BpeTrainer(
            vocab_size=4000,
            special_tokens=SPECIAL_TOKENS,
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
            show_progress=False,
        )
        tok.train_from_iterator(corpus, trainer)
    elif kind == "sp":
        tok = Tokenizer(models.BPE(byte_fallback=True, unk_token="<unk>"))
        tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first", split=True)
        trainer = trainers.BpeTrainer(vocab_size=4000, special_tokens=["<unk>"], show_progress=False)
        tok.train_from_iterator(corpus, trainer)
        data = json.loads(tok.to_str())
        for b in range(256):
            data["model"]["vocab"].setdefault(f"<0x{b:02X}>", len(data["model"]["vocab"]))
        tok = Tokenizer.from_str(json.dumps(data))
        tok.decoder = decoders.Sequence(
            [decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse(), decoders.Strip(" ", 1, 0)]
        )
        tok.add_special_tokens(SPECIAL_TOKENS)
    else:
        raise ValueError(kind)
    tok.add_tokens([AddedToken(m, special=False, normalized=False) for m in MARKERS])
    try:
        from transformers import PreTrainedTokenizerFast
    except ImportError:
        return tok
    return PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>")


def encode(tok: Any, text: str) -> list[int]:
    out = tok.encode(text, add_special_tokens=False)
    return list(getattr(out, "ids", out))


def decode(tok: Any, ids: list[int]) -> str:
    return tok.decode(ids, skip_special_tokens=False)


def backend(tok: Any) -> Any:
    return getattr(tok, "backend_tokenizer", tok)


# --------------------------------------------------------------------------------------------------------
# Measurements
# --------------------------------------------------------------------------------------------------------


@dataclass
class Row:
    kind: str
    tokens: int
    decode_all: float  # µs per token
    ours: float
    ours_late: float
    ours_parse: float
    decode_stream: float | None
    naive: float
    naive_sampled: bool
    exact: bool
    same_message: bool

    @property
    def naive_ratio(self) -> float:
        return self.naive / self.ours

    @property
    def floor_ratio(self) -> float:
        return self.ours / self.decode_all


def _per_token(seconds: float, n: int) -> float:
    return seconds / max(n, 1) * 1e6


def time_ours(tok: Any, prompt: list[int], ids: list[int]) -> tuple[float, float, str]:
    """(µs/token overall, µs/token over the last 10%, streamed text)."""
    from response_templates.hf import TokenDecoder

    late_from = len(ids) - max(len(ids) // 10, 1)
    pieces: list[str] = []
    t0 = time.perf_counter()
    dec = TokenDecoder(tok, prompt_ids=prompt)
    step = dec.step
    append = pieces.append
    for i in ids[:late_from]:
        append(step(i))
    t1 = time.perf_counter()
    for i in ids[late_from:]:
        append(step(i))
    append(dec.flush())
    t2 = time.perf_counter()
    return _per_token(t2 - t0, len(ids)), _per_token(t2 - t1, len(ids) - late_from), "".join(pieces)


def time_ours_parse(tok: Any, prompt: list[int], ids: list[int]) -> tuple[float, Any]:
    from response_templates.hf import get_response_parser

    t0 = time.perf_counter()
    parser = get_response_parser(tok, prefix=prompt, template=CHATML_TEMPLATE)
    feed = parser.feed_tokens
    for i in ids:
        feed(i)
    message, _ = parser.finalize()
    return _per_token(time.perf_counter() - t0, len(ids)), message


def time_decode_stream(tok: Any, prompt: list[int], ids: list[int]) -> float | None:
    try:
        from tokenizers.decoders import DecodeStream
    except ImportError:
        return None
    rust = backend(tok)
    t0 = time.perf_counter()
    try:
        stream = DecodeStream(ids=prompt, skip_special_tokens=False)
    except TypeError:  # tokenizers < 0.22: no prefill
        stream = DecodeStream(skip_special_tokens=False)
    step = stream.step
    for i in ids:
        step(rust, i)
    return _per_token(time.perf_counter() - t0, len(ids))


def time_naive(tok: Any, ids: list[int]) -> tuple[float, bool]:
    """Mean µs/token of "decode everything so far, emit the new suffix"."""
    if len(ids) <= NAIVE_FULL_LIMIT:

        def run() -> None:
            prev = ""
            for k in range(1, len(ids) + 1):
                text = decode(tok, ids[:k])
                _ = text[len(prev) :]
                prev = text

        seconds, _ = best_of(run, max_reps=3, time_budget=2.0)
        return _per_token(seconds, len(ids)), False
    # The cost at position k is one decode of k ids: average it over evenly spaced positions.
    samples = []
    for j in range(NAIVE_SAMPLES):
        k = max(1, round((j + 0.5) * len(ids) / NAIVE_SAMPLES))
        prefix = ids[:k]
        seconds, _ = best_of(lambda prefix=prefix: decode(tok, prefix), max_reps=3, time_budget=0.2)
        samples.append(seconds)
    return sum(samples) / len(samples) * 1e6, True


def _trial(fn: Callable[[], tuple]) -> Trial:
    """A contender for :func:`best_interleaved`: ``fn()`` returns ``(µs per token, *payload)``."""

    def run() -> tuple[float, Any, bool]:
        with gc_disabled():
            result = fn()
        return result[0], result, True

    return Trial(run)


def measure_kind(kind: str, tok: Any, ids_all: list[int], sizes: list[int], reps: int) -> list[Row]:
    """All contenders at all sizes, run round-robin (best of ``reps`` each) so that a slow phase of a
    busy machine hits every cell alike; then the naive loop, which is too slow to interleave."""
    import response_templates as rt

    prompt = encode(tok, CHATML_PREFIX)
    time_ours(tok, prompt, ids_all[:100])  # warm up (per-tokenizer facts are computed once)
    cells: dict[tuple[int, str], Trial] = {}
    for n in sizes:
        ids = ids_all[:n]
        cells[n, "decode"] = _trial(lambda ids=ids: (_per_token(_timed(lambda: decode(tok, ids)), len(ids)),))
        cells[n, "ours"] = _trial(lambda ids=ids: time_ours(tok, prompt, ids))
        cells[n, "parse"] = _trial(lambda ids=ids: time_ours_parse(tok, prompt, ids))
        cells[n, "stream"] = _trial(lambda ids=ids: (time_decode_stream(tok, prompt, ids) or 0.0,))
    best_interleaved(list(cells.values()), max_reps=reps, min_reps=reps, time_budget=0.0)
    for trial in cells.values():
        if trial.error is not None:
            raise trial.error
    rows = []
    prompt_text = decode(tok, prompt)
    for n in sizes:
        ids = ids_all[:n]
        naive, sampled = time_naive(tok, ids)
        expected_text = decode(tok, prompt + ids)[len(prompt_text) :]
        expected_message = rt.parse_response(expected_text, CHATML_TEMPLATE, prefix=prompt_text)
        _, ours_late, text = cells[n, "ours"].payload
        rows.append(
            Row(
                kind=kind,
                tokens=n,
                decode_all=cells[n, "decode"].best,
                ours=cells[n, "ours"].best,
                ours_late=ours_late,
                ours_parse=cells[n, "parse"].best,
                decode_stream=cells[n, "stream"].best or None,
                naive=naive,
                naive_sampled=sampled,
                exact=text == expected_text,
                same_message=cells[n, "parse"].payload[1] == expected_message,
            )
        )
    return rows


def _timed(fn: Callable[[], Any]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def corpus_and_ids(kind: str, max_tokens: int) -> tuple[Any, list[int]]:
    corpus = [generate_chatml_output(64 * KB, seed=s) for s in range(4)]
    tok = build_tokenizer(kind, corpus)
    size = 64 * KB
    while True:
        ids = encode(tok, generate_chatml_output(size, seed=99))
        if len(ids) >= max_tokens:
            return tok, ids
        size *= 2


def run(kinds: list[str], sizes: list[int], reps: int, log: Callable[[str], None] = print) -> list[Row]:
    rows = []
    for kind in kinds:
        t0 = time.perf_counter()
        tok, ids = corpus_and_ids(kind, max(sizes))
        log(f"# {kind}: tokenizer trained, {len(ids):,} ids of output ({time.perf_counter() - t0:.1f} s)")
        rows += measure_kind(kind, tok, ids, sizes, reps)
    return rows


# --------------------------------------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------------------------------------


def targets(rows: list[Row], sizes: list[int]) -> list[tuple[str, str]]:
    out = []
    lo, hi = min(sizes), max(sizes)
    for kind in dict.fromkeys(r.kind for r in rows):
        by_n = {r.tokens: r for r in rows if r.kind == kind}
        if lo != hi:
            growth = by_n[hi].ours / by_n[lo].ours
            status = "PASS" if growth <= 1.5 else "FAIL"
            out.append(
                (
                    status,
                    f"{kind}: per-token cost flat, ours at {hi:,} / at {lo:,} tokens = {growth:.2f}x (<= 1.5x)",
                )
            )
        ten = by_n.get(10_000) or by_n.get(min(by_n, key=lambda k: abs(k - 10_000)))
        status = "PASS" if ten.naive_ratio >= 10 else "FAIL"
        out.append(
            (
                status,
                f"{kind}: ours vs naive re-decode at {ten.tokens:,} tokens = {ten.naive_ratio:.0f}x cheaper (>= 10x)",
            )
        )
        bad = [r.tokens for r in rows if r.kind == kind and not (r.exact and r.same_message)]
        out.append(
            (
                "FAIL" if bad else "PASS",
                f"{kind}: streamed text == decode() and message == parse of the whole",
            )
        )
    return out


def render(rows: list[Row], sizes: list[int]) -> str:
    headers = [
        "tokenizer",
        "tokens",
        "decode all",
        "ours",
        "ours late",
        "ours+parse",
        "DecodeStream",
        "naive",
        "naive/ours",
        "ours/decode all",
    ]
    body = [
        [
            r.kind,
            f"{r.tokens:,}",
            fmt_num(r.decode_all),
            fmt_num(r.ours),
            fmt_num(r.ours_late),
            fmt_num(r.ours_parse),
            fmt_num(r.decode_stream),
            ("~" if r.naive_sampled else "") + fmt_num(r.naive),
            f"{r.naive_ratio:,.0f}x",
            fmt_ratio(r.floor_ratio),
        ]
        for r in rows
    ]
    lines = ["µs per token (best of several runs; ~ = naive mean estimated from sampled positions)", ""]
    lines.append(format_table(headers, body))
    lines.append("")
    lines += [f"{status}  {text}" for status, text in targets(rows, sizes)]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,10000,50000", help="token counts, e.g. 1k,10k,50k")
    parser.add_argument("--kinds", default=",".join(KINDS), help="byte_level, sp")
    parser.add_argument("--reps", type=int, default=7, help="runs per measurement (best is kept)")
    parser.add_argument("--quick", action="store_true", help="1K and 10K tokens, byte-level only")
    parser.add_argument("--json", help="also write the results to this file")
    args = parser.parse_args(argv)
    sizes = [1000, 10_000] if args.quick else [_tokens(s) for s in args.sizes.split(",")]
    kinds = ["byte_level"] if args.quick else [k.strip() for k in args.kinds.split(",")]
    for kind in kinds:
        if kind not in KINDS:
            parser.error(f"unknown tokenizer kind {kind!r}")
    try:
        import tokenizers  # noqa: F401

        import response_templates.hf  # noqa: F401
    except ImportError as exc:
        print(f"needs tokenizers and response_templates: {exc}", file=sys.stderr)
        return 2
    print(f"# Python {platform.python_version()} on {platform.machine()}; sizes {sizes}; kinds {kinds}")
    rows = run(kinds, sizes, args.reps)
    print(render(rows, sizes))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump([asdict(r) for r in rows], f, indent=2)
    return 1 if any(status == "FAIL" for status, _ in targets(rows, sizes)) else 0


def _tokens(text: str) -> int:
    """ "10k" -> 10000 (decimal thousands for token counts; parse_size's K is 1024)."""
    t = text.strip().lower()
    if t.endswith("k"):
        return int(float(t[:-1]) * 1000)
    return parse_size(t)


if __name__ == "__main__":
    sys.exit(main())
