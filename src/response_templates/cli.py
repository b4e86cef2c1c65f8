"""The command-line interface: the ``response-templates`` script and ``python -m response_templates``.

Commands:

* ``demo`` -- stream a bundled Qwen3 generation through the parser and print every event.
* ``parse`` -- parse one model output with a template file (or ``--model MODEL_ID``: the built-in template of
  the model's family); print the message as JSON (``--stream``: every event as a JSON line, then the message).
* ``list`` / ``show NAME`` -- the model families of the built-in library; one family's data or template.
* ``detect CHAT_TEMPLATE_FILE`` -- which library family a chat template belongs to.
* ``verify CHAT_TEMPLATE_FILE [--template NAME|FILE]`` -- round-trip check of a response template against a
  chat template (needs jinja2).
* ``lint FILE`` -- portability rules and suspicious patterns of a response template.

Exit codes: 0 success; 1 the model output does not fit the template (a parse error); 2 the run could not
start (usage error, unreadable file, invalid template or tools); 130 interrupted. Errors are one
``error: ...`` line on stderr, never a traceback; stdout carries only results, so it can be piped.

Adding a command: write a function that takes the ``subparsers`` object, adds a sub-parser and sets its
``handler`` with ``set_defaults``, and append it to :data:`COMMANDS`. A handler takes
``(args, streams)`` and returns an exit code; it raises :class:`CLIError` for problems the user must fix
before anything can run. Library errors that escape a handler are mapped to exit codes by :func:`main`
(``ParseError`` -> 1, any other ``ResponseTemplateError`` -> 2). The helpers ``add_template_argument``,
``add_prefix_arguments``, ``add_tools_argument`` and their ``load_*`` / ``resolve_*`` partners give every
command the same options with the same checks.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import IO, Any, NoReturn, TextIO

from . import __version__
from .errors import ParseError, ResponseTemplateError, TemplateError
from .language import ResponseTemplate, load_template
from .parser import ResponseParser, parse_response
from .tools import tool_parameters

__all__ = [
    "COMMANDS",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_PARSE_ERROR",
    "EXIT_USAGE",
    "CLIError",
    "Streams",
    "add_prefix_arguments",
    "add_template_argument",
    "add_tools_argument",
    "build_parser",
    "error_record",
    "library_template",
    "load_template_file",
    "load_tools_file",
    "main",
    "resolve_prefix",
]

PROG = "response-templates"

EXIT_OK = 0
EXIT_PARSE_ERROR = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130

_READ_SIZE = 1 << 16

_PREFIX_MISSING = (
    "the prompt is required: pass --prefix FILE (or --prefix-text STR) with the text the model continued. "
    "Chat templates often write the start of the assistant message themselves (an opening <think>, a "
    "prefill), and the parser must see it to read the output correctly; the start anchor then cuts away "
    "the earlier turns. Pass --no-prefix to parse the output on its own."
)


class CLIError(Exception):
    """A problem the user must fix before the command can run (exit code 2 unless ``code`` says otherwise).

    ``usage`` is the usage line of the command at fault, printed before the message for argument errors.
    """

    def __init__(self, message: str, *, code: int = EXIT_USAGE, usage: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.usage = usage


@dataclass
class Streams:
    """Where a command reads and writes (the real ``sys`` streams, resolved when :func:`main` runs)."""

    stdin: TextIO
    stdout: TextIO
    stderr: TextIO

    def warn(self, message: str) -> None:
        self.stderr.write(f"warning: {message}\n")

    def error(self, message: str) -> None:
        self.stderr.write(f"error: {message}\n")


class _ArgumentParser(argparse.ArgumentParser):
    """An argparse parser that raises :class:`CLIError` instead of exiting, so ``main`` stays in charge."""

    commands: dict[str, _ArgumentParser] | None = None  # the top-level parser's sub-parsers

    def error(self, message: str) -> NoReturn:
        raise CLIError(f"{message} (see '{self.prog} --help')", usage=self.format_usage())


# ------------------------------------------------------------------------------- shared option helpers


def _read_bytes(path: str, what: str, streams: Streams) -> bytes:
    if path == "-":
        buffer: IO[bytes] | None = getattr(streams.stdin, "buffer", None)
        if buffer is not None:
            return buffer.read()
        return streams.stdin.read().encode("utf-8")
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as exc:
        raise CLIError(f"cannot read the {what} {path!r}: {exc.strerror or exc}") from None


def _decode(data: bytes, path: str, what: str, *, code: int = EXIT_USAGE) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        source = "stdin" if path == "-" else repr(path)
        raise CLIError(f"the {what} ({source}) is not valid UTF-8 at byte {exc.start}", code=code) from None


def _read_json(path: str, what: str, streams: Streams) -> Any:
    text = _decode(_read_bytes(path, what, streams), path, what)
    try:
        return json.loads(text.removeprefix("\ufeff"))
    except json.JSONDecodeError as exc:
        raise CLIError(f"the {what} {path!r} is not valid JSON: {exc}") from None


def add_template_argument(parser: argparse.ArgumentParser) -> None:
    """``--template FILE`` (required)."""
    parser.add_argument(
        "-t",
        "--template",
        required=True,
        metavar="FILE",
        help="the response template, a JSON file (a tokenizer_config.json with a 'response_template' key "
        "works too)",
    )


def load_template_file(path: str, streams: Streams) -> ResponseTemplate:
    """Read and compile a template file; :class:`CLIError` (exit 2) naming the file if anything is wrong."""
    data = _read_json(path, "template", streams)
    if isinstance(data, dict) and "fields" not in data and "response_template" in data:
        data = data["response_template"]  # a tokenizer_config.json
        if data is None:
            raise CLIError(f"the template file {path!r} has 'response_template': null (no template set)")
    try:
        return load_template(data)
    except TemplateError as exc:
        raise CLIError(f"invalid template {path!r}: {exc}") from None


def add_prefix_arguments(parser: argparse.ArgumentParser) -> None:
    """``--prefix FILE | --prefix-text STR | --no-prefix`` (one of them is required, checked later)."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--prefix", metavar="FILE", help="file holding the prompt the model continued")
    group.add_argument(
        "--prefix-text",
        metavar="STR",
        help="the prompt as a string (taken literally: in bash write $'...\\n' for a newline)",
    )
    group.add_argument(
        "--no-prefix",
        action="store_true",
        help='there is no prompt to take into account (the library\'s prefix="")',
    )


