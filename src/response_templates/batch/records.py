"""Internal: one record of a batch in, one :class:`BatchResult` out.

:class:`RecordParser` holds what every record of a run shares (the default template, prompt and tools,
the field names, the error policy) and a cache of compiled templates by model id, so each template is
compiled once per process. :meth:`RecordParser.parse` never raises for a bad record: what is wrong with
it (a missing key, a null or non-string output, an unknown model id, output that does not fit the
template) becomes the result's ``error``.

With a tokenizer, an output (and a prompt) given as a list of token ids is parsed as ids
(:mod:`response_templates.hf`): a delimiter that is a control token matches only where the model
generated that token's id, the same characters spelled with ordinary tokens stay text.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ..errors import ResponseTemplateError
from ..language import ResponseTemplate, load_template
from ..matching import RegexBudget
from ..parser import ParsedMessage
from ..policy import ToolParams, tool_params
from ..whole import parse_response

__all__ = [
    "DEFAULT_FIELDS",
    "BatchResult",
    "FieldSpec",
    "PackedResult",
    "RecordError",
    "RecordParser",
    "error_dict",
    "lookup_model",
    "pack",
    "record_key",
    "unpack",
]

#: A field of a record: a key (looked up in a mapping), a function of the record, or None (not read).
FieldSpec = str | Callable[[Any], Any] | None

#: The field names read from mapping records unless ``fields=`` says otherwise. ``model`` is off: set it
#: (e.g. ``fields={"model": "model"}``) to pick each record's template by its model id.
DEFAULT_FIELDS: Mapping[str, FieldSpec] = {
    "output": "output",
    "prompt": "prompt",
    "tools": "tools",
    "id": "id",
    "model": None,
}

_ROLES = ("output", "prompt", "tools", "id", "model")


class RecordError(ResponseTemplateError):
    """A record of a batch cannot be parsed as it is: a key is missing, the output is null or not a
    string (or token ids without a tokenizer), a token id is not in the tokenizer's vocabulary, the JSON
    line is not JSON, its model id is unknown, ...

    ``index`` is the record's position in the input and ``key`` the field at fault (None when the
    whole record is).
    """

    def __init__(self, message: str, *, key: str | None = None) -> None:
        super().__init__(message)
        self.key = key


@dataclass(frozen=True)
class BatchResult:
    """The result of one record of :func:`~response_templates.parse_batch`, in input order.

    ``index`` is the record's position in the input (0-based) and ``id`` its id field (None if it has
    none). Exactly one of ``message`` and ``error`` is set: ``message`` is the parsed message (a
    :class:`~response_templates.ParsedMessage`; with ``errors="keep"`` its ``errors`` list what did not
    parse), ``error`` why the record gave no message (a :class:`RecordError` for a malformed record, a
    :class:`~response_templates.ParseError` for output that does not fit the template with
    ``errors="raise"``, ...).
    """

    index: int
    id: Any
    message: ParsedMessage | None
    error: ResponseTemplateError | None

    @property
    def ok(self) -> bool:
        """Whether the record parsed with no error at all (none kept in the message either)."""
        return self.error is None and self.message is not None and not self.message.errors

    def unwrap(self) -> ParsedMessage:
        """The message, or raise the record's error."""
        if self.error is not None:
            raise self.error
        assert self.message is not None
        return self.message

    def to_dict(self) -> dict[str, Any]:
        """The result as JSON-ready data: ``index``, ``id`` (if the record has one), then ``message``
        (and ``errors``, if some were kept) or ``error``; each error as :func:`error_dict` gives it."""
        out: dict[str, Any] = {"index": self.index}
        if self.id is not None:
            out["id"] = self.id
        if self.error is not None:
            out["error"] = error_dict(self.error)
            return out
        message = self.message
        assert message is not None
        out["message"] = message
        if message.errors:
            out["errors"] = [error_dict(e) for e in message.errors]
        if message.errors_dropped:
            out["errors_dropped"] = message.errors_dropped
        return out


