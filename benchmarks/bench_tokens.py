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

Then, with transformers 5.25 or later installed, our token-id mode beside the reference's, in the same
process, on the same tokenizer (a ``PreTrainedTokenizerFast`` with the markers as added tokens and a chat
template that writes them, so that both sides see the same control tokens: checked) and the same ids:
outputs of about 2 KB, 20 KB and 200 KB of text in which the model also *spells out* control tokens with
ordinary tokens (``Type <|im_end|> to stop``, a forged ``<|im_start|>user``, ``</think>``), which both
must keep as text. For each size, µs per token

* ``streamed``: ours ``get_response_parser(tok, prefix=ids).feed_tokens(i)`` once per id, against the
  reference's ``ResponseParser(template, prefix=ids, tokenizer=tok).feed([i])``, then ``finalize`` (the
  parser's construction included);
* ``whole``: ours ``response_templates.hf.parse_response(tok, ids, prefix=ids)`` against the reference's
  ``tok.parse_response(ids, template, prefix=ids)``;

with the ratio ours / reference, and PASS/FAIL lines for the targets: at most 0.5x the reference at
every size in both modes, ours flat (per-token cost at the largest size within 1.5x of the smallest),
and both sides giving the same message with every spelled token kept.

Usage::

    python benchmarks/bench_tokens.py                 # 1K, 10K, 50K tokens and 2/20/200 KB, both tokenizers
    python benchmarks/bench_tokens.py --quick         # 1K and 10K tokens, 2/20/200 KB, byte-level only (~25 s)
    python benchmarks/bench_tokens.py --sizes 2k,20k --kinds sp --json results.json
    python benchmarks/bench_tokens.py --no-reference  # the token stream only
    python benchmarks/bench_tokens.py --no-tokens --ref-sizes 2kb,20kb  # the comparison only
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import platform
import re
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from functools import cache
from typing import Any

os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

from _common import (
    CHATML_PREFIX,
    CHATML_TEMPLATE,
    KB,
    Trial,
    best_interleaved,
    best_of,
    first_difference,
    fmt_num,
    fmt_ratio,
    fmt_size,
    format_table,
    gc_disabled,
    generate_chatml_output,
    parse_size,
    reference_label,
)

KINDS = ("byte_level", "sp")
SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
MARKERS = ["<think>", "</think>", "<tool_call>", "</tool_call>"]
NAIVE_FULL_LIMIT = 2000  # up to this many tokens the naive loop runs in full
NAIVE_SAMPLES = 24

#: A ChatML chat template that writes the markers: with it, the non-special markers are control tokens
#: too (the added tokens among the chat template's literals), on both sides.
CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m.role }}\n"
    "{% if m.reasoning_content %}<think>\n{{ m.reasoning_content }}\n</think>\n\n{% endif %}"
    "{{ m.content }}"
    "{% for t in m.tool_calls or [] %}<tool_call>\n{{ t.function | tojson }}\n</tool_call>{% endfor %}"
    "<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
REF_SIZES = (2 * KB, 20 * KB, 200 * KB)
RATIO_MAX = 0.5  # ours / reference, per token
FLAT_MAX = 1.5  # ours at the largest size / at the smallest, per token


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
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>")
    fast.chat_template = CHAT_TEMPLATE
    return fast


@cache
def trained_tokenizer(kind: str) -> Any:
    """The tokenizer of ``kind``, trained once per process (both sections of the run use the same one)."""
    return build_tokenizer(kind, [generate_chatml_output(64 * KB, seed=s) for s in range(4)])


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
    tok = trained_tokenizer(kind)
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
# Ours against transformers 5.25: token ids parsed as ids, streamed and whole
# --------------------------------------------------------------------------------------------------------

