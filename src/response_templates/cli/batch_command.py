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
import functools
import json
import os
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, TextIO

from ..batch.jsonl import LineEncoder, loads
from ..batch.pool import cpu_count, ordered_map
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
#
# JSON lines go to the workers as pieces: about _PIECE bytes of whole lines each. The main process only
# cuts the input at line ends and counts each piece's records (so it knows the index of each piece's first
# record); a worker reads its piece itself when the input is a file (by offset; stdin's pieces are sent as
# bytes), parses and serialises every line, and sends back one block of output bytes and its counts. No
# record or message crosses a process boundary, and the main process writes the blocks in order.
# Parquet rows (and every record with -j 1) go through the same per-record code.

#: Bytes of JSON lines in a piece (a piece holds whole lines: more for a line longer than this).
_PIECE = 1 << 20


@dataclass(frozen=True)
class _Piece:
    """Whole JSON lines of the input: ``data``, or ``length`` bytes at ``offset`` of the file ``path``."""

    first_index: int  # the index of its first record
    first_line: int  # the line number of its first line (1-based)
    data: bytes | None = None
    path: str | None = None
    offset: int = 0
    length: int = 0


@dataclass
class _Block:
    """A piece's (or a chunk's) results: output bytes, one line per record, and the counts."""

    data: bytes
    counts: list[int]  # records parsed, parsed with errors kept, failed (indexed by _OK, _KEPT, _FAILED)
    skipped: int = 0  # records not parsed: OUT already holds them (--resume)


class _Worker:
    """What a worker keeps for the whole run: the record parser, the output encoder, the resume keys."""

    def __init__(
        self,
        settings: dict[str, Any],
        done: frozenset[str],
        id_field: str | None,
        parser: RecordParser | None = None,
    ) -> None:
        self.parser = parser if parser is not None else RecordParser(**settings)
        self.encoder = LineEncoder()
        self.done = done
        self.id_field = id_field
        self._files: dict[str, int] = {}

    def read(self, piece: _Piece) -> bytes:
        if piece.data is not None:
            return piece.data
        assert piece.path is not None
        fd = self._files.get(piece.path)
        if fd is None:
            fd = self._files[piece.path] = os.open(piece.path, os.O_RDONLY)
        return os.pread(fd, piece.length, piece.offset)

    def result_line(self, result: BatchResult, counts: list[int], out: list[str]) -> None:
        if result.error is not None:
            counts[_FAILED] += 1
        elif result.message is not None and result.message.errors:
            counts[_KEPT] += 1
        else:
            counts[_OK] += 1
        out.append(self.encoder.encode(result.to_dict()))


def _parse_piece(worker: _Worker, piece: _Piece) -> _Block:
    """Parse the JSON lines of a piece: one output line per record (blank lines are not records)."""
    counts = [0, 0, 0]
    out: list[str] = []
    skipped = 0
    index = piece.first_index
    parse = worker.parser.parse
    done = worker.done
    data = worker.read(piece)
    lines = data.split(b"\n")
    last = len(lines) - 1
    if lines[-1] == b"":
        lines.pop()  # the piece ends with a line end
    for number, line in enumerate(lines, piece.first_line):
        if not line.strip():
            continue
        try:
            record = loads(line)
        except (ValueError, RecursionError):
            record = _NOT_JSON
            result = _not_json(index, number, line if number - piece.first_line == last else line + b"\n")
        if done and _record_key(record, index, worker.id_field) in done:
            skipped += 1
        else:
            if record is not _NOT_JSON:
                result = parse(index, record)
            worker.result_line(result, counts, out)
        index += 1
    return _Block(_utf8_lines(out), counts, skipped)


def _parse_rows(worker: _Worker, chunk: list[tuple[int, Any]]) -> _Block:
    """Parse a chunk of ``(index, record)`` (Parquet rows)."""
    counts = [0, 0, 0]
    out: list[str] = []
    skipped = 0
    for index, record in chunk:
        if worker.done and _record_key(record, index, worker.id_field) in worker.done:
            skipped += 1
            continue
        worker.result_line(worker.parser.parse(index, record), counts, out)
    return _Block(_utf8_lines(out), counts, skipped)


