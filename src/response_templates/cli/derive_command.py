"""Internal: the ``derive`` command: a response template derived from a chat template (docs/derive.md).

``response-templates derive CHAT_TEMPLATE|MODEL_DIR`` prints the derived template (``--json``: with its
confidence, evidence and warnings); the derivation itself is :mod:`response_templates.derivation`.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from ..errors import ResponseTemplateError
from .shared import EXIT_OK, EXIT_PARSE_ERROR, CLIError, Streams

__all__ = ["add_derive"]


def add_derive(subparsers: Any) -> None:
    """The ``derive`` command: render probe conversations through a chat template and build the response
    template that reads them back."""
    parser = subparsers.add_parser(
        "derive",
        help="derive a response template from a chat template (a .jinja file or a model folder)",
        description="Render probe conversations (text, reasoning, one and two tool calls, the thinking "
        "switch on and off) through a Jinja chat template, diff them, and print the response template "
        "that reads them back, with its confidence, evidence and warnings (on stderr). The library is not "
        "consulted: use 'detect' for that.",
        epilog="exit codes: 0 a template was derived that reads every probe back; 1 a template was "
        "derived with confidence below 1, or nothing could be derived; 2 usage error or unreadable file. "
        "Needs jinja2 (pip install 'response-templates[verify]').",
    )
    parser.add_argument(
        "chat_template",
        metavar="CHAT_TEMPLATE_FILE|MODEL_DIR",
        help="a .jinja file, or a model folder with chat_template.jinja or tokenizer_config.json",
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object: template, confidence, evidence and warnings",
    )
    parser.add_argument(
        "-o", "--output", metavar="FILE", help="write the template (or --json object) to FILE"
    )
    parser.set_defaults(handler=_run_derive)


def _run_derive(args: argparse.Namespace, streams: Streams) -> int:
    from ..derivation import derive, read_chat_template
    from ..errors import DeriveError

    path = Path(args.chat_template)
    if not path.exists():
        raise CLIError(f"{args.chat_template}: no such file or folder")
    try:
        text, tokens = read_chat_template(path)
    except DeriveError as exc:
        raise CLIError(str(exc)) from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CLIError(f"{args.chat_template}: cannot read: {exc}") from None
    try:
        result = derive(text, special_tokens=tokens)
    except DeriveError as exc:
        streams.error(str(exc))
        return EXIT_PARSE_ERROR
    except ResponseTemplateError as exc:  # jinja2 missing
        raise CLIError(str(exc)) from None
    data: Any = result.to_dict() if args.json else result.template
    body = json.dumps(data, ensure_ascii=False, indent=None if args.json else 2) + "\n"
    if args.output:
        Path(args.output).write_text(body, encoding="utf-8")
    else:
        streams.stdout.write(body)
    if not args.json:
        streams.stderr.write(f"confidence {result.confidence:.2f}\n")
        for warning in result.warnings:
            streams.warn(warning)
    return EXIT_OK if result.confidence >= 1.0 else EXIT_PARSE_ERROR
