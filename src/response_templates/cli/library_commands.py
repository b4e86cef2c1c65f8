"""Internal: the commands about the built-in library: ``list``, ``show``, ``detect``, ``verify``, ``lint``.

Also the lookups the other commands share: :func:`library_template` (``parse --model``) and
:func:`family_arg` (a family name given on the command line). The library, the round-trip check and
the linter are imported when a command runs, so ``response-templates --help`` stays fast.

With ``--json`` every command prints JSON lines: one JSON object per line, one line per thing it reports
on (``list``: a family, ``detect``: a chat-template file, ``lint``: the template, ``verify``: the report),
so a command about one input prints exactly one line, which is a JSON document as well.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from ..language import ResponseTemplate
from .shared import (
    EXIT_OK,
    EXIT_PARSE_ERROR,
    EXIT_USAGE,
    PROG,
    CLIError,
    Streams,
    dump_line,
    find_chat_template,
    template_source,
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


def family_arg(name: str, *, model_ids: bool = False) -> Any:
    """The library family called ``name`` (or an alias; with ``model_ids``, also the family of a model id);
    :class:`CLIError` pointing at ``list``."""
    from .. import library

    try:
        return library.family_or_model(name) if model_ids else library.family(name)
    except library.UnknownModelError as exc:
        raise CLIError(f"{exc} (see '{PROG} list')") from None


def read_chat_template(path: str, streams: Streams) -> str:
    """A chat template from a .jinja file, a tokenizer_config.json or chat_template.json (its
    'chat_template'), or a model folder (see :func:`~.shared.find_chat_template`)."""
    return find_chat_template(path, streams)


def _extensions(codes: Any) -> dict[str, str]:
    """What each extension code (``E1`` ...) in ``codes`` stands for."""
    from .. import library

    return {code: library.EXTENSIONS.get(code, "?") for code in codes}


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
    parser.add_argument(
        "--json", action="store_true", help="print one JSON object per line (per family) instead of a table"
    )
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
            record["extension_codes"] = _extensions(fam.needs)
            dump_line(record, out)
        return EXIT_OK
    width = max(len(f.name) for f in fams)
    status_width = max(len(f.status) for f in fams)
    for fam in fams:
        shares = f" [same format as {fam.same_format_as}]" if fam.same_format_as else ""
        needs = [library.EXTENSIONS.get(code, code).split(":")[0] for code in fam.needs]
        plural = "s" if len(needs) > 1 else ""
        missing = f" [needs the extension{plural} {', '.join(needs)}]" if needs else ""
        out.write(f"{fam.name:<{width}}  {fam.status:<{status_width}}  {fam.title}{shares}{missing}\n")
    return EXIT_OK


# ------------------------------------------------------------------------------------------------- show


def add_show(subparsers: Any) -> None:
    """The ``show`` command: one family's data, or only its response template, as JSON."""
    parser = subparsers.add_parser(
        "show",
        help="show one family of the library (its data file, or only its template)",
        description="Print a library family as JSON: metadata and response template. With --template, only "
        "the response template (ready to save as a file or put into tokenizer_config.json). The codes in "
        "'needs', 'would_use' and 'uses' (E1-E9) name template-language extensions: 'extension_codes' "
        "says what each one is.",
    )
    parser.add_argument("name", metavar="NAME", help="family name, alias or model id (see 'list')")
    parser.add_argument("--template", action="store_true", help="print only the response template")
    parser.set_defaults(handler=_run_show)


def _run_show(args: argparse.Namespace, streams: Streams) -> int:
    fam = family_arg(args.name, model_ids=True)
    if args.template:
        data: Any = fam.template_dict()
    else:
        data = fam.to_dict()
        data.pop("formats_md", None)  # a row of the project's research notes, not shipped with the package
        if fam.same_format_as:
            data["template"] = fam.template_dict()
        codes = dict.fromkeys(code for key in ("needs", "would_use", "uses") for code in data.get(key, []))
        if codes:
            data["extension_codes"] = _extensions(codes)
    streams.stdout.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    return EXIT_OK


