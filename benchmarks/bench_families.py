"""Streaming cost of the library's heaviest templates: gpt-oss, Qwen3-Coder XML, DeepSeek (R1, V3.2 DSML), Kimi-K2.

For each family a deterministic, realistic output in that family's format (long reasoning with near-miss
text, several tool calls, then an answer -- last, because the reference keeps only the last segment of the
implicit field, so that both parsers can be compared) is streamed in 4-character chunks through ``ResponseParser`` with
the family's built-in template. Prints, per family and output size, our per-chunk cost and the reference
implementation's (transformers 5.25, same template, same process; budget-capped like
``bench_streaming.py``), their ratio, whether the messages agree, and our per-chunk growth from the
smallest to the largest size (linear streaming keeps it near 1).

With ``--degenerate``, the degenerate-output table instead (issue 11): for every library template, the
outputs of ``tests/degenerate_outputs.py`` (a model looping on the template's own markers: ``<function=``
repeated, markers cut short, markers in turn, markers between words) are screened at a small size, and
the costliest one, parsed whole and streamed, is timed at 100 KB and 1 MB: CPU microseconds per KB and
the ratio 1 MB / 100 KB (about 1 when the work is linear; 10 when it is quadratic).

With ``--degenerate --stop-tokens``, the stop-token table (issue 28, item 12): for every library template,
a model looping on one of its delimiters or stop tokens (``stop_token_runs`` of
``tests/degenerate_outputs.py``: ``<|im_end|>``, ``</s>``, ``<｜end▁of▁sentence｜>``, the template's own
end-of-turn markers ... repeated, after the prompt, after a normal start and inside each explicit field).
Each run is screened by the work its delimiter matching does (``tests/work_count.py``, deterministic) at
1 KB and 4 KB; the one whose work grows most is timed at 25 KB and 100 KB, parsed whole, fed in one piece
and streamed in ``--chunk``-character feeds. The table prints the time ratio 100 KB / 25 KB per template
and way (about 4 when linear, 16 when quadratic), then the largest ratios.

Usage::

    python benchmarks/bench_families.py              # 2KB, 20KB, 200KB
    python benchmarks/bench_families.py --quick      # 2KB and 20KB
    python benchmarks/bench_families.py --sizes 2k,64k --families gpt-oss,qwen3-coder --json out.json
    python benchmarks/bench_families.py --degenerate                     # every template, 100KB and 1MB
    python benchmarks/bench_families.py --degenerate --templates qwen3-coder,inkling --sizes 64k,256k
    python benchmarks/bench_families.py --degenerate --stop-tokens       # every template, 25KB and 100KB
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
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
    feed_stream,
    first_difference,
    fmt_num,
    fmt_ratio,
    fmt_size,
    format_table,
    parse_size,
    timed_call,
)

DEFAULT_SIZES = (2 * KB, 20 * KB, 200 * KB)
QUICK_SIZES = (2 * KB, 20 * KB)
CHUNK = 4
MIN_REPS, MAX_REPS, REP_BUDGET = 3, 20, 0.5

_WORDS_TEXT = (
    "the a of to and in is that it for on with as be this are by we or from at which can not should then "
    "so because however user weather forecast city tool call function argument result value check maybe "
    "wait let me think about approach answer question data table stream chunk token model output format "
    "naïve café Zürich 東京 京都 天気"
)
_WORDS = tuple(_WORDS_TEXT.split())


@dataclass(frozen=True)
class Family:
    name: str
    prefix: str
    near_misses: tuple[str, ...]
    #: (reasoning, calls, answer) -> the output text
    render: Callable[[str, list[tuple[str, dict[str, Any]]], str], str]
    delimiters: tuple[str, ...]


def _gpt_oss(reasoning: str, calls: list[tuple[str, dict[str, Any]]], answer: str) -> str:
    out = f"<|channel|>analysis<|message|>{reasoning}<|end|>"
    for name, args in calls:
        body = json.dumps(args, ensure_ascii=False)
        out += f"<|start|>assistant<|channel|>commentary to=functions.{name} <|constrain|>json<|message|>{body}<|call|>"
    return out + f"<|start|>assistant<|channel|>final<|message|>{answer}<|return|>"


def _xml_value(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _qwen3_coder(reasoning: str, calls: list[tuple[str, dict[str, Any]]], answer: str) -> str:
    out = f"<think>\n{reasoning}\n</think>\n\n"
    for name, args in calls:
        params = "".join(f"<parameter={k}>\n{_xml_value(v)}\n</parameter>\n" for k, v in args.items())
        out += f"<tool_call>\n<function={name}>\n{params}</function>\n</tool_call>\n"
    return out + f"{answer}<|im_end|>"


def _deepseek_r1(reasoning: str, calls: list[tuple[str, dict[str, Any]]], answer: str) -> str:
    out = f"{reasoning}\n</think>\n\n<｜tool▁calls▁begin｜>"
    for name, args in calls:
        body = json.dumps(args, ensure_ascii=False)
        out += f"<｜tool▁call▁begin｜>function<｜tool▁sep｜>{name}\n```json\n{body}\n```<｜tool▁call▁end｜>"
    return out + f"<｜tool▁calls▁end｜>{answer}<｜end▁of▁sentence｜>"


def _deepseek_dsml(reasoning: str, calls: list[tuple[str, dict[str, Any]]], answer: str) -> str:
    out = f"{reasoning}</think>\n\n<｜DSML｜function_calls>\n"
    for name, args in calls:
        params = "".join(
            f'<｜DSML｜parameter name="{k}" string="{"true" if isinstance(v, str) else "false"}">{_xml_value(v)}'
            "</｜DSML｜parameter>\n"
            for k, v in args.items()
        )
        out += f'<｜DSML｜invoke name="{name}">\n{params}</｜DSML｜invoke>\n'
    return out + f"</｜DSML｜function_calls>{answer}<｜end▁of▁sentence｜>"


def _kimi_k2(reasoning: str, calls: list[tuple[str, dict[str, Any]]], answer: str) -> str:
    out = f"<think>{reasoning}</think><|tool_calls_section_begin|>"
    for index, (name, args) in enumerate(calls):
        body = json.dumps(args, ensure_ascii=False)
        out += (
            f"<|tool_call_begin|>functions.{name}:{index}<|tool_call_argument_begin|>{body}<|tool_call_end|>"
        )
    return out + f"<|tool_calls_section_end|>{answer}<|im_end|>"


FAMILIES: dict[str, Family] = {
    "gpt-oss": Family(
        "gpt-oss",
        "<|start|>user<|message|>Weather in Paris?<|end|><|start|>assistant",
        ("<", "<|", "<|channel", "<|chan", "<|end", "<|start", "to=", "<|message", "|>", "<|ret"),
        _gpt_oss,
        ("<|end|>", "<|return|>", "<|call|>", "<|channel|>", "<|message|>", "<|start|>"),
    ),
    "qwen3-coder": Family(
        "qwen3-coder",
        "<|im_start|>user\nWeather in Paris?<|im_end|>\n<|im_start|>assistant\n",
        ("<", "<th", "</th", "</thi", "<tool", "<func", "<param", "</param", "<|im", "a < b"),
        _qwen3_coder,
        ("<think>", "</think>", "<tool_call>", "</tool_call>", "<function=", "</function>", "<|im_end|>"),
    ),
    "deepseek-r1": Family(
        "deepseek-r1",
        "<｜User｜>Weather in Paris?<｜Assistant｜><think>\n",
        ("<", "</th", "</thi", "<｜", "<｜tool", "<｜end", "```", "a < b"),
        _deepseek_r1,
        ("</think>", "<｜tool▁calls▁begin｜>", "<｜tool▁call▁begin｜>", "<｜end▁of▁sentence｜>"),
    ),
    "kimi-k2": Family(
        "kimi-k2",
        "<|im_user|>user<|im_middle|>Weather in Paris?<|im_end|><|im_assistant|>assistant<|im_middle|>",
        ("<", "<|", "<|tool", "<|im", "</th", "functions.", "a < b"),
        _kimi_k2,
        ("</think>", "<|tool_call_begin|>", "<|tool_calls_section_begin|>", "<|im_end|>"),
    ),
    "deepseek-v3.2": Family(
        "deepseek-v3.2",
        "<｜User｜>Weather in Paris?<｜Assistant｜><think>",
        ("<", "</th", "</thi", "<｜", "<｜DSML", "</｜DSML", "<｜end", "a < b"),
        _deepseek_dsml,
        ("</think>", "<｜DSML｜", "</｜DSML｜", "<｜end▁of▁sentence｜>"),
    ),
}


def _text(rng: random.Random, size: int, near: Sequence[str]) -> str:
    words: list[str] = []
    n = 0
    while n < size:
        word = rng.choice(near) if rng.random() < 0.05 else rng.choice(_WORDS)
        if rng.random() < 0.08:
            word += rng.choice((".", ",", "\n", ".\n\n"))
        words.append(word)
        n += len(word) + 1
    return " ".join(words)[:size]


def _calls(rng: random.Random, n: int) -> list[tuple[str, dict[str, Any]]]:
    out: list[tuple[str, dict[str, Any]]] = []
    for i in range(n):
        if i % 2:
            code = "\n".join(f"    if a < b: x[{j}] = '<th' + \"{j}\"" for j in range(12))
            out.append(("run_code", {"language": "python", "code": f"def f(a, b):\n{code}\n    return x\n"}))
        else:
            out.append(
                (
                    "get_weather",
                    {"city": rng.choice(("Paris", "Zürich", "東京")), "days": i + 1, "metric": True},
                )
            )
    return out


def generate(family: Family, size: int, seed: int = 0) -> str:
    rng = random.Random(f"{family.name}-{seed}-{size}")
    calls = _calls(rng, 2 + min(6, size // (64 * KB)))
    budget = max(size - sum(len(json.dumps(a)) + 60 for _, a in calls), 200)
    text = family.render(
        _text(rng, int(budget * 0.75), family.near_misses), calls, _text(rng, budget // 4, family.near_misses)
    )
    for delimiter in family.delimiters:  # the free text never contains a real delimiter
        count = text.count(delimiter)
        assert count == family.render("", calls, "").count(delimiter), (family.name, delimiter)
    return text


def _tools() -> list[dict[str, Any]]:
    def tool(name: str, props: dict[str, str]) -> dict[str, Any]:
        properties = {k: {"type": v} for k, v in props.items()}
        return {
            "type": "function",
            "function": {"name": name, "parameters": {"type": "object", "properties": properties}},
        }

    return [
        tool("get_weather", {"city": "string", "days": "integer", "metric": "boolean"}),
        tool("run_code", {"language": "string", "code": "string"}),
    ]


@dataclass
class Impl:
    name: str
    make: Callable[[], Any] | None
    parse: Callable[[str], Any] | None
    error: str = ""


def ours(family: Family, tools: list[dict[str, Any]]) -> Impl:
    template = rt.templates.get(family.name)
    return Impl(
        "ours",
        lambda: rt.ResponseParser(template, prefix=family.prefix, tools=tools),
        lambda text: rt.parse_response(text, template, prefix=family.prefix, tools=tools),
    )


#: Extension keys the reference cannot read whose removal does not change these outputs' messages: `within`
#: (no call is written inside the reasoning here) and the xml-values arguments (tools= types the values).
_SEED_FIELD_KEYS = ("within",)
_SEED_XML_ARGS = ("type_group", "type_parsers", "unescape", "cdata", "nested")


def seed_projection(data: dict[str, Any]) -> dict[str, Any]:
    """The template without the extension keys above, for the reference (which rejects them); the
    "same" column checks that the messages still agree."""
    out = {k: v for k, v in data.items() if k != "extensions"}
    fields = {}
    for name, spec in data["fields"].items():
        spec = {k: v for k, v in spec.items() if k not in _SEED_FIELD_KEYS}
        if isinstance(spec.get("content_args"), dict):
            spec["content_args"] = {k: v for k, v in spec["content_args"].items() if k not in _SEED_XML_ARGS}
        fields[name] = spec
    out["fields"] = fields
    return out


def reference(family: Family, tools: list[dict[str, Any]]) -> Impl:
    try:
        from transformers.utils.chat_parsing import ResponseParser, parse_response
        from transformers.utils.chat_parsing.response_templates import load_response_template

        template = load_response_template(seed_projection(rt.templates.get(family.name).to_dict()))
        parse_response("", template, prefix=family.prefix)  # fails early for templates it cannot run
    except Exception as exc:
        return Impl("reference", None, None, f"{type(exc).__name__}: {str(exc).splitlines()[0][:100]}")
    return Impl(
        "reference",
        lambda: ResponseParser(template, prefix=family.prefix, tools=tools),
        lambda text: parse_response(text, template, prefix=family.prefix, tools=tools),
    )


@dataclass
class Row:
    family: str
    size: int
    chunks: int
    ours_us: float | None = None
    ref_us: float | None = None
    ref_partial: bool = False
    #: Whole-text parse (``parse_response``), milliseconds.
    ours_whole_ms: float | None = None
    ref_whole_ms: float | None = None
    same: str = ""
    notes: list[str] = field(default_factory=list)


def measure(family: Family, size: int, impls: list[Impl], budget: float) -> Row:
    text = generate(family, size)
    chunks = chunked(text, CHUNK)
    row = Row(family.name, len(text), len(chunks))
    trials: dict[str, Trial] = {}
    for impl in impls:
        if impl.make is None:
            continue
        make = impl.make
        cap = budget if impl.name == "reference" else None

        def run(make: Callable[[], Any] = make, cap: float | None = cap) -> tuple[float, Any, bool]:
            result = feed_stream(make, chunks, budget=cap)
            return result.per_chunk, result, result.complete

        trials[impl.name] = Trial(run)
    best_interleaved(list(trials.values()), max_reps=MAX_REPS, min_reps=MIN_REPS, time_budget=REP_BUDGET)
    whole_trials: dict[str, Trial] = {}
    for impl in impls:
        if impl.parse is None:
            continue

        def run_whole(parse: Callable[[str], Any] = impl.parse) -> tuple[float, Any, bool]:
            seconds, message = timed_call(lambda: parse(text))
            return seconds, message, True

        whole_trials[impl.name] = Trial(run_whole)
    best_interleaved(
        list(whole_trials.values()), max_reps=MAX_REPS, min_reps=MIN_REPS, time_budget=REP_BUDGET
    )
    for name, trial in whole_trials.items():
        if trial.best is not None:
            setattr(row, "ours_whole_ms" if name == "ours" else "ref_whole_ms", trial.best * 1e3)
    whole = impls[0].parse(text) if impls[0].parse else None
    for name, trial in trials.items():
        if trial.error is not None:
            row.notes.append(f"{name}: {type(trial.error).__name__}: {trial.error}")
            continue
        assert trial.best is not None
        if name == "ours":
            row.ours_us = trial.best * 1e6
            diff = first_difference(trial.payload.message, whole)
            if diff is not None:
                row.notes.append(f"ours: stream != whole at {diff}")
        else:
            row.ref_us = trial.best * 1e6
            row.ref_partial = not trial.payload.complete
            ref_whole = impls[1].parse(text) if impls[1].parse else None
            diff = first_difference(ref_whole, whole)
            row.same = "✓" if diff is None else f"✗ {diff}"
            if trial.payload.complete and first_difference(trial.payload.message, ref_whole) is not None:
                where = first_difference(trial.payload.message, ref_whole)
                row.notes.append(
                    f"the reference's streamed message differs from its own whole-text parse at {where}"
                )
    return row


# --------------------------------------------------------------------------------------------------------
# Degenerate outputs (issue 11): every library template, its costliest looping output, 100 KB and 1 MB
# --------------------------------------------------------------------------------------------------------

DEGENERATE_SIZES = (100 * KB, 1024 * KB)
#: Sizes at which every degenerate output of a template is tried to find the costliest (whole, streamed).
SCREEN_WHOLE, SCREEN_STREAM = 8 * KB, 1 * KB
#: Characters per feed in the streamed runs: about one token.
DEGENERATE_CHUNK = 4


def degenerate_module() -> Any:
    """``tests/degenerate_outputs.py`` (the generator the tests use)."""
    tests = Path(__file__).resolve().parents[1] / "tests"
    if str(tests) not in sys.path:
        sys.path.insert(0, str(tests))
    import degenerate_outputs

    return degenerate_outputs


def _cpu(run: Callable[[], None], budget: float | None = None) -> tuple[float, str]:
    """CPU seconds of ``run()`` and how it ended: ``ok``, a typed error's class name, or ``budget``."""
    start = time.process_time()
    try:
        run()
        outcome = "ok"
    except _OverBudget:
        outcome = "budget"
    except rt.ResponseTemplateError as exc:
        outcome = type(exc).__name__
    return time.process_time() - start, outcome


