"""Run the response-template conformance suite (conformance/cases.json) against one implementation.

    python conformance/run.py --impl ours            # response_templates
    python conformance/run.py --impl transformers    # transformers.utils.chat_parsing (5.25 or later)
    python conformance/run.py --impl python:MODULE   # any module with parse_response and ResponseParser

Every case is parsed whole (``parse_response(output, template, prefix=..., tools=...)``) and, where the
case lists chunkings, streamed through ``ResponseParser`` (``feed`` each chunk, then ``finalize``): the
message must equal the expected one (value types included: ``1`` is not ``1.0`` nor ``True``; key order
does not matter), or the call must raise the expected class of error; streamed, the region open/close
events and each region's text must be the expected ones. The score is printed per category and per kind
of case (conformance, intended difference, pending); failures are listed with their ids. The exit
status is 1 when a conformance case fails (with ``--all``: when any case fails).

A token-id case (``token_ids``) is parsed from ids: the runner builds the case's tokenizer from its
``tokenizer.json`` text (the header's ``tokenizers``), makes the case's ``control_tokens`` its control
tokens, and parses the ids whole and streamed in the case's chunkings of ids. ``ours`` does it through
``response_templates.hf`` on a ``tokenizers.Tokenizer``; ``transformers`` (5.25 or later) and
``python:MODULE`` through ``parse_response(ids, template, prefix=ids, tools=..., tokenizer=tok)`` and
``ResponseParser(template, prefix=ids, tools=..., tokenizer=tok).feed(ids)``, with ``tok`` a
``PreTrainedTokenizerFast`` whose ``chat_control_tokens`` are the case's. An implementation that cannot
take ids (no ``tokenizers`` package, or an older transformers) skips these cases and lists them, as it
does a case of an input this runner has no check for.

Text cases need nothing but the standard library and the implementation under test; token-id cases also
need ``tokenizers`` (and ``transformers`` for the reference's interface). The case schema is documented
in docs/conformance.md.
"""

from __future__ import annotations

import argparse
import copy
import functools
import importlib
import inspect
import itertools
import json
import math
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
#: What a case is, by the keys it carries.
KINDS = ("conformance", "difference", "pending")
#: What a case feeds the parser, by the keys it carries: ``text`` (``output``, a string) or ``token_ids``
#: (``token_ids`` with the tokenizer, by name, that reads them). A case of an input this runner has no check
#: for, or that the implementation cannot take, is skipped and listed, never run as something else.
INPUTS = ("text", "token_ids")


def _decode(obj: dict[str, Any]) -> Any:
    if obj.keys() == {"$float"}:
        return {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}[obj["$float"]]
    return obj


def load(path: Path) -> dict[str, Any]:
    """The suite, with ``{"$float": ...}`` objects read back as floats."""
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"), object_hook=_decode)
    if data.get("format") != "response-templates-conformance":
        raise SystemExit(f"{path}: not a response-templates conformance file")
    return data


def same(a: Any, b: Any) -> bool:
    """Equal with the same JSON types (``1``, ``1.0`` and ``True`` differ; NaN equals NaN)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if type(a) is not type(b):
        return False
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    return bool(a == b)


# ----------------------------------------------------------------------------------- implementations


@dataclass
class IdReader:
    """How an implementation takes token ids: a tokenizer made for a case, and the two entry points on it."""

    #: (tokenizer.json text, control tokens) -> the tokenizer object the entry points take.
    tokenizer: Callable[[str, tuple[str, ...]], Any]
    #: (tokenizer, ids, template, prefix ids, tools) -> the message.
    parse: Callable[[Any, list[int], Any, list[int], Any], Any]
    #: (tokenizer, template, prefix ids, tools) -> a parser: ``initial_events``, ``feed(ids) -> events``,
    #: ``finalize() -> (message, events)``.
    parser: Callable[[Any, Any, list[int], Any], Any]


@dataclass
class Implementation:
    """An implementation under test: the two entry points, and how its errors map to the suite's."""

    name: str
    parse_response: Callable[..., Any]
    parser_class: Callable[..., Any]
    #: Exception -> the suite's error class it stands for, or None when it is a crash (not an error).
    classify: Callable[[BaseException], set[str] | None]
    #: How it takes token ids (None: it does not, and the token-id cases are skipped).
    ids: IdReader | None = None

    @property
    def inputs(self) -> frozenset[str]:
        """The inputs (``INPUTS``) it takes."""
        return frozenset({"text", "token_ids"} if self.ids is not None else {"text"})


