"""Internal: ``parse --jsonl FILE`` / ``parse --parquet FILE``: many records in, one JSON line each out.

Each input record (a JSON object a line, or a Parquet row) is parsed by
:class:`~response_templates.batch.records.RecordParser`, on ``-j N`` processes, and written as one JSON
line in input order: ``{"index", "id", "message"}`` (plus ``"errors"`` kept by ``--errors keep``) or
``{"index", "id", "error"}``. A malformed record gets an error line and the run goes on.

Since the output is written in input order, what an earlier run wrote to ``-o OUT`` is the results of the
input's first records. ``--resume`` goes on after them: it checks that OUT's line N is the result of
record N (same index, same id) and refuses an OUT that belongs to another input; a line cut short by an
interrupted run is dropped first. ``--retry-failed`` does the same and also parses again the records
whose lines in OUT are errors, writing a new OUT (replaced atomically when the run ends). A progress line
(records/s, failures so far, ETA) is drawn on stderr when stderr is a terminal, and a summary is printed
at the end.

Ctrl-C (SIGINT) and SIGTERM stop the run: the lines written are kept and a message says how many and how
to go on (``--resume``). The workers never outlive the run (see :mod:`response_templates.batch.pool`).

Exit codes: 0 every record parsed (with ``--errors keep``, text kept in a message counts as parsed);
3 some records failed (their lines say why); 2 the run could not start (usage, unreadable file, bad
template, an OUT that --resume cannot go on from); 4 the output could not be written (a full disk); 5 the
input could not be read to its end (corrupt Parquet data, an I/O error); 6 a worker process died; 130
interrupted (SIGINT); 143 terminated (SIGTERM).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import shlex
import shutil
import signal
import stat
import sys
import threading
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from types import FrameType
from typing import Any, TextIO

from ..batch.jsonl import LineEncoder, loads
from ..batch.pool import WorkerDiedError, cpu_count, ordered_map
from ..batch.records import BatchResult, RecordError, RecordParser
from ..errors import ResponseTemplateError
from .library_commands import library_template
from .shared import (
    EXIT_INTERRUPTED,
    EXIT_OK,
    PROG,
    CLIError,
    Streams,
    decode,
    find_chat_template,
    load_template_file,
    load_tools_file,
    read_bytes,
    resolve_prefix,
)

__all__ = [
    "EXIT_INPUT_FAILED",
    "EXIT_OUTPUT_FAILED",
    "EXIT_RECORDS_FAILED",
    "EXIT_TERMINATED",
    "EXIT_WORKER_DIED",
    "add_batch_arguments",
    "run_batch",
]

#: Exit code of a batch run in which some records failed.
EXIT_RECORDS_FAILED = 3
#: Exit code of a batch run that stopped because its output could not be written (a full disk, ...).
EXIT_OUTPUT_FAILED = 4
#: Exit code of a batch run that stopped because its input could not be read to the end.
EXIT_INPUT_FAILED = 5
#: Exit code of a batch run that stopped because a worker process died (killed, out of memory).
EXIT_WORKER_DIED = 6
#: Exit code of a batch run stopped by SIGTERM (128 + 15, as a shell reports it).
EXIT_TERMINATED = 128 + signal.SIGTERM

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
        "some records failed, 2 could not run, 4 the output could not be written, 5 the input could not be "
        "read to its end, 6 a worker died, 130 Ctrl-C, 143 SIGTERM (4-143: the lines written are kept).",
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
        help="go on from where an earlier run stopped: keep OUT's lines (checked to be the results of the "
        "input's first records, by position and id) and append the results of the records after them",
    )
    group.add_argument(
        "--retry-failed",
        action="store_true",
        help="as --resume, and parse again the records whose lines in OUT are errors; OUT is rewritten, in "
        "input order, and replaced only when the run ends",
    )
    group.add_argument(
        "--tokenizer",
        metavar="PATH",
        help="parse records whose output (and prompt) are lists of token ids as ids: PATH is a "
        "tokenizer.json, or a model folder (loaded with transformers when it is installed; its chat "
        "template says which added tokens are control tokens). A delimiter that is a control token then "
        "matches only where the model generated its id: spelled out in ordinary tokens, it is text. "
        "Records whose output is text are parsed as text",
    )
    group.add_argument(
        "--control-tokens",
        choices=("auto", "text"),
        default=None,
        help="with --tokenizer: 'auto' (default) reads ids as above; 'text' reads them as their decoded "
        "text, where every spelling of a delimiter counts (for a model made to spell its markers)",
    )
    group.add_argument(
        "--progress",
        choices=("auto", "always", "never"),
        default="auto",
        help="the progress line on stderr: 'auto' (default) when stderr is a terminal",
    )


def load_tokenizer(path: str, streams: Streams) -> tuple[Any, Any]:
    """The tokenizer of ``--tokenizer PATH`` and the control tokens to read ids with (``"auto"``, or
    their texts when the tokenizer cannot tell them itself); :class:`CLIError` if it does not load.

    A file is a tokenizer.json (``tokenizers.Tokenizer.from_file``): its control tokens are its special
    tokens, since a lone file has no chat template. A model folder is loaded with transformers'
    ``AutoTokenizer`` when transformers is installed (its decoding options and chat template then count
    as in transformers); without transformers, its tokenizer.json is loaded with tokenizers and its chat
    template read from the folder, which gives the same control tokens."""
    if not os.path.exists(path):
        raise CLIError(f"--tokenizer {path!r}: no such file or folder (a tokenizer.json or a model folder)")
    try:
        import tokenizers
    except ImportError:
        raise CLIError(
            "--tokenizer needs the tokenizers package: pip install 'response-templates[transformers]'"
        ) from None
    if not os.path.isdir(path):
        return _tokenizer_file(tokenizers, path), "auto"
    file = os.path.join(path, "tokenizer.json")
    transformers: Any
    try:
        import transformers
    except ImportError:
        transformers = None
    if transformers is not None:
        errors: list[str] = []
        for loader in (transformers.AutoTokenizer, transformers.PreTrainedTokenizerFast):
            try:
                return loader.from_pretrained(path, local_files_only=True), "auto"
            except Exception as exc:  # transformers raises many kinds: said to the user
                errors.append(f"{type(exc).__name__}: {exc}")
        if not os.path.isfile(file):
            raise CLIError(
                f"cannot load the tokenizer of the model folder {path!r} with transformers: {errors[0]}"
            )
        streams.stderr.write(
            f"note: transformers cannot load the tokenizer of {path!r} ({errors[0]}); reading its "
            "tokenizer.json with tokenizers instead\n"
        )
    if not os.path.isfile(file):
        raise CLIError(
            f"the model folder {path!r} has no tokenizer.json (and transformers is not installed to load "
            "another kind of tokenizer)"
        )
    tokenizer = _tokenizer_file(tokenizers, file)
    return tokenizer, _folder_controls(tokenizer, path, streams)


def _tokenizer_file(tokenizers: Any, path: str) -> Any:
    try:
        return tokenizers.Tokenizer.from_file(path)
    except Exception as exc:  # tokenizers raises Exception for a file it cannot read
        raise CLIError(
            f"cannot load the tokenizer {path!r} (a tokenizer.json, as tokenizers writes it): {exc}"
        ) from None


def _folder_controls(tokenizer: Any, folder: str, streams: Streams) -> Any:
    """The control tokens' texts of a bare ``tokenizers.Tokenizer`` with its folder's chat template and
    ``chat_control_tokens`` (what transformers would load with it)."""
    from types import SimpleNamespace

    from ..hf.control_tokens import control_token_ids

    try:
        chat_template: str | None = find_chat_template(folder, streams)
    except CLIError:
        chat_template = None
    override = None
    with contextlib.suppress(OSError, ValueError, RecursionError):
        with open(os.path.join(folder, "tokenizer_config.json"), "rb") as f:
            config = json.loads(f.read())
        if isinstance(config, dict) and isinstance(config.get("chat_control_tokens"), list):
            override = config["chat_control_tokens"]
    view = SimpleNamespace(
        added_tokens_decoder=tokenizer.get_added_tokens_decoder(),
        chat_template=chat_template,
        chat_control_tokens=override,
    )
    return tuple(sorted(set(control_token_ids(view).values())))


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
    """A piece's (or a chunk's) results: output bytes, one line per record parsed, and the counts."""

    data: bytes
    counts: list[int]  # records parsed, parsed with errors kept, failed (indexed by _OK, _KEPT, _FAILED)
    first: int = 0  # the index of its first record
    records: int = 0  # its records, parsed or not
    skipped: int = 0  # records not parsed: OUT already holds their results (--resume)
    retried: int = 0  # records OUT holds a failure for, parsed again (--retry-failed)
    mismatch: tuple[int, int, str | None] | None = (
        None  # (index, line, id key) of a record OUT does not match
    )


@dataclass(frozen=True)
class _Held:
    """What OUT holds for --resume: the id key of each line's record (None: no id), by position; the
    positions whose lines are errors; the bytes of its whole lines."""

    ids: list[str | None] = field(default_factory=list)
    failed: frozenset[int] = frozenset()
    size: int = 0
    total: int = 0  # bytes of OUT, a last line cut short included


class _Worker:
    """What a worker keeps for the whole run: the record parser, the output encoder, what OUT holds."""

    def __init__(
        self,
        settings: dict[str, Any],
        held: list[str | None],
        retry: frozenset[int],
        id_field: str | None,
        parser: RecordParser | None = None,
    ) -> None:
        self.parser = parser if parser is not None else RecordParser(**settings)
        self.encoder = LineEncoder()
        self.held = held
        self.retry = retry
        self.id_field = id_field
        self._files: dict[str, int] = {}

    def read(self, piece: _Piece) -> bytes:
        if piece.data is not None:
            return piece.data
        assert piece.path is not None
        try:
            fd = self._files.get(piece.path)
            if fd is None:
                fd = self._files[piece.path] = os.open(piece.path, os.O_RDONLY)
            return os.pread(fd, piece.length, piece.offset)
        except OSError as exc:
            raise _ReadError(
                f"cannot read the input {piece.path!r} at byte {piece.offset:,}: {exc.strerror or exc}"
            ) from None

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
    block = _Block(b"", [0, 0, 0], piece.first_index)
    counts = block.counts
    out: list[str] = []
    index = piece.first_index
    parse = worker.parser.parse
    held = worker.held
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
        if index < len(held):
            key = _id_key_of(record, worker.id_field)
            if key != held[index]:
                block.mismatch = (index, number, key)
                break
            if index not in worker.retry:
                block.skipped += 1
                index += 1
                continue
            block.retried += 1
        if record is _NOT_JSON:
            result = _not_json(index, number, line if number - piece.first_line == last else line + b"\n")
        else:
            result = parse(index, record)
        worker.result_line(result, counts, out)
        index += 1
    block.records = index - piece.first_index
    block.data = _utf8_lines(out)
    return block


def _parse_rows(worker: _Worker, chunk: list[tuple[int, Any]]) -> _Block:
    """Parse a chunk of ``(index, record)`` (Parquet rows)."""
    block = _Block(b"", [0, 0, 0], chunk[0][0] if chunk else 0)
    out: list[str] = []
    held = worker.held
    for index, record in chunk:
        if index < len(held):
            key = _id_key_of(record, worker.id_field)
            if key != held[index]:
                block.mismatch = (index, index + 1, key)
                break
            if index not in worker.retry:
                block.skipped += 1
                block.records += 1
                continue
            block.retried += 1
        worker.result_line(worker.parser.parse(index, record), block.counts, out)
        block.records += 1
    block.data = _utf8_lines(out)
    return block


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


def _id_key(record_id: Any) -> str | None:
    """An id as --resume compares it: its JSON text (None: no id)."""
    if record_id is None:
        return None
    return json.dumps(record_id, sort_keys=True, ensure_ascii=False, default=str)


def _id_key_of(record: Any, id_field: str | None) -> str | None:
    """The id key of an input record, as its result line will have it."""
    return _id_key(record.get(id_field) if id_field and isinstance(record, dict) else None)


class _ReadError(Exception):
    """The input could not be read to its end (it pickles: a worker may raise it)."""


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
        self.error: str | None = None  # why the input could not be read to its end

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
            info = os.fstat(f.fileno())
        except OSError as exc:
            raise CLIError(f"cannot read the input {self.path!r}: {exc.strerror or exc}") from None
        if not stat.S_ISREG(info.st_mode):  # a pipe, a device: read in order only, its parts sent
            return self._pieces(f, None)
        self.total = info.st_size
        return self._pieces(f, self.path if by_offset else None)

    def _pieces(self, f: Any, path: str | None) -> Iterator[tuple[int, _Piece | list[tuple[int, Any]]]]:
        index, number, offset = 0, 1, 0
        with f:
            blocks = _whole_lines(f)
            while True:
                try:
                    data = next(blocks, None)
                except OSError as exc:  # what was read before is parsed and written: the run stops after it
                    self.error = (
                        f"cannot read the input {self.path!r} beyond its first {number - 1:,} lines "
                        f"(byte {offset:,}): {exc.strerror or exc}"
                    )
                    return
                if data is None:
                    return
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
        batches = file.iter_batches(batch_size=_ROWS, columns=columns)
        while True:
            try:
                batch = next(batches, None)
                if batch is None:
                    return
                rows = batch.to_pylist()
            except Exception as exc:  # pyarrow's errors for corrupt data: OSError, ArrowInvalid, ...
                self.error = (
                    f"cannot read the Parquet file {self.path!r} beyond its first {index:,} rows: "
                    f"{type(exc).__name__}: {exc}"
                )
                return
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


def _read_held(path: str) -> _Held:
    """What OUT holds, checked to be the output of a run of this command: line N the result of record N.

    A last line cut short by an interrupted run is not counted (it is written again)."""
    ids: list[str | None] = []
    failed: list[int] = []
    try:
        f = open(path, "rb")  # noqa: SIM115 -- closed below
    except FileNotFoundError:
        return _Held()
    except OSError as exc:
        raise CLIError(f"cannot read the output {path!r} to resume: {exc.strerror or exc}") from None
    if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
        f.close()
        raise CLIError(f"cannot resume into {path!r}: it is not a regular file (a device or a pipe)")
    with f:
        good = 0
        total = 0
        for number, line in enumerate(f, 1):
            total += len(line)
            if not line.endswith(b"\n"):
                break  # the line the interrupted run was writing: written again
            try:
                data = loads(line)
                index = data["index"]
                key = _id_key(data.get("id"))
                error = "error" in data
            except (ValueError, KeyError, TypeError, AttributeError, RecursionError):
                raise CLIError(
                    f"cannot resume: line {number} of {path!r} is not a result line of this command"
                ) from None
            if index != number - 1 or isinstance(index, bool):
                raise CLIError(
                    f"cannot resume: line {number} of {path!r} is the result of record {index!r}, not of "
                    f"record {number - 1}: its lines are not the output of one run of this command, in "
                    "input order"
                )
            ids.append(key)
            if error:
                failed.append(index)
            good += len(line)
    return _Held(ids, frozenset(failed), good, total)


def _mismatch(block: _Block, held: _Held, path: str, parquet: bool) -> CLIError:
    """--resume with an OUT whose lines are not the results of this input's first records."""
    assert block.mismatch is not None
    index, line, key = block.mismatch
    where = f"row {index}" if parquet else f"line {line}"

    def named(k: str | None) -> str:
        return "no id" if k is None else f"the id {k}"

    return CLIError(
        f"cannot resume: line {index + 1} of {path!r} is the result of a record with "
        f"{named(held.ids[index])}, but record {index} of the input ({where}) has {named(key)}: {path!r} "
        "holds the results of another input (or of this one in another order); write to another file, "
        "or remove it to start again"
    )


