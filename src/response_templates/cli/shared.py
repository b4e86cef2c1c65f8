"""Internal: what every command of the command line shares.

Exit codes, :class:`CLIError` and :class:`Streams`, reading files (stdin for ``-``) with one error
message per problem, the ``--template`` / ``--prefix`` / ``--tools`` options with their ``load_*`` /
``resolve_*`` partners, and JSON-line output. :mod:`response_templates.cli` re-exports the public names.
"""

from __future__ import annotations

import argparse
import codecs
import json
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import IO, Any, TextIO

from ..errors import ResponseTemplateError, TemplateError
from ..language import ResponseTemplate, load_template
from ..policy import anchor_not_found
from ..tools import tool_parameters

__all__ = [
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_PARSE_ERROR",
    "EXIT_USAGE",
    "PREFIX_MISSING",
    "PROG",
    "CLIError",
    "Streams",
    "TemplateSource",
    "add_prefix_arguments",
    "add_template_argument",
    "add_tools_argument",
    "decode",
    "decode_pieces",
    "dump_line",
    "error_record",
    "find_chat_template",
    "load_template_file",
    "load_tools_file",
    "read_bytes",
    "read_json",
    "resolve_prefix",
    "template_or_name",
    "template_source",
]

#: The program name in usage lines and hints.
PROG = "response-templates"

#: Exit codes (see the docstring of :mod:`response_templates.cli`).
EXIT_OK = 0
EXIT_PARSE_ERROR = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130