class _FeedTokens:
    """Our token parser with the reference's streaming interface (``feed`` takes ids)."""

    def __init__(self, parser: Any) -> None:
        self._parser = parser
        self.initial_events = list(parser.initial_events)

    def feed(self, ids: list[int]) -> Any:
        return self._parser.feed_tokens(ids)

    def finalize(self) -> Any:
        return self._parser.finalize()


def _ours_ids() -> IdReader | None:
    """``response_templates.hf`` on a bare ``tokenizers.Tokenizer`` (None without ``tokenizers``)."""
    try:
        from tokenizers import Tokenizer
    except ImportError:
        return None
    from response_templates import hf

    @functools.lru_cache(maxsize=16)
    def tokenizer(text: str, controls: tuple[str, ...]) -> Any:
        return Tokenizer.from_str(text), list(controls)

    def parse(tok: Any, ids: list[int], template: Any, prefix: list[int], tools: Any) -> Any:
        raw, controls = tok
        return hf.parse_response(
            raw, ids, prefix=prefix, template=template, tools=tools, control_tokens=controls
        )

    def parser(tok: Any, template: Any, prefix: list[int], tools: Any) -> Any:
        raw, controls = tok
        return _FeedTokens(
            hf.get_response_parser(
                raw, prefix=prefix, template=template, tools=tools, control_tokens=controls
            )
        )

    return IdReader(tokenizer, parse, parser)


def _reference_ids(module: Any) -> IdReader | None:
    """transformers 5.25's interface: ``tokenizer=`` on both entry points (None when the module lacks it,
    or ``transformers``/``tokenizers`` is not installed)."""
    try:
        takes = "tokenizer" in inspect.signature(module.parse_response).parameters
        takes = takes and "tokenizer" in inspect.signature(module.ResponseParser).parameters
    except (TypeError, ValueError):
        takes = False
    if not takes:
        return None
    try:
        from tokenizers import Tokenizer
        from transformers import PreTrainedTokenizerFast
    except ImportError:
        return None

    @functools.lru_cache(maxsize=16)
    def tokenizer(text: str, controls: tuple[str, ...]) -> Any:
        tok = PreTrainedTokenizerFast(tokenizer_object=Tokenizer.from_str(text))
        tok.chat_control_tokens = list(controls)
        return tok

    def parse(tok: Any, ids: list[int], template: Any, prefix: list[int], tools: Any) -> Any:
        return module.parse_response(ids, template, prefix=prefix, tools=tools, tokenizer=tok)

    def parser(tok: Any, template: Any, prefix: list[int], tools: Any) -> Any:
        return module.ResponseParser(template, prefix=prefix, tools=tools, tokenizer=tok)

    return IdReader(tokenizer, parse, parser)


def _ours() -> Implementation:
    import response_templates as rt

    classes = {
        "anchor_not_found": rt.AnchorNotFoundError,
        "tool_error": rt.tools.ToolSpecError,
        "template_error": rt.TemplateError,
        "parse_error": rt.ParseError,
        "error": rt.ResponseTemplateError,
    }

    def classify(exc: BaseException) -> set[str] | None:
        if not isinstance(exc, rt.ResponseTemplateError):
            return None
        return {name for name, cls in classes.items() if isinstance(exc, cls)}

    return Implementation(
        f"response_templates {rt.__version__}", rt.parse_response, rt.ResponseParser, classify, _ours_ids()
    )


def _python(module_name: str, label: str) -> Implementation:
    """A module with the reference's interface; its errors are ``ValueError`` (no finer classes)."""
    module = importlib.import_module(module_name)
    every = {"anchor_not_found", "tool_error", "template_error", "parse_error", "error"}

    def classify(exc: BaseException) -> set[str] | None:
        return every if isinstance(exc, ValueError) else None

    return Implementation(
        label, module.parse_response, module.ResponseParser, classify, _reference_ids(module)
    )


def implementation(spec: str) -> Implementation:
    """``ours``, ``transformers`` or ``python:MODULE``."""
    if spec == "ours":
        return _ours()
    if spec == "transformers":
        import logging

        import transformers

        for name in ("transformers", "transformers.utils.chat_parsing"):
            logging.getLogger(name).setLevel(logging.ERROR)
        return _python("transformers.utils.chat_parsing", f"transformers {transformers.__version__}")
    if spec.startswith("python:"):
        return _python(spec.removeprefix("python:"), spec.removeprefix("python:"))
    raise SystemExit(f"unknown implementation {spec!r}: use ours, transformers or python:MODULE")