# ------------------------------------------------------------------------------------------ progress


class _Progress:
    """The progress line on stderr, redrawn at most ten times a second."""

    def __init__(self, stream: TextIO, source: _Source, enabled: bool) -> None:
        self.stream = stream
        self.source = source
        self.enabled = enabled
        self.start = time.monotonic()
        self._drawn = 0.0

    def end(self) -> None:
        """The run stopped early: end the progress line, so that a message starts on its own line."""
        if self.enabled and self._drawn:
            self.stream.write("\n")
            self.stream.flush()

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
    resume = args.resume or args.retry_failed
    if resume and not args.output:
        option = "--resume" if args.resume else "--retry-failed"
        raise CLIError(f"{option} needs -o OUT: the results of the earlier run")
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
    if args.tokenizer is not None:
        settings["tokenizer"], controls = load_tokenizer(args.tokenizer, streams)
        settings["control_tokens"] = () if args.control_tokens == "text" else controls
    elif args.control_tokens is not None:
        raise CLIError("--control-tokens applies to records of token ids: give --tokenizer PATH with it")
    try:
        parser = RecordParser(**settings)
    except ResponseTemplateError as exc:
        raise CLIError(str(exc)) from None
    if parser.control_texts is not None:
        settings["control_tokens"] = parser.control_texts  # the workers use the set resolved here

    jobs = args.jobs or cpu_count()
    path = args.jsonl if args.jsonl is not None else args.parquet
    source = _Source(
        path,
        args.parquet is not None,
        {**{"output": "output", "prompt": "prompt", "tools": "tools", "id": "id"}, **fields},
        streams,
    )
    held = _read_held(args.output) if resume else _Held()
    retry = held.failed if args.retry_failed else frozenset()
    id_field = source.fields.get("id")
    pieces = source.open(by_offset=jobs > 1 and hasattr(os, "pread"))  # else the parts are sent
    sizes: deque[int] = deque()

    def submitted() -> Iterator[Any]:
        for size, piece in pieces:
            sizes.append(size)
            yield piece

    out = _Output(args.output, held if resume else None, bool(args.retry_failed), streams)
    show = args.progress == "always" or (
        args.progress == "auto" and getattr(streams.stderr, "isatty", lambda: False)()
    )
    progress = _Progress(streams.stderr, source, show)
    counts = [0, 0, 0]
    skipped = retried = reached = 0
    task: Any = _parse_rows if source.parquet else _parse_piece
    make = functools.partial(_Worker, settings, held.ids, retry, id_field)
    local = _Worker(settings, held.ids, retry, id_field, parser) if jobs <= 1 else None
    results = ordered_map(task, submitted(), make, workers=jobs, local=local)
    signals = _Signals()
    signals.install()
    try:
        try:
            for block in results:
                if block.mismatch is not None:
                    raise _mismatch(block, held, out.name, source.parquet)
                signals.hold = True  # a signal now stops the run once the block is written
                out.write(block)
                for status, n in enumerate(block.counts):
                    counts[status] += n
                skipped += block.skipped
                retried += block.retried
                reached = max(reached, block.first + block.records)
                source.done += sizes.popleft()
                progress.update(sum(counts), counts[_FAILED])
                signals.release()
        finally:
            signals.hold = True  # from here on a signal is only noted: nothing may stop the cleanup
            results.close()  # the workers are killed if the run stopped before the end
            signals.restore()
        if source.error is None and reached < len(held.ids):
            raise CLIError(
                f"cannot resume: {out.name!r} holds the results of {len(held.ids):,} records, but the "
                f"input has only {reached:,}: it belongs to another input; write to another file, or "
                "remove it to start again"
            )
    except _Stop as stop:
        return _stopped(stop.signum, args, out, progress, streams)
    except WorkerDiedError as exc:
        if signals.pending is not None or exc.signal == signal.SIGTERM:
            # SIGTERM sent to the whole process group (as Slurm does) ended a worker too
            return _stopped(signals.pending or signal.SIGTERM, args, out, progress, streams)
        out.stop()
        progress.end()
        streams.error(f"{exc}; {out.saved()}")
        streams.stderr.write(_how_to_go_on(args, out))
        return EXIT_WORKER_DIED
    except _WriteError as exc:
        out.failed(exc)
        progress.end()
        streams.error(f"{exc}; {out.saved()}")
        streams.stderr.write(_how_to_go_on(args, out, "once there is room (free some space)"))
        return EXIT_OUTPUT_FAILED
    except _ReadError as exc:
        source.error = str(exc)
    except BaseException:  # a refusal (CLIError), a broken pipe, ...: OUT stays as it was
        out.abandon()
        raise
    if source.error is not None:
        out.stop()
        progress.end()
        streams.error(f"{source.error}; {out.saved()}")
        return EXIT_INPUT_FAILED
    out.finish()
    total = sum(counts)
    progress.update(total, counts[_FAILED], final=True)
    elapsed = max(time.monotonic() - progress.start, 1e-9)
    summary = f"{total:,} records: {counts[_OK] + counts[_KEPT]:,} ok, {counts[_FAILED]:,} failed"
    if counts[_KEPT]:
        summary += f" ({counts[_KEPT]:,} ok with errors kept in the message)"
    summary += f"; {elapsed:.1f} s, {total / elapsed:,.0f} records/s"
    if resume:
        summary += f"; {skipped:,} skipped (already in {args.output})"
    if args.retry_failed:
        summary += f", {retried:,} failed before and parsed again"
    streams.stderr.write(summary + "\n")
    return EXIT_RECORDS_FAILED if counts[_FAILED] else EXIT_OK