#: What the model spells out with ordinary tokens (one token per character): ``(text, spelled)`` parts.
#: In the reasoning, a ``</think>`` and an ``<|im_end|>`` that would end it read as text; in the answer, a
#: stop token, a forged turn and a tool-call opener.
SPELLED_IN_REASONING = (
    ("The format ends a turn with ", False),
    ("<|im_end|>", True),
    (" and closes the reasoning with ", False),
    ("</think>", True),
    (", so I must not write either. ", False),
)
SPELLED_IN_ANSWER = (
    ("Type ", False),
    ("<|im_end|>", True),
    (" to stop; a tool result that says ", False),
    ("<|im_start|>", True),
    ("user cannot forge a turn, and ", False),
    ("<tool_call>", True),
    (" here is only text. ", False),
)
#: The spelled tokens that are delimiters of CHATML_TEMPLATE (the generated free text never has them).
SPELLED_DELIMITERS = ("<|im_end|>", "</think>", "<tool_call>")


def reference_available() -> str | None:
    """None when the installed transformers parses token ids as ids (5.25+), else why not."""
    try:
        import inspect

        from transformers.utils.chat_parsing import ResponseParser
    except ImportError as exc:
        return f"transformers' response parser is not installed ({exc})"
    if "tokenizer" not in inspect.signature(ResponseParser.__init__).parameters:
        return f"{reference_label()} has no token-id mode (ResponseParser(tokenizer=) is new in 5.25)"
    return None


def spell(tok: Any, text: str) -> list[int]:
    """``text`` as one ordinary token per character (how a model spells a marker it writes as text)."""
    rust = backend(tok)
    ids = []
    for char in text:
        tid = rust.token_to_id(char)
        if tid is None or tid in rust.get_added_tokens_decoder():
            raise ValueError(f"no ordinary token for {char!r}")
        ids.append(tid)
    if decode(tok, ids) != text:
        raise ValueError(f"{text!r} spelled decodes as {decode(tok, ids)!r}")
    return ids


def _phrase_ids(tok: Any, parts: tuple[tuple[str, bool], ...]) -> list[int]:
    ids: list[int] = []
    for text, spelled in parts:
        ids += spell(tok, text) if spelled else encode(tok, text)
    return ids


def _sentence_ends(text: str, start: int, end: int, count: int) -> list[int]:
    """``count`` positions just after a ``". "`` in ``text[start:end]``, evenly spread."""
    found = [m.end() for m in re.finditer(r"\. ", text[start:end])]
    if not found:
        return [end]
    step = len(found) / count
    return sorted({start + found[int((j + 0.5) * step)] for j in range(count)})


