"""The command-line interface: the ``response-templates`` script and ``python -m response_templates``.

Commands:

* ``demo`` -- stream a bundled Qwen3 generation through the parser and print every event.
* ``parse`` -- parse one model output with a template file (or ``--model MODEL_ID``: the built-in template of
  the model's family); print the message as JSON (``--stream``: every event as a JSON line, then the message).
  With ``--jsonl FILE`` (or ``--parquet FILE``): every record of the file, one JSON line each, on ``-j N``
  processes, ``--resume`` to skip what ``-o OUT`` holds.
* ``list`` / ``show NAME`` -- the model families of the built-in library; one family's data or template.
* ``detect CHAT_TEMPLATE...`` -- which library family each chat template (a file or a model folder) belongs to.
* ``verify CHAT_TEMPLATE [--template NAME|FILE]`` -- round-trip check of a response template against a
  chat template (needs jinja2).
* ``lint TEMPLATE`` -- portability rules and suspicious patterns of a response template.
* ``derive CHAT_TEMPLATE_FILE|MODEL_DIR [--json] [-o FILE]`` -- a response template derived from a chat
  template by rendering probe conversations (needs jinja2; docs/derive.md).

A template argument (``lint``, ``verify -t``, ``export``, ``grammar``) is read by one rule
(:func:`.shared.template_source`): a file, a folder written as a path, or else a library name. ``--json``
prints JSON lines (one object per thing reported on) in every command that has it.
* ``export MODEL --for transformers|vllm|sglang [--output FILE | --model-dir DIR]`` -- a template (family,
  model id or file) as the ``response_template`` another implementation reads; ``--model-dir`` sets it in a
  local model folder's ``tokenizer_config.json``.
* ``grammar MODEL --tools FILE [--tool-choice ...] [--no-parallel] [--reasoning ...] [--prefix FILE]
  [--format structural-tag|lark]`` -- the grammar that makes an engine generate what the template reads.
* ``serve --upstream URL --model MODEL [--model-dir DIR | --chat-template FILE] ...`` -- an OpenAI- and
  Anthropic-compatible server in front of an engine's ``/v1/completions`` (:mod:`response_templates.serve`;
  needs the ``serve`` extra).

Exit codes: 0 success; 1 the model output does not fit the template (a parse error), or another command's
negative answer (``detect``: no family, ``verify``: a case failed, ``lint``: errors or warnings); 2 the
run could not start or its input could not be read (usage error, unreadable file, model output that is
not UTF-8, invalid template or tools, a missing optional dependency); 3 ``parse --jsonl``: some records failed (the run went on; their
result lines say why); 4, 5, 6 ``parse --jsonl`` stopped early (the output could not be written, the input
could not be read to its end, a worker died; the lines written are kept); 130 interrupted; 143 terminated
(SIGTERM, ``parse --jsonl``). Errors are one
``error: ...`` line on stderr, never a traceback; stdout carries only results, so it can be piped.

Adding a command: write a function that takes the ``subparsers`` object, adds a sub-parser and sets its
``handler`` with ``set_defaults``, and append it to :data:`COMMANDS`. A handler takes
``(args, streams)`` and returns an exit code; it raises :class:`CLIError` for problems the user must fix
before anything can run. Library errors that escape a handler are mapped to exit codes by :func:`main`
(``ParseError`` -> 1, any other ``ResponseTemplateError`` -> 2). The helpers ``add_template_argument``,
``add_prefix_arguments``, ``add_tools_argument`` and their ``load_*`` / ``resolve_*`` partners give every
command the same options with the same checks.

This package holds the entry point (:func:`main`, :func:`build_parser`, :data:`COMMANDS`); the pieces
live in internal submodules: ``shared`` (exit codes, :class:`CLIError`, :class:`Streams`, file reading,
the common options), ``parse_command`` (``parse``, ``demo``), ``batch_command`` (``parse --jsonl``), ``library_commands`` (``list``, ``show``,
``detect``, ``verify``, ``lint``), ``export_command`` (``export``) and ``grammar_command`` (``grammar``).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from .. import __version__
from ..errors import ParseError, ResponseTemplateError
from ..serve import command as serve_command
from ..serve.config import ConfigError
from ..whole import parse_response
from .derive_command import add_derive
from .export_command import add_export
from .grammar_command import add_grammar
from .library_commands import add_detect, add_lint, add_list, add_show, add_verify, library_template
from .parse_command import add_demo, add_parse, run_parse
from .shared import (
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_PARSE_ERROR,
    EXIT_USAGE,
    PROG,
    CLIError,
    Streams,
    add_prefix_arguments,
    add_template_argument,
    add_tools_argument,
    error_record,
    load_template_file,
    load_tools_file,
    resolve_prefix,
    template_or_name,
)

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


class _ArgumentParser(argparse.ArgumentParser):
    """An argparse parser that raises :class:`CLIError` instead of exiting, so ``main`` stays in charge."""

    commands: dict[str, _ArgumentParser] | None = None  # the top-level parser's sub-parsers

    def error(self, message: str) -> NoReturn:
        raise CLIError(f"{message} (see '{self.prog} --help')", usage=self.format_usage())


def _add_parse(subparsers: Any) -> None:
    add_parse(subparsers, handler=_run_parse)


def _run_parse(args: argparse.Namespace, streams: Streams) -> int:
    # ``parse_response`` is looked up in this module when the command runs, so replacing
    # ``cli.parse_response`` replaces the parse of a whole output (the tests use it to raise from a handler).
    return run_parse(args, streams, parse=parse_response)


def _add_serve(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "serve", help=serve_command.HELP, description=serve_command.DESCRIPTION, epilog=serve_command.EPILOG
    )
    serve_command.add_arguments(parser)
    parser.set_defaults(handler=_run_serve)


def _run_serve(args: argparse.Namespace, streams: Streams) -> int:
    template = template_or_name(args.template, streams) if args.template is not None else None
    try:
        serve_command.run(args, template, streams.stderr)
    except ConfigError as exc:
        raise CLIError(str(exc)) from None
    return EXIT_OK


# ------------------------------------------------------------------------------------------------- main

#: Functions that add one sub-command each (see the module docstring).
COMMANDS: list[Callable[[Any], None]] = [
    add_demo,
    _add_parse,
    add_list,
    add_show,
    add_detect,
    add_verify,
    add_lint,
    add_derive,
    add_export,
    add_grammar,
    _add_serve,
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
        args.argv = list(sys.argv[1:] if argv is None else argv)  # e.g. the --resume hint of parse --jsonl
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
