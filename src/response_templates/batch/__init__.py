"""Parse many recorded generations: any iterable in, one result per record out, in order, on every core.

:func:`parse_batch` takes plain texts or records (dicts with the output, the prompt, the tools, a model
id and a record id, under field names you choose) and yields one :class:`BatchResult` per record, in
input order. A malformed record (a missing key, a null output, a wrong type, an unknown model id) or an
output that does not fit the template gives a result with ``error`` set; it never stops the run. The
input is read as it is consumed (never all at once), templates are compiled once per process (and per
model id), and ``workers=N`` spreads the records over N processes.

>>> import response_templates as rt
>>> records = [
...     {"id": "a", "prompt": "", "output": "<think>Sum.</think>4<|im_end|>"},
...     {"id": "b", "prompt": ""},                                   # no output
... ]
>>> for result in rt.parse_batch(records, model="Qwen/Qwen3-8B"):
...     print(result.id, result.message, type(result.error).__name__)
a {'role': 'assistant', 'reasoning_content': 'Sum.', 'content': '4'} NoneType
b None RecordError

:class:`ColumnParser` (in :mod:`.columns`) is the same parser for columnar batches: Ray Data's
``map_batches`` and Hugging Face ``datasets``' ``map(batched=True)``. docs/batch.md has the recipes.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, Literal

from ..errors import ResponseTemplateError
from ..language import ResponseTemplate
from ..matching import RegexBudget
from .columns import ColumnParser
from .pool import WorkerDiedError, chunked, cpu_count, ordered_map
from .records import (
    DEFAULT_FIELDS,
    BatchResult,
    FieldSpec,
    PackedResult,
    RecordError,
    RecordParser,
    error_dict,
    pack,
    unpack,
)

__all__ = [
    "DEFAULT_FIELDS",
    "BatchResult",
    "ColumnParser",
    "FieldSpec",
    "RecordError",
    "WorkerDiedError",
    "error_dict",
    "parse_batch",
]

#: Records sent to a worker process at a time.
DEFAULT_CHUNK_SIZE = 64


#: Records sent to a worker process at a time when ``workers`` > 1 and ``chunk_size`` is left as it is:
#: larger chunks cost the main process less per record (fewer hand-overs to the pool).
POOL_CHUNK_SIZE = 256


def _parse_chunk(parser: RecordParser, chunk: list[tuple[int, Any]]) -> list[BatchResult]:
    return [parser.parse(index, record) for index, record in chunk]


def _parse_packed(parser: RecordParser, chunk: list[tuple[int, Any]]) -> list[PackedResult]:
    """In a worker: the chunk's results in the compact form that crosses the process boundary cheaply."""
    return [pack(parser.parse(index, record)) for index, record in chunk]