#: A :class:`BatchResult` as a worker process sends it back: ``(index, id, message, errors,
#: errors_dropped, error)`` with the message as a plain dict (or None) and ``errors`` None when empty.
#: Plain dicts and tuples pickle and unpickle at about half the cost of the objects.
PackedResult = tuple[
    int, Any, "dict[str, Any] | None", "list[Any] | None", int, "ResponseTemplateError | None"
]


def pack(result: BatchResult) -> PackedResult:
    """``result`` in the compact form :func:`unpack` reads."""
    message = result.message
    if message is None:
        return (result.index, result.id, None, None, 0, result.error)
    return (result.index, result.id, dict(message), message.errors or None, message.errors_dropped, None)


def unpack(packed: PackedResult) -> BatchResult:
    """The :class:`BatchResult` that :func:`pack` was given."""
    index, record_id, data, errors, dropped, error = packed
    message = None if data is None else ParsedMessage(data, errors or (), dropped)
    return BatchResult(index, record_id, message, error)


def error_dict(exc: BaseException) -> dict[str, Any]:
    """An error as JSON-ready data: ``type``, ``message`` and, when set, ``field``, ``offset``, ``raw``
    and ``key``."""
    out: dict[str, Any] = {"type": type(exc).__name__, "message": str(exc)}
    for name in ("field", "offset", "raw", "key"):
        value = getattr(exc, name, None)
        if value is not None:
            out[name] = value
    return out


def record_key(result_id: Any, index: int) -> str:
    """The key that identifies a record across runs (``--resume``): its id as JSON, else its index."""
    if result_id is None:
        return f"#{index}"
    return json.dumps(result_id, sort_keys=True, ensure_ascii=False)


_MISSING: Any = object()