# ----------------------------------------------------------------------------------------------- detect


def add_detect(subparsers: Any) -> None:
    """The ``detect`` command: which family a chat template belongs to."""
    parser = subparsers.add_parser(
        "detect",
        help="name the library family of a chat template",
        description="Identify the model family of Jinja chat templates by their fingerprint or markers. "
        "Each argument is a .jinja file, a tokenizer_config.json or chat_template.json (its "
        "'chat_template': a string, or a list of named templates, of which 'default' is read), or a "
        "model folder, where the chat template is looked for in chat_template.jinja (transformers 5), "
        "then tokenizer_config.json, then chat_template.json. A tokenizer_config.json without one is read "
        "through the chat_template.jinja beside it. With several arguments each line starts with the file.",
        epilog="exit codes: 0 every chat template recognized; 1 some unknown (near matches on stderr); 2 "
        "some file unreadable (the others are still reported). With --json, one JSON object per line and "
        'argument, always with the same keys: {"file", "name", "title", "status", "matched_by", '
        '"confidence", "near_matches", "error"}; "name" is null for an unknown chat template (the near '
        'matches listed) and for an unreadable file ("error" says why; null otherwise).',
    )
    parser.add_argument("chat_template", metavar="CHAT_TEMPLATE", nargs="+", help="file or model folder")
    parser.add_argument("--json", action="store_true", help="print one JSON object per line (per file)")
    parser.set_defaults(handler=_run_detect)


def _run_detect(args: argparse.Namespace, streams: Streams) -> int:
    from .. import library

    several = len(args.chat_template) > 1
    code = EXIT_OK
    empty = dict.fromkeys(("name", "title", "status", "matched_by"))
    for path in args.chat_template:
        where = f"{path}: " if several else ""
        try:
            text = read_chat_template(path, streams)
        except CLIError as exc:
            if args.json:
                line = {"file": path, **empty, "confidence": 0.0, "near_matches": [], "error": exc.message}
                dump_line(line, streams.stdout)
            streams.error(exc.message)
            code = max(code, EXIT_USAGE)
            continue
        try:
            fam = library.detect_family(text)
        except library.UnknownModelError as exc:
            if args.json:  # stdout always holds the answer: here, that no family fits
                line = {"file": path, **empty, "confidence": 0.0, "near_matches": exc.near_matches}
                dump_line({**line, "error": None}, streams.stdout)
            streams.error(f"{where}{exc}")
            code = max(code, EXIT_PARSE_ERROR)
            continue
        best = next((c for c in library.detect_all(text) if c.family.name == fam.name), None)
        how = best.matched_by if best is not None else "markers"
        confidence = best.confidence if best is not None else 0.0
        if args.json:
            line = {"file": path, "name": fam.name, "title": fam.title, "status": fam.status}
            line.update(matched_by=how, confidence=confidence, near_matches=[], error=None)
            dump_line(line, streams.stdout)
        else:
            prefix = f"{path}\t" if several else ""
            streams.stdout.write(
                f"{prefix}{fam.name}\t{fam.title} ({fam.status}; matched by {how}, confidence {confidence:.2f})\n"
            )
        if not fam.has_template:
            needs = ", ".join(f"{c} ({library.EXTENSIONS.get(c, '?')})" for c in fam.needs)
            streams.warn(f"{where}{fam.name} has no template yet: its format needs {needs}")
    return code


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
    parser.add_argument(
        "chat_template",
        metavar="CHAT_TEMPLATE",
        help="a .jinja file, a tokenizer_config.json or a model folder",
    )
    parser.add_argument(
        "-t",
        "--template",
        metavar="NAME|FILE",
        help="library family name or model id, response-template JSON file, or model folder (see 'lint')",
    )
    parser.add_argument(
        "--kwargs",
        metavar="JSON",
        help="chat-template variables for every case, e.g. '{\"enable_thinking\": true}'",
    )
    parser.add_argument("--json", action="store_true", help="print the report as one JSON object (one line)")
    parser.add_argument(
        "--derived",
        action="store_true",
        help="also derive a template from the chat template (docs/derive.md) and list where the template "
        "checked differs from it: what the template adds beyond what the chat template shows",
    )
    parser.set_defaults(handler=_run_verify)