def resolve_prefix(args: argparse.Namespace, template: ResponseTemplate, streams: Streams) -> str:
    """The prompt from ``--prefix``/``--prefix-text``/``--no-prefix``; warns when the anchor is missing."""
    if args.no_prefix:
        return ""
    prefix: str
    if args.prefix_text is not None:
        prefix = args.prefix_text
    elif args.prefix is not None:
        if args.prefix == "-" and getattr(args, "input", None) in (None, "-"):
            raise CLIError("--prefix - reads stdin, so the model output must come from a file")
        prefix = _decode(_read_bytes(args.prefix, "prefix", streams), args.prefix, "prefix")
    else:
        raise CLIError(_PREFIX_MISSING)
    if prefix and not template.cut_prefix(prefix)[1]:
        source = template.source
        anchor = source.get("start_anchor", source.get("start_anchor_pattern"))
        hint = ""
        if "\\n" in prefix and "\n" not in prefix:
            hint = " (the prefix contains a backslash and 'n', not a newline; in bash write $'...\\n')"
        streams.warn(
            f"the start anchor {json.dumps(anchor, ensure_ascii=False)} does not occur in the prefix, so "
            f"the whole prefix is read as if the model had written it{hint}"
        )
    return prefix


def add_tools_argument(parser: argparse.ArgumentParser) -> None:
    """``--tools FILE`` (optional)."""
    parser.add_argument(
        "--tools",
        metavar="FILE",
        help="JSON file with the request's tools (a list, or an object with a 'tools' list); tool-call "
        "arguments are cast by their JSON schemas",
    )


def load_tools_file(path: str | None, streams: Streams) -> list[Any] | None:
    """Read and check a tools file; :class:`CLIError` (exit 2) naming the file if anything is wrong."""
    if path is None:
        return None
    data = _read_json(path, "tools file", streams)
    if isinstance(data, dict):
        data = data.get("tools", [data])
    if not isinstance(data, list):
        raise CLIError(f"the tools file {path!r} must hold a JSON list of tools, got {type(data).__name__}")
    try:
        tool_parameters(data)
    except ResponseTemplateError as exc:
        raise CLIError(f"invalid tools file {path!r}: {exc}") from None
    return data