class RecordParser:
    """Parses records one at a time with the settings a batch shares (see the module docstring).

    Built once per process; it pickles (for ``spawn`` workers) when its template, tools and fields do.
    """

    def __init__(
        self,
        template: Mapping[str, Any] | ResponseTemplate | str | None = None,
        *,
        model: str | None = None,
        prefix: str | None = None,
        tools: Sequence[Any] | None = None,
        fields: Mapping[str, FieldSpec] | None = None,
        errors: Literal["raise", "keep"] = "raise",
        missing_anchor: Literal["raise", "parse"] = "raise",
        regex_budget: RegexBudget | None = None,
        tokenizer: Any = None,
        control_tokens: Iterable[str] | str = "auto",
    ) -> None:
        if template is not None and model is not None:
            raise ResponseTemplateError("pass template= or model=, not both")
        if errors not in ("raise", "keep"):
            raise ResponseTemplateError(f"errors must be 'raise' or 'keep', got {errors!r}")
        if missing_anchor not in ("raise", "parse"):
            raise ResponseTemplateError(f"missing_anchor must be 'raise' or 'parse', got {missing_anchor!r}")
        self._ids: _Ids | None = None if tokenizer is None else _Ids(tokenizer, control_tokens)
        if tokenizer is None and not (isinstance(control_tokens, str) and control_tokens == "auto"):
            raise ResponseTemplateError(
                "control_tokens= applies to outputs given as token ids: pass tokenizer= with it"
            )
        if isinstance(prefix, (list, tuple)) and self._ids is not None:
            prefix = self._ids.checked(prefix, "prefix")
        elif prefix is not None and not isinstance(prefix, str):
            raise ResponseTemplateError(
                f"prefix must be a string (or token ids, with tokenizer=), got {type(prefix).__name__}"
            )
        unknown = sorted(set(fields or ()) - set(_ROLES))
        if unknown:
            raise ResponseTemplateError(f"unknown fields {unknown}: the fields are {', '.join(_ROLES)}")
        merged = {**DEFAULT_FIELDS, **(fields or {})}
        for role, spec in merged.items():
            if spec is not None and not isinstance(spec, str) and not callable(spec):
                raise ResponseTemplateError(
                    f"fields[{role!r}] must be a key, a function or None, got {type(spec).__name__}"
                )
        if merged["output"] is None:
            raise ResponseTemplateError("fields['output'] cannot be None: the output must be read")
        self._fields = merged
        # Records that are dicts, with every field a key (or None): read with dict.get, no per-role checks.
        self._keys: tuple[str | None, ...] | None = None
        if all(spec is None or isinstance(spec, str) for spec in merged.values()):
            self._keys = tuple(spec if isinstance(spec, str) else None for spec in map(merged.get, _ROLES))
        self._default: ResponseTemplate | None = None
        if template is not None:
            self._default = load_template(template)
        elif model is not None:
            self._default = lookup_model(model)  # a usage error: raised before any record is read
        self._prefix: str | list[int] | None = prefix
        self._tools = tools
        self._params: ToolParams | None = None  # the default tools' parameters, extracted once
        self._errors: Literal["raise", "keep"] = errors
        self._missing_anchor: Literal["raise", "parse"] = missing_anchor
        self._budget = regex_budget
        self._by_model: dict[str, ResponseTemplate | ResponseTemplateError] = {}

    @property
    def control_texts(self) -> tuple[str, ...] | None:
        """The texts of the control tokens records of ids are read with (None: no tokenizer)."""
        if self._ids is None:
            return None
        return tuple(sorted(set(self._ids.controls.values())))

    # -- one record ---------------------------------------------------------------------------------

    def parse(self, index: int, record: Any) -> BatchResult:
        """The result of the record at position ``index`` (never raises for a bad record)."""
        record_id = None
        prompt: Any
        try:
            if isinstance(record, (str, bytes, bytearray)):
                output: Any = record
                prompt, tools, template = (
                    self._default_prompt(),
                    self._default_tools(),
                    self._template(None, record),
                )
            elif self._keys is not None and type(record) is dict:
                output_key, prompt_key, tools_key, id_key, model_key = self._keys
                get = record.get
                record_id = None if id_key is None else get(id_key)
                output = get(output_key, _MISSING)
                if output is _MISSING:
                    raise RecordError(f"the record has no {self._name('output')}", key="output")
                prompt, tools, template, output = self._checked(
                    output,
                    _MISSING if prompt_key is None else get(prompt_key, _MISSING),
                    _MISSING if tools_key is None else get(tools_key, _MISSING),
                    _MISSING if model_key is None else get(model_key, _MISSING),
                    record,
                )
            else:
                record_id = self._get(record, "id")
                if record_id is _MISSING:
                    record_id = None
                output = self._get(record, "output")
                if output is _MISSING and not isinstance(record, Mapping):
                    raise RecordError(
                        f"a record must be a string, a mapping (a dict) or an object with the attribute "
                        f"{self._name('output')}, got {type(record).__name__}; pass functions in fields= "
                        "to read other objects"
                    )
                if output is _MISSING:
                    raise RecordError(f"the record has no {self._name('output')}", key="output")
                output = self._output(output)
                prompt = self._prompt(self._get(record, "prompt"))
                tools = self._record_tools(self._get(record, "tools"))
                model = self._get(record, "model")
                if model is not _MISSING and model is not None and not isinstance(model, str):
                    raise RecordError(
                        f"the record's {self._name('model')} must be a string, got {type(model).__name__}",
                        key="model",
                    )
                template = self._template(None if model is _MISSING else model, record)
            if self._ids is not None and (type(output) is list or type(prompt) is list):
                message = self._ids.parse(
                    output, template, prompt, tools, self._errors, self._missing_anchor, self._budget
                )
            else:
                parsed = parse_response(
                    output,
                    template,
                    prefix=prompt,
                    tools=tools,
                    errors=self._errors,
                    missing_anchor=self._missing_anchor,
                    regex_budget=self._budget,
                )
                assert isinstance(parsed, ParsedMessage)
                message = parsed
            return BatchResult(index, record_id, message, None)
        except ResponseTemplateError as exc:
            exc.index = index
            _drop_traceback(exc)
            return BatchResult(index, _json_safe_id(record_id), None, exc)
        except Exception as exc:  # a bug, or a field function that failed: the run goes on
            error = RecordError(f"{type(exc).__name__}: {exc}")
            error.index = index
            return BatchResult(index, _json_safe_id(record_id), None, error)

    # -- helpers ------------------------------------------------------------------------------------

    def _output(self, output: Any) -> Any:
        """A record's output, checked: text (``str`` or UTF-8 bytes), or token ids with a tokenizer."""
        if isinstance(output, (str, bytes, bytearray)):
            return output
        if output is None:
            raise RecordError(f"the record's {self._name('output')} is null", key="output")
        return self._token_ids(output, "output")

    def _prompt(self, prompt: Any) -> Any:
        """A record's prompt, checked: text, token ids with a tokenizer, or the default prompt."""
        if prompt is _MISSING or prompt is None:
            return self._default_prompt()
        if isinstance(prompt, str):
            return prompt
        return self._token_ids(prompt, "prompt")

    def _token_ids(self, value: Any, role: str) -> list[int]:
        """A record's ``role`` that is not text: token ids, checked, when there is a tokenizer."""
        name = self._name(role)
        if isinstance(value, (list, tuple)):
            if self._ids is None:
                raise RecordError(
                    f"the record's {name} must be a string, got a list: token ids are parsed only with a "
                    "tokenizer (tokenizer= of parse_batch; on the command line: --tokenizer PATH)",
                    key=role,
                )
            return self._ids.checked(value, role, name)
        raise RecordError(
            f"the record's {name} must be a string"
            f"{' or a list of token ids' if self._ids is not None else ''}, got {type(value).__name__}",
            key=role,
        )

    def _default_tools(self) -> Any:
        """The tools of records that carry none: their parameters, extracted for the first record only.

        Tools that cannot be read are passed on as they are, so that each record's parse reports them.
        """
        params = self._params
        if params is None:
            try:
                params = self._params = tool_params(self._tools)
            except ResponseTemplateError:
                return self._tools
        return params

    def _checked(
        self, output: Any, prompt: Any, tools: Any, model: Any, record: Any
    ) -> tuple[Any, Any, ResponseTemplate, Any]:
        """The prompt, tools, template and checked output of a dict record whose parts were read (each
        may be _MISSING), checked in the order of the general path of :meth:`parse`."""
        output = self._output(output)
        prompt = self._prompt(prompt)
        tools = self._record_tools(tools)
        if model is not _MISSING and model is not None and not isinstance(model, str):
            raise RecordError(
                f"the record's {self._name('model')} must be a string, got {type(model).__name__}",
                key="model",
            )
        template = self._template(None if model is _MISSING else model, record)
        return prompt, tools, template, output

    def _name(self, role: str) -> str:
        spec = self._fields[role]
        if spec is None:
            return f"{role} (no key is read for it)"
        return repr(spec) if isinstance(spec, str) else f"{role} (from a function)"

    def _record_tools(self, tools: Any) -> Any:
        """A record's tools: a list, or JSON text of one (how a Parquet column stores lists of objects
        whose shapes differ from record to record); None or absent: the default tools."""
        if tools is _MISSING or tools is None:
            return self._default_tools()
        if isinstance(tools, (str, bytes, bytearray)):
            try:
                decoded = json.loads(tools)
            except (ValueError, RecursionError) as exc:
                raise RecordError(
                    f"the record's {self._name('tools')} is a string but not JSON text of a list of tools: "
                    f"{exc}",
                    key="tools",
                ) from None
            if decoded is None:
                return self._default_tools()
            if not isinstance(decoded, list):
                raise RecordError(
                    f"the record's {self._name('tools')} is JSON text of a {type(decoded).__name__}, not of "
                    "a list of tools",
                    key="tools",
                )
            return decoded
        if not isinstance(tools, (list, tuple)):
            raise RecordError(
                f"the record's {self._name('tools')} must be a list (or JSON text of one), got "
                f"{type(tools).__name__}",
                key="tools",
            )
        return tools

    def _get(self, record: Any, role: str) -> Any:
        spec = self._fields[role]
        if spec is None:
            return _MISSING
        if callable(spec):
            try:
                return spec(record)
            except Exception as exc:
                raise RecordError(
                    f"the function for the field {role!r} failed: {type(exc).__name__}: {exc}", key=role
                ) from None
        if isinstance(record, Mapping):
            return record.get(spec, _MISSING)
        return getattr(record, spec, _MISSING)  # an object: its attribute of that name

    def _default_prompt(self) -> str | list[int]:
        if self._prefix is None:
            raise RecordError(
                f"the record has no prompt ({self._name('prompt')}): the prompt the model continued is "
                'required; pass prefix="" to parse records without one on their own, or prefix=PROMPT '
                "for a prompt they share",
                key="prompt",
            )
        return self._prefix

    def _no_template(self, record: Any) -> str:
        """Why a record has no template: none was given and the record names no model id. Says which key
        was looked for, and how to name another one."""
        spec = self._fields["model"]
        if isinstance(spec, str):
            return (
                f"the record has no {spec!r} key (or it is null), the key read for its model id, and no "
                "template= or model= was given for such records; fields={'model': KEY} names another key "
                "(on the command line: --field model=KEY)"
            )
        if spec is not None:
            return (
                "the function for the model id (fields['model']) gave None for the record, and no "
                "template= or model= was given for such records"
            )
        found = None
        for key in ("model", "model_id", "model_name"):
            if (isinstance(record, Mapping) and key in record) or (
                record is not None and not isinstance(record, Mapping) and hasattr(record, key)
            ):
                found = key
                break
        has = (
            f"the record has a {found!r} key, but no key is read for the model id unless fields= names it"
            if found is not None
            else "no key is read for a record's model id unless fields= names it"
        )
        key = "KEY" if found is None else repr(found)
        return (
            f"no template= or model= was given, and {has}: pass fields={{'model': {key}}} (on the command "
            f"line: --field model={found or 'KEY'}) to pick each record's template by its model id, or "
            "template=/model= for every record"
        )

    def _template(self, model: str | None, record: Any = None) -> ResponseTemplate:
        if model is None:
            if self._default is None:
                raise RecordError(self._no_template(record), key="model")
            return self._default
        found = self._by_model.get(model)
        if found is None:
            try:
                found = lookup_model(model)
            except ResponseTemplateError as exc:
                _drop_traceback(exc)
                found = exc
            self._by_model[model] = found
        if isinstance(found, ResponseTemplateError):
            raise RecordError(f"the record's model {model!r}: {found}", key="model")
        return found