# --------------------------------------------------------------------------------------------- checks


def _short(value: Any, limit: int = 160) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _outcome(impl: Implementation, call: Callable[[], Any]) -> tuple[str, Any]:
    try:
        return "ok", call()
    except Exception as exc:  # the implementation's errors are the subject of the test
        return "raise", exc


def _expect(impl: Implementation, case: dict[str, Any], kind: str, got: Any, where: str) -> str | None:
    """Why a result (``kind`` ok/raise, ``got``) is not what the case expects; None if it is."""
    expect = case["expect"]
    if "error" in expect:
        if kind == "ok":
            return f"{where}: expected {expect['error']}, got {_short(got)}"
        classes = impl.classify(got)
        if classes is None:
            return (
                f"{where}: expected {expect['error']}, crashed with {type(got).__name__}: {_short(str(got))}"
            )
        if expect["error"] not in classes:
            return f"{where}: expected {expect['error']}, raised {type(got).__name__}: {_short(str(got))}"
        return None
    if kind == "raise":
        return f"{where}: raised {type(got).__name__}: {_short(str(got))}"
    if not same(dict(got), expect["message"]):
        return f"{where}: message {_short(dict(got))}, expected {_short(expect['message'])}"
    return None


def _chunks(seq: Any, splits: Any) -> list[Any]:
    """The output (a string, or a list of ids) cut at the offsets ``splits`` (``"every"``: into units)."""
    if splits == "every":
        return [seq[i : i + 1] for i in range(len(seq))]
    bounds = [0, *splits, len(seq)]
    return [seq[a:b] for a, b in itertools.pairwise(bounds) if b > a]


def _stream(make: Callable[[], Any], chunks: list[Any]) -> tuple[Any, list[Any], list[Any]]:
    """Feed the chunks to the parser ``make`` returns, finalize: the message, the open/close events
    (without ``captures``) and each region's concatenated text."""
    parser = make()
    events = list(getattr(parser, "initial_events", []))
    for chunk in chunks:
        events.extend(parser.feed(chunk))
    message, final = parser.finalize()
    events.extend(final)
    kept: list[Any] = []
    regions: list[Any] = []
    for event in events:
        if event["type"] == "region_chunk":
            if regions:
                regions[-1][1] += event["text"]
        elif event["type"] in ("region_open", "region_close"):
            kept.append({k: v for k, v in event.items() if k != "captures"})
            if event["type"] == "region_open":
                regions.append([event["field"], ""])
    return message, kept, regions


def _score(
    impl: Implementation,
    case: dict[str, Any],
    whole: Callable[[], Any],
    make: Callable[[], Any],
    output: Any,
) -> list[str]:
    """Every way the implementation fails the case: ``whole`` parses it in one call, ``make`` builds a
    streaming parser, ``output`` (text or ids) is cut by each chunking."""
    kind, got = _outcome(impl, whole)
    problems = [p for p in [_expect(impl, case, kind, got, "parse_response")] if p]
    for chunking in case.get("chunkings", ()):
        where = f"stream {chunking['name']}"
        chunks = _chunks(output, chunking["splits"])
        kind, got = _outcome(impl, functools.partial(_stream, make, chunks))
        if kind == "raise":
            problems.append(_expect(impl, case, kind, got, where) or where)
            continue
        message, events, regions = got
        if (problem := _expect(impl, case, "ok", message, where)) is not None:
            problems.append(problem)
        if "events" in case and not same(events, case["events"]):
            problems.append(f"{where}: events {_short(events)}, expected {_short(case['events'])}")
        if "region_texts" in case and not same(regions, case["region_texts"]):
            problems.append(
                f"{where}: region texts {_short(regions)}, expected {_short(case['region_texts'])}"
            )
    return problems


def check(impl: Implementation, case: dict[str, Any], tokenizers: dict[str, str] | None = None) -> list[str]:
    """Every way the implementation fails a text case (empty: it passes)."""
    template, tools = case["template"], case["tools"]
    return _score(
        impl,
        case,
        lambda: impl.parse_response(
            case["output"], copy.deepcopy(template), prefix=case["prefix"], tools=copy.deepcopy(tools)
        ),
        lambda: impl.parser_class(copy.deepcopy(template), prefix=case["prefix"], tools=copy.deepcopy(tools)),
        case["output"],
    )