def spelled_output(tok: Any, size: int, seed: int = 7) -> tuple[list[int], dict[str, dict[str, int]]]:
    """The ids of a ChatML output of about ``size`` characters (``generate_chatml_output``) into whose
    reasoning and answer spelled-out control tokens are put (one phrase per ~2 KB, three in four in the
    reasoning), and how many times each delimiter is spelled in each field (``reasoning_content``,
    ``content``). Real markers are their tokens' ids."""
    count = max(2, size // (2 * KB))
    n_answer = max(1, count // 4)
    added = (count - n_answer) * len(_phrase_text(SPELLED_IN_REASONING)) + n_answer * len(
        _phrase_text(SPELLED_IN_ANSWER)
    )
    text = generate_chatml_output(max(size - added, KB), seed=seed)
    think_end = text.index("\n</think>")
    answer_start = text.rindex("</tool_call>") + len("</tool_call>")
    answer_end = text.rindex("<|im_end|>")
    cuts: list[tuple[int, str, tuple[tuple[str, bool], ...]]] = [
        (at, "reasoning_content", SPELLED_IN_REASONING)
        for at in _sentence_ends(text, 0, think_end, count - n_answer)
    ]
    cuts += [
        (at, "content", SPELLED_IN_ANSWER) for at in _sentence_ends(text, answer_start, answer_end, n_answer)
    ]
    ids: list[int] = []
    spelled = {name: dict.fromkeys(SPELLED_DELIMITERS, 0) for name in ("reasoning_content", "content")}
    last = 0
    for at, name, parts in cuts:
        ids += encode(tok, text[last:at]) + _phrase_ids(tok, parts)
        for part, is_spelled in parts:
            if is_spelled and part in SPELLED_DELIMITERS:
                spelled[name][part] += 1
        last = at
    ids += encode(tok, text[last:])
    return ids, spelled


def _phrase_text(parts: tuple[tuple[str, bool], ...]) -> str:
    return "".join(text for text, _ in parts)


@dataclass
class RefRow:
    kind: str
    size: int  # nominal output size, bytes
    chars: int  # characters of the decoded output
    tokens: int
    spelled: int  # spelled-out delimiters in the output
    stream_ours: float  # µs per token
    stream_ref: float
    whole_ours: float
    whole_ref: float
    same_message: bool  # all four messages equal
    spelled_kept: bool  # every spelled delimiter is in the message as text
    same_controls: bool  # hf.control_token_ids == the reference's control tokens
    difference: str | None = None
    controls: dict[int, str] = field(default_factory=dict)

    @property
    def stream_ratio(self) -> float:
        return self.stream_ours / self.stream_ref

    @property
    def whole_ratio(self) -> float:
        return self.whole_ours / self.whole_ref


def reference_control_ids(tok: Any) -> dict[int, str]:
    """The control tokens as transformers 5.25 computes them (``tok._get_control_tokens``), id -> text."""
    template = tok.chat_template
    templates = list(template.values()) if isinstance(template, dict) else [template or ""]
    texts = {t for tpl in templates for t in tok._get_control_tokens(tpl)}
    return {tid: t.content for tid, t in tok.added_tokens_decoder.items() if t.content in texts}


def stream_ours(tok: Any, prompt: list[int], ids: list[int]) -> tuple[float, Any]:
    from response_templates.hf import get_response_parser

    t0 = time.perf_counter()
    parser = get_response_parser(tok, prefix=prompt, template=CHATML_TEMPLATE)
    feed = parser.feed_tokens
    for i in ids:
        feed(i)
    message, _ = parser.finalize()
    return _per_token(time.perf_counter() - t0, len(ids)), message


def stream_ref(tok: Any, prompt: list[int], ids: list[int]) -> tuple[float, Any]:
    from transformers.utils.chat_parsing import ResponseParser

    t0 = time.perf_counter()
    parser = ResponseParser(CHATML_TEMPLATE, prefix=prompt, tokenizer=tok)
    feed = parser.feed
    for i in ids:
        feed([i])
    message, _ = parser.finalize()
    return _per_token(time.perf_counter() - t0, len(ids)), message


def whole_ours(tok: Any, prompt: list[int], ids: list[int]) -> tuple[float, Any]:
    from response_templates.hf import parse_response

    t0 = time.perf_counter()
    message = parse_response(tok, ids, prefix=prompt, template=CHATML_TEMPLATE)
    return _per_token(time.perf_counter() - t0, len(ids)), message


def whole_ref(tok: Any, prompt: list[int], ids: list[int]) -> tuple[float, Any]:
    t0 = time.perf_counter()
    message = tok.parse_response(ids, CHATML_TEMPLATE, prefix=prompt)
    return _per_token(time.perf_counter() - t0, len(ids)), message


REF_CONTENDERS = {
    "stream_ours": stream_ours,
    "stream_ref": stream_ref,
    "whole_ours": whole_ours,
    "whole_ref": whole_ref,
}


def _spelled_kept(message: Any, spelled: dict[str, dict[str, int]]) -> bool:
    """Whether each field has exactly the spelled delimiters put in it (the generated free text has none)."""
    return all(
        str(message.get(name, "")).count(token) == n
        for name, counts in spelled.items()
        for token, n in counts.items()
    )


def _best(trial: Trial) -> float:
    assert trial.best is not None
    return trial.best


def measure_reference(kind: str, tok: Any, sizes: list[int], reps: int) -> list[RefRow]:
    """Ours and the reference, streamed and whole, at every size, all cells round-robin (best of
    ``reps``), then the checks: the same message four ways, the spelled tokens kept, the same controls."""
    from response_templates.hf import control_token_ids

    prompt = encode(tok, CHATML_PREFIX)
    outputs = {n: spelled_output(tok, n) for n in sizes}
    for n, (ids, _) in outputs.items():
        if "\ufdd2" in decode(tok, ids):
            raise AssertionError(f"the {n}-byte output contains U+FDD2, which the reference deletes")
    warm = outputs[min(sizes)][0]
    for fn in REF_CONTENDERS.values():  # per-tokenizer facts are computed once on each side
        fn(tok, prompt, warm)
    cells: dict[tuple[int, str], Trial] = {}
    for n in sizes:
        ids = outputs[n][0]
        for name, fn in REF_CONTENDERS.items():
            cells[n, name] = _trial(functools.partial(fn, tok, prompt, ids))
    best_interleaved(list(cells.values()), max_reps=reps, min_reps=reps, time_budget=0.0)
    for trial in cells.values():
        if trial.error is not None:
            raise trial.error
    ours_controls = control_token_ids(tok)
    same_controls = ours_controls == reference_control_ids(tok)
    rows = []
    for n in sizes:
        ids, spelled = outputs[n]
        messages = {name: cells[n, name].payload[1] for name in REF_CONTENDERS}
        difference = None
        for name, message in messages.items():
            diff = first_difference(message, messages["whole_ref"])
            if diff is not None:
                difference = f"{name} vs whole_ref: {diff}"
                break
        rows.append(
            RefRow(
                kind=kind,
                size=n,
                chars=len(decode(tok, ids)),
                tokens=len(ids),
                spelled=sum(n for counts in spelled.values() for n in counts.values()),
                stream_ours=_best(cells[n, "stream_ours"]),
                stream_ref=_best(cells[n, "stream_ref"]),
                whole_ours=_best(cells[n, "whole_ours"]),
                whole_ref=_best(cells[n, "whole_ref"]),
                same_message=difference is None,
                spelled_kept=all(_spelled_kept(m, spelled) for m in messages.values()),
                same_controls=same_controls,
                difference=difference,
                controls=dict(ours_controls),
            )
        )
    return rows


def run_reference(
    kinds: list[str], sizes: list[int], reps: int, log: Callable[[str], None] = print
) -> list[RefRow]:
    rows = []
    for kind in kinds:
        tok = trained_tokenizer(kind)
        log(f"# {kind}: ours against {reference_label()}, token ids, {len(sizes)} sizes")
        rows += measure_reference(kind, tok, sizes, reps)
    return rows


def reference_targets(rows: list[RefRow]) -> list[tuple[str, str]]:
    out = []
    for kind in dict.fromkeys(r.kind for r in rows):
        mine = sorted((r for r in rows if r.kind == kind), key=lambda r: r.size)
        sizes = ", ".join(fmt_size(r.size) for r in mine)
        for mode in ("stream", "whole"):
            label = "fed one id at a time" if mode == "stream" else "whole"
            ratios = [getattr(r, f"{mode}_ratio") for r in mine]
            status = "PASS" if all(x <= RATIO_MAX for x in ratios) else "FAIL"
            shown = ", ".join(fmt_ratio(x) for x in ratios)
            out.append(
                (status, f"{kind} {label}: ours/5.25 per token = {shown} at {sizes} (<= {RATIO_MAX}x each)")
            )
            if len(mine) > 1:
                lo, hi = getattr(mine[0], f"{mode}_ours"), getattr(mine[-1], f"{mode}_ours")
                status = "PASS" if hi / lo <= FLAT_MAX else "FAIL"
                out.append(
                    (
                        status,
                        f"{kind} {label}: ours flat, per token at {fmt_size(mine[-1].size)} / at "
                        f"{fmt_size(mine[0].size)} = {hi / lo:.2f}x (<= {FLAT_MAX}x)",
                    )
                )
        bad = [r for r in mine if not (r.same_message and r.spelled_kept and r.same_controls)]
        text = f"{kind}: same control tokens, same message both ways on both sides, every spelled token kept"
        if bad:
            r = bad[0]
            text += (
                f" (at {fmt_size(r.size)}: controls {r.same_controls}, kept {r.spelled_kept}, {r.difference})"
            )
        out.append(("FAIL" if bad else "PASS", text))
    return out


def render_reference(rows: list[RefRow]) -> str:
    headers = [
        "tokenizer",
        "output",
        "tokens",
        "spelled",
        "streamed ours",
        "streamed 5.25",
        "ours/5.25",
        "whole ours",
        "whole 5.25",
        "ours/5.25",
    ]
    body = [
        [
            r.kind,
            fmt_size(r.size),
            f"{r.tokens:,}",
            str(r.spelled),
            fmt_num(r.stream_ours),
            fmt_num(r.stream_ref),
            fmt_ratio(r.stream_ratio),
            fmt_num(r.whole_ours),
            fmt_num(r.whole_ref),
            fmt_ratio(r.whole_ratio),
        ]
        for r in rows
    ]
    lines = [
        f"Token ids parsed as ids: ours against {reference_label()}, µs per token (best of several runs, "
        "interleaved; streamed = construct, one id per feed, finalize)",
        "",
        format_table(headers, body),
        "",
    ]
    lines += [f"{status}  {text}" for status, text in reference_targets(rows)]
    return "\n".join(lines)


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
    parser.add_argument(
        "--ref-sizes", default="2kb,20kb,200kb", help="output sizes of the comparison with transformers"
    )
    parser.add_argument("--ref-reps", type=int, default=5, help="runs per cell of the comparison")
    parser.add_argument("--no-reference", action="store_true", help="skip the comparison with transformers")
    parser.add_argument("--no-tokens", action="store_true", help="skip the token-stream table")
    parser.add_argument(
        "--quick", action="store_true", help="1K and 10K tokens, 2/20/200 KB with 3 runs, byte-level only"
    )
    parser.add_argument("--json", help="also write the results to this file")
    args = parser.parse_args(argv)
    sizes = [1000, 10_000] if args.quick else [_tokens(s) for s in args.sizes.split(",")]
    kinds = ["byte_level"] if args.quick else [k.strip() for k in args.kinds.split(",")]
    ref_sizes = sorted(parse_size(s) for s in args.ref_sizes.split(","))
    ref_reps = min(args.ref_reps, 3) if args.quick else args.ref_reps
    reps = min(args.reps, 5) if args.quick else args.reps
    for kind in kinds:
        if kind not in KINDS:
            parser.error(f"unknown tokenizer kind {kind!r}")
    try:
        import tokenizers  # noqa: F401

        import response_templates.hf  # noqa: F401
    except ImportError as exc:
        print(f"needs tokenizers and response_templates: {exc}", file=sys.stderr)
        return 2
    shown = "" if args.no_tokens else f"; token counts {sizes}"
    shown += "" if args.no_reference else f"; output sizes {[fmt_size(n) for n in ref_sizes]}"
    print(f"# Python {platform.python_version()} on {platform.machine()}{shown}; kinds {kinds}")
    checks: list[tuple[str, str]] = []
    results: dict[str, Any] = {}
    if not args.no_tokens:
        rows = run(kinds, sizes, reps)
        print(render(rows, sizes))
        checks += targets(rows, sizes)
        results["token_stream"] = [asdict(r) for r in rows]
    if not args.no_reference:
        why_not = reference_available()
        if why_not is not None:
            print(f"\nSKIP  the comparison with transformers: {why_not}")
        else:
            print()
            ref_rows = run_reference(kinds, ref_sizes, ref_reps)
            print(render_reference(ref_rows))
            checks += reference_targets(ref_rows)
            results["vs_reference"] = [
                {**asdict(r), "controls": {str(k): v for k, v in r.controls.items()}} for r in ref_rows
            ]
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(results, f, indent=2)
    return 1 if any(status == "FAIL" for status, _ in checks) else 0


def _tokens(text: str) -> int:
    """ "10k" -> 10000 (decimal thousands for token counts; parse_size's K is 1024)."""
    t = text.strip().lower()
    if t.endswith("k"):
        return int(float(t[:-1]) * 1000)
    return parse_size(t)


if __name__ == "__main__":
    sys.exit(main())
