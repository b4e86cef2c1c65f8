"""Internal: the batch parser for columnar batches (Ray Data, Hugging Face ``datasets``, pandas, Arrow).

:class:`ColumnParser` is a callable object: give it a batch of columns (a dict of lists or NumPy arrays,
a pandas ``DataFrame``, a pyarrow ``Table`` or ``RecordBatch``) and it returns a dict of lists with one
row per input row. It pickles as its settings only, and compiles its template the first time it is
called in a process, so an engine that ships it to many workers compiles the template once per worker.

The output columns have one Arrow type each, whatever the messages hold (tool-call arguments differ
from tool to tool, which would give each batch another inferred schema): ``message`` and ``tool_calls``
are JSON text, ``reasoning_content`` and ``content`` plain strings, ``error`` a string or null and
``ok`` a boolean.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from ..errors import ResponseTemplateError
from ..language import ResponseTemplate
from .records import DEFAULT_FIELDS, BatchResult, RecordParser

__all__ = ["OUTPUT_COLUMNS", "ColumnParser"]

#: The columns :class:`ColumnParser` adds, in order.
OUTPUT_COLUMNS = ("message", "reasoning_content", "content", "tool_calls", "error", "ok")


class ColumnParser:
    """Parse the output column of columnar batches (``map_batches`` / ``map(batched=True)``).

    Takes the settings of :func:`~response_templates.parse_batch` (template or model, default prompt
    and tools, policies); ``columns`` names the input columns (``{"output": "text", "prompt": ...}``;
    defaults: ``output``, ``prompt``, ``tools``, ``id``; ``model`` read only if named). ``keep_columns``
    returns the input columns too (all of them with True, or those listed): Ray Data keeps only what the
    function returns, ``datasets`` keeps the input columns by itself.

    >>> import response_templates as rt
    >>> parse = rt.batch.ColumnParser(model="qwen3", prefix="")
    >>> out = parse({"output": ["<think>Sum.</think>4<|im_end|>", None]})
    >>> out["content"], out["ok"], out["error"][1]
    (['4', None], [True, False], "RecordError: the record's 'output' is null")
    """

    def __init__(
        self,
        template: Mapping[str, Any] | ResponseTemplate | str | None = None,
        *,
        model: str | None = None,
        prefix: str | None = None,
        tools: Sequence[Any] | None = None,
        columns: Mapping[str, str | None] | None = None,
        errors: Literal["raise", "keep"] = "raise",
        missing_anchor: Literal["raise", "parse"] = "raise",
        keep_columns: bool | Sequence[str] = False,
    ) -> None:
        if isinstance(template, ResponseTemplate):
            template = dict(template.source)  # plain data: pickles small and hashes the same every run
        for role, name in (columns or {}).items():
            if name is not None and not isinstance(name, str):
                raise ResponseTemplateError(f"columns[{role!r}] must be a column name or None")
        self._settings: dict[str, Any] = {
            "template": template,
            "model": model,
            "prefix": prefix,
            "tools": tools,
            "fields": dict(columns or {}),
            "errors": errors,
            "missing_anchor": missing_anchor,
        }
        self._keep = keep_columns if isinstance(keep_columns, bool) else tuple(keep_columns)
        self._parser: RecordParser | None = RecordParser(**self._settings)  # checks the settings now

    def __getstate__(self) -> dict[str, Any]:
        return {"settings": self._settings, "keep": self._keep}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._settings = state["settings"]
        self._keep = state["keep"]
        self._parser = None  # compiled on first use in this process

    def __call__(self, batch: Any) -> dict[str, list[Any]]:
        """One output row per input row (see the module docstring for the columns)."""
        if self._parser is None:
            self._parser = RecordParser(**self._settings)
        data = _columns(batch)
        fields = {**DEFAULT_FIELDS, **self._settings["fields"]}
        used = [name for name in fields.values() if isinstance(name, str) and name in data]
        rows = len(next(iter(data.values()))) if data else 0
        out: dict[str, list[Any]] = {name: [] for name in OUTPUT_COLUMNS}
        parse = self._parser.parse
        for i in range(rows):
            _add_row(out, parse(i, {name: data[name][i] for name in used}))
        if self._keep is True:
            return {**data, **out}
        if self._keep:
            return {**{name: data[name] for name in self._keep}, **out}
        return out


def _add_row(out: dict[str, list[Any]], result: BatchResult) -> None:
    message = result.message
    if message is None:
        error = result.error
        out["message"].append(None)
        out["reasoning_content"].append(None)
        out["content"].append(None)
        out["tool_calls"].append(None)
        out["error"].append(f"{type(error).__name__}: {error}")
        out["ok"].append(False)
        return
    out["message"].append(json.dumps(message, ensure_ascii=False))
    reasoning = message.get("reasoning_content")
    content = message.get("content")
    calls = message.get("tool_calls")
    out["reasoning_content"].append(
        reasoning if isinstance(reasoning, str) or reasoning is None else str(reasoning)
    )
    out["content"].append(content if isinstance(content, str) or content is None else str(content))
    out["tool_calls"].append(None if calls is None else json.dumps(calls, ensure_ascii=False))
    if message.errors:
        out["error"].append("; ".join(f"{type(e).__name__}: {e}" for e in message.errors))
    else:
        out["error"].append(None)
    out["ok"].append(not message.errors)


def _columns(batch: Any) -> dict[str, list[Any]]:
    """A batch as a dict of Python lists (NumPy values become Python values)."""
    if hasattr(batch, "to_pydict"):  # pyarrow Table / RecordBatch
        data: dict[str, list[Any]] = batch.to_pydict()
        return data
    if hasattr(batch, "columns") and hasattr(batch, "to_dict") and not isinstance(batch, Mapping):
        frame: dict[str, list[Any]] = batch.to_dict("list")  # pandas DataFrame
        return {name: [_plain(v) for v in values] for name, values in frame.items()}
    if not isinstance(batch, Mapping):
        raise ResponseTemplateError(
            f"a batch must be a mapping of columns, a pandas DataFrame or an Arrow table, got "
            f"{type(batch).__name__}"
        )
    return {
        str(name): [_plain(v) for v in values.tolist()] if hasattr(values, "tolist") else list(values)
        for name, values in batch.items()
    }


def _plain(value: Any) -> Any:
    """A NumPy value (array, scalar) as the Python value it holds."""
    if hasattr(value, "tolist") and not isinstance(value, (str, bytes)):
        return value.tolist()
    return value
