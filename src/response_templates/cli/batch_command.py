"""Internal: ``parse --jsonl FILE`` / ``parse --parquet FILE``: many records in, one JSON line each out.

Each input record (a JSON object a line, or a Parquet row) is parsed by
:class:`~response_templates.batch.records.RecordParser`, on ``-j N`` processes, and written as one JSON
line in input order: ``{"index", "id", "message"}`` (plus ``"errors"`` kept by ``--errors keep``) or
``{"index", "id", "error"}``. A malformed record gets an error line and the run goes on.

``--resume`` appends to ``-o OUT`` and skips the records whose key (their id, else their index) OUT
already holds; a line cut short by an interrupted run is dropped first. A progress line (records/s,
failures so far, ETA) is drawn on stderr when stderr is a terminal, and a summary is printed at the end.

Exit codes: 0 every record parsed (with ``--errors keep``, text kept in a message counts as parsed);
3 some records failed (their lines say why); 2 the run could not start (usage, unreadable file, bad
template); 130 interrupted.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Iterator
from typing import Any, TextIO

from ..batch.pool import chunked, cpu_count, ordered_map
from ..batch.records import BatchResult, RecordError, RecordParser, record_key
from ..errors import ResponseTemplateError
from .library_commands import library_template
from .shared import (
    EXIT_OK,
    CLIError,
    Streams,
    decode,
    load_template_file,
    load_tools_file,
    read_bytes,
    resolve_prefix,
)

__all__ = ["EXIT_RECORDS_FAILED", "add_batch_arguments", "run_batch"]

#: Exit code of a batch run in which some records failed.
EXIT_RECORDS_FAILED = 3

_ROLES = ("output", "prompt", "tools", "id", "model")
_CHUNK = 64

# Status of a record in the output: parsed, parsed with errors kept in the message, failed.
_OK, _KEPT, _FAILED = 0, 1, 2


def add_batch_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``parse`` for many records."""
    group = parser.add_argument_group(
        "many records (JSON lines or Parquet)",
        "Parse every record of a file and write one JSON line per record, in input order: "
        '{"index", "id", "message"} or {"index", "id", "error"}. --prefix/--prefix-text/--no-prefix and '
        "--tools then give the prompt and tools of records that carry none. Exit codes: 0 all parsed, 3 "
        "some records failed, 2 could not run.",
    )
    source = group.add_mutually_exclusive_group()
    source.add_argument("--jsonl", metavar="FILE", help="records as JSON lines ('-': stdin)")
    source.add_argument("--parquet", metavar="FILE", help="records as a Parquet file (needs pyarrow)")
    group.add_argument("-o", "--output", metavar="OUT", help="write the results to OUT (default: stdout)")
    group.add_argument(
        "--field",
        action="append",
        default=[],
        metavar="ROLE=NAME",
        help="the key of a record that holds ROLE: output, prompt, tools, id or model (e.g. "
        "--field output=completion --field model=model_id); defaults: output, prompt, tools, id; "
        "'ROLE=' reads nothing for ROLE; model is read only if named and picks each record's template",
    )
    group.add_argument(
        "-j",
        "--jobs",
        type=_jobs,
        default=1,
        metavar="N",
        help="parse on N processes (0: every core; default 1)",
    )
    group.add_argument(
        "--resume",
        action="store_true",
        help="append to OUT and skip the records (by id, else by index) it already holds",
    )
    group.add_argument(
        "--progress",
        choices=("auto", "always", "never"),
        default="auto",
        help="the progress line on stderr: 'auto' (default) when stderr is a terminal",
    )


