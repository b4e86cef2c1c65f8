"""Write conformance/cases.json: the differential cases of tests/conformance/cases.py as language-neutral data.

Each case of ``tests/conformance/cases.py`` becomes one JSON object (one per line) with the template, the
prompt prefix, the model output, the tools, what a conforming implementation must give (a message, or an
error named by a language-neutral class), the region events, the chunkings to stream it with, and the
slug of the intended difference from transformers when it is one (docs/differences.md). The token-id
cases of ``tests/conformance/token_cases.py`` follow: their tokenizers (``tokenizer.json`` texts) are in the
header, and each case gives the prompt and the output as token ids. The expected
results are ours; for every case that is not a difference they are also transformers 5.25's
(``tests/test_conformance.py`` checks that). The schema is documented in docs/conformance.md and
``conformance/run.py`` runs the file against an implementation. ``tests/test_conformance_json.py``
checks that the committed file is what this script writes.

Usage::

    python scripts/gen_conformance_json.py            # rewrite conformance/cases.json
    python scripts/gen_conformance_json.py --check    # exit 1 if conformance/cases.json is out of date
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import random
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "conformance" / "cases.json"
sys.path.insert(0, str(ROOT / "tests"))

import response_templates as rt  # noqa: E402
from conformance.cases import CASES, Case, Raises  # noqa: E402
from conformance.token_cases import TOKEN_CASES, TOKENIZERS, TokenCase, ids_of  # noqa: E402
from response_templates.tools import callable_to_schema  # noqa: E402

FORMAT = "response-templates-conformance"
VERSION = 1

#: Language-neutral error classes, most specific first: name -> (our class, what it means).
ERROR_CLASSES: dict[str, tuple[type[Exception], str]] = {
    "anchor_not_found": (rt.AnchorNotFoundError, "a non-empty prefix lacks the template's start anchor"),
    "tool_error": (rt.tools.ToolSpecError, "a tool in tools is malformed or cannot be described"),
    "template_error": (rt.TemplateError, "the response template is invalid (found when it is loaded)"),
    "parse_error": (rt.ParseError, "the model output cannot be read as the template says"),
    "error": (rt.ResponseTemplateError, "any error the implementation raises on bad input"),
}
#: Chunk lengths the seeded random chunkings draw from (the same as tests/test_conformance.py).
CHUNK_LENGTHS = (1, 2, 3, 4, 5, 7, 11, 16, 40)


def error_name(exc_or_class: BaseException | type[BaseException] | str) -> str:
    """The language-neutral name of one of our error classes (or of an exception, or a class name)."""
    if isinstance(exc_or_class, str):
        cls: type[BaseException] = getattr(rt, exc_or_class, None) or getattr(rt.tools, exc_or_class)
    else:
        cls = exc_or_class if isinstance(exc_or_class, type) else type(exc_or_class)
    for name, (ours, _) in ERROR_CLASSES.items():
        if issubclass(cls, ours):
            return name
    raise TypeError(f"{cls.__name__} is not one of our error classes")


def encode(value: Any) -> Any:
    """JSON data for a value: a non-finite float becomes ``{"$float": "nan" | "inf" | "-inf"}``."""
    if isinstance(value, float) and not math.isfinite(value):
        return {"$float": "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")}
    if isinstance(value, dict):
        return {k: encode(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [encode(v) for v in value]
    return value


def _tools(c: Case) -> tuple[list[Any] | None, list[str]]:
    """The case's tools as JSON data (a Python function becomes its JSON schema), and what it requires."""
    if c.tools is None:
        return None, []
    out: list[Any] = []
    for tool in c.tools:
        if callable(tool):
            try:
                out.append(callable_to_schema(tool))
            except rt.ResponseTemplateError:  # a function no schema describes: only a Python run can
                return None, ["python-callables"]
        else:
            out.append(copy.deepcopy(tool))
    return out, []


def _run(c: Case, tools: list[Any] | None) -> tuple[str, Any]:
    prefix: Any = c.prefix  # None in a few cases: passed as the case gives it
    try:
        message: Any = rt.parse_response(c.text, copy.deepcopy(c.template), prefix=prefix, tools=tools)
        return "ok", dict(message)
    except rt.ResponseTemplateError as exc:
        return "raise", exc