def parse_batch(
    records: Iterable[Any],
    template: Mapping[str, Any] | ResponseTemplate | str | None = None,
    *,
    model: str | None = None,
    prefix: str | Sequence[int] | None = None,
    tools: Sequence[Any] | None = None,
    fields: Mapping[str, FieldSpec] | None = None,
    errors: Literal["raise", "keep"] = "raise",
    missing_anchor: Literal["raise", "parse"] = "raise",
    regex_budget: RegexBudget | None = None,
    workers: int | None = 1,
    chunk_size: int | None = None,
    tokenizer: Any = None,
    control_tokens: Iterable[str] | str = "auto",
) -> Iterator[BatchResult]:
    """Parse each record of ``records``; yield one :class:`BatchResult` per record, in input order.

    Args:
        records: any iterable, read lazily: plain output texts (``str`` or UTF-8 ``bytes``), or records
            (mappings, or objects whose attributes or ``fields`` functions give the parts).
        template: the response template for every record (dict, JSON text or compiled), or
        model: a model id or family name whose built-in template is used (one of the two, unless every
            record names its model: see ``fields``).
        prefix: the prompt for records that carry none (plain texts included); ``""`` parses them
            without one. Without it, a record with no prompt gets a :class:`RecordError`. With a
            ``tokenizer`` it may be token ids.
        tools: the tools (JSON schemas or typed functions) for records that carry none.
        fields: where a record keeps each part: ``{"output": ..., "prompt": ..., "tools": ...,
            "id": ..., "model": ...}``, each a key (of a mapping, or an attribute of another object), a
            function of the record, or None (not read).
            Defaults: :data:`DEFAULT_FIELDS` (the keys of the same names; ``model`` is not read unless
            set, and then a record's model id picks its template, compiled once per model id).
        errors: ``"raise"`` (default): output that does not fit the template gives a result whose
            ``error`` is the :class:`~response_templates.ParseError`; ``"keep"``: the text is kept in the
            message and ``message.errors`` says what failed. Neither stops the run.
        missing_anchor: as for :func:`~response_templates.parse_response`, per record.
        regex_budget: a :class:`~response_templates.RegexBudget` for each record.
        workers: processes to parse on; 1 (default) parses here, ``None`` or 0 uses every core. Records
            go to the workers in chunks of ``chunk_size`` (default 256 records; 64 are read at a time with
            ``workers=1``), at most two chunks per worker ahead of the results, so memory stays bounded;
            field functions, the template and tools must then pickle (they do not have to on Linux, which
            forks the workers). Each worker sends its results back in a compact form (plain dicts and
            tuples) that the main process turns back into :class:`BatchResult` objects. A worker that
            dies (killed, out of memory) raises :class:`WorkerDiedError` after the results before it;
            the workers end with the calling process, and when the iteration stops early.
        tokenizer: a transformers tokenizer or a ``tokenizers.Tokenizer``: a record whose output (or
            prompt) is a list of token ids is then parsed as ids, as :func:`response_templates.hf.parse_response`
            does (a delimiter that is a control token matches only where the model generated its id;
            text outputs stay text). Without one, an output of ids is a :class:`RecordError`. An id
            the tokenizer has no token for is a :class:`RecordError` too. With ``workers`` > 1 the
            tokenizer is sent to each worker once (it must pickle on platforms that do not fork: both
            kinds do).
        control_tokens: which tokens are control tokens, for records of ids: ``"auto"`` (default: the
            tokenizer's special tokens and the added tokens its chat template writes), the token texts,
            or ``()`` for the text reading (every spelling of a delimiter counts). Resolved once, here.

    A bad ``template``, ``model``, ``fields`` or policy raises :class:`~response_templates.ResponseTemplateError`
    here, before any record is read.
    """
    if workers is None or workers == 0:
        workers = cpu_count()
    if not isinstance(workers, int) or workers < 0:
        raise ResponseTemplateError(f"workers must be a positive integer, 0 or None, got {workers!r}")
    if chunk_size is None:
        chunk_size = DEFAULT_CHUNK_SIZE if workers == 1 else POOL_CHUNK_SIZE
    if not isinstance(chunk_size, int) or chunk_size < 1:
        raise ResponseTemplateError(f"chunk_size must be a positive integer, got {chunk_size!r}")
    if isinstance(records, (str, bytes, Mapping)):
        raise ResponseTemplateError(
            f"records must be an iterable of records, got a single {type(records).__name__} "
            "(use parse_response for one output)"
        )
    settings: dict[str, Any] = {
        "template": template,
        "model": model,
        "prefix": prefix,
        "tools": tools,
        "fields": fields,
        "errors": errors,
        "missing_anchor": missing_anchor,
        "regex_budget": regex_budget,
        "tokenizer": tokenizer,
        "control_tokens": control_tokens,
    }
    parser = RecordParser(**settings)  # checks the settings now, and parses when workers == 1
    if workers > 1 and parser.control_texts is not None:
        settings["control_tokens"] = parser.control_texts  # every worker uses the set resolved here
    if workers > 1 and isinstance(template, ResponseTemplate):
        settings["template"] = dict(template.source)  # compiled again in each worker, once
    chunks = chunked(enumerate(records), chunk_size)
    if workers <= 1:
        return _results(ordered_map(_parse_chunk, chunks, lambda: parser, local=parser))
    make = functools.partial(RecordParser, **settings)
    return _unpacked(ordered_map(_parse_packed, chunks, make, workers=workers))


def _results(chunks: Iterator[list[BatchResult]]) -> Iterator[BatchResult]:
    for chunk in chunks:
        yield from chunk


def _unpacked(chunks: Iterator[list[PackedResult]]) -> Iterator[BatchResult]:
    for chunk in chunks:
        for packed in chunk:
            yield unpack(packed)