def _stopped(
    signum: int, args: argparse.Namespace, out: _Output, progress: _Progress, streams: Streams
) -> int:
    """SIGINT or SIGTERM stopped the run: say what OUT holds and how to go on."""
    out.stop()
    progress.end()
    interrupted = signum == signal.SIGINT
    what = "interrupted (Ctrl-C)" if interrupted else "stopped by SIGTERM"
    streams.stderr.write(f"{what}: {out.saved()}\n{_how_to_go_on(args, out)}")
    return EXIT_INTERRUPTED if interrupted else EXIT_TERMINATED


def _how_to_go_on(args: argparse.Namespace, out: _Output, when: str = "") -> str:
    """The line that says how to go on from where the run stopped: the exact command with --resume."""
    argv = getattr(args, "argv", None)
    if argv is None:
        argv = sys.argv[1:]
    argv = list(argv)
    if out.path is None:
        return (
            "the results went to stdout: to be able to go on from where a run stops, write them to a "
            "file with -o OUT and run the same command again with --resume\n"
        )
    if not any(arg in ("--resume", "--retry-failed") for arg in argv):
        argv.append("--resume")
    return f"go on{' ' + when if when else ''} with: {shlex.join([PROG, *argv])}\n"


class _Stop(BaseException):
    """SIGINT or SIGTERM came: the run stops (not an Exception, so that nothing on the way catches it)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


class _Signals:
    """SIGINT and SIGTERM during the run raise :class:`_Stop`, once; while ``hold`` is set (a block is
    being written) only when it has been written, so that what was counted is what OUT holds."""

    def __init__(self) -> None:
        self.hold = False
        self.pending: int | None = None  # the first signal that came
        self._raised = False
        self._old: dict[int, Any] = {}

    def install(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return  # signals reach only the main thread: a run in another one keeps the defaults
        for signum in (signal.SIGINT, signal.SIGTERM):
            if signal.getsignal(signum) is signal.SIG_IGN:  # e.g. SIGINT of a background job
                continue
            self._old[signum] = signal.signal(signum, self._handle)

    def restore(self) -> None:
        for signum, old in self._old.items():
            signal.signal(signum, old)
        self._old.clear()

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.pending is None:
            self.pending = signum
        if not self.hold and not self._raised:
            self._raised = True
            raise _Stop(signum)

    def release(self) -> None:
        """The block is written: stop now if a signal came while it was."""
        self.hold = False
        if self.pending is not None and not self._raised:
            self._raised = True
            raise _Stop(self.pending)


class _WriteError(Exception):
    """The output could not be written (a full disk, ...)."""


class _Output:
    """Where the result lines go, written as bytes: stdout, OUT (new), OUT appended to (--resume) or a
    new OUT in a temporary file beside it, which replaces OUT when the run ends (--retry-failed).

    ``records`` counts the records whose results OUT holds, as the first lines of it.
    """

    def __init__(self, path: str | None, held: _Held | None, retry: bool, streams: Streams) -> None:
        self.path = path
        self.name = path or "stdout"
        self.records = 0
        self._held = held if held is not None else _Held()
        self._retry = retry
        self._fd: int | None = None
        self._text: TextIO | None = None
        self._old: Any = None  # OUT as it was, read along (--retry-failed)
        self._temp: str | None = None
        self._cut = False  # whether OUT still ends with a line cut short (dropped before writing)
        self._closed = False
        if path is None:
            self._text = streams.stdout
            try:
                self._fd = streams.stdout.fileno()
            except (AttributeError, OSError, ValueError):  # not a file (captured): written as text
                self._fd = None
            return
        try:
            if held is None:
                self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
            elif not retry:
                self._fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o666)
                self.records = len(held.ids)
                self._cut = held.total > held.size
                os.lseek(self._fd, held.size, os.SEEK_SET)
            else:
                self._old = open(path, "rb") if held.ids else None  # noqa: SIM115 -- closed by _close
                directory, base = os.path.split(os.path.abspath(path))
                self._temp = os.path.join(directory, f".{base}.retry-failed")
                self._fd = os.open(self._temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
                with contextlib.suppress(OSError):
                    shutil.copymode(path, self._temp)
        except OSError as exc:
            raise CLIError(f"cannot write {path!r}: {exc.strerror or exc}") from None

    def write(self, block: _Block) -> None:
        """Write a block's lines; :class:`_WriteError` if they cannot be (``records`` then counts the
        lines written whole)."""
        if self._retry:
            data, first = self._merged(block), block.first
        else:
            data, first = block.data, block.first + block.skipped
        if data:
            if self._cut:
                self._drop_cut_line()
            try:
                self._write(data)
            except _WriteError as exc:
                self.records = first + exc.args[1]
                raise _WriteError(exc.args[0]) from None
        self.records = max(self.records, block.first + block.records)

    def _merged(self, block: _Block) -> bytes:
        """--retry-failed: the block's records' lines, OUT's lines for those it holds and did not fail."""
        new = iter(block.data.split(b"\n"))
        held, failed, old = len(self._held.ids), self._held.failed, self._old
        lines: list[bytes] = []
        for index in range(block.first, block.first + block.records):
            if index < held:
                line = old.readline()
                lines.append(next(new) + b"\n" if index in failed else line)
            else:
                lines.append(next(new) + b"\n")
        return b"".join(lines)

    def _drop_cut_line(self) -> None:
        assert self._fd is not None
        try:
            os.ftruncate(self._fd, self._held.size)
        except OSError as exc:
            raise _WriteError(f"cannot write {self.name!r}: {exc.strerror or exc}") from None
        self._cut = False

    def _write(self, data: bytes) -> None:
        """All of ``data``; else ``_WriteError(message, whole lines written)``."""
        if self._fd is None:
            assert self._text is not None
            self._text.write(data.decode("utf-8"))
            self._text.flush()
            return
        if self._text is not None:
            self._text.flush()  # what was written to stdout as text before
        view = memoryview(data)
        done = 0
        try:
            while done < len(data):
                done += os.write(self._fd, view[done:])
        except BrokenPipeError:
            raise
        except OSError as exc:
            if self.path is None:
                _quiet_stdout(self._fd)
            where = "to stdout" if self.path is None else repr(self.name)
            raise _WriteError(
                f"cannot write {where}: {exc.strerror or exc}", data.count(b"\n", 0, done)
            ) from None

    def saved(self) -> str:
        """What OUT holds now, said to the user."""
        n = self.records
        noun = "record" if n == 1 else "records"
        if self.path is None:
            return f"the results of the first {n:,} {noun} were written to stdout"
        if n == 0:
            return f"nothing was written to {self.name!r}"
        return f"the results of the first {n:,} {noun} are in {self.name!r}, kept"

    def finish(self) -> None:
        """The run ended: OUT is complete."""
        if self._cut:
            self._drop_cut_line()
        self._close()
        if self._temp is not None:
            os.replace(self._temp, self.path or "")
            self._temp = None

    def stop(self) -> None:
        """The run stopped early: with --retry-failed, OUT's lines the run did not reach are copied after
        the new ones, so that OUT stays the results of the input's first records, and it replaces OUT."""
        if self._temp is not None and self._old is not None:
            try:
                rest = self._held.size - self._old.tell()
                while rest > 0:
                    data = self._old.read(min(rest, 1 << 20))
                    if not data:
                        break
                    self._write(data)
                    rest -= len(data)
            except (OSError, _WriteError):
                self.abandon()
                return
            self.records = max(self.records, len(self._held.ids))
        if self._temp is not None:
            self.finish()
        else:  # OUT's lines are as written (a line cut short at its end is dropped by --resume)
            self._close()

    def failed(self, exc: _WriteError) -> None:
        """The output could not be written: a new OUT (--retry-failed) is given up, OUT is unchanged."""
        if self._temp is not None:
            self.abandon()
        else:
            self._close()

    def abandon(self) -> None:
        """Leave OUT as it was before the run (--retry-failed: the new OUT is removed)."""
        self._close()
        if self._temp is not None:
            with contextlib.suppress(OSError):
                os.unlink(self._temp)
            self._temp = None
            self.records = len(self._held.ids)

    def _close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._old is not None:
            self._old.close()
        if self.path is not None and self._fd is not None:
            os.close(self._fd)


def _quiet_stdout(fd: int) -> None:
    """stdout cannot be written (a full disk): point it at the null device, so that the interpreter's
    last flush does not report the same error again."""
    with contextlib.suppress(OSError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, fd)
        os.close(devnull)