def _stream(c: Case, tools: list[Any] | None) -> tuple[list[dict[str, Any]], list[list[str]]]:
    """Region open/close events (without our additive ``captures``) and each region's chunk text."""
    prefix: Any = c.prefix
    parser = rt.ResponseParser(copy.deepcopy(c.template), prefix=prefix, tools=copy.deepcopy(tools))
    events = list(parser.initial_events) + parser.feed(c.text)
    events.extend(parser.finalize()[1])
    return _regions(events)


def _regions(events: list[Any]) -> tuple[list[dict[str, Any]], list[list[str]]]:
    kept: list[dict[str, Any]] = []
    regions: list[list[str]] = []
    for event in events:
        if event["type"] == "region_chunk":
            regions[-1][1] += event["text"]
        elif event["type"] in ("region_open", "region_close"):
            kept.append({k: v for k, v in event.items() if k != "captures"})
            if event["type"] == "region_open":
                regions.append([event["field"], ""])
    return kept, regions


def chunkings(case_id: str, text: str | list[int], unit: str = "char") -> list[dict[str, Any]]:
    """Whole, one character (or id) at a time, and three seeded random chunkings (as split offsets)."""
    out: list[dict[str, Any]] = [{"name": "whole", "splits": []}, {"name": f"1-{unit}", "splits": "every"}]
    for k in range(3):
        rng = random.Random(f"{case_id}/{k}")
        splits, i = [], 0
        while True:
            i += rng.choice(CHUNK_LENGTHS)
            if i >= len(text):
                break
            splits.append(i)
        out.append({"name": f"random-{k}", "splits": splits})
    return out


def case_data(c: Case) -> dict[str, Any]:
    """One case as JSON data."""
    tools, requires = _tools(c)
    data: dict[str, Any] = {
        "id": c.id,
        "category": c.category,
        "template": c.template,
        "prefix": c.prefix,
        "output": c.text,
        "tools": tools,
    }
    if requires:
        data["requires"] = requires
        data["tools_note"] = "Python functions without a JSON schema: " + ", ".join(
            getattr(t, "__name__", "?") for t in c.tools or () if callable(t)
        )
    kind, ours = ("skipped", None) if requires else _run(c, tools)
    if c.difference is not None and isinstance(c.expected, Raises):
        data["expect"] = {"error": error_name(c.expected.error)}
    elif c.difference is not None:
        data["expect"] = {"message": c.expected}
    elif c.error is not None:
        data["expect"] = {"error": error_name(c.error)}
    elif kind == "raise":
        data["expect"] = {"error": error_name(ours if ours is not None else "ResponseTemplateError")}
    else:
        data["expect"] = {"message": ours}
    if c.streams and not requires and kind == "ok" and isinstance(c.text, str):
        events, regions = _stream(c, tools)
        data["events"] = events
        data["region_texts"] = regions
        data["chunkings"] = chunkings(c.id, c.text)
    for key in ("difference", "events_difference", "pending"):
        if getattr(c, key) is not None:
            data[key] = getattr(c, key)
    if c.notes:
        data["notes"] = c.notes
    return encode(data)  # type: ignore[no-any-return]


def _token_parse(c: TokenCase, ids: list[int], prefix: list[int]) -> tuple[str, Any]:
    from response_templates import hf

    tok = _tokenizer(c.tokenizer)
    try:
        message: Any = hf.parse_response(
            tok,
            ids,
            prefix=prefix,
            template=copy.deepcopy(c.template),
            tools=copy.deepcopy(c.tools),
            control_tokens=list(c.control_tokens),
        )
        return "ok", dict(message)
    except rt.ResponseTemplateError as exc:
        return "raise", exc


def _token_stream(
    c: TokenCase, ids: list[int], prefix: list[int]
) -> tuple[list[dict[str, Any]], list[list[str]]]:
    from response_templates import hf

    parser = hf.get_response_parser(
        _tokenizer(c.tokenizer),
        prefix=prefix,
        template=copy.deepcopy(c.template),
        tools=copy.deepcopy(c.tools),
        control_tokens=list(c.control_tokens),
    )
    events = list(parser.initial_events) + parser.feed_tokens(ids)
    events.extend(parser.finalize()[1])
    return _regions(events)