class _OverBudget(Exception):
    pass


#: The regex budget of the timed runs: ``RegexBudget()`` (the default), or none (``--no-regex-budget``:
#: only a 60 s bound per search), to measure what a whole 1 MB costs where the default per-call budget
#: of 5 s of regex time would stop it on a slow or loaded machine.
REGEX_BUDGET: dict[str, Any] = {}


def degenerate_whole(template: Any, prefix: str, text: str) -> None:
    rt.parse_response(text, template, prefix=prefix, errors="keep", **REGEX_BUDGET)


def degenerate_stream(template: Any, prefix: str, text: str, chunk: int, budget: float | None = None) -> None:
    parser = rt.ResponseParser(template, prefix=prefix, errors="keep", **REGEX_BUDGET)
    start = time.process_time()
    for i in range(0, len(text), chunk):
        parser.feed(text[i : i + chunk])
        if budget is not None and not i % 4096 and time.process_time() - start > budget:
            raise _OverBudget
    parser.finalize()


@dataclass
class DegenerateRow:
    template: str
    whole_label: str = ""
    stream_label: str = ""
    #: size -> (CPU µs per KB, outcome)
    whole: dict[int, tuple[float, str]] = field(default_factory=dict)
    stream: dict[int, tuple[float, str]] = field(default_factory=dict)