def error_record(exc: ResponseTemplateError) -> dict[str, Any]:
    """A JSON-ready description of a library error (used for error lines in JSON output)."""
    record: dict[str, Any] = {"type": type(exc).__name__, "message": str(exc)}
    for key in ("field", "offset", "raw"):
        value = getattr(exc, key, None)
        if value is not None:
            record[key] = value
    return record


def _dump_line(obj: Any, out: TextIO) -> None:
    out.write(json.dumps(obj, ensure_ascii=False) + "\n")
    out.flush()


# ------------------------------------------------------------------------------------------------- demo


def _add_demo(subparsers: Any) -> None:
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
    from . import demo

    return demo.run(streams.stdout, color=False if args.no_color else None)


# ------------------------------------------------------------------------------------------------ parse


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def _add_parse(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "parse",
        help="parse one model output into a message (JSON)",
        description="Parse the raw text a model generated into a chat message, as the response template "
        "says, and print it as JSON. The prompt (--prefix, --prefix-text or --no-prefix) is required.",
        epilog="exit codes: 0 parsed; 1 the output does not fit the template; 2 usage error, unreadable "
        "file, invalid template or tools",
    )
    parser.add_argument(
        "input", nargs="?", default="-", metavar="INPUT", help="the model output; '-' or none: stdin"
    )
    which = parser.add_mutually_exclusive_group(required=True)
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
        type=_positive_int,
        metavar="N",
        help="with --stream: feed the output N characters at a time, to see what token-by-token streaming "
        "gives",
    )
    parser.set_defaults(handler=_run_parse)


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


def _run_parse(args: argparse.Namespace, streams: Streams) -> int:
    if args.chunk_size is not None and not args.stream:
        raise CLIError("--chunk-size only applies with --stream")
    if args.prefix is None and args.prefix_text is None and not args.no_prefix:
        raise CLIError(_PREFIX_MISSING)
    template = load_template_file(args.template, streams) if args.template else library_template(args.model)
    prefix = resolve_prefix(args, template, streams)
    tools = load_tools_file(args.tools, streams)
    if args.input == "-" and getattr(streams.stdin, "isatty", lambda: False)():
        streams.stderr.write("reading the model output from stdin (end it with Ctrl-D)\n")
    if not args.stream:
        data = _read_bytes(args.input, "input", streams)
        text = _decode(data, args.input, "model output", code=EXIT_PARSE_ERROR)
        message = parse_response(text, template, prefix=prefix, tools=tools)
        streams.stdout.write(json.dumps(message, indent=2, ensure_ascii=False) + "\n")
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
    parser = ResponseParser(template, prefix, tools=tools)
    failed = False

    def report(exc: ParseError) -> None:
        for event in getattr(exc, "events", []):
            _dump_line(event, out)
        _dump_line({"type": "error", "error": error_record(exc)}, out)
        streams.error(str(exc))

    for event in parser.initial_events:
        _dump_line(event, out)
    pieces: Iterator[str | bytes]
    if args.chunk_size is not None:
        data = _read_bytes(args.input, "input", streams)
        text = _decode(data, args.input, "model output", code=EXIT_PARSE_ERROR)
        size = args.chunk_size
        pieces = (text[i : i + size] for i in range(0, len(text), size))
    else:
        pieces = _input_pieces(args.input, streams)
    for piece in pieces:
        try:
            events = parser.feed(piece)
        except ParseError as exc:  # the parser stays usable: report and keep going
            failed = True
            report(exc)
            continue
        for event in events:
            _dump_line(event, out)
    try:
        message, events = parser.finalize()
    except ParseError as exc:
        report(exc)
        return EXIT_PARSE_ERROR
    for event in events:
        _dump_line(event, out)
    _dump_line({"type": "message", "message": message}, out)
    return EXIT_PARSE_ERROR if failed else EXIT_OK


# --------------------------------------------------------------------------------------- the library


