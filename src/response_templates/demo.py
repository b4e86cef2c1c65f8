"""The demo behind ``make demo`` / ``response-templates demo``: the library's main job in miniature.

A real-format Qwen3 generation (reasoning in ``<think>``, a sentence, two parallel ``<tool_call>`` blocks,
``<|im_end|>``) is cut into token-sized chunks and streamed through :class:`ResponseParser`. Every event is
printed as it arrives, then the final message, then a check that streaming gave exactly what parsing the
whole text gives. The bundled files live in ``response_templates/data/`` and work with
``response-templates parse`` too.
"""

from __future__ import annotations

import json
import os
import random
import shlex
import shutil
import sys
import sysconfig
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from .events import ParserEvent
from .language import ResponseTemplate, load_template
from .parser import ResponseParser
from .whole import parse_response

if TYPE_CHECKING:
    if sys.version_info >= (3, 11):
        from importlib.resources.abc import Traversable
    else:
        from importlib.abc import Traversable

__all__ = ["DemoData", "load_demo_data", "run", "token_chunks", "try_it_lines"]

TEMPLATE_FILE = "demo_qwen3_template.json"
PROMPT_FILE = "demo_qwen3_prompt.txt"
OUTPUT_FILE = "demo_qwen3_output.txt"
TOOLS_FILE = "demo_tools.json"

WIDTH = 100  # fixed, so the output is the same on every terminal
CHUNK_SEED = 7


@dataclass(frozen=True)
class DemoData:
    """The bundled demo inputs: a response template, a rendered prompt, a generation and its tools."""

    template: dict[str, Any]
    prompt: str
    output: str
    tools: list[dict[str, Any]]
    paths: dict[str, str]


def _data_file(name: str) -> Traversable:
    return resources.files("response_templates") / "data" / name


def load_demo_data() -> DemoData:
    """Read the bundled demo files (text exactly as stored: no newline translation)."""

    def read(name: str) -> str:
        return _data_file(name).read_bytes().decode("utf-8")

    paths = {}
    for key, name in (("template", TEMPLATE_FILE), ("prompt", PROMPT_FILE), ("output", OUTPUT_FILE)):
        paths[key] = str(_data_file(name))
    paths["tools"] = str(_data_file(TOOLS_FILE))
    return DemoData(
        template=json.loads(read(TEMPLATE_FILE)),
        prompt=read(PROMPT_FILE),
        output=read(OUTPUT_FILE),
        tools=json.loads(read(TOOLS_FILE)),
        paths=paths,
    )


def token_chunks(text: str, seed: int = CHUNK_SEED, low: int = 1, high: int = 6) -> Iterator[str]:
    """Cut ``text`` into pieces of ``low``..``high`` characters, the same pieces for the same seed.

    Real tokenizers give pieces of a few characters; unlike a tokenizer this ignores word and delimiter
    boundaries, so delimiters such as ``</think>`` end up split across chunks -- the hard case.
    """
    rng = random.Random(seed)
    pos = 0
    while pos < len(text):
        size = rng.randint(low, high)
        yield text[pos : pos + size]
        pos += size


# ------------------------------------------------------------------------------------------- rendering


