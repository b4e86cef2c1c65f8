"""Parse many generations: JSON lines in, one JSON line out per record (a message or an error).

Run: python examples/parse_batch.py [--model MODEL_ID | --template TEMPLATE.json] [-j N] RECORDS.jsonl
     python examples/parse_batch.py            # a few built-in records, one of each kind of failure

Each input line is ``{"id": ..., "prompt": ..., "output": ...}`` (``"tools"`` optional). Each output line
keeps the ``index`` and ``id`` and carries either ``message`` or ``error`` (its type, message and, for a
parse error, the field and offset), in input order. A malformed record (a missing key, a null output, a
line that is not JSON, output that does not fit the template) gets an error line; the run goes on.
``-j N`` parses on N processes. docs/batch.md has the rest, including the same from the command line
(``response-templates parse --jsonl``, with progress and ``--resume``).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable, Iterator
from typing import Any

import response_templates as rt

PROMPT = "<|im_start|>user\n{question}<|im_end|>\n<|im_start|>assistant\n"

SAMPLE_RECORDS: list[Any] = [
    {"id": "r1", "prompt": PROMPT.format(question="Hi!"), "output": "Hello! How can I help?<|im_end|>"},
    {
        "id": "r2",
        "prompt": PROMPT.format(question="Time in Oslo?"),
        "output": '<think>\nUse the tool.\n</think>\n\n<tool_call>\n{"name": "get_time", "arguments": '
        '{"city": "Oslo"}}\n</tool_call><|im_end|>',
    },
    {
        "id": "r3",
        "prompt": PROMPT.format(question="Time in Lima?"),
        "output": "<tool_call>\n{'name': 'get_time'}\n</tool_call><|im_end|>",  # not JSON
    },
    {"id": "r4", "prompt": PROMPT.format(question="Time in Quito?"), "output": None},  # failed upstream
    {"id": "r5", "prompt": PROMPT.format(question="Time in Perth?")},  # no output at all
]


def read_jsonl(path: str) -> Iterator[Any]:
    """The records of a JSON-lines file, read as they are needed; a line that is not JSON is passed on
    as its text wrapped in a record without an output, so that it gets an error line of its own."""
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                yield json.loads(line)
            except ValueError:
                yield {"id": f"line {number}", "unreadable": line[:100]}


def parse_records(records: Iterable[Any], template: Any, workers: int = 1) -> Iterator[dict[str, Any]]:
    """One JSON-ready result per record, in input order (see ``rt.BatchResult.to_dict``)."""
    kwargs: dict[str, Any] = {"model": template} if isinstance(template, str) else {"template": template}
    for result in rt.parse_batch(records, workers=workers, **kwargs):
        yield result.to_dict()


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("records", nargs="?", help="a JSON-lines file (default: built-in samples)")
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--model", default="Qwen/Qwen3-8B", help="a model id of the built-in library")
    which.add_argument("--template", help="a response template file")
    parser.add_argument("-j", "--jobs", type=int, default=1, help="processes to parse on (0: every core)")
    args = parser.parse_args(argv)

    template: Any = args.model
    if args.template:
        with open(args.template, encoding="utf-8") as f:
            template = json.load(f)
    records: Iterable[Any] = read_jsonl(args.records) if args.records else SAMPLE_RECORDS

    total = failed = 0
    for line in parse_records(records, template, workers=args.jobs):
        total += 1
        failed += "error" in line
        print(json.dumps(line, ensure_ascii=False))
    print(f"{total} records, {failed} failed", file=sys.stderr)

    if not args.records:
        assert (total, failed) == (5, 3)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
