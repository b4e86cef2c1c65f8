"""What the tokenizer entry points accept as ``output`` and ``prefix``, and how padding goes away.

Accepted, for both:

* a string (one text) or a list of strings (a batch of texts);
* token ids: a list of ints, a 1-D numpy array or torch tensor (one sequence), or a list of id lists,
  a list of 1-D arrays, a 2-D array or tensor (a batch, one row per item);
* a mapping with ``input_ids`` and optionally ``attention_mask`` (what ``tokenizer(...)`` and
  ``apply_chat_template(..., return_dict=True)`` return).

Padding: with an ``attention_mask``, exactly the positions where it is 0 are dropped. Without one, pad
tokens (``tokenizer.pad_token_id``, or the EOS id when the tokenizer has no pad token, as ``generate``
does) are dropped from both ends of every sequence: left padding of prompts, right padding of finished
generations. When the pad token is also the EOS token, one is kept at the end, since the model wrote it.

>>> normalize([[5, 6, 0, 0], [7, 0, 0, 0]], pad_id=0, keep_one=False).items
[[5, 6], [7]]
>>> normalize({"input_ids": [[0, 0, 5], [4, 5, 6]], "attention_mask": [[0, 0, 1], [1, 1, 1]]},
...           pad_id=None, keep_one=False).items
[[5], [4, 5, 6]]
"""

from __future__ import annotations

import operator
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import ParseError, ResponseTemplateError
from .decoding import _id_list

__all__ = ["Inputs", "normalize", "pad_info", "strip_padding"]

Item = str | list[int]


@dataclass
class Inputs:
    """Normalized input: ``items`` (texts and/or id lists) and whether it was a batch."""

    items: list[Item]
    batched: bool


def _to_py(value: Any) -> Any:
    """numpy arrays, torch tensors and their scalars to (nested) Python lists and ints."""
    if isinstance(value, (list, tuple, str, bytes, bytearray, Mapping)):
        return value
    tolist = getattr(value, "tolist", None)
    return tolist() if callable(tolist) else value


def _is_int(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return True
    try:
        operator.index(value)
    except TypeError:
        return False
    return not hasattr(value, "__len__")


def _text(value: str | bytes | bytearray) -> str:
    if isinstance(value, str):
        return value
    try:
        return bytes(value).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ParseError(f"invalid UTF-8 at byte {exc.start} ({exc.reason})") from None


def _row(value: Any, where: str) -> list[int]:
    value = _to_py(value)
    if isinstance(value, (str, bytes, bytearray)):
        raise ResponseTemplateError(f"{where}: a batch mixes texts and token ids")
    if _is_int(value):
        raise ResponseTemplateError(f"{where}: a batch mixes single token ids and sequences")
    if isinstance(value, (list, tuple)) and value and isinstance(_to_py(value[0]), (list, tuple)):
        raise ResponseTemplateError(f"{where}: token ids must be 1-D (one sequence) or 2-D (a batch)")
    return _id_list(value)


def _classify(value: Any, what: str) -> Inputs:
    value = _to_py(value)
    if isinstance(value, (str, bytes, bytearray)):
        return Inputs([_text(value)], False)
    if _is_int(value):
        return Inputs([_id_list(value)], False)
    if not isinstance(value, (list, tuple)):
        raise ResponseTemplateError(
            f"{what} must be text, token ids (list, numpy array, torch tensor) or a batch of them, "
            f"got {type(value).__name__}"
        )
    if not value:
        return Inputs([], True)
    first = _to_py(value[0])
    if isinstance(first, (str, bytes, bytearray)):
        items: list[Item] = []
        for i, item in enumerate(value):
            if not isinstance(item, (str, bytes, bytearray)):
                raise ResponseTemplateError(f"{what}[{i}]: a batch mixes texts and token ids")
            items.append(_text(item))
        return Inputs(items, True)
    if _is_int(first):
        return Inputs([_row(value, what)], False)
    rows: list[Item] = []
    for i, row in enumerate(value):
        try:
            rows.append(_row(row, f"{what}[{i}]"))
        except ResponseTemplateError as exc:
            exc.index = i
            raise
    return Inputs(rows, True)


def strip_padding(row: list[int], pad_id: int | None, keep_one: bool) -> list[int]:
    """Drop ``pad_id`` from both ends of ``row`` (keeping one at the end when ``keep_one``)."""
    if pad_id is None or not row or (row[0] != pad_id and row[-1] != pad_id):
        return row
    start, end = 0, len(row)
    while start < end and row[start] == pad_id:
        start += 1
    if start == end:
        return [pad_id] if keep_one else []
    while row[end - 1] == pad_id:
        end -= 1
    kept = row[start:end]
    if keep_one and end < len(row):
        kept.append(pad_id)
    return kept


def pad_info(tokenizer: Any) -> tuple[int | None, bool]:
    """``(pad id, keep one at the end)`` for a tokenizer: see the module documentation."""
    pad = getattr(tokenizer, "pad_token_id", None)
    eos = getattr(tokenizer, "eos_token_id", None)
    if isinstance(eos, (list, tuple)):
        eos = eos[0] if eos else None
    if pad is None and not hasattr(tokenizer, "pad_token_id"):
        padding = getattr(tokenizer, "padding", None)  # a tokenizers.Tokenizer with padding enabled
        if isinstance(padding, Mapping):
            pad = padding.get("pad_id")
    if pad is None:
        pad = eos
    return (pad if isinstance(pad, int) else None), (pad is not None and pad == eos)


def normalize(value: Any, *, pad_id: int | None, keep_one: bool, what: str = "output") -> Inputs:
    """Classify ``value`` (see the module documentation) and remove padding from its id sequences."""
    if isinstance(value, Mapping):
        if "input_ids" not in value:
            raise ResponseTemplateError(
                f"{what}: a mapping must have 'input_ids' (and may have 'attention_mask')"
            )
        inputs = _classify(value["input_ids"], what)
        mask = value.get("attention_mask")
        if mask is None:
            return _strip_all(inputs, pad_id, keep_one)
        masks = _classify(mask, f"{what} attention_mask")
        if masks.batched != inputs.batched or len(masks.items) != len(inputs.items):
            raise ResponseTemplateError(f"{what}: attention_mask does not have the shape of input_ids")
        rows: list[Item] = []
        for i, (row, mrow) in enumerate(zip(inputs.items, masks.items, strict=True)):
            if isinstance(row, str) or isinstance(mrow, str) or len(row) != len(mrow):
                raise ResponseTemplateError(
                    f"{what}[{i}]: attention_mask does not have the shape of input_ids"
                )
            rows.append([tid for tid, keep in zip(row, mrow, strict=True) if keep])
        return Inputs(rows, inputs.batched)
    return _strip_all(_classify(value, what), pad_id, keep_one)


def _strip_all(inputs: Inputs, pad_id: int | None, keep_one: bool) -> Inputs:
    if pad_id is not None:
        inputs.items = [
            item if isinstance(item, str) else strip_padding(item, pad_id, keep_one) for item in inputs.items
        ]
    return inputs