def measure_degenerate(
    name: str, sizes: Sequence[int], chunk: int, budget: float, screen: bool = True
) -> DegenerateRow:
    """Screen every degenerate output of the template, then time the costliest whole and streamed."""
    dg = degenerate_module()
    template = rt.templates.get(name)
    prefix = dg.hostile_inputs.prompts(name)[0]
    outputs = dg.degenerate_outputs(name)
    row = DegenerateRow(name)
    if screen:
        whole_cost = {
            o.label: _cpu(lambda o=o: degenerate_whole(template, prefix, o.text(SCREEN_WHOLE)))[0]
            for o in outputs
        }
        stream_cost = {
            o.label: _cpu(
                lambda o=o: degenerate_stream(template, prefix, o.text(SCREEN_STREAM), chunk, budget)
            )[0]
            for o in outputs
        }
        row.whole_label = max(whole_cost, key=whole_cost.__getitem__)
        row.stream_label = max(stream_cost, key=stream_cost.__getitem__)
    else:
        row.whole_label = row.stream_label = outputs[0].label
    by_label = {o.label: o for o in outputs}
    for size in sizes:
        text = by_label[row.whole_label].text(size)
        seconds, outcome = _cpu(lambda text=text: degenerate_whole(template, prefix, text))
        row.whole[size] = (seconds * 1e6 / (len(text) / KB), outcome)
        text = by_label[row.stream_label].text(size)
        seconds, outcome = _cpu(lambda text=text: degenerate_stream(template, prefix, text, chunk, budget))
        row.stream[size] = (seconds * 1e6 / (len(text) / KB), outcome)
    return row