def library_template(model: str) -> ResponseTemplate:
    """The built-in template for ``--model``: a model id, else a family name; :class:`CLIError` otherwise."""
    from . import library

    try:
        return library.for_model(model)
    except library.ExtensionRequiredError as exc:
        raise CLIError(str(exc)) from None
    except library.UnknownModelError as by_model:
        try:
            return library.get(model)
        except library.ExtensionRequiredError as exc:
            raise CLIError(str(exc)) from None
        except library.UnknownModelError:
            raise CLIError(f"{by_model} (see '{PROG} list')") from None


def _family_arg(name: str) -> Any:
    from . import library

    try:
        return library.family(name)
    except library.UnknownModelError as exc:
        raise CLIError(f"{exc} (see '{PROG} list --all')") from None


def _add_list(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "list",
        help="list the model families of the built-in library",
        description="List the model families of the built-in library: name, status, models.",
    )
    parser.add_argument(
        "--all",
        action="store_true",
        help="include the families whose format needs a template-language extension",
    )
    parser.add_argument("--json", action="store_true", help="print JSON lines instead of a table")
    parser.set_defaults(handler=_run_list)


def _run_list(args: argparse.Namespace, streams: Streams) -> int:
    from . import library

    fams = [f for f in library.families() if args.all or f.has_template]
    out = streams.stdout
    if args.json:
        for fam in fams:
            record: dict[str, Any] = {
                "name": fam.name,
                "title": fam.title,
                "status": fam.status,
                "aliases": list(fam.aliases),
            }
            record.update(models=list(fam.models), same_format_as=fam.same_format_as, needs=list(fam.needs))
            _dump_line(record, out)
        return EXIT_OK
    width = max(len(f.name) for f in fams)
    for fam in fams:
        status = fam.status + (f" ({', '.join(fam.needs)})" if fam.needs else "")
        shares = f" [= {fam.same_format_as}]" if fam.same_format_as else ""
        out.write(f"{fam.name:<{width}}  {status:<28} {fam.title}{shares}\n")
    return EXIT_OK


def _add_show(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "show",
        help="show one family of the library (its data file, or only its template)",
        description="Print a library family as JSON: metadata and response template. With --template, only "
        "the response template (ready to save as a file or put into tokenizer_config.json).",
    )
    parser.add_argument("name", metavar="NAME", help="family name or alias (see 'list')")
    parser.add_argument("--template", action="store_true", help="print only the response template")
    parser.set_defaults(handler=_run_show)


def _run_show(args: argparse.Namespace, streams: Streams) -> int:
    fam = _family_arg(args.name)
    if args.template:
        data: Any = fam.template_dict()
    else:
        data = fam.to_dict()
        if fam.same_format_as:
            data["template"] = fam.template_dict()
    streams.stdout.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    return EXIT_OK


def _read_chat_template(path: str, streams: Streams) -> str:
    """A chat template from a .jinja file or a tokenizer_config.json (its 'chat_template')."""
    text = _decode(_read_bytes(path, "chat template", streams), path, "chat template")
    stripped = text.lstrip("\ufeff").lstrip()
    if stripped.startswith("{") and not stripped.startswith(("{%", "{{", "{#")):
        try:
            data = json.loads(stripped)
        except json.JSONDecodeError:
            return text
        if isinstance(data, dict) and "chat_template" in data:
            template = data["chat_template"]
            if isinstance(template, list):
                named = {
                    item.get("name"): item.get("template") for item in template if isinstance(item, dict)
                }
                template = named.get("default") or next(iter(named.values()), None)
            if not isinstance(template, str):
                raise CLIError(f"the chat_template in {path!r} is not a string")
            return template
    return text


def _add_detect(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "detect",
        help="name the library family of a chat template",
        description="Identify the model family of a Jinja chat template (a .jinja file or a "
        "tokenizer_config.json) by its fingerprint or markers.",
        epilog="exit codes: 0 recognized; 1 unknown (near matches on stderr); 2 unreadable file",
    )
    parser.add_argument("chat_template", metavar="CHAT_TEMPLATE_FILE")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.set_defaults(handler=_run_detect)