_NOT_JSON: Any = object()


def _not_json(index: int, number: int, line: bytes) -> BatchResult:
    """The result of a line that is not JSON (``line`` with its line end, if it has one, as the error's
    position counts it)."""
    try:
        json.loads(line)
        reason = "not JSON"  # pragma: no cover - only lines json.loads refuses get here
    except (ValueError, RecursionError) as exc:
        reason = str(exc)
    error = RecordError(f"line {number} is not a JSON object: {reason}")
    error.index = index
    return BatchResult(index, None, None, error)


def _utf8_lines(lines: list[str]) -> bytes:
    """``lines`` as UTF-8 bytes, one a line. A line that cannot be UTF-8 (a lone surrogate, from a
    ``\\ud800`` escape of the input) is written with ASCII escapes instead: the same JSON value."""
    if not lines:
        return b""
    try:
        return ("\n".join(lines) + "\n").encode("utf-8")
    except UnicodeEncodeError:
        fixed = []
        for line in lines:
            try:
                fixed.append(line.encode("utf-8"))
            except UnicodeEncodeError:
                fixed.append(json.dumps(json.loads(line), default=str).encode("ascii"))
        return b"\n".join(fixed) + b"\n"


def _record_key(record: Any, index: int, id_field: str | None) -> str:
    """The key of an input record, as its result line will have it."""
    record_id = record.get(id_field) if id_field and isinstance(record, dict) else None
    return record_key(record_id, index)


# ------------------------------------------------------------------------------------------- reading


class _Source:
    """The input, in pieces (JSON lines) or chunks of rows (Parquet); ``done`` tells how far the run got
    (bytes of a JSONL file, rows of a Parquet file, for the ETA)."""

    def __init__(self, path: str, parquet: bool, fields: dict[str, str | None], streams: Streams) -> None:
        self.path = path
        self.parquet = parquet
        self.fields = fields
        self.streams = streams
        self.total: int | None = None  # bytes of a JSONL file, rows of a Parquet file
        self.done = 0

    def open(self, by_offset: bool) -> Iterator[tuple[int, _Piece | list[tuple[int, Any]]]]:
        """``(size, piece or chunk)`` in input order; ``by_offset``: pieces of a file name their bytes
        instead of holding them (for workers that read the file themselves)."""
        if self.parquet:
            return self._parquet()
        if self.path == "-":
            stdin: Any = self.streams.stdin
            return self._pieces(getattr(stdin, "buffer", None) or _Encoded(stdin), None)
        try:
            f = open(self.path, "rb")  # noqa: SIM115 -- closed by _pieces when the reading ends
            self.total = os.fstat(f.fileno()).st_size
        except OSError as exc:
            raise CLIError(f"cannot read the input {self.path!r}: {exc.strerror or exc}") from None
        return self._pieces(f, self.path if by_offset else None)

    def _pieces(self, f: Any, path: str | None) -> Iterator[tuple[int, _Piece | list[tuple[int, Any]]]]:
        index, number, offset = 0, 1, 0
        with f:
            for data in _whole_lines(f):
                lines, records = _count(data)
                if path is None:
                    piece = _Piece(index, number, data=data)
                else:
                    piece = _Piece(index, number, path=path, offset=offset, length=len(data))
                yield len(data), piece
                index += records
                number += lines
                offset += len(data)

    def _parquet(self) -> Iterator[tuple[int, _Piece | list[tuple[int, Any]]]]:
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

    def _rows(self, file: Any, columns: list[str]) -> Iterator[tuple[int, _Piece | list[tuple[int, Any]]]]:
        index = 0
        for batch in file.iter_batches(batch_size=_ROWS, columns=columns):
            rows = batch.to_pylist()
            yield len(rows), list(enumerate(rows, index))
            index += len(rows)