def _growth(cells: dict[int, tuple[float, str]], sizes: Sequence[int]) -> str:
    first, last = cells.get(sizes[0]), cells.get(sizes[-1])
    if first is None or last is None or not first[0] or len(sizes) < 2:
        return "-"
    mark = "" if first[1] == last[1] == "ok" or last[1] not in ("budget", "PatternTimeoutError") else "*"
    return f"{last[0] / first[0]:.2f}{mark}"


def degenerate_table(rows: Sequence[DegenerateRow], sizes: Sequence[int], chunk: int) -> str:
    headers = ["template", "costliest whole"]
    headers += [f"whole µs/KB {fmt_size(s)}" for s in sizes] + [f"{fmt_size(sizes[-1])}/{fmt_size(sizes[0])}"]
    headers += ["costliest streamed"]
    headers += [f"{chunk}-char µs/KB {fmt_size(s)}" for s in sizes] + [
        f"{fmt_size(sizes[-1])}/{fmt_size(sizes[0])}"
    ]
    table = []
    for r in rows:
        line = [r.template, r.whole_label[:40]]
        line += [fmt_num(r.whole[s][0]) + ("" if r.whole[s][1] != "budget" else "*") for s in sizes]
        line += [_growth(r.whole, sizes), r.stream_label[:40]]
        line += [fmt_num(r.stream[s][0]) + ("" if r.stream[s][1] != "budget" else "*") for s in sizes]
        line += [_growth(r.stream, sizes)]
        table.append(line)
    n = len(sizes)
    return format_table(headers, table, align="ll" + "r" * (n + 1) + "l" + "r" * (n + 1))