def _run_detect(args: argparse.Namespace, streams: Streams) -> int:
    from . import library

    text = _read_chat_template(args.chat_template, streams)
    try:
        fam = library.detect_family(text)
    except library.UnknownModelError as exc:
        streams.error(str(exc))
        return EXIT_PARSE_ERROR
    how = "fingerprint" if library.fingerprint(text) in fam.fingerprints else "markers"
    if args.json:
        _dump_line(
            {"name": fam.name, "title": fam.title, "status": fam.status, "matched_by": how}, streams.stdout
        )
    else:
        streams.stdout.write(f"{fam.name}\t{fam.title} ({fam.status}; matched by {how})\n")
        if not fam.has_template:
            streams.warn(f"{fam.name} has no template yet: its format needs {', '.join(fam.needs)}")
    return EXIT_OK


def _add_verify(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "verify",
        help="round-trip check: render assistant messages with a chat template and parse them back",
        description="Render assistant messages (reasoning, text, parallel tool calls with every kind of "
        "argument) through a Jinja chat template, parse the rendered assistant turn back with a response "
        "template, and report every field that does not come back equal. Without --template, the template "
        "of the detected library family is used.",
        epilog="exit codes: 0 every case passed; 1 some case failed; 2 usage error, unreadable file or "
        "invalid template. Needs jinja2 (pip install 'response-templates[verify]').",
    )
    parser.add_argument("chat_template", metavar="CHAT_TEMPLATE_FILE")
    parser.add_argument(
        "-t", "--template", metavar="NAME|FILE", help="library family name or response-template JSON file"
    )
    parser.add_argument(
        "--kwargs",
        metavar="JSON",
        help="chat-template variables for every case, e.g. '{\"enable_thinking\": true}'",
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.set_defaults(handler=_run_verify)


def _run_verify(args: argparse.Namespace, streams: Streams) -> int:
    from . import library, verify

    text = _read_chat_template(args.chat_template, streams)
    options: dict[str, Any] = {}
    fam = None
    if args.template is None:
        try:
            fam = library.detect_family(text)
        except library.UnknownModelError as exc:
            raise CLIError(f"{exc}; pass --template NAME|FILE") from None
    elif os.path.exists(args.template) or args.template.endswith(".json"):
        template = load_template_file(args.template, streams)
    else:
        fam = _family_arg(args.template)
    if fam is not None:
        try:
            template = fam.template()
        except library.ExtensionRequiredError as exc:
            raise CLIError(str(exc)) from None
        options = fam.round_trip_options()
        streams.stderr.write(f"using the library template of {fam.name}\n")
    if args.kwargs is not None:
        try:
            extra = json.loads(args.kwargs)
        except json.JSONDecodeError as exc:
            raise CLIError(f"--kwargs is not valid JSON: {exc}") from None
        if not isinstance(extra, dict):
            raise CLIError("--kwargs must be a JSON object")
        options["template_kwargs"] = {**options.get("template_kwargs", {}), **extra}
    report = verify.round_trip(text, template, **options)
    known: dict[str, str] = {}
    if fam is not None:  # reviewed failures of this very chat template, if it is one the library knows
        fingerprint = library.fingerprint(text)
        for name, fp in zip(fam.chat_templates, fam.fingerprints, strict=True):
            if fp == fingerprint:
                known = fam.known_round_trip_issues(name)
    unexpected = [c for c in report.failures() if c.case not in known and "*" not in known]
    out = streams.stdout
    if args.json:
        data = report.to_dict()
        data["known_issues"] = known
        out.write(json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n")
    else:
        for case in report.cases:
            out.write(f"{case.status:5} {case.case}" + (f": {case.problem}" if case.problem else "") + "\n")
            for diff in case.differences:
                out.write(f"      {diff}\n")
            reason = known.get(case.case, known.get("*")) if not case.ok else None
            if reason:
                out.write(f"      known issue: {reason}\n")
        out.write(
            report.summary()
            + (f"; {len(report.failures()) - len(unexpected)} known issues" if known else "")
            + "\n"
        )
    return EXIT_PARSE_ERROR if unexpected else EXIT_OK


def _add_lint(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "lint",
        help="check a response template for portability problems and suspicious patterns",
        description="Report the portability rules of docs/spec.md, section 10 (backreferences, atomic groups, "
        "possessive quantifiers, recursion; lookarounds as a note), suspicious delimiters and extension use.",
        epilog="exit codes: 0 no errors or warnings (notes only); 1 errors or warnings; 2 unreadable file",
    )
    parser.add_argument(
        "template", metavar="FILE", help="response template JSON file, or a library family name"
    )
    parser.add_argument("--json", action="store_true", help="print the issues as JSON lines")
    parser.set_defaults(handler=_run_lint)


def _run_lint(args: argparse.Namespace, streams: Streams) -> int:
    from .lint import lint

    if not os.path.exists(args.template) and not args.template.endswith(".json"):
        data: Any = _family_arg(args.template).template_dict()
    else:
        data = _read_json(args.template, "template", streams)
        if isinstance(data, dict) and "fields" not in data and "response_template" in data:
            data = data["response_template"]
    issues = lint(data)
    for issue in issues:
        if args.json:
            _dump_line(issue.to_dict(), streams.stdout)
        else:
            streams.stdout.write(f"{issue}\n")
    if not args.json:
        counts = {level: sum(i.level == level for i in issues) for level in ("error", "warning", "note")}
        streams.stderr.write(
            ", ".join(f"{n} {level}{'s' if n != 1 else ''}" for level, n in counts.items()) + "\n"
        )
    return EXIT_PARSE_ERROR if any(i.level in ("error", "warning") for i in issues) else EXIT_OK


# ------------------------------------------------------------------------------------------------- main

#: Functions that add one sub-command each (see the module docstring).
COMMANDS: list[Callable[[Any], None]] = [
    _add_demo,
    _add_parse,
    _add_list,
    _add_show,
    _add_detect,
    _add_verify,
    _add_lint,
]


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every command in :data:`COMMANDS`."""
    return _build_parser()


def _build_parser() -> _ArgumentParser:
    parser = _ArgumentParser(
        prog=PROG,
        description="Parse raw language-model output into structured chat messages with response templates.",
        epilog=f"Run '{PROG} COMMAND --help' for a command's options. Start with '{PROG} demo'.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", title="commands")
    for add_command in COMMANDS:
        add_command(subparsers)
    parser.commands = subparsers.choices
    return parser


def _quiet_broken_pipe(streams: Streams) -> None:
    """stdout's reader went away (``... | head``): stop writing to it, without a second error at exit."""
    try:
        fd = streams.stdout.fileno()
    except (AttributeError, OSError, ValueError):
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, fd)
    os.close(devnull)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line ``argv`` (default: ``sys.argv[1:]``) and return the exit code.

    Never raises and never prints a traceback (set ``RESPONSE_TEMPLATES_TRACEBACK=1`` to see one for an
    unexpected internal error).
    """
    streams = Streams(sys.stdin, sys.stdout, sys.stderr)
    try:
        parser = _build_parser()
        args, extra = parser.parse_known_args(argv)
        if extra:  # report it with the usage of the command it was meant for
            command = (parser.commands or {}).get(getattr(args, "command", None) or "", parser)
            command.error(f"unrecognized arguments: {' '.join(extra)}")
        handler: Callable[[argparse.Namespace, Streams], int] | None = getattr(args, "handler", None)
        if handler is None:
            parser.print_help(streams.stderr)
            return EXIT_USAGE
        return handler(args, streams)
    except SystemExit as exc:  # --help and --version end this way
        code = exc.code
        return code if isinstance(code, int) else (EXIT_OK if code is None else EXIT_USAGE)
    except CLIError as exc:
        if exc.usage:
            streams.stderr.write(exc.usage)
        streams.error(exc.message)
        return exc.code
    except ParseError as exc:
        streams.error(str(exc))
        return EXIT_PARSE_ERROR
    except ResponseTemplateError as exc:
        streams.error(str(exc))
        return EXIT_USAGE
    except KeyboardInterrupt:
        streams.stderr.write("interrupted\n")
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        _quiet_broken_pipe(streams)
        return EXIT_OK
    except Exception as exc:
        if os.environ.get("RESPONSE_TEMPLATES_TRACEBACK"):
            raise
        streams.error(
            f"internal error: {type(exc).__name__}: {exc} -- this is a bug in response-templates; "
            "set RESPONSE_TEMPLATES_TRACEBACK=1 to see the traceback and please report it"
        )
        return EXIT_USAGE