def check_ids(
    impl: Implementation, case: dict[str, Any], tokenizers: dict[str, str] | None = None
) -> list[str]:
    """Every way the implementation fails a token-id case (empty: it passes)."""
    reader = impl.ids
    if reader is None:  # run() skips these
        raise ValueError(f"{impl.name} does not take token ids")
    name = case["tokenizer"]
    if name not in (tokenizers or {}):
        return [f"parse_response: the suite has no tokenizer {name!r}"]
    tok = reader.tokenizer((tokenizers or {})[name], tuple(case["control_tokens"]))
    template, tools, prefix, ids = case["template"], case["tools"], case["prefix_ids"], case["token_ids"]
    return _score(
        impl,
        case,
        lambda: reader.parse(tok, list(ids), copy.deepcopy(template), list(prefix), copy.deepcopy(tools)),
        lambda: reader.parser(tok, copy.deepcopy(template), list(prefix), copy.deepcopy(tools)),
        list(ids),
    )


#: The checks a case is scored on, and how to tell a problem of each kind.
CHECKS: dict[str, Callable[[str], bool]] = {
    "parse_response": lambda p: p.startswith("parse_response:"),
    "streamed message": lambda p: (
        p.startswith("stream ") and ": events " not in p and ": region texts " not in p
    ),
    "events": lambda p: ": events " in p,
    "region texts": lambda p: ": region texts " in p,
}


def input_of(case: dict[str, Any]) -> str:
    """What the case feeds the parser: ``token_ids``, ``text``, or ``unknown`` (neither key)."""
    if "token_ids" in case:
        return "token_ids"
    return "text" if isinstance(case.get("output"), str) else "unknown"


#: The check for each input this runner knows (a case of another input is skipped); it is given the
#: suite's tokenizers (name -> tokenizer.json text).
CHECKERS: dict[str, Callable[[Implementation, dict[str, Any], dict[str, str] | None], list[str]]] = {
    "text": check,
    "token_ids": check_ids,
}


def kind_of(case: dict[str, Any]) -> str:
    """``difference`` (an intended difference from transformers), ``pending``, or ``conformance``."""
    if "difference" in case or "events_difference" in case:
        return "difference"
    return "pending" if "pending" in case else "conformance"


# -------------------------------------------------------------------------------------------- the run


@dataclass
class Score:
    """Passed and failed counts, by category and by kind, and the failures."""

    by_category: dict[str, list[int]] = field(default_factory=dict)
    by_kind: dict[str, list[int]] = field(default_factory=dict)
    #: Per check (CHECKS), over the cases it applies to.
    by_check: dict[str, list[int]] = field(default_factory=dict)
    #: Per input (``INPUTS``): text cases and token-id cases.
    by_input: dict[str, list[int]] = field(default_factory=dict)
    failures: list[tuple[str, str, list[str]]] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)

    #: The difference slug that failures of chunked streaming only are labelled with.
    streaming_label: str = ""

    def add(self, case: dict[str, Any], problems: list[str]) -> None:
        """Count one case."""
        tables = ((self.by_category, case["category"]), (self.by_kind, kind_of(case)))
        for table, key in (*tables, (self.by_input, input_of(case))):
            table.setdefault(key, [0, 0])[bool(problems)] += 1
        if kind_of(case) == "conformance":
            applies = {"parse_response": True, "streamed message": "chunkings" in case}
            applies["events"], applies["region texts"] = "events" in case, "region_texts" in case
            for name, is_kind in CHECKS.items():
                if applies[name]:
                    self.by_check.setdefault(name, [0, 0])[any(map(is_kind, problems))] += 1
        if problems:
            label = case.get("difference") or case.get("events_difference") or case.get("pending") or ""
            if not label and all(
                p.startswith("stream ") and not p.startswith("stream whole") for p in problems
            ):
                label = (
                    f"{self.streaming_label}: only chunked streaming fails" if self.streaming_label else ""
                )
            self.failures.append((case["id"], label, problems))

    def failed(self, kinds: tuple[str, ...]) -> int:
        """Failed cases of these kinds."""
        return sum(self.by_kind.get(k, [0, 0])[1] for k in kinds)