class _Style:
    def __init__(self, color: bool) -> None:
        self.color = color

    def _wrap(self, code: str, text: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self.color else text

    def bold(self, text: str) -> str:
        return self._wrap("1", text)

    def dim(self, text: str) -> str:
        return self._wrap("2", text)

    def field(self, name: str, padded: str) -> str:
        code = {"reasoning_content": "35", "content": "32", "tool_calls": "36"}.get(name, "33")
        return self._wrap(code, padded)

    def ok(self, text: str) -> str:
        return self._wrap("32;1", text)

    def bad(self, text: str) -> str:
        return self._wrap("31;1", text)


def _quoted(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def _wrap(text: str, width: int) -> list[str]:
    """Break ``text`` into lines of at most ``width`` characters, at spaces where possible."""
    lines = []
    while len(text) > width:
        cut = text.rfind(" ", 0, width + 1)
        if cut <= 0:
            cut = width
        lines.append(text[:cut].rstrip(" "))
        text = text[cut:].lstrip(" ")
    lines.append(text)
    return lines


class _EventPrinter:
    """Prints events compactly: open/close on their own lines, consecutive chunks run together."""

    def __init__(self, out: TextIO, style: _Style, name_width: int) -> None:
        self.out = out
        self.style = style
        self.name_width = name_width
        self.line = ""  # the chunk line being built (plain text), for wrapping
        self.line_field: str | None = None

    def _label(self, name: str) -> str:
        return "  " + self.style.field(name, name.ljust(self.name_width)) + "  "

    def _end_line(self) -> None:
        if self.line_field is not None:
            self.out.write("\n")
            self.line_field = None
            self.line = ""

    def event(self, event: ParserEvent) -> None:
        name = event["field"]
        if event["type"] == "region_chunk":
            piece = ("~" if event["dirty"] else "+") + _quoted(event["text"])
            indent = 2 + self.name_width + 2
            if self.line_field != name:
                self._end_line()
                self.out.write(self._label(name))
                self.line_field, self.line = name, ""
            elif indent + len(self.line) + 1 + len(piece) > WIDTH:
                self.out.write("\n" + " " * indent)
                self.line = ""
            elif self.line:
                self.out.write(" ")
                self.line += " "
            self.out.write(self.style.dim(piece))
            self.line += piece
            return
        self._end_line()
        if event["type"] == "region_open":
            self.out.write(self._label(name) + "open\n")
        elif event["type"] == "region_close":
            value = json.dumps(event["value"], ensure_ascii=False)
            indent = 2 + self.name_width + 2 + len("close ")
            lines = _wrap(value, WIDTH - indent)
            self.out.write(self._label(name) + "close " + self.style.bold(lines[0]) + "\n")
            for line in lines[1:]:
                self.out.write(" " * indent + self.style.bold(line) + "\n")

    def done(self) -> None:
        self._end_line()


def _display_path(path: str) -> str:
    try:
        rel = os.path.relpath(path)
    except ValueError:  # another drive on Windows
        return path
    return path if rel.startswith("..") else rel


def _command() -> str:
    """How to run this installation's command line from here: ``response-templates`` when the shell
    finds this environment's script, else the script's path, else this interpreter with ``-m``."""
    scripts = sysconfig.get_path("scripts")
    script = Path(scripts, "response-templates.exe" if os.name == "nt" else "response-templates")
    found = shutil.which("response-templates")
    if found is not None and script.exists() and Path(found).resolve() == script.resolve():
        return "response-templates"
    if script.exists():
        return shlex.quote(_display_path(str(script)))
    return f"{shlex.quote(_display_path(sys.executable))} -m response_templates"


def try_it_lines(folder: Path) -> list[str]:
    """The ``try it`` lines of the demo: a ``parse`` command on the bundled files that runs as printed
    in the current directory, with or without this environment on ``PATH`` (``make demo`` does not put
    ``.venv/bin`` there)."""
    command = _command()
    if command == "response-templates":
        return [
            f"try it    cd {shlex.quote(_display_path(str(folder)))}",
            f"          response-templates parse --template {TEMPLATE_FILE} --prefix {PROMPT_FILE} \\",
            f"              --tools {TOOLS_FILE} {OUTPUT_FILE}",
        ]

    def path(name: str) -> str:
        return shlex.quote(_display_path(str(folder / name)))

    return [
        f"try it    {command} parse \\",
        f"              --template {path(TEMPLATE_FILE)} \\",
        f"              --prefix {path(PROMPT_FILE)} \\",
        f"              --tools {path(TOOLS_FILE)} \\",
        f"              {path(OUTPUT_FILE)}",
    ]


def _signature(tool: dict[str, Any]) -> str:
    function = tool.get("function", tool)
    props = function.get("parameters", {}).get("properties", {})
    params = ", ".join(f"{name}: {spec.get('type', '?')}" for name, spec in props.items())
    return f"{function.get('name')}({params})"


def _typed_arguments(untyped: dict[str, Any], typed: dict[str, Any]) -> list[str]:
    """Describe the tool-call arguments the tools' schemas changed."""
    notes = []
    calls = zip(untyped.get("tool_calls", []), typed.get("tool_calls", []), strict=False)
    for index, (before, after) in enumerate(calls):
        args_before = before.get("function", {}).get("arguments", {})
        args_after = after.get("function", {}).get("arguments", {})
        for key, value in args_after.items():
            if args_before.get(key) != value or type(args_before.get(key)) is not type(value):
                notes.append(
                    f"tool_calls[{index}] {key}: {json.dumps(args_before.get(key))} -> {json.dumps(value)}"
                )
    return notes


def _open_close(events: list[ParserEvent]) -> list[ParserEvent]:
    return [e for e in events if e["type"] != "region_chunk"]


def _same_as_whole(
    template: ResponseTemplate, data: DemoData, message: dict[str, Any], streamed: list[ParserEvent]
) -> tuple[bool, bool]:
    """Whether parsing the whole output gives the streamed message, and feeding it in one piece the same
    open and close events."""
    whole = parse_response(data.output, template, prefix=data.prompt, tools=data.tools)
    one_piece = ResponseParser(template, prefix=data.prompt, tools=data.tools)
    whole_events = one_piece.initial_events + one_piece.feed(data.output)
    whole_events += one_piece.finalize()[1]
    return whole == message, _open_close(whole_events) == _open_close(streamed)


# ------------------------------------------------------------------------------------------------ main


def run(out: TextIO | None = None, *, color: bool | None = None) -> int:
    """Print the demo to ``out`` (stdout by default); return 0 when the streaming check passes, else 1.

    ``color`` defaults to "stdout is a terminal and ``NO_COLOR`` is not set".
    """
    out = sys.stdout if out is None else out
    if color is None:
        color = bool(getattr(out, "isatty", lambda: False)()) and not os.environ.get("NO_COLOR")
    style = _Style(color)
    data = load_demo_data()
    template = load_template(data.template)
    anchor = data.template["start_anchor"]
    chunks = list(token_chunks(data.output))
    turns = data.prompt.count("<|im_start|>") - 1

    w = out.write
    w(style.bold("response-templates demo: a Qwen3 generation parsed while it streams") + "\n\n")
    size = f"{len(data.prompt):,}"
    w(f"prompt    {size} characters: {turns} turns and the generation prompt, rendered the way\n")
    w(f"          Qwen3's chat template does; only the text after the last {_quoted(anchor)} counts\n")
    w(f"output    {len(data.output)} characters: <think> reasoning, a sentence, two parallel <tool_call>s\n")
    w(f"          fed as {len(chunks)} chunks of 1-6 characters, so delimiters arrive split across chunks\n")
    w(f"tools     {', '.join(_signature(t) for t in data.tools)}\n\n")

    parser = ResponseParser(template, prefix=data.prompt, tools=data.tools)
    name_width = max(len(f.name) for f in template.fields)
    printer = _EventPrinter(out, style, name_width)
    legend = '  (+"…" text to show as it comes, ~"…" raw text parsed at close)'
    w(style.bold("events") + style.dim(legend) + "\n")
    streamed_events = list(parser.initial_events)
    if not parser.initial_events:
        w(style.dim("  (no initial events: the prompt opens no region after the anchor)") + "\n")
    for event in parser.initial_events:
        printer.event(event)
    held: list[str] = []
    for chunk in chunks:
        events = parser.feed(chunk)
        if not events:
            held.append(chunk)
        for event in events:
            printer.event(event)
        streamed_events.extend(events)
    message, final_events = parser.finalize()
    for event in final_events:
        printer.event(event)
    printer.done()
    streamed_events.extend(final_events)
    examples = ", ".join(_quoted(c) for c in held if "<" in c or "im_" in c)
    note = (
        f"held back: {len(held)} of {len(chunks)} feeds returned no event, because their text could still be "
        f"the start of a delimiter; the next chunk decided" + (f" (e.g. {examples})" if examples else "")
    )
    for line in _wrap(note, WIDTH - 2):
        w("  " + style.dim(line) + "\n")
    w("\n")

    w(style.bold("final message") + style.dim("  (parser.finalize())") + "\n")
    w(json.dumps(message, indent=2, ensure_ascii=False) + "\n\n")

    untyped = parse_response(data.output, template, prefix=data.prompt)
    assert isinstance(untyped, dict)  # one text in, one message out
    for note in _typed_arguments(untyped, message):
        w(f"typed     {note}  (the get_weather schema says integer)\n")

    same_message, same_events = _same_as_whole(template, data, message, streamed_events)
    verdict = style.ok("OK") if same_message and same_events else style.bad("MISMATCH")
    w(
        f"check     streamed message == parse_response(whole output): {same_message}; "
        f"open/close events\n          same as feeding it in one piece: {same_events} -> {verdict}\n\n"
    )
    for line in try_it_lines(Path(data.paths["output"]).parent):
        w(line + "\n")
    return 0 if same_message and same_events else 1


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(run())
