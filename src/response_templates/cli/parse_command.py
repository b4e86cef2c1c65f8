"""Internal: the commands that run the parser: ``parse`` (one model output) and ``demo``.

``parse`` reads the model output whole (the message as indented JSON) or, with ``--stream``, as it
arrives (every event as a JSON line, then the message); ``--chunk-size`` cuts the decoded text into
pieces of that many characters instead. ``demo`` hands over to :mod:`response_templates.demo`.

``--errors keep`` is the library's ``errors="keep"``: what does not parse stays in the message as text,
the exit code is 0, and each error is one JSON line on stderr (:func:`error_line`), so that stdout stays
exactly the message (or the events) for the next program in a pipe.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Iterator
from typing import IO, Any

from ..errors import ParseError
from ..language import ResponseTemplate
from ..parser import ParsedMessage, ResponseParser
from ..whole import parse_response
from .batch_command import add_batch_arguments, run_batch
from .library_commands import library_template
from .shared import (
    EXIT_OK,
    EXIT_PARSE_ERROR,
    PREFIX_MISSING,
    CLIError,
    Streams,
    add_prefix_arguments,
    add_tools_argument,
    decode,
    decode_pieces,
    dump_line,
    error_record,
    load_template_file,
    load_tools_file,
    read_bytes,
    resolve_prefix,
)

__all__ = ["add_demo", "add_parse", "error_line", "run_parse"]

_READ_SIZE = 1 << 16

#: A command handler: ``(args, streams) -> exit code``.
Handler = Callable[[argparse.Namespace, Streams], int]


# ------------------------------------------------------------------------------------------------- demo


def add_demo(subparsers: Any) -> None:
    """The ``demo`` command: stream the bundled Qwen3 generation and print every event."""
    parser = subparsers.add_parser(
        "demo",
        help="stream a bundled Qwen3 generation through the parser and show every event",
        description="Stream a bundled Qwen3 generation (reasoning, a sentence, two parallel tool calls) "
        "through the parser in token-sized chunks, print every event as it arrives, then the final message "
        "and a check that it equals parsing the whole text at once.",
    )
    parser.add_argument("--no-color", action="store_true", help="never use ANSI colors (also: NO_COLOR=1)")
    parser.set_defaults(handler=_run_demo)


def _run_demo(args: argparse.Namespace, streams: Streams) -> int:
    from .. import demo

    return demo.run(streams.stdout, color=False if args.no_color else None)


# ------------------------------------------------------------------------------------------------ parse


def add_parse(subparsers: Any, *, handler: Handler | None = None) -> None:
    """The ``parse`` command; ``handler`` replaces :func:`run_parse` (``cli`` passes its own seam)."""
    parser = subparsers.add_parser(
        "parse",
        help="parse one model output into a message (JSON), or many records (--jsonl, --parquet)",
        description="Parse the raw text a model generated into a chat message, as the response template "
        "says, and print it as JSON. The prompt (--prefix, --prefix-text or --no-prefix) is required.",
        epilog="exit codes: 0 parsed (with --errors keep: also when some of it did not parse); 1 the output "
        "does not fit the template; 2 usage error, unreadable file, invalid template or tools, a prompt "
        "without the start anchor",
    )
    parser.add_argument(
        "input", nargs="?", default="-", metavar="INPUT", help="the model output; '-' or none: stdin"
    )
    which = parser.add_mutually_exclusive_group()
    which.add_argument(
        "-t",
        "--template",
        metavar="FILE",
        help="the response template, a JSON file (a tokenizer_config.json with a 'response_template' key "
        "works too)",
    )
    which.add_argument(
        "-m",
        "--model",
        metavar="MODEL_ID",
        help="use the built-in template for this model id (e.g. Qwen/Qwen3-8B) or library family name "
        "(see 'list')",
    )
    add_prefix_arguments(parser)
    add_tools_argument(parser)
    parser.add_argument(
        "--stream",
        action="store_true",
        help="feed the output as it is read and print every event as a JSON line; the last line is "
        '{"type": "message", "message": ...}',
    )
    parser.add_argument(
        "--chunk-size",
        type=int,
        metavar="N",
        help="with --stream: feed the output N characters at a time (N >= 1), to see what token-by-token "
        "streaming gives",
    )
    parser.add_argument(
        "--errors",
        choices=("raise", "keep"),
        default="raise",
        help="what output that does not fit the template does: 'raise' (default) fails with exit code 1; "
        "'keep' keeps its text in the message, exits with 0 and writes each error as a JSON line "
        '{"type": "parse_error", ...} on stderr',
    )
    add_batch_arguments(parser)
    parser.set_defaults(handler=handler or run_parse)


def error_line(exc: ParseError) -> dict[str, Any]:
    """The stderr JSON line of an error kept by ``--errors keep``: ``error_record`` plus ``"type"``."""
    record = error_record(exc)
    return {
        "type": "parse_error",
        "error": record["type"],
        **{k: v for k, v in record.items() if k != "type"},
    }


def _report_kept(message: ParsedMessage, streams: Streams) -> None:
    for error in message.errors:
        dump_line(error_line(error), streams.stderr)
    if message.errors_dropped:
        dump_line({"type": "parse_errors_dropped", "count": message.errors_dropped}, streams.stderr)


def _input_pieces(path: str, streams: Streams) -> Iterator[str | bytes]:
    """The model output as it is read: bytes from files and stdin (str only from a text-only stdin)."""
    if path == "-":
        buffer = getattr(streams.stdin, "buffer", None)
        if buffer is None:
            while text := streams.stdin.read(_READ_SIZE):
                yield text
            return
        read = getattr(buffer, "read1", buffer.read)  # read1: whatever a pipe has now, without waiting
        while data := read(_READ_SIZE):
            yield data
        return
    try:
        f: IO[bytes] = open(path, "rb")  # noqa: SIM115 -- closed below; the generator streams from it
    except OSError as exc:
        raise CLIError(f"cannot read the input {path!r}: {exc.strerror or exc}") from None
    with f:
        while data := f.read(_READ_SIZE):
            yield data


def run_parse(
    args: argparse.Namespace, streams: Streams, *, parse: Callable[..., Any] = parse_response
) -> int:
    """Run ``parse``; ``parse`` parses a whole output (the seam :mod:`response_templates.cli` fills)."""
    if args.jsonl is not None or args.parquet is not None:
        return run_batch(args, streams)
    if args.template is None and args.model is None:
        raise CLIError("one of the arguments -t/--template -m/--model is required")
    if args.output or args.resume or args.field or args.jobs != 1:
        raise CLIError(
            "-o, --resume, --field and -j apply to many records: give them with --jsonl or --parquet"
        )
    if args.tokenizer is not None or args.control_tokens is not None:
        raise CLIError(
            "--tokenizer and --control-tokens apply to records of token ids: give them with --jsonl or "
            "--parquet"
        )
    if args.chunk_size is not None and not args.stream:
        raise CLIError("--chunk-size only applies with --stream")
    if args.chunk_size is not None and args.chunk_size < 1:
        raise CLIError(f"--chunk-size must be at least 1 (characters per piece), got {args.chunk_size}")
    if args.prefix is None and args.prefix_text is None and not args.no_prefix:
        raise CLIError(PREFIX_MISSING)
    template = load_template_file(args.template, streams) if args.template else library_template(args.model)
    prefix = resolve_prefix(args, template, streams)
    tools = load_tools_file(args.tools, streams)
    if args.input == "-" and getattr(streams.stdin, "isatty", lambda: False)():
        streams.stderr.write("reading the model output from stdin (end it with Ctrl-D)\n")
    if not args.stream:
        data = read_bytes(args.input, "input", streams)
        keep = args.errors == "keep"
        if keep:
            message = parse(data, template, prefix=prefix, tools=tools, errors="keep", missing_anchor="parse")
        else:
            text = decode(data, args.input, "model output")
            message = parse(text, template, prefix=prefix, tools=tools, missing_anchor="parse")
        streams.stdout.write(json.dumps(message, indent=2, ensure_ascii=False) + "\n")
        if keep and isinstance(message, ParsedMessage):
            _report_kept(message, streams)
        return EXIT_OK
    return _stream(args, template, prefix, tools, streams)


def _stream(
    args: argparse.Namespace,
    template: ResponseTemplate,
    prefix: str,
    tools: list[Any] | None,
    streams: Streams,
) -> int:
    out = streams.stdout
    # The prompt's anchor was checked by resolve_prefix (--missing-anchor).
    parser = ResponseParser(template, prefix, tools=tools, errors=args.errors, missing_anchor="parse")
    failed = False

    def report(exc: ParseError) -> None:
        for event in getattr(exc, "events", []):
            dump_line(event, out)
        dump_line({"type": "error", "error": error_record(exc)}, out)
        streams.error(str(exc))

    for event in parser.initial_events:
        dump_line(event, out)
    pieces: Iterator[str | bytes]
    if args.chunk_size is not None:
        data = read_bytes(args.input, "input", streams)
        if args.errors == "keep":
            text = data.decode("utf-8", "replace")  # as the parser decodes bytes with --errors keep
        else:
            text = decode(data, args.input, "model output")
        size = args.chunk_size
        pieces = (text[i : i + size] for i in range(0, len(text), size))
    elif args.errors == "keep":
        pieces = _input_pieces(args.input, streams)  # the parser replaces invalid bytes and records them
    else:
        pieces = decode_pieces(_input_pieces(args.input, streams), args.input, "model output")
    for piece in pieces:
        try:
            events = parser.feed(piece)
        except ParseError as exc:  # the parser stays usable: report and keep going
            failed = True
            report(exc)
            continue
        for event in events:
            dump_line(event, out)
    try:
        message, events = parser.finalize()
    except ParseError as exc:
        report(exc)
        return EXIT_PARSE_ERROR
    for event in events:
        dump_line(event, out)
    dump_line({"type": "message", "message": message}, out)
    if args.errors == "keep":
        _report_kept(message, streams)
    return EXIT_PARSE_ERROR if failed else EXIT_OK
