"""Internal: the ``export`` command: a template as the ``response_template`` of transformers, vLLM or SGLang.

``response-templates export MODEL --for TARGET`` prints the template JSON for the target (a library family,
a model id or a template file), writes it to ``--output FILE``, or sets it in a local model folder's
``tokenizer_config.json`` (``--model-dir DIR``). Approximations are ``warning:`` lines and lossless
changes ``note:`` lines on stderr; ``--strict`` refuses approximations. The export itself is
:mod:`response_templates.export`, imported when the command runs.
"""

from __future__ import annotations

import argparse
import os
from typing import Any

from .shared import EXIT_OK, EXIT_PARSE_ERROR, PROG, CLIError, Streams, template_or_name

__all__ = ["add_export"]


def add_export(subparsers: Any) -> None:
    """The ``export`` command."""
    from ..export import PARSER_FLAGS, TARGET_VERSIONS, TARGETS

    parser = subparsers.add_parser(
        "export",
        help="write a template as the response_template of transformers, vLLM or SGLang",
        description="Export a response template in the vocabulary of another implementation: transformers "
        f"{TARGET_VERSIONS['transformers']}, vLLM {TARGET_VERSIONS['vllm']} (serve with {PARSER_FLAGS['vllm']}) "
        f"or SGLang {TARGET_VERSIONS['sglang']} (serve with {PARSER_FLAGS['sglang']}). The engines vendor "
        "transformers 5.23's parser, so their exports keep to its vocabulary (no python-call-list, no "
        "value_parser_by). What the target cannot express is refused; an approximation is exported with a "
        "warning saying which outputs read differently. See docs/export.md.",
        epilog="exit codes: 0 exported (warnings on stderr); 1 the target cannot express the template (or "
        "--strict and an approximation was needed); 2 usage error, unknown model, unreadable file or invalid "
        "template",
    )
    parser.add_argument(
        "model",
        metavar="MODEL",
        help="library family name, model id (e.g. Qwen/Qwen3-8B) or response-template JSON file (a "
        "tokenizer_config.json with a 'response_template' works too)",
    )
    parser.add_argument(
        "--for", dest="target", required=True, choices=TARGETS, help="the implementation that will read it"
    )
    where = parser.add_mutually_exclusive_group()
    where.add_argument(
        "-o", "--output", metavar="FILE", help="write the template JSON to FILE (default: stdout)"
    )
    where.add_argument(
        "--model-dir",
        metavar="DIR",
        help="set 'response_template' in DIR/tokenizer_config.json, in place (every other key kept)",
    )
    parser.add_argument(
        "--strict",
        action="store_true",
        help="refuse approximations: exit 1 instead of exporting with warnings",
    )
    parser.add_argument(
        "--lenient",
        action="store_true",
        help="for vLLM: keep the lenient delimiter spellings (by default a few families get literal ones, "
        "so that vLLM's beam parser derives its grammar for forced tool choice; see docs/grammar.md)",
    )
    parser.set_defaults(handler=_run_export)


def _source(model: str, streams: Streams) -> Any:
    """A compiled template from a file or model folder, or the name to look up in the library."""
    return template_or_name(model, streams)


def _run_export(args: argparse.Namespace, streams: Streams) -> int:
    from .. import library
    from ..export import ExportError, ModelFolderError, export

    config = os.path.join(args.model_dir, "tokenizer_config.json") if args.model_dir is not None else None
    if config is not None and not os.path.isfile(config) and not os.path.islink(config):
        what = "has no tokenizer_config.json" if os.path.isdir(args.model_dir) else "is not a folder"
        raise CLIError(
            f"--model-dir {args.model_dir!r} {what}: pass the folder of a model's tokenizer (the one "
            "save_pretrained writes), or use --output FILE"
        )
    source = _source(args.model, streams)
    try:
        result = export(source, target=args.target, literal=not args.lenient)
    except library.ExtensionRequiredError as exc:
        raise CLIError(str(exc)) from None
    except library.UnknownModelError as exc:
        raise CLIError(f"{exc} (see '{PROG} list')") from None
    except ExportError as exc:
        streams.error(str(exc))
        return EXIT_PARSE_ERROR
    for note in result.notes:
        streams.stderr.write(f"note: {note}\n")
    for warning in result.warnings:
        streams.warn(str(warning))
    if args.strict and result.warnings:
        streams.error(
            f"--strict: the export to {args.target} needs {len(result.warnings)} approximation(s) (warnings "
            "above); nothing written"
        )
        return EXIT_PARSE_ERROR
    text = result.to_json() + "\n"
    if args.model_dir is not None:
        folder_notes: list[str] = []
        try:
            path = result.update_tokenizer_config(args.model_dir, notes=folder_notes)
        except ModelFolderError as exc:
            raise CLIError(str(exc)) from None
        except OSError as exc:
            raise CLIError(f"cannot update {args.model_dir!r}: {exc.strerror or exc}") from None
        streams.stderr.write(f"updated {path} (response_template for {args.target})\n")
        for note in folder_notes:
            streams.stderr.write(f"note: {note}\n")
    elif args.output is not None and args.output != "-":
        try:
            with open(args.output, "w", encoding="utf-8") as f:
                f.write(text)
        except OSError as exc:
            raise CLIError(f"cannot write {args.output!r}: {exc.strerror or exc}") from None
        streams.stderr.write(f"wrote {args.output} (response_template for {args.target})\n")
    else:
        streams.stdout.write(text)
    return EXIT_OK