def degenerate_main(args: argparse.Namespace) -> int:
    if args.no_regex_budget:
        REGEX_BUDGET["regex_budget"] = rt.RegexBudget(per_search=60.0, per_feed=None, per_stream=None)
    sizes = [parse_size(s) for s in args.sizes.split(",")] if args.sizes else list(DEGENERATE_SIZES)
    names = args.templates.split(",") if args.templates else rt.templates.names()
    rows = []
    for name in names:
        print(f"  {name}", file=sys.stderr, flush=True)
        rows.append(measure_degenerate(name, sizes, args.chunk, args.budget))
    print(
        f"bench_families --degenerate: the costliest degenerate output of each library template (screened "
        f"at {fmt_size(SCREEN_WHOLE)} whole, {fmt_size(SCREEN_STREAM)} streamed), CPU µs per KB parsed whole "
        f"(parse_response) and streamed ({args.chunk}-character feeds); the last column of each is the growth "
        f"from {fmt_size(sizes[0])} to {fmt_size(sizes[-1])} (1.00 = linear)"
    )
    print(degenerate_table(rows, sizes, args.chunk))
    worst = max((r.whole[sizes[-1]][0], r.template, "whole") for r in rows)
    worst_stream = max((r.stream[sizes[-1]][0], r.template, "streamed") for r in rows)
    print(
        f"costliest at {fmt_size(sizes[-1])}: {worst[1]} whole ({fmt_num(worst[0])} µs/KB), "
        f"{worst_stream[1]} streamed ({fmt_num(worst_stream[0])} µs/KB)"
    )
    failed = [
        (r.template, s, cell[1])
        for r in rows
        for cells in (r.whole, r.stream)
        for s, cell in cells.items()
        if cell[1] in ("budget", "PatternTimeoutError")
    ]
    for template, size, outcome in failed:
        print(f"NOTE {template} {fmt_size(size)}: {outcome} (* in the table: the run was stopped there)")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump([r.__dict__ for r in rows], f, indent=2, ensure_ascii=False)
    return 0