#: Why ``parse`` needs one of ``--prefix``, ``--prefix-text`` and ``--no-prefix``.
PREFIX_MISSING = (
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
    """Where a command reads and writes (the real ``sys`` streams, resolved when ``main`` runs)."""

    stdin: TextIO
    stdout: TextIO
    stderr: TextIO

    def warn(self, message: str) -> None:
        """Write a ``warning: ...`` line to stderr."""
        self.stderr.write(f"warning: {message}\n")

    def error(self, message: str) -> None:
        """Write an ``error: ...`` line to stderr."""
        self.stderr.write(f"error: {message}\n")


# ------------------------------------------------------------------------------------------ reading


def read_bytes(path: str, what: str, streams: Streams) -> bytes:
    """The whole of ``path`` (``-``: stdin); :class:`CLIError` naming the ``what`` if it cannot be read."""
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


def _not_utf8(path: str, what: str, offset: int) -> CLIError:
    source = "stdin" if path == "-" else repr(path)
    hint = " (parse --errors keep replaces invalid bytes with U+FFFD)" if what == "model output" else ""
    return CLIError(f"the {what} ({source}) is not valid UTF-8 at byte {offset}{hint}")


def decode(data: bytes, path: str, what: str) -> str:
    """``data`` as UTF-8; :class:`CLIError` (exit code 2: an unreadable input) at the first bad byte."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _not_utf8(path, what, exc.start) from None


def decode_pieces(pieces: Iterable[str | bytes], path: str, what: str) -> Iterator[str]:
    """:func:`decode` for input read piece by piece (a character may be split between pieces)."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    offset = 0  # bytes decoded before the current piece
    for piece in pieces:
        if isinstance(piece, str):
            yield piece
            continue
        try:
            text = decoder.decode(piece)
        except UnicodeDecodeError as exc:
            held = len(decoder.getstate()[0])
            raise _not_utf8(path, what, offset - held + exc.start) from None
        offset += len(piece)
        yield text
    try:
        decoder.decode(b"", final=True)
    except UnicodeDecodeError as exc:
        raise _not_utf8(path, what, offset - len(exc.object) + exc.start) from None


def read_json(path: str, what: str, streams: Streams) -> Any:
    """The JSON document in ``path`` (a leading byte-order mark is allowed)."""
    text = decode(read_bytes(path, what, streams), path, what)
    try:
        return json.loads(text.removeprefix("\ufeff"))
    except json.JSONDecodeError as exc:
        raise CLIError(f"the {what} {path!r} is not valid JSON: {exc}") from None
    except RecursionError:
        raise CLIError(f"the {what} {path!r} is nested too deeply to read") from None


# ------------------------------------------------------------------------------- shared option helpers


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


# ------------------------------------------------------------------------------- template arguments

#: The files of a model folder that can hold its chat template, in the order they are looked at:
#: transformers 5 writes ``chat_template.jinja`` (and reads it before tokenizer_config.json's
#: ``chat_template``); processors write ``chat_template.json``.
CHAT_TEMPLATE_FILES = ("chat_template.jinja", "tokenizer_config.json", "chat_template.json")


@dataclass
class TemplateSource:
    """What a command's template argument names: a library name to look up, or template data from a file.

    ``name`` is set for a family name or model id (nothing was read); otherwise ``data`` is the template
    data read from ``path`` (a JSON file, a tokenizer_config.json or a model folder) and ``chat_template``
    the chat template found with it, if any.
    """

    name: str | None = None
    data: Any = None
    path: str | None = None
    chat_template: str | None = None

    def compile(self) -> ResponseTemplate:
        """The template read from the file, compiled; :class:`CLIError` naming the file if it is invalid."""
        try:
            return load_template(self.data)
        except TemplateError as exc:
            raise CLIError(f"invalid template {self.path!r}: {exc}") from None


def _written_as_path(arg: str) -> bool:
    """Whether an argument can only be a path: ``./x``, ``../x``, ``/x``, ``~/x`` or ending in a slash."""
    seps = tuple({"/", os.sep})
    return arg.startswith(("./", "../", "~", *seps, *(f".{sep}" for sep in seps))) or arg.endswith(seps)


def _library_knows(name: str) -> bool:
    from .. import library

    try:
        library.family_or_model(name)
    except library.UnknownModelError:
        return False
    return True


def template_source(arg: str, streams: Streams) -> TemplateSource:
    """What the template argument ``arg`` of a command (``export``, ``grammar``, ``lint``, ``verify -t``) is.

    The one rule every command follows:

    * an existing file, ``-`` (stdin) or a name ending in ``.json``: a template file (or a
      tokenizer_config.json with a ``response_template``);
    * a folder written as a path (``./qwen3``, ``qwen3/``, ``/models/qwen3``, ``~/qwen3``): a model folder,
      whose tokenizer_config.json holds the ``response_template``;
    * any other word: a library family name, alias or model id -- also when a folder of that name is in
      the working directory (``qwen3`` with a ``qwen3/`` beside it: the meaning of a command does not
      depend on the folder it runs in; a note on stderr says how to name the folder when it holds a
      template). A folder whose name the library does not know is read as a model folder.
    """
    if arg != "-" and os.path.isdir(arg):
        if _written_as_path(arg) or not _library_knows(arg):
            return _model_folder(arg, streams)
        if _folder_template(arg) is not None:
            streams.stderr.write(
                f"note: {arg!r} is read as the library's family; for the template in the folder "
                f"{arg}/, write it as a path: ./{arg}\n"
            )
        return TemplateSource(name=arg)
    if arg == "-" or os.path.exists(arg) or arg.endswith(".json"):
        return _template_file(arg, streams)
    return TemplateSource(name=arg)


def _folder_template(folder: str) -> Any:
    """The ``response_template`` of a folder's tokenizer_config.json, if it has one (None otherwise)."""
    try:
        with open(os.path.join(folder, "tokenizer_config.json"), "rb") as f:
            data = json.loads(f.read())
    except (OSError, ValueError, RecursionError):
        return None
    return data.get("response_template") if isinstance(data, dict) else None


def template_or_name(arg: str, streams: Streams) -> ResponseTemplate | str:
    """The compiled template a file or folder argument holds, or the name to look up in the library."""
    source = template_source(arg, streams)
    return source.name if source.name is not None else source.compile()


def _chat_template_beside(config: str, data: dict[str, Any], streams: Streams) -> str | None:
    """The chat template that goes with a tokenizer_config.json (its own, else its folder's), if any:
    ``lint`` checks that its generation prompt holds the start anchor."""
    try:
        if os.path.basename(config) == CHAT_TEMPLATE_FILES[1]:
            return find_chat_template(os.path.dirname(config) or ".", streams)
        return _chat_template_value(data.get("chat_template"), config)
    except CLIError:
        return None


def _template_file(path: str, streams: Streams) -> TemplateSource:
    data = read_json(path, "template", streams)
    chat_template: str | None = None
    if isinstance(data, dict) and "fields" not in data and "response_template" in data:
        # a tokenizer_config.json
        chat_template = None if path == "-" else _chat_template_beside(path, data, streams)
        data = data["response_template"]
        if data is None:
            raise CLIError(f"the template file {path!r} has 'response_template': null (no template set)")
    return TemplateSource(data=data, path=path, chat_template=chat_template)


def _model_folder(folder: str, streams: Streams) -> TemplateSource:
    config = os.path.join(folder, "tokenizer_config.json")
    if not os.path.isfile(config):
        raise CLIError(
            f"{folder!r} is a folder, not a template file, and holds no tokenizer_config.json: pass a "
            f"template file, a library family name or model id (see '{PROG} list'), or a model folder"
        )
    data = read_json(config, "tokenizer config", streams)
    template = data.get("response_template") if isinstance(data, dict) else None
    if template is None:
        raise CLIError(
            f"the model folder {folder!r} has no response_template in its tokenizer_config.json: pass a "
            f"library family name ('{PROG} detect {folder}' names the family of its chat template), or "
            f"write one into it with '{PROG} export NAME --model-dir {folder}'"
        )
    return TemplateSource(
        data=template, path=config, chat_template=_chat_template_beside(config, data, streams)
    )


def load_template_file(path: str, streams: Streams) -> ResponseTemplate:
    """Read and compile a template file (or the ``response_template`` of a tokenizer_config.json or of a
    model folder); :class:`CLIError` (exit 2) naming the file if anything is wrong."""
    source = _model_folder(path, streams) if os.path.isdir(path) else _template_file(path, streams)
    return source.compile()


def _chat_template_value(value: Any, where: str) -> str | None:
    """The chat template in a JSON ``chat_template`` value: a string, or a list of named templates
    (the one named ``default``, else the first); None when there is none."""
    if value is None:
        return None
    if isinstance(value, list):
        named = {item.get("name"): item.get("template") for item in value if isinstance(item, dict)}
        value = named.get("default") or next(iter(named.values()), None)
    if not isinstance(value, str):
        raise CLIError(f"the chat_template in {where!r} is not a string")
    return value


def _read_chat_template_file(path: str, streams: Streams) -> str | None:
    """The chat template of one file: a Jinja file's text, or the ``chat_template`` of a JSON object
    (tokenizer_config.json, chat_template.json), None when that object has none."""
    where = "stdin" if path == "-" else path
    text = decode(read_bytes(path, "chat template", streams), path, "chat template")
    stripped = text.lstrip("\ufeff").lstrip()
    if path.endswith(".jinja") or not stripped.startswith("{") or stripped.startswith(("{%", "{{", "{#")):
        return text
    try:
        data = json.loads(stripped)
    except (json.JSONDecodeError, RecursionError):
        return text  # a Jinja template that starts with a brace
    if not isinstance(data, dict):
        return text
    return _chat_template_value(data.get("chat_template"), where)


def find_chat_template(path: str, streams: Streams) -> str:
    """The chat template in ``path``, where transformers keeps it.

    ``path`` is a .jinja file, a JSON file with a ``chat_template`` (a string or a list of named
    templates: ``default``, else the first), or a model folder: its chat_template.jinja (where
    transformers 5 saves it, and which it reads first), else the ``chat_template`` of its
    tokenizer_config.json, else chat_template.json. A tokenizer_config.json without one is read through
    the chat_template.jinja beside it. :class:`CLIError` saying where it looked when there is none.
    """
    if path != "-" and os.path.isdir(path):
        for name in CHAT_TEMPLATE_FILES:
            candidate = os.path.join(path, name)
            if os.path.isfile(candidate):
                found = _read_chat_template_file(candidate, streams)
                if found is not None:
                    return found
        raise CLIError(
            f"no chat template in the model folder {path!r}: looked for {CHAT_TEMPLATE_FILES[0]}, the "
            f"'chat_template' of {CHAT_TEMPLATE_FILES[1]} and {CHAT_TEMPLATE_FILES[2]}"
        )
    found = _read_chat_template_file(path, streams)
    if found is not None:
        return found
    if path == "-":
        raise CLIError("the JSON object on stdin has no chat_template")
    beside = os.path.join(os.path.dirname(path), CHAT_TEMPLATE_FILES[0])
    if os.path.isfile(beside):
        jinja = _read_chat_template_file(beside, streams)
        assert jinja is not None  # a .jinja file is read as text
        return jinja
    raise CLIError(f"{path!r} has no chat_template, and there is no {CHAT_TEMPLATE_FILES[0]} beside it")


def add_prefix_arguments(parser: argparse.ArgumentParser) -> None:
    """``--prefix FILE | --prefix-text STR | --no-prefix`` (one of them is required, checked later), and
    ``--missing-anchor raise|parse``."""
    parser.add_argument(
        "--missing-anchor",
        choices=("raise", "parse"),
        default="raise",
        help="what a prompt without the template's start anchor does: 'raise' (default) stops with an error "
        "(exit code 2), 'parse' reads the whole prompt as model output, with a warning",
    )
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
    """The prompt from ``--prefix``/``--prefix-text``/``--no-prefix``.

    A prompt without the start anchor is a :class:`CLIError` (exit code 2) naming the anchor and showing
    the prompt's end, unless ``--missing-anchor parse``, which only warns.
    """
    if args.no_prefix:
        return ""
    prefix: str
    if args.prefix_text is not None:
        prefix = args.prefix_text
    elif args.prefix is not None:
        if args.prefix == "-" and getattr(args, "input", None) in (None, "-"):
            raise CLIError("--prefix - reads stdin, so the model output must come from a file")
        prefix = decode(read_bytes(args.prefix, "prefix", streams), args.prefix, "prefix")
    else:
        raise CLIError(PREFIX_MISSING)
    if prefix and not template.cut_prefix(prefix)[1]:
        source = template.source
        anchor = source.get("start_anchor", source.get("start_anchor_pattern"))
        hint = ""
        if "\\n" in prefix and "\n" not in prefix:
            hint = " (the prefix contains a backslash and 'n', not a newline; in bash write $'...\\n')"
        if getattr(args, "missing_anchor", "raise") == "raise":
            message = str(anchor_not_found(template, prefix))
            for api, option in (
                ('prefix=""', "--no-prefix"),
                ('missing_anchor="parse"', "--missing-anchor parse"),
            ):
                message = message.replace(api, option)
            raise CLIError(message + hint)
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
    data = read_json(path, "tools file", streams)
    if isinstance(data, dict):
        data = data.get("tools", [data])
    if not isinstance(data, list):
        raise CLIError(f"the tools file {path!r} must hold a JSON list of tools, got {type(data).__name__}")
    try:
        tool_parameters(data)
    except ResponseTemplateError as exc:
        raise CLIError(f"invalid tools file {path!r}: {exc}") from None
    return data


# ------------------------------------------------------------------------------------------- output


def error_record(exc: ResponseTemplateError) -> dict[str, Any]:
    """A JSON-ready description of a library error (used for error lines in JSON output)."""
    record: dict[str, Any] = {"type": type(exc).__name__, "message": str(exc)}
    for key in ("field", "offset", "raw"):
        value = getattr(exc, key, None)
        if value is not None:
            record[key] = value
    return record


def dump_line(obj: Any, out: TextIO) -> None:
    """Write ``obj`` as one JSON line and flush, so a reader of a pipe sees it at once."""
    out.write(json.dumps(obj, ensure_ascii=False) + "\n")
    out.flush()
