"""Parse many generations: JSON lines in, one JSON line out per record (a message or an error).

Run: python examples/parse_batch.py [TEMPLATE.json RECORDS.jsonl]

Each input line is ``{"id": ..., "prompt": ..., "output": ...}``. Each output line keeps the ``id`` and
carries either ``message`` or ``error`` (with the field and offset), so a record that does not parse never
hides the others. Without arguments, a few built-in records are used, one of them broken on purpose.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Iterator
from typing import Any

import response_templates as rt

HERMES_TEMPLATE = {
    "defaults": {"role": "assistant"},
    "start_anchor": "<|im_start|>assistant\n",
    "fields": {
        "tool_calls": {
            "open": "<tool_call>",
            "close": "</tool_call>",
            "repeats": True,
            "content": "json",
            "transform": {"type": "function", "function": "{content}"},
        },
        "content": {"close": "<|im_end|>"},
    },
}

PROMPT = "<|im_start|>user\n{question}<|im_end|>\n<|im_start|>assistant\n"

SAMPLE_RECORDS = [
    {"id": "r1", "prompt": PROMPT.format(question="Hi!"), "output": "Hello! How can I help?<|im_end|>"},
    {
        "id": "r2",
        "prompt": PROMPT.format(question="Time in Oslo?"),
        "output": '<tool_call>\n{"name": "get_time", "arguments": {"city": "Oslo"}}\n</tool_call><|im_end|>',
    },
    {
        "id": "r3",
        "prompt": PROMPT.format(question="Time in Lima?"),
        "output": "<tool_call>\n{'name': 'get_time'}\n</tool_call><|im_end|>",  # not JSON
    },
]


def parse_records(records: Iterable[dict[str, Any]], template: Any) -> Iterator[dict[str, Any]]:
    """One result per record, in order: ``{"id", "message"}`` or ``{"id", "error"}``."""
    compiled = rt.load_template(template)  # validate and compile once, reuse for every record
    for record in records:
        result: dict[str, Any] = {"id": record.get("id")}
        try:
            result["message"] = rt.parse_response(record["output"], compiled, prefix=record.get("prompt", ""))
        except rt.ParseError as exc:
            result["error"] = {"field": exc.field, "offset": exc.offset, "message": str(exc)}
        yield result


def read_jsonl(path: str) -> Iterator[dict[str, Any]]:
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                yield json.loads(line)


def main(argv: list[str]) -> int:
    if len(argv) == 2:
        with open(argv[0], encoding="utf-8") as f:
            template = json.load(f)
        records: Iterable[dict[str, Any]] = read_jsonl(argv[1])
    elif not argv:
        template, records = HERMES_TEMPLATE, SAMPLE_RECORDS
    else:
        print(__doc__, file=sys.stderr)
        return 2

    errors = total = 0
    for result in parse_records(records, template):
        total += 1
        errors += "error" in result
        print(json.dumps(result, ensure_ascii=False))
    print(f"{total} records, {errors} errors", file=sys.stderr)

    if not argv:
        # When every item is known to parse, the list form does the same in one call:
        good = SAMPLE_RECORDS[:2]
        messages = rt.parse_response(
            [r["output"] for r in good], HERMES_TEMPLATE, prefix=[r["prompt"] for r in good]
        )
        assert messages[1]["tool_calls"][0]["function"]["name"] == "get_time"
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