# --------------------------------------------------------------------------------------------------------
# Stop-token runs (issue 28, item 12): every library template, a model looping on a delimiter or stop token
# --------------------------------------------------------------------------------------------------------

STOP_SIZES = (25 * KB, 100 * KB)
#: The work-count screening: every run at this size and four times it (as the tests do, larger).
SCREEN_STOP = 1 * KB
#: A timed run is repeated (best of) until it has taken this many CPU seconds, at most STOP_REPS times.
STOP_REP_BUDGET, STOP_REPS = 0.3, 5


def work_count_module() -> Any:
    """``tests/work_count.py`` (the work meter the tests use)."""
    degenerate_module()  # puts tests/ on sys.path
    import work_count

    return work_count


@dataclass
class StopCell:
    """One way of parsing one template's costliest stop-token run."""

    label: str
    #: work (characters read by the delimiter matching) at 4 x SCREEN_STOP / at SCREEN_STOP
    work_growth: float
    #: size -> (CPU seconds, outcome)
    times: dict[int, tuple[float, str]] = field(default_factory=dict)

    def ratio(self, sizes: Sequence[int]) -> float | None:
        first, last = self.times.get(sizes[0]), self.times.get(sizes[-1])
        if first is None or last is None or first[0] <= 0:
            return None
        return last[0] / first[0]


@dataclass
class StopRow:
    template: str
    runs: int
    #: way ("whole", "one feed", "N-char") -> the costliest run's cell
    cells: dict[str, StopCell] = field(default_factory=dict)


def _stop_ways(chunk: int, budget: float) -> dict[str, Callable[[Any, str, str], None]]:
    return {
        "whole": degenerate_whole,
        "one feed": lambda t, p, text: degenerate_stream(t, p, text, len(text), budget),
        f"{chunk}-char": lambda t, p, text: degenerate_stream(t, p, text, chunk, budget),
    }


def _best_cpu(run: Callable[[], None]) -> tuple[float, str]:
    best, outcome, spent = float("inf"), "ok", 0.0
    for _ in range(STOP_REPS):
        seconds, outcome = _cpu(run)
        best, spent = min(best, seconds), spent + seconds
        if spent >= STOP_REP_BUDGET or outcome != "ok":
            break
    return best, outcome