def _jobs(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of processes, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a number of processes (0: every core), got {text!r}")
    return value


def _fields(specs: list[str]) -> dict[str, str | None]:
    fields: dict[str, str | None] = {}
    for spec in specs:
        role, sep, name = spec.partition("=")
        if not sep or role not in _ROLES:
            raise CLIError(f"--field takes ROLE=NAME with ROLE one of {', '.join(_ROLES)}, got {spec!r}")
        fields[role] = name or None
    return fields


# ------------------------------------------------------------------------------------------- workers


def _parse_chunk(parser: RecordParser, chunk: list[tuple[int, Any]]) -> list[tuple[str, int, str]]:
    """Parse a chunk of ``(index, (line number, JSON line) | record)``: ``(key, status, output line)``."""
    out = []
    for index, payload in chunk:
        if isinstance(payload, tuple):
            number, line = payload
            try:
                record = json.loads(line)
            except (ValueError, RecursionError) as exc:
                error = RecordError(f"line {number} is not a JSON object: {exc}")
                error.index = index
                result = BatchResult(index, None, None, error)
            else:
                result = parser.parse(index, record)
        else:
            result = parser.parse(index, payload)
        if result.error is not None:
            status = _FAILED
        elif result.message is not None and result.message.errors:
            status = _KEPT
        else:
            status = _OK
        line = json.dumps(result.to_dict(), ensure_ascii=False, default=str)
        out.append((record_key(result.id, index), status, line))
    return out


# ------------------------------------------------------------------------------------------- reading


class _Source:
    """The records of the input, numbered; ``done`` tells how far the reading got (for the ETA)."""

    def __init__(self, path: str, parquet: bool, fields: dict[str, str | None], streams: Streams) -> None:
        self.path = path
        self.parquet = parquet
        self.fields = fields
        self.streams = streams
        self.total: int | None = None  # bytes of a JSONL file, rows of a Parquet file
        self.done = 0

    def open(self) -> Iterator[tuple[int, Any]]:
        if self.parquet:
            return self._parquet()
        if self.path == "-":
            stdin: Any = self.streams.stdin
            return self._lines(getattr(stdin, "buffer", None) or _Encoded(stdin))
        try:
            f = open(self.path, "rb")  # noqa: SIM115 -- closed by _lines when the reading ends
            self.total = os.fstat(f.fileno()).st_size
        except OSError as exc:
            raise CLIError(f"cannot read the input {self.path!r}: {exc.strerror or exc}") from None
        return self._lines(f)

    def _lines(self, f: Any) -> Iterator[tuple[int, Any]]:  # a binary file, or _Encoded
        index = 0
        with f:
            for number, line in enumerate(f, 1):
                self.done += len(line)
                if line.strip():
                    yield index, (number, line)
                    index += 1

    def _parquet(self) -> Iterator[tuple[int, Any]]:
        try:
            import pyarrow.parquet as pq
        except ImportError:
            raise CLIError("--parquet needs pyarrow: pip install 'response-templates[parquet]'") from None
        try:
            file = pq.ParquetFile(self.path)
        except (OSError, ValueError) as exc:  # pyarrow's ArrowInvalid is a ValueError
            raise CLIError(f"cannot read the Parquet file {self.path!r}: {exc}") from None
        self.total = file.metadata.num_rows
        wanted = [name for name in self.fields.values() if name and name in file.schema_arrow.names]
        return self._rows(file, wanted)

    def _rows(self, file: Any, columns: list[str]) -> Iterator[tuple[int, Any]]:
        index = 0
        for batch in file.iter_batches(batch_size=1024, columns=columns):
            for row in batch.to_pylist():
                self.done += 1
                yield index, row
                index += 1


class _Encoded:
    """A text stream read as lines of UTF-8 bytes."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def __iter__(self) -> Iterator[bytes]:
        for line in self._stream:
            yield line.encode("utf-8")

    def __enter__(self) -> _Encoded:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


def _done_keys(path: str) -> set[str]:
    """The keys of the records OUT holds; a last line cut short by an interrupted run is removed."""
    keys: set[str] = set()
    try:
        f = open(path, "r+b")  # noqa: SIM115 -- closed below
    except FileNotFoundError:
        return keys
    except OSError as exc:
        raise CLIError(f"cannot read the output {path!r} to resume: {exc.strerror or exc}") from None
    with f:
        good = 0
        for number, line in enumerate(f, 1):
            if not line.endswith(b"\n"):
                break  # the line the interrupted run was writing: written again below
            try:
                data = json.loads(line)
                key = record_key(data.get("id"), data["index"])
            except (ValueError, KeyError, TypeError, AttributeError):
                raise CLIError(
                    f"cannot resume: line {number} of {path!r} is not a result line of this command"
                ) from None
            keys.add(key)
            good += len(line)
        f.truncate(good)
    return keys


def _input_key(payload: Any, index: int, id_field: str | None) -> str:
    """The key of an input record, as its result line will have it."""
    record = payload
    if isinstance(payload, tuple):
        try:
            record = json.loads(payload[1])
        except (ValueError, RecursionError):
            return record_key(None, index)
    record_id = record.get(id_field) if id_field and isinstance(record, dict) else None
    return record_key(record_id, index)


# ------------------------------------------------------------------------------------------ progress


class _Progress:
    """The progress line on stderr, redrawn at most ten times a second."""

    def __init__(self, stream: TextIO, source: _Source, enabled: bool) -> None:
        self.stream = stream
        self.source = source
        self.enabled = enabled
        self.start = time.monotonic()
        self._drawn = 0.0

    def update(self, records: int, failed: int, final: bool = False) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if not final and now - self._drawn < 0.1:
            return
        self._drawn = now
        elapsed = max(now - self.start, 1e-9)
        line = f"{records:,} records  {records / elapsed:,.0f}/s  {failed:,} failed"
        total = self.source.total
        if total and not final:
            fraction = min(self.source.done / total, 1.0)
            line += f"  {fraction:.0%}"
            if fraction > 0:
                line += f"  ETA {_clock(elapsed * (1 - fraction) / fraction)}"
        self.stream.write("\r\x1b[K" + line + ("\n" if final else ""))
        self.stream.flush()


def _clock(seconds: float) -> str:
    seconds = int(seconds + 0.5)
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


# ---------------------------------------------------------------------------------------------- run


def run_batch(args: argparse.Namespace, streams: Streams) -> int:
    """Run ``parse --jsonl/--parquet``."""
    if args.input != "-":
        raise CLIError("give the records with --jsonl or --parquet, not as INPUT")
    if args.stream or args.chunk_size is not None:
        raise CLIError("--stream and --chunk-size parse one output; they do not apply to --jsonl/--parquet")
    if args.resume and not args.output:
        raise CLIError("--resume needs -o OUT: the results of the earlier run")
    fields = _fields(args.field)
    settings: dict[str, Any] = {
        "fields": fields,
        "errors": args.errors,
        "missing_anchor": args.missing_anchor,
    }
    if args.template:
        template = load_template_file(args.template, streams)
        settings["template"] = dict(template.source)
    elif args.model:
        template = library_template(args.model)  # the CLI's message for an unknown model
        settings["template"] = dict(template.source)
    elif not fields.get("model"):
        raise CLIError("give --template FILE or --model MODEL_ID, or --field model=KEY to read each record's")
    else:
        template = None
    if template is not None and (args.prefix is not None or args.prefix_text is not None or args.no_prefix):
        settings["prefix"] = resolve_prefix(args, template, streams)  # checks the start anchor
    elif args.no_prefix or args.prefix_text is not None:
        settings["prefix"] = args.prefix_text or ""
    elif args.prefix is not None:
        settings["prefix"] = decode(read_bytes(args.prefix, "prefix", streams), args.prefix, "prefix")
    settings["tools"] = load_tools_file(args.tools, streams)
    try:
        parser = RecordParser(**settings)
    except ResponseTemplateError as exc:
        raise CLIError(str(exc)) from None

    jobs = args.jobs or cpu_count()
    path = args.jsonl if args.jsonl is not None else args.parquet
    source = _Source(
        path,
        args.parquet is not None,
        {**{"output": "output", "prompt": "prompt", "tools": "tools", "id": "id"}, **fields},
        streams,
    )
    done = _done_keys(args.output) if args.resume else set()
    records = source.open()
    skipped = 0
    if done:
        id_field = source.fields.get("id")

        def fresh(items: Iterator[tuple[int, Any]]) -> Iterator[tuple[int, Any]]:
            nonlocal skipped
            for index, payload in items:
                if _input_key(payload, index, id_field) in done:
                    skipped += 1
                else:
                    yield index, payload

        records = fresh(records)

    out: TextIO
    if args.output:
        try:
            out = open(args.output, "a" if args.resume else "w", encoding="utf-8")  # noqa: SIM115
        except OSError as exc:
            raise CLIError(f"cannot write {args.output!r}: {exc.strerror or exc}") from None
    else:
        out = streams.stdout
    show = args.progress == "always" or (
        args.progress == "auto" and getattr(streams.stderr, "isatty", lambda: False)()
    )
    progress = _Progress(streams.stderr, source, show)
    counts = [0, 0, 0]
    try:
        for chunk in ordered_map(
            _parse_chunk, chunked(records, _CHUNK), settings, workers=jobs, parser=parser
        ):
            out.write("".join(line + "\n" for _, _, line in chunk))
            out.flush()
            for _, status, _ in chunk:
                counts[status] += 1
            progress.update(sum(counts), counts[_FAILED])
    finally:
        if out is not streams.stdout:
            out.close()
    total = sum(counts)
    progress.update(total, counts[_FAILED], final=True)
    elapsed = max(time.monotonic() - progress.start, 1e-9)
    summary = f"{total:,} records: {counts[_OK] + counts[_KEPT]:,} ok, {counts[_FAILED]:,} failed"
    if counts[_KEPT]:
        summary += f" ({counts[_KEPT]:,} ok with errors kept in the message)"
    summary += f"; {elapsed:.1f} s, {total / elapsed:,.0f} records/s"
    if args.resume:
        summary += f"; {skipped:,} skipped (already in {args.output})"
    streams.stderr.write(summary + "\n")
    return EXIT_RECORDS_FAILED if counts[_FAILED] else EXIT_OK