def run(
    impl: Implementation,
    cases: list[dict[str, Any]],
    supports: set[str],
    *,
    streaming_label: str = "",
    tokenizers: dict[str, str] | None = None,
) -> Score:
    """Check every case the implementation can run (``tokenizers``: the suite's, for token-id cases)."""
    score = Score(streaming_label=streaming_label)
    for case in cases:
        case_id = str(case.get("id", "?"))
        given = input_of(case)
        checker = CHECKERS.get(given)
        if checker is None:
            score.skipped.append((case_id, f"input {given}: this runner has no check for it"))
            continue
        if given not in impl.inputs:
            score.skipped.append((case_id, f"input {given}: {impl.name} does not take it"))
            continue
        missing = [r for r in case.get("requires", ()) if r not in supports]
        if missing:
            score.skipped.append((case_id, ", ".join(missing)))
            continue
        score.add(case, checker(impl, case, tokenizers))
    return score


def report(impl: Implementation, score: Score, out: Any, *, max_failures: int) -> None:
    """Print the score tables and the failures."""
    total = sum(p + f for p, f in score.by_kind.values())
    passed = sum(p for p, _ in score.by_kind.values())
    out.write(f"implementation: {impl.name}\ncases run: {total}, passed: {passed}, failed: {total - passed}")
    out.write(f", skipped: {len(score.skipped)}\n\n")
    out.write(f"{'category':14} {'passed':>7} {'failed':>7}\n")
    for name, (p, f) in sorted(score.by_category.items()):
        out.write(f"{name:14} {p:7} {f:7}\n")
    out.write(f"\n{'kind':14} {'passed':>7} {'failed':>7}\n")
    for name in KINDS:
        p, f = score.by_kind.get(name, [0, 0])
        out.write(f"{name:14} {p:7} {f:7}\n")
    out.write(f"\n{'input':14} {'passed':>7} {'failed':>7}\n")
    for name in INPUTS:
        p, f = score.by_input.get(name, [0, 0])
        out.write(f"{name:14} {p:7} {f:7}\n")
    out.write(f"\n{'check (conformance cases)':27} {'passed':>7} {'failed':>7}\n")
    for name, (p, f) in score.by_check.items():
        out.write(f"{name:27} {p:7} {f:7}\n")
    if score.skipped:
        out.write("\nskipped (needs what this runner cannot give):\n")
        for case_id, why in score.skipped:
            out.write(f"  {case_id}: {why}\n")
    if score.failures:
        out.write("\nfailures:\n")
        for case_id, label, problems in score.failures[:max_failures]:
            out.write(f"  {case_id}" + (f" [{label}]" if label else "") + "\n")
            for problem in problems[:3]:
                out.write(f"      {problem}\n")
        if len(score.failures) > max_failures:
            out.write(f"  ... and {len(score.failures) - max_failures} more\n")


def main(argv: list[str] | None = None) -> int:
    """Command line: run the suite, print the score, exit 1 on a failed conformance case."""
    parser = argparse.ArgumentParser(description="Run the response-template conformance suite.")
    parser.add_argument("--impl", default="ours", help="ours | transformers | python:MODULE (default ours)")
    parser.add_argument("--cases", type=Path, default=HERE / "cases.json", help="the suite file")
    parser.add_argument("--category", action="append", help="only cases of this category (repeatable)")
    parser.add_argument(
        "--whole-only", action="store_true", help="stream each output in one chunk only (no chunkings)"
    )
    parser.add_argument("--all", action="store_true", help="exit 1 when any case fails, differences too")
    parser.add_argument("--max-failures", type=int, default=200, help="failures listed (default 200)")
    parser.add_argument("--json", action="store_true", help="print the score as JSON")
    args = parser.parse_args(argv)
    impl = implementation(args.impl)
    suite = load(args.cases)
    cases = suite["cases"]
    if args.category:
        cases = [c for c in cases if c.get("category") in args.category]
    if args.whole_only:
        cases = [
            {**c, "chunkings": [k for k in c.get("chunkings", ()) if k["name"] == "whole"]} for c in cases
        ]
    score = run(
        impl,
        cases,
        supports=set(),
        streaming_label=suite.get("streaming_difference", ""),
        tokenizers=suite.get("tokenizers", {}),
    )
    if args.json:
        json.dump(
            {
                "implementation": impl.name,
                "by_category": score.by_category,
                "by_kind": score.by_kind,
                "by_check": score.by_check,
                "by_input": score.by_input,
                "failures": [{"id": i, "label": lab, "problems": p} for i, lab, p in score.failures],
                "skipped": [{"id": i, "requires": r} for i, r in score.skipped],
            },
            sys.stdout,
            indent=1,
        )
        sys.stdout.write("\n")
    else:
        report(impl, score, sys.stdout, max_failures=args.max_failures)
    return int(score.failed(KINDS if args.all else ("conformance",)) > 0)


if __name__ == "__main__":
    sys.exit(main())