def measure_stop_tokens(name: str, sizes: Sequence[int], chunk: int, budget: float) -> StopRow:
    """Screen every stop-token run of the template by work growth, then time the costliest per way."""
    dg, wc = degenerate_module(), work_count_module()
    template = rt.templates.get(name)
    prefix = dg.hostile_inputs.prompts(name)[0]
    outputs = dg.stop_token_runs(name)
    screen = {
        "whole": lambda text: wc.parse_whole(template, prefix, text),
        "one feed": lambda text: wc.parse_streamed(template, prefix, text, len(text)),
        f"{chunk}-char": lambda text: wc.parse_streamed(template, prefix, text, chunk),
    }
    row = StopRow(name, len(outputs))
    for way, run in _stop_ways(chunk, budget).items():
        best: tuple[float, Any] | None = None
        parse = screen[way]
        for o in outputs:
            small = wc.work(template, lambda o=o, parse=parse: parse(o.text(SCREEN_STOP)))
            large = wc.work(template, lambda o=o, parse=parse: parse(o.text(4 * SCREEN_STOP)))
            growth = large / max(1, small)
            if best is None or growth > best[0]:
                best = (growth, o)
        assert best is not None
        cell = StopCell(best[1].label, best[0])
        for size in sizes:
            text = best[1].text(size)
            cell.times[size] = _best_cpu(lambda text=text, run=run: run(template, prefix, text))
        row.cells[way] = cell
    return row


def stop_token_table(rows: Sequence[StopRow], sizes: Sequence[int]) -> str:
    ways = list(rows[0].cells) if rows else []
    big, small = fmt_size(sizes[-1]), fmt_size(sizes[0])
    headers = ["template", "runs"]
    for way in ways:
        headers += [f"{way}: costliest run", "work x", f"ms {small}", f"ms {big}", f"{big}/{small}"]
    table = []
    for r in rows:
        line = [r.template, str(r.runs)]
        for way in ways:
            cell = r.cells[way]
            ratio = cell.ratio(sizes)
            stopped = any(outcome == "budget" for _, outcome in cell.times.values())
            line += [
                cell.label[5:45],  # without "stop "
                f"{cell.work_growth:.1f}",
                fmt_num(cell.times[sizes[0]][0] * 1e3),
                fmt_num(cell.times[sizes[-1]][0] * 1e3) + ("*" if stopped else ""),
                "-" if ratio is None else f"{ratio:.1f}",
            ]
        table.append(line)
    return format_table(headers, table, align="lr" + "lrrrr" * len(ways))


