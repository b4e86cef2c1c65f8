"""Internal: the ``grammar`` command: a template and a request's tools as a grammar for constrained decoding.

``response-templates grammar MODEL --tools tools.json`` prints the xgrammar structural tag (the
``response_format`` of vLLM and SGLang) as JSON, or with ``--format lark`` the llguidance Lark grammar.
The grammar itself is :mod:`response_templates.grammar`, imported when the command runs.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from .shared import (
    EXIT_OK,
    EXIT_PARSE_ERROR,
    PROG,
    CLIError,
    Streams,
    decode,
    load_tools_file,
    read_bytes,
    template_or_name,
)

__all__ = ["add_grammar"]


def add_grammar(subparsers: Any) -> None:
    """The ``grammar`` command."""
    parser = subparsers.add_parser(
        "grammar",
        help="write the grammar that makes an engine generate what the template reads",
        description="Compile a response template and a request's tools into a grammar for constrained "
        "decoding: an xgrammar structural tag (vLLM and SGLang: response_format / structured_outputs) or an "
        "llguidance Lark grammar (llguidance, llama.cpp built with llguidance). See docs/grammar.md.",
        epilog="exit codes: 0 written; 1 the template's call syntax (or the request) cannot be written as a "
        "grammar (the reason on stderr); 2 usage error, unknown model, unreadable file or invalid template",
    )
    parser.add_argument(
        "model",
        metavar="MODEL",
        help="library family name, model id (e.g. Qwen/Qwen3-8B), response-template JSON file, or a model "
        "folder written as a path (./qwen3: its tokenizer_config.json's response_template)",
    )
    parser.add_argument(
        "--tools",
        metavar="FILE",
        help="JSON file with the request's tools (a list, or an object with a 'tools' list)",
    )
    parser.add_argument(
        "--tool-choice",
        default="auto",
        metavar="auto|required|none|NAME",
        help="auto (default): calls allowed; required: at least one call; none: no call syntax; NAME: only "
        "that tool, at least once",
    )
    parser.add_argument(
        "--no-parallel", action="store_true", help="at most one call (parallel_tool_calls=false)"
    )
    parser.add_argument(
        "--reasoning",
        choices=("allowed", "required", "forbidden"),
        default="allowed",
        help="the reasoning block before the answer (default: allowed)",
    )
    parser.add_argument(
        "--prefix",
        metavar="FILE",
        help="the prompt (a file): when it leaves the reasoning block open, the grammar starts inside it",
    )
    parser.add_argument(
        "--format",
        choices=("structural-tag", "lark"),
        default="structural-tag",
        help="structural-tag (default): xgrammar JSON; lark: llguidance Lark grammar",
    )
    parser.add_argument("-o", "--output", metavar="FILE", help="write the grammar to FILE (default: stdout)")
    parser.set_defaults(handler=_run_grammar)


def _run_grammar(args: argparse.Namespace, streams: Streams) -> int:
    from .. import library
    from ..grammar import GrammarError, build

    model: Any = template_or_name(args.model, streams)
    tools = load_tools_file(args.tools, streams) if args.tools else []
    prefix = (
        decode(read_bytes(args.prefix, "prefix file", streams), args.prefix, "prefix file")
        if args.prefix
        else None
    )
    try:
        grammar = build(
            model,
            tools=tools,
            tool_choice=args.tool_choice,
            parallel_tool_calls=not args.no_parallel,
            reasoning=args.reasoning,
            prefix=prefix,
        )
    except library.ExtensionRequiredError as exc:
        raise CLIError(str(exc)) from None
    except library.UnknownModelError as exc:
        raise CLIError(f"{exc} (see '{PROG} list')") from None
    except GrammarError as exc:
        streams.error(str(exc))
        return EXIT_PARSE_ERROR
    if args.format == "lark":
        text = grammar.lark
    else:
        text = json.dumps(grammar.structural_tag, ensure_ascii=False, indent=2) + "\n"
    if args.output is not None and args.output != "-":
        try:
            with open(args.output, "w", encoding="utf-8") as f:
                f.write(text)
        except OSError as exc:
            raise CLIError(f"cannot write {args.output!r}: {exc.strerror or exc}") from None
    else:
        streams.stdout.write(text)
    return EXIT_OK