def _tokenizer(name: str) -> Any:
    from tokenizers import Tokenizer

    return Tokenizer.from_str(TOKENIZERS[name])


def token_case_data(c: TokenCase) -> dict[str, Any]:
    """One token-id case as JSON data: the ids, the tokenizer by name, the control tokens it sets."""
    ids, prefix = ids_of(c.tokenizer, c.output), ids_of(c.tokenizer, c.prefix)
    if not ids:  # an empty list is an empty batch to the tokenizer methods
        raise ValueError(f"{c.id}: a token-id case needs at least one output id")
    specials = {t["content"] for t in json.loads(TOKENIZERS[c.tokenizer])["added_tokens"] if t["special"]}
    if not specials <= set(c.control_tokens):
        raise ValueError(f"{c.id}: control_tokens must list every special token ({sorted(specials)})")
    data: dict[str, Any] = {
        "id": c.id,
        "category": c.category,
        "tokenizer": c.tokenizer,
        "control_tokens": list(c.control_tokens),
        "template": c.template,
        "prefix_ids": prefix,
        "token_ids": ids,
        "tools": copy.deepcopy(c.tools),
    }
    kind, ours = _token_parse(c, ids, prefix)
    if c.difference is not None and isinstance(c.expected, Raises):
        data["expect"] = {"error": error_name(c.expected.error)}
    elif c.difference is not None:
        data["expect"] = {"message": c.expected}
    elif c.error is not None:
        data["expect"] = {"error": error_name(c.error)}
    elif kind == "raise":
        data["expect"] = {"error": error_name(ours)}
    else:
        data["expect"] = {"message": ours}
    if kind == "ok" and "message" in data["expect"]:
        data["events"], data["region_texts"] = _token_stream(c, ids, prefix)
        data["chunkings"] = chunkings(c.id, ids, unit="id")
    if c.difference is not None:
        data["difference"] = c.difference
    if c.notes:
        data["notes"] = c.notes
    return encode(data)  # type: ignore[no-any-return]


def build(cases: list[Case] = CASES, token_cases: list[TokenCase] = TOKEN_CASES) -> str:
    """The text of conformance/cases.json: a header, then one case per line."""
    header = {
        "format": FORMAT,
        "version": VERSION,
        "generated_by": "scripts/gen_conformance_json.py from tests/conformance/cases.py",
        "reference": "transformers 5.25.0 (transformers.utils.chat_parsing)",
        "error_classes": {name: meaning for name, (_, meaning) in ERROR_CLASSES.items()},
        # Chunked streaming must give the whole-text result: docs/differences.md, chunking-exact.
        "streaming_difference": "chunking-exact",
        "count": len(cases) + len(token_cases),
        # The tokenizers of the token-id cases, by name: each one's tokenizer.json text.
        "tokenizers": {name: TOKENIZERS[name] for name in sorted({c.tokenizer for c in token_cases})},
    }
    head = json.dumps(header, ensure_ascii=False, indent=1)[:-2]  # without the closing "\n}"
    dump: Callable[[Any], str] = lambda d: json.dumps(d, ensure_ascii=False, allow_nan=False)  # noqa: E731
    lines = ",\n".join(
        [*(dump(case_data(c)) for c in cases), *(dump(token_case_data(c)) for c in token_cases)]
    )
    return f'{head},\n "cases": [\n{lines}\n]\n}}\n'


def main(argv: list[str] | None = None) -> int:
    """Write (or with ``--check`` compare) conformance/cases.json."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the file is out of date")
    args = parser.parse_args(argv)
    text = build()
    if args.check:
        current = OUT.read_text(encoding="utf-8") if OUT.exists() else ""
        if current != text:
            print(f"{OUT.relative_to(ROOT)} is out of date: run python scripts/gen_conformance_json.py")
            return 1
        return 0
    OUT.parent.mkdir(exist_ok=True)
    OUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUT.relative_to(ROOT)}: {len(CASES)} text cases, {len(TOKEN_CASES)} token-id cases")
    return 0


if __name__ == "__main__":
    sys.exit(main())
