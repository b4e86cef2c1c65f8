"""Render a Qwen3 generation the way a chat UI would, while it streams.

Run: python examples/stream_qwen3.py [--delay SECONDS]

Reasoning and answer text are shown as their chunks arrive; a tool call is shown once its region closes,
because its chunks are raw JSON (``dirty``) and only the closing event carries the parsed, typed call.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Iterator
from typing import ClassVar

import response_templates as rt

TEMPLATE = {
    "defaults": {"role": "assistant"},
    "start_anchor": "<|im_start|>assistant\n",
    "fields": {
        "reasoning_content": {"open": "<think>", "close": "</think>"},
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

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "convert_currency",
            "description": "Convert an amount of money.",
            "parameters": {
                "type": "object",
                "properties": {
                    "amount": {"type": "number"},
                    "source": {"type": "string"},
                    "target": {"type": "string"},
                },
            },
        },
    }
]

PROMPT = "<|im_start|>user\nHow much is 250 euros in yen?<|im_end|>\n<|im_start|>assistant\n"

OUTPUT = (
    "<think>\nThe user wants 250 EUR converted to JPY. I'll use the conversion tool.\n</think>\n\n"
    "Let me convert that for you.\n"
    '<tool_call>\n{"name": "convert_currency", "arguments": {"amount": "250", "source": "EUR", '
    '"target": "JPY"}}\n</tool_call><|im_end|>'
)


def token_stream(text: str, delay: float) -> Iterator[str]:
    """Pretend to be a model server: pieces of 1 to 4 characters."""
    sizes = [3, 1, 4, 1, 2, 4, 2, 3]
    pos = 0
    for i in range(len(text)):
        if pos >= len(text):
            return
        piece = text[pos : pos + sizes[i % len(sizes)]]
        pos += len(piece)
        if delay:
            time.sleep(delay)
        yield piece


class ChatView:
    """Prints events as a chat UI would show them."""

    HEADINGS: ClassVar[dict[str, str]] = {"reasoning_content": "thinking: ", "content": "answer:   "}

    def __init__(self) -> None:
        self.current: str | None = None  # the text region being printed
        self.blank = ""  # trailing whitespace not printed yet: it is dropped if the region ends here

    def show(self, event: dict) -> None:
        kind, field = event["type"], event["field"]
        if kind == "region_chunk" and not event["dirty"]:
            # Text chunks are the final value up to stripping, so hold back leading and trailing blanks.
            text = self.blank + event["text"]
            body = text.rstrip()
            self.blank = text[len(body) :]
            if field != self.current:
                body = body.lstrip()
                if not body:
                    self.blank = ""
                    return
                print(self.HEADINGS.get(field, f"{field}: "), end="")
                self.current = field
            print(body, end="", flush=True)
        elif kind == "region_close":
            if field == self.current:
                print()
                self.current, self.blank = None, ""
            if field == "tool_calls":
                function = event["value"]["function"]
                print(f"tool call: {function['name']}({json.dumps(function['arguments'])})")


def main() -> int:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--delay", type=float, default=0.0, help="seconds to wait between chunks")
    delay = options.parse_args().delay

    view = ChatView()
    parser = rt.ResponseParser(TEMPLATE, prefix=PROMPT, tools=TOOLS)
    for event in parser.initial_events:
        view.show(event)
    for chunk in token_stream(OUTPUT, delay):
        for event in parser.feed(chunk):
            view.show(event)
    message, final_events = parser.finalize()
    for event in final_events:
        view.show(event)

    print("\nmessage:", json.dumps(message, indent=2))
    # "amount" was written as the string "250"; the schema says number, so it arrives as 250.
    assert message["tool_calls"][0]["function"]["arguments"]["amount"] == 250
    return 0


if __name__ == "__main__":
    sys.exit(main())