def _count(data: bytes) -> tuple[int, int]:
    """``(lines, records)`` of a piece: a record is a line that is not blank (only whitespace)."""
    if not data:
        return 0, 0
    lines = data.count(b"\n") + (not data.endswith(b"\n"))
    if not data[:1].isspace() and not any(blank in data for blank in _BLANK_STARTS):
        return lines, lines  # no line starts with whitespace, so none is blank: the common case
    parts = data.split(b"\n")
    if parts[-1] == b"":
        parts.pop()
    return lines, sum(1 for line in parts if line.strip())


#: A blank line starts after a line end with another line end or whitespace (what ``bytes.strip`` drops).
_BLANK_STARTS = (b"\n\n", b"\n ", b"\n\t", b"\n\r", b"\n\x0b", b"\n\x0c")


#: Parquet rows in a chunk.
_ROWS = 512


def _whole_lines(f: Any) -> Iterator[bytes]:
    """The bytes of ``f`` in blocks of about _PIECE bytes that end at a line end (the last may not)."""
    carry: list[bytes] = []
    while block := f.read(_PIECE):
        cut = block.rfind(b"\n") + 1
        if cut == 0:  # inside a long line
            carry.append(block)
            continue
        if carry:
            carry.append(block[:cut])
            yield b"".join(carry)
            carry = []
        else:
            yield block[:cut] if cut < len(block) else block
        if cut < len(block):
            carry.append(block[cut:])
    if carry:
        yield b"".join(carry)


class _Encoded:
    """A text stream read as UTF-8 bytes."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def read(self, size: int) -> bytes:
        return self._stream.read(size).encode("utf-8")

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
                data = loads(line)
                key = record_key(data.get("id"), data["index"])
            except (ValueError, KeyError, TypeError, AttributeError, RecursionError):
                raise CLIError(
                    f"cannot resume: line {number} of {path!r} is not a result line of this command"
                ) from None
            keys.add(key)
            good += len(line)
        f.truncate(good)
    return keys


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
    done = frozenset(_done_keys(args.output)) if args.resume else frozenset()
    id_field = source.fields.get("id")
    pieces = source.open(by_offset=jobs > 1 and hasattr(os, "pread"))  # else the parts are sent
    sizes: deque[int] = deque()

    def submitted() -> Iterator[Any]:
        for size, piece in pieces:
            sizes.append(size)
            yield piece

    out = _Output(args.output, args.resume, streams)
    show = args.progress == "always" or (
        args.progress == "auto" and getattr(streams.stderr, "isatty", lambda: False)()
    )
    progress = _Progress(streams.stderr, source, show)
    counts = [0, 0, 0]
    skipped = 0
    task: Any = _parse_rows if source.parquet else _parse_piece
    make = functools.partial(_Worker, settings, done, id_field)
    local = _Worker(settings, done, id_field, parser) if jobs <= 1 else None
    try:
        for block in ordered_map(task, submitted(), make, workers=jobs, local=local):
            out.write(block.data)
            for status, n in enumerate(block.counts):
                counts[status] += n
            skipped += block.skipped
            source.done += sizes.popleft()
            progress.update(sum(counts), counts[_FAILED])
    finally:
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


class _Output:
    """Where the result lines go: OUT (appended to with --resume), or stdout; written as bytes."""

    def __init__(self, path: str | None, append: bool, streams: Streams) -> None:
        self._text: TextIO | None = None
        self._file: Any = None
        if path:
            try:
                self._file = open(path, "ab" if append else "wb")  # noqa: SIM115 -- closed by close()
            except OSError as exc:
                raise CLIError(f"cannot write {path!r}: {exc.strerror or exc}") from None
            self._close = True
        else:
            self._text = streams.stdout
            self._file = getattr(streams.stdout, "buffer", None)
            self._close = False

    def write(self, data: bytes) -> None:
        if not data:
            return
        if self._file is None:
            assert self._text is not None
            self._text.write(data.decode("utf-8"))
            self._text.flush()
            return
        if self._text is not None:
            self._text.flush()  # what was written as text first
        self._file.write(data)
        self._file.flush()

    def close(self) -> None:
        if self._close:
            self._file.close()