def stop_tokens_main(args: argparse.Namespace) -> int:
    if args.no_regex_budget:
        REGEX_BUDGET["regex_budget"] = rt.RegexBudget(per_search=60.0, per_feed=None, per_stream=None)
    sizes = [parse_size(s) for s in args.sizes.split(",")] if args.sizes else list(STOP_SIZES)
    names = args.templates.split(",") if args.templates else rt.templates.names()
    rows = []
    for name in names:
        print(f"  {name}", file=sys.stderr, flush=True)
        rows.append(measure_stop_tokens(name, sizes, args.chunk, args.budget))
    big, small = fmt_size(sizes[-1]), fmt_size(sizes[0])
    print(
        f"bench_families --degenerate --stop-tokens: a model looping on a delimiter or stop token of each "
        f"library template. Per way (parse_response; one feed then finalize; {args.chunk}-character feeds), "
        f"the run whose delimiter-matching work grows most from {fmt_size(SCREEN_STOP)} to "
        f"{fmt_size(4 * SCREEN_STOP)} ('work x', 4.0 = linear), its CPU ms at {small} and {big} (best of "
        f"up to {STOP_REPS}) and the time ratio {big}/{small} ({sizes[-1] / sizes[0]:.0f} = linear)"
    )
    print(stop_token_table(rows, sizes))
    for way in rows[0].cells if rows else ():
        ranked = sorted(
            ((r.cells[way].ratio(sizes) or 0.0, r.template, r.cells[way].label) for r in rows), reverse=True
        )
        worst = ", ".join(f"{t} x{ratio:.1f}" for ratio, t, _ in ranked[:5])
        print(f"{way}: largest {big}/{small} time ratios: {worst}")
        works = sorted(((r.cells[way].work_growth, r.template) for r in rows), reverse=True)
        print(
            f"{way}: largest work growth ({fmt_size(4 * SCREEN_STOP)}/{fmt_size(SCREEN_STOP)}): "
            + ", ".join(f"{t} x{g:.1f}" for g, t in works[:5])
        )
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(
                [
                    {
                        "template": r.template,
                        "runs": r.runs,
                        "cells": {w: c.__dict__ for w, c in r.cells.items()},
                    }
                    for r in rows
                ],
                f,
                indent=2,
                ensure_ascii=False,
            )
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="2KB and 20KB only")
    parser.add_argument("--sizes", help="comma-separated sizes, e.g. 2k,64k")
    parser.add_argument("--families", default=",".join(FAMILIES), help="comma-separated library families")
    parser.add_argument(
        "--ref-budget", type=float, default=2.0, help="seconds the reference may stream per run"
    )
    parser.add_argument("--no-reference", action="store_true", help="time ours only")
    parser.add_argument("--json", metavar="FILE", help="also write the rows as JSON")
    parser.add_argument(
        "--degenerate", action="store_true", help="the degenerate-output table of every library template"
    )
    parser.add_argument("--templates", help="--degenerate: comma-separated templates (default: all)")
    parser.add_argument(
        "--chunk", type=int, default=DEGENERATE_CHUNK, help="--degenerate: characters per streamed feed"
    )
    parser.add_argument(
        "--budget", type=float, default=60.0, help="--degenerate: CPU seconds one streamed run may take"
    )
    parser.add_argument(
        "--no-regex-budget",
        action="store_true",
        help="--degenerate: time the runs without the per-call and per-stream regex budgets",
    )
    parser.add_argument(
        "--stop-tokens",
        action="store_true",
        help="--degenerate: the stop-token table instead (a model looping on a delimiter or stop token)",
    )
    args = parser.parse_args(argv)
    if args.degenerate and args.stop_tokens:
        return stop_tokens_main(args)
    if args.degenerate:
        return degenerate_main(args)
    sizes = (
        [parse_size(s) for s in args.sizes.split(",")]
        if args.sizes
        else list(QUICK_SIZES if args.quick else DEFAULT_SIZES)
    )
    tools = _tools()
    rows: list[Row] = []
    for name in args.families.split(","):
        family = FAMILIES[name]
        impls = [ours(family, tools)]
        if not args.no_reference:
            ref = reference(family, tools)
            impls.append(ref)
            if ref.error:
                print(f"NOTE: reference cannot run the {name} template: {ref.error}", file=sys.stderr)
        for size in sizes:
            print(f"  {name} {fmt_size(size)}", file=sys.stderr, flush=True)
            rows.append(measure(family, size, impls, args.ref_budget))
    table = []
    growth: dict[str, float] = {}
    for name in args.families.split(","):
        mine = [r for r in rows if r.family == name and r.ours_us]
        if len(mine) >= 2:
            growth[name] = mine[-1].ours_us / mine[0].ours_us  # type: ignore[operator]
    for r in rows:
        ratio = r.ours_us / r.ref_us if r.ours_us and r.ref_us else None
        whole_ratio = r.ours_whole_ms / r.ref_whole_ms if r.ours_whole_ms and r.ref_whole_ms else None
        table.append(
            [
                r.family,
                fmt_size(r.size),
                f"{r.chunks:,}",
                fmt_num(r.ours_us),
                (fmt_num(r.ref_us) + ("*" if r.ref_partial else "")) if r.ref_us else "n/a",
                fmt_ratio(ratio) + ("*" if r.ref_partial and ratio else ""),
                fmt_num(r.ours_whole_ms),
                fmt_num(r.ref_whole_ms) if r.ref_whole_ms else "n/a",
                fmt_ratio(whole_ratio),
                r.same or "–",
            ]
        )
    print(
        f"bench_families: streamed in {CHUNK}-character chunks (µs per chunk) and parsed whole "
        f"(parse_response, ms); best of {MIN_REPS}-{MAX_REPS}"
    )
    print(
        format_table(
            [
                "family",
                "size",
                "chunks",
                "ours µs",
                "ref µs",
                "ours/ref",
                "whole ms",
                "ref ms",
                "ours/ref",
                "same whole-text message",
            ],
            table,
            align="llrrrrrrrl",
        )
    )
    for name, g in growth.items():
        print(f"ours per-chunk growth {fmt_size(sizes[0])} -> {fmt_size(sizes[-1])}, {name}: {g:.2f}x")
    if any(r.ref_partial for r in rows):
        print(f"* the reference stopped at the {args.ref_budget}s budget: mean over the chunks it was fed")
    for r in rows:
        for note in r.notes:
            print(f"NOTE {r.family} {fmt_size(r.size)}: {note}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump([r.__dict__ for r in rows], f, indent=2, ensure_ascii=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
