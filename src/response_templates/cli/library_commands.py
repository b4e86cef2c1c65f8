"""Internal: the commands about the built-in library: ``list``, ``show``, ``detect``, ``verify``, ``lint``.

Also the lookups the other commands share: :func:`library_template` (``parse --model``) and
:func:`family_arg` (a family name given on the command line). The library, the round-trip check and
the linter are imported when a command runs, so ``response-templates --help`` stays fast.
"""

from __future__ import annotations

import argparse
import json
import os
from typing import Any

from ..language import ResponseTemplate
from .shared import (
    EXIT_OK,
    EXIT_PARSE_ERROR,
    PROG,
    CLIError,
    Streams,
    decode,
    dump_line,
    load_template_file,
    read_bytes,
    read_json,
)

__all__ = [
    "add_detect",
    "add_lint",
    "add_list",
    "add_show",
    "add_verify",
    "family_arg",
    "library_template",
    "read_chat_template",
]


def library_template(model: str) -> ResponseTemplate:
    """The built-in template for ``--model``: a model id, else a family name; :class:`CLIError` otherwise."""
    from .. import library

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


def family_arg(name: str) -> Any:
    """The library family called ``name`` (or an alias); :class:`CLIError` pointing at ``list --all``."""
    from .. import library

    try:
        return library.family(name)
    except library.UnknownModelError as exc:
        raise CLIError(f"{exc} (see '{PROG} list')") from None


def read_chat_template(path: str, streams: Streams) -> str:
    """A chat template from a .jinja file or a tokenizer_config.json (its 'chat_template')."""
    text = decode(read_bytes(path, "chat template", streams), path, "chat template")
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


# ------------------------------------------------------------------------------------------------- list


def add_list(subparsers: Any) -> None:
    """The ``list`` command: the families of the library, as a table or JSON lines."""
    parser = subparsers.add_parser(
        "list",
        help="list the model families of the built-in library",
        description="List the model families of the built-in library: name, status, title. A family "
        "whose format needs a template-language extension has no template; its status says which.",
    )
    # Every family is listed (one without a template says so in its status); --all once added those.
    parser.add_argument("--all", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--json", action="store_true", help="print JSON lines instead of a table")
    parser.set_defaults(handler=_run_list)


def _run_list(args: argparse.Namespace, streams: Streams) -> int:
    from .. import library

    if args.all:
        streams.warn("--all is no longer needed: 'list' shows every family; it will be removed")
    fams = library.families()
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
            dump_line(record, out)
        return EXIT_OK
    width = max(len(f.name) for f in fams)
    for fam in fams:
        status = fam.status + (f" ({', '.join(fam.needs)})" if fam.needs else "")
        shares = f" [= {fam.same_format_as}]" if fam.same_format_as else ""
        out.write(f"{fam.name:<{width}}  {status:<28} {fam.title}{shares}\n")
    return EXIT_OK


# ------------------------------------------------------------------------------------------------- show


def add_show(subparsers: Any) -> None:
    """The ``show`` command: one family's data, or only its response template, as JSON."""
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
    fam = family_arg(args.name)
    if args.template:
        data: Any = fam.template_dict()
    else:
        data = fam.to_dict()
        if fam.same_format_as:
            data["template"] = fam.template_dict()
    streams.stdout.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    return EXIT_OK


# ----------------------------------------------------------------------------------------------- detect


def add_detect(subparsers: Any) -> None:
    """The ``detect`` command: which family a chat template belongs to."""
    parser = subparsers.add_parser(
        "detect",
        help="name the library family of a chat template",
        description="Identify the model family of a Jinja chat template (a .jinja file or a "
        "tokenizer_config.json) by its fingerprint or markers.",
        epilog='exit codes: 0 recognized; 1 unknown (near matches on stderr; with --json, {"name": null, '
        '..., "near_matches": [...]} on stdout); 2 unreadable file',
    )
    parser.add_argument("chat_template", metavar="CHAT_TEMPLATE_FILE")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.set_defaults(handler=_run_detect)


def _run_detect(args: argparse.Namespace, streams: Streams) -> int:
    from .. import library

    text = read_chat_template(args.chat_template, streams)
    try:
        fam = library.detect_family(text)
    except library.UnknownModelError as exc:
        if args.json:  # stdout always holds the answer: here, that no family fits
            unknown = dict.fromkeys(("name", "title", "status", "matched_by"))
            dump_line({**unknown, "confidence": 0.0, "near_matches": exc.near_matches}, streams.stdout)
        streams.error(str(exc))
        return EXIT_PARSE_ERROR
    best = next((c for c in library.detect_all(text) if c.family.name == fam.name), None)
    how = best.matched_by if best is not None else "markers"
    confidence = best.confidence if best is not None else 0.0
    if args.json:
        line = {"name": fam.name, "title": fam.title, "status": fam.status, "matched_by": how}
        dump_line({**line, "confidence": confidence}, streams.stdout)
    else:
        streams.stdout.write(
            f"{fam.name}\t{fam.title} ({fam.status}; matched by {how}, confidence {confidence:.2f})\n"
        )
        if not fam.has_template:
            streams.warn(f"{fam.name} has no template yet: its format needs {', '.join(fam.needs)}")
    return EXIT_OK


# ----------------------------------------------------------------------------------------------- verify


def add_verify(subparsers: Any) -> None:
    """The ``verify`` command: round trip of a response template against a chat template."""
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
    from .. import library, verify

    text = read_chat_template(args.chat_template, streams)
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
        fam = family_arg(args.template)
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


# ------------------------------------------------------------------------------------------------- lint


def add_lint(subparsers: Any) -> None:
    """The ``lint`` command: portability rules and suspicious patterns of a response template."""
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
    from ..lint import lint

    chat_template: str | None = None
    if not os.path.exists(args.template) and not args.template.endswith(".json"):
        data: Any = family_arg(args.template).template_dict()
    else:
        data = read_json(args.template, "template", streams)
        if isinstance(data, dict) and "fields" not in data and "response_template" in data:
            # a tokenizer_config.json: its chat template shows whether the prompt holds the start anchor
            found = data.get("chat_template")
            chat_template = found if isinstance(found, str) else None
            data = data["response_template"]
    issues = lint(data, chat_template=chat_template)
    for issue in issues:
        if args.json:
            dump_line(issue.to_dict(), streams.stdout)
        else:
            streams.stdout.write(f"{issue}\n")
    if not args.json:  # the summary is part of the report, on stdout with it
        counts = {level: sum(i.level == level for i in issues) for level in ("error", "warning", "note")}
        streams.stdout.write(
            ", ".join(f"{n} {level}{'s' if n != 1 else ''}" for level, n in counts.items()) + "\n"
        )
    return EXIT_PARSE_ERROR if any(i.level in ("error", "warning") for i in issues) else EXIT_OK