def _derived_differences(text: str, template: Any) -> list[str]:
    """``verify --derived``: where ``template`` and the one derived from the chat template ``text`` differ."""
    from ..derivation.fallback import differences
    from ..errors import DeriveError
    from ..templates import derive

    try:
        derived = derive(text)
    except DeriveError as exc:
        return [f"nothing could be derived: {exc}"]
    return differences(template.to_dict(), derived.template) or [
        "none: the derived template has the same markers"
    ]


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
    else:
        source = template_source(args.template, streams)
        if source.name is not None:
            fam = family_arg(source.name, model_ids=True)
        else:
            template = source.compile()
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
    derived = _derived_differences(text, template) if args.derived else None
    out = streams.stdout
    if args.json:
        data = report.to_dict()
        data["known_issues"] = known
        if derived is not None:
            data["derived_differences"] = derived
        out.write(json.dumps(data, ensure_ascii=False, default=str) + "\n")
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
        if derived is not None:
            out.write("differences from the template derived from the chat template:\n")
            out.writelines(f"  {line}\n" for line in derived)
    return EXIT_PARSE_ERROR if unexpected else EXIT_OK


# ------------------------------------------------------------------------------------------------- lint


def add_lint(subparsers: Any) -> None:
    """The ``lint`` command: portability rules and suspicious patterns of a response template."""
    parser = subparsers.add_parser(
        "lint",
        help="check a response template for portability problems and suspicious patterns",
        description="Report the portability rules of docs/spec.md, section 10 (backreferences, atomic groups, "
        "possessive quantifiers, recursion; lookarounds as a note), suspicious delimiters and extension use. "
        "TEMPLATE is a JSON file (a tokenizer_config.json with a 'response_template' works too), a library "
        "family name or model id, or a model folder written as a path (./qwen3/): a folder called like a "
        "family (qwen3/ in the working directory) does not hide the library's family.",
        epilog="exit codes: 0 no errors or warnings (notes only); 1 errors or warnings; 2 unreadable file. "
        'With --json, one JSON object: {"template", "issues": [{"level", "rule", "message", ...}], '
        '"errors", "warnings", "notes"}.',
    )
    parser.add_argument(
        "template",
        metavar="TEMPLATE",
        help="response template JSON file, library family name or model folder",
    )
    parser.add_argument("--json", action="store_true", help="print the report as one JSON object (one line)")
    parser.set_defaults(handler=_run_lint)


def _run_lint(args: argparse.Namespace, streams: Streams) -> int:
    from ..lint import lint

    source = template_source(args.template, streams)
    if source.name is not None:
        data: Any = family_arg(source.name, model_ids=True).template_dict()
    else:
        data = source.data
    issues = lint(data, chat_template=source.chat_template)
    counts = {level: sum(i.level == level for i in issues) for level in ("error", "warning", "note")}
    if args.json:
        report: dict[str, Any] = {"template": args.template, "issues": [i.to_dict() for i in issues]}
        dump_line({**report, **{f"{level}s": n for level, n in counts.items()}}, streams.stdout)
    else:
        for issue in issues:
            streams.stdout.write(f"{issue}\n")
        # the summary is part of the report, on stdout with it
        streams.stdout.write(
            ", ".join(f"{n} {level}{'s' if n != 1 else ''}" for level, n in counts.items()) + "\n"
        )
    return EXIT_PARSE_ERROR if counts["error"] or counts["warning"] else EXIT_OK