def lookup_model(name: str) -> ResponseTemplate:
    """The built-in template for a model id, else for a family name (the error names the model id)."""
    from .. import library

    try:
        return library.for_model(name)
    except library.UnknownModelError as by_model:
        try:
            return library.get(name)
        except library.UnknownModelError:
            raise by_model from None


def _drop_traceback(exc: BaseException) -> None:
    exc.__traceback__ = None
    exc.__context__ = None


def _json_safe_id(value: Any) -> Any:
    if value is _MISSING:
        return None
    return value


class _Ids:
    """What a batch needs to parse token ids with one tokenizer: the control tokens (resolved once),
    the size of the vocabulary (to refuse ids the tokenizer has no token for), a prompt's pieces.

    It pickles when the tokenizer does (a transformers tokenizer and a ``tokenizers.Tokenizer`` both
    do, the latter as its JSON text): a pool's workers each get it once, with their settings."""

    def __init__(self, tokenizer: Any, control_tokens: Iterable[str] | str) -> None:
        from ..hf.control_tokens import control_tokens_for, spellings_of

        if not callable(getattr(tokenizer, "decode", None)):
            raise ResponseTemplateError(
                f"tokenizer must be a transformers tokenizer or a tokenizers.Tokenizer, got "
                f"{type(tokenizer).__name__}"
            )
        self.tokenizer = tokenizer
        #: id -> text of the control tokens (``{}``: the text reading).
        self.controls: dict[int, str] = dict(control_tokens_for(tokenizer, control_tokens))
        self.spellings = spellings_of(self.controls)
        self.size = _vocabulary_size(tokenizer)
        self._prompts: dict[tuple[int, ...], list[tuple[str, bool]]] = {}

    def __getstate__(self) -> dict[str, Any]:
        # The control tokens go as ids: a worker uses exactly the set this process resolved.
        return {"tokenizer": self.tokenizer, "controls": self.controls, "size": self.size}

    def __setstate__(self, state: dict[str, Any]) -> None:
        from ..hf.control_tokens import spellings_of

        self.tokenizer = state["tokenizer"]
        self.controls = state["controls"]
        self.spellings = spellings_of(self.controls)
        self.size = state["size"]
        self._prompts = {}

    def checked(self, ids: Sequence[Any], role: str, name: str | None = None) -> list[int]:
        """``ids`` as a list of ints, each a token of the tokenizer; else a :class:`RecordError`."""
        size = self.size
        out = ids if type(ids) is list else list(ids)
        for position, tid in enumerate(out):
            if type(tid) is not int:
                what = "true or false" if isinstance(tid, bool) else type(tid).__name__
                raise RecordError(
                    f"the record's {name or role} must hold token ids (integers), got {what} at position "
                    f"{position}",
                    key=role,
                )
            if tid < 0 or (size is not None and tid >= size):
                bound = f" (0 to {size - 1})" if size is not None else ""
                raise RecordError(
                    f"the record's {name or role} has token id {tid} at position {position}, which is not "
                    f"in the tokenizer's vocabulary{bound}: are these ids of another tokenizer?",
                    key=role,
                )
        return out

    def _prompt_pieces(self, prompt: list[int]) -> list[tuple[str, bool]]:
        """A prompt of ids as the parser reads it (pieces: a control token the user spelled out stays
        text); the last few are kept, since records of a batch often share their prompt."""
        from ..hf.control_tokens import whole_pieces

        key = tuple(prompt)
        found = self._prompts.get(key)
        if found is None:
            found = whole_pieces(self.tokenizer, prompt, self.controls)
            if len(self._prompts) >= 8:
                self._prompts.pop(next(iter(self._prompts)))
            self._prompts[key] = found
        return found

    def parse(
        self,
        output: str | bytes | bytearray | list[int],
        template: ResponseTemplate,
        prompt: str | list[int],
        tools: Any,
        errors: Literal["raise", "keep"],
        missing_anchor: Literal["raise", "parse"],
        budget: RegexBudget | None,
    ) -> ParsedMessage:
        """One record whose output or prompt is token ids."""
        from ..hf.control_tokens import whole_pieces
        from ..hf.decoding import decode_text
        from ..whole import parse_pieces

        if not prompt:  # [] is no prompt, as ""
            prompt = ""
        if not isinstance(output, list):  # text after a prompt of ids: the prompt's text
            text = prompt if isinstance(prompt, str) else decode_text(self.tokenizer, prompt)
            result = parse_response(
                bytes(output) if isinstance(output, bytearray) else output,
                template,
                prefix=text,
                tools=tools,
                errors=errors,
                missing_anchor=missing_anchor,
                regex_budget=budget,
            )
            assert isinstance(result, ParsedMessage)
            return result
        ids_prompt = prompt if isinstance(prompt, list) else None
        pieces = whole_pieces(self.tokenizer, output, self.controls, prompt_ids=ids_prompt)
        prefix: str | list[tuple[str, bool]] = (
            self._prompt_pieces(ids_prompt) if ids_prompt is not None else str(prompt)
        )
        return parse_pieces(
            pieces,
            template,
            prefix=prefix,
            control_tokens=self.spellings,
            tools=tools,
            errors=errors,
            missing_anchor=missing_anchor,
            regex_budget=budget,
        )


def _vocabulary_size(tokenizer: Any) -> int | None:
    """One more than the largest id the tokenizer has a token for (added tokens included); None when it
    cannot say."""
    get = getattr(tokenizer, "get_vocab", None)
    if callable(get):
        try:
            vocab = get()
        except Exception:  # a tokenizer that cannot list its vocabulary: no check
            vocab = None
        if isinstance(vocab, Mapping) and vocab:
            return int(max(vocab.values())) + 1
    return None
