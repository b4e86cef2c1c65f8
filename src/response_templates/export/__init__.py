"""Templates for the engines and the Hub: a response template in the vocabulary of another implementation.

:func:`export` turns one of our templates (a library family, a model id, template data or a compiled
template) into the ``response_template`` JSON that a *target* reads: transformers 5.25 (the reference
implementation), vLLM 0.34 (``--tool-call-parser hf --reasoning-parser hf``) or SGLang 0.5.23
(``--tool-call-parser response_template --reasoning-parser response_template``). Both engines run a
vendored fork of transformers 5.23's parser, so an export for them keeps to that older vocabulary (no
``python-call-list``, no ``value_parser_by``). What a target cannot express is refused with
:class:`ExportError`, naming the field, the key and the target; where a portable approximation exists the
template is exported with an :class:`ExportWarning` that says which outputs read differently.
:func:`update_tokenizer_config` writes the result into a local model folder.

>>> import response_templates as rt
>>> result = rt.templates.export("qwen3", target="vllm")
>>> sorted(result.template["fields"])
['content', 'thinking', 'tool_calls']
>>> result.notes[0]
"field 'reasoning_content' renamed to 'thinking' (the engines' name for reasoning)"
>>> rt.templates.export("apertus", target="sglang")
Traceback (most recent call last):
...
response_templates.export.ExportError: response_template field 'tool_calls', key 'transform': cannot export to sglang: it uses the extension 'item-transform' ...

The constraints of each target are one table, :data:`CONSTRAINTS`, and what the export does with each
extension another, :data:`APPROXIMATIONS` (both in docs/export.md).
"""

from __future__ import annotations

import copy
import json
import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import library
from ..errors import ResponseTemplateError, TemplateError
from ..language import ResponseTemplate, load_template
from ..language.registry import EXTENSION_ARGS, EXTENSION_FIELD_KEYS, EXTENSION_PARSERS, REGISTRY
from .folder import ModelFolderError, set_response_template
from .jsontext import Layout, dumps, non_finite
from .literal import spell_for_vllm
from .targets import (
    APPROXIMATIONS,
    CONSTRAINTS,
    ENGINE_FIELDS,
    ENGINE_PARSERS,
    ENGINE_RENAMES,
    ENGINES,
    PARSER_FLAGS,
    REFERENCE_FIELD_KEYS,
    REFERENCE_PARSERS,
    REFERENCE_TOP_KEYS,
    TARGET_VERSIONS,
)

__all__ = [
    "APPROXIMATIONS",
    "CONSTRAINTS",
    "PARSER_FLAGS",
    "TARGETS",
    "TARGET_VERSIONS",
    "ExportError",
    "ExportResult",
    "ExportWarning",
    "ModelFolderError",
    "export",
    "update_tokenizer_config",
]

#: The targets :func:`export` knows.
TARGETS: tuple[str, ...] = ("transformers", "vllm", "sglang")


class ExportError(TemplateError):
    """A template feature the target cannot express, with no portable approximation.

    ``field`` and ``key`` name the feature (``field`` is ``None`` for a top-level key); ``target`` is the
    target that cannot read it, and ``reason`` says why.
    """

    def __init__(
        self, message: str, *, target: str, field: str | None = None, key: str | None = None
    ) -> None:
        super().__init__(f"cannot export to {target}: {message}", field=field, key=key)
        self.target = target
        #: Why, without the target and the place (``field``, ``key``).
        self.reason = message


@dataclass(frozen=True)
class ExportWarning:
    """An approximation the export made: which outputs the target reads differently from us."""

    field: str | None
    key: str | None
    message: str

    def __str__(self) -> str:
        where = ", ".join(
            part
            for part in (
                f"field {self.field!r}" if self.field else "",
                f"key {self.key!r}" if self.key else "",
            )
            if part
        )
        return f"{where}: {self.message}" if where else self.message


@dataclass(frozen=True)
class ExportResult:
    """The outcome of :func:`export`.

    ``template`` is the ``response_template`` JSON for the target; ``warnings`` the approximations (each
    says which outputs read differently), ``notes`` the changes that read the same (a rename, a dropped
    declaration). ``source`` is the library family the template came from, if any.
    """

    target: str
    template: dict[str, Any]
    warnings: tuple[ExportWarning, ...] = ()
    notes: tuple[str, ...] = ()
    source: str | None = None

    @property
    def verdict(self) -> str:
        """``"exportable"``, or ``"exportable with warnings"`` when an approximation was made."""
        return "exportable with warnings" if self.warnings else "exportable"

    def to_json(self, *, indent: int | None = 2) -> str:
        """The template as strict JSON text (non-ASCII kept; a lone surrogate written as its ``\\uXXXX``
        escape)."""
        return dumps(self.template, Layout(unit=" " * indent) if indent is not None else Layout(unit=None))

    def update_tokenizer_config(
        self, model_dir: str | os.PathLike[str], *, notes: list[str] | None = None
    ) -> Path:
        """Write the template into ``model_dir/tokenizer_config.json``: see :func:`update_tokenizer_config`."""
        return update_tokenizer_config(model_dir, self, notes=notes)


# ------------------------------------------------------------------------------------------ resolving


def _resolve(name_or_template: Any) -> tuple[ResponseTemplate, str | None]:
    """The compiled template and the library family it came from (None for template data)."""
    if isinstance(name_or_template, ResponseTemplate):
        return name_or_template, None
    if isinstance(name_or_template, Mapping):
        return load_template(dict(name_or_template)), None
    if isinstance(name_or_template, str):
        text = name_or_template.strip()
        if text.startswith("{"):
            return load_template(text), None
        try:
            fam = library.family(text)
        except library.UnknownModelError as by_name:
            try:
                fam = library.family_for_model(text)
            except library.UnknownModelError as by_model:
                raise (by_model if "/" in text else by_name) from None
        return fam.template(), fam.resolved().name
    raise ResponseTemplateError(
        "export takes a library family name, a model id, template data (a dict or JSON text) or a compiled "
        f"template, got {type(name_or_template).__name__}"
    )


# ------------------------------------------------------------------------------------------ exporting

_OPTIONAL_PLACEHOLDER = re.compile(r"\{\w+(?:\.\w+)*\?\}")
_XML_VALUES_WARNINGS: Mapping[str, str] = {
    "type_group": "argument values are not typed by the attribute the pattern captures: they stay strings, "
    "unless the request's tools give their types",
    "type_parsers": "",  # reported with type_group
    "unescape": "argument values keep HTML entities (&lt;, &amp;, ...) as the model wrote them",
    "cdata": "argument values written as <![CDATA[...]]> keep the CDATA markers",
    "nested": "argument values written as child tags stay raw text instead of becoming objects and arrays",
}


@dataclass
class _Export:
    target: str
    data: dict[str, Any]
    warnings: list[ExportWarning] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def fields(self) -> dict[str, Any]:
        fields: dict[str, Any] = self.data["fields"]
        return fields

    def refuse(self, message: str, field_name: str | None, key: str | None) -> ExportError:
        return ExportError(message, target=self.target, field=field_name, key=key)

    def warn(self, field_name: str | None, key: str | None, message: str) -> None:
        self.warnings.append(ExportWarning(field_name, key, message))

    def rename_field(self, old: str, new: str) -> None:
        self.data["fields"] = {(new if name == old else name): spec for name, spec in self.fields.items()}


def _implicit_name(fields: Mapping[str, Any]) -> str | None:
    for name, spec in fields.items():
        if "open" not in spec and "open_pattern" not in spec:
            return name
    return None


def _opener(spec: Mapping[str, Any]) -> str:
    """A field's open delimiter, for messages."""
    opener = spec.get("open", spec.get("open_pattern"))
    if isinstance(opener, list):
        opener = opener[0] if opener else None
    return json.dumps(opener, ensure_ascii=False) if opener is not None else "its"


def _uses_features(
    name: str, spec: Mapping[str, Any], declared: tuple[str, ...]
) -> Iterator[tuple[str, str]]:
    """``(extension, key)`` for every extension feature a field uses (from the extension registry)."""
    for ext in REGISTRY:
        for feature in ext.transform_features:
            key = feature.used_in(spec, declared)
            if key is not None:
                yield ext.name, key
    content = spec.get("content")
    if isinstance(content, str) and content in EXTENSION_PARSERS:
        yield EXTENSION_PARSERS[content], "content"
    for key, ext_name in EXTENSION_FIELD_KEYS.items():
        if key in spec:
            yield ext_name, key
    for ext_name, arg in _extension_args(spec.get("content", "text"), spec.get("content_args")):
        yield ext_name, f"content_args.{arg}"


def _extension_args(content: Any, args: Any) -> Iterator[tuple[str, str]]:
    """``(extension, argument)`` for each extension argument in a field's top-level ``content_args``."""
    if not isinstance(args, Mapping) or not isinstance(content, str):
        return
    for arg, ext_name in EXTENSION_ARGS.get(content, ()):
        if arg in args:
            yield ext_name, arg


def _handle_into(ex: _Export) -> None:
    """``into``: a wrapper of the implicit field is refused; feeders of an existing field are dropped (their
    syntax reads as text); the one feeder of a key no field has takes that key's name."""
    fields = ex.fields
    implicit = _implicit_name(fields)
    feeders: dict[str, list[str]] = {}
    for name, spec in fields.items():
        if "into" in spec:
            feeders.setdefault(spec["into"], []).append(name)
    for key, names in feeders.items():
        if key == implicit:
            raise ex.refuse(
                f"it feeds its text 'into' the implicit field {key!r} (an optional wrapper); the target has no "
                "way to read a wrapper's text as that field's text",
                names[0],
                "into",
            )
        dropped = names if key in fields else names[1:]
        for name in dropped:
            reading = "read that text as content" if implicit else "discard that text"
            ex.warn(
                name,
                "into",
                f"field dropped: outputs that use its syntax (open {_opener(fields[name])}) for {key!r} "
                f"{reading} instead",
            )
            del ex.fields[name]
        if key not in ex.fields:
            keeper = names[0]
            spec = ex.fields[keeper]
            del spec["into"]
            if not spec.get("repeats"):
                ex.warn(
                    key,
                    "into",
                    f"field {keeper!r} renamed to {key!r}: an output with more than one of its regions keeps "
                    "only the last region's items (ours adds every region's items)",
                )
            else:
                ex.notes.append(f"field {keeper!r} renamed to {key!r} (it was the only field feeding it)")
            ex.rename_field(keeper, key)


def _strip_optional_placeholders(value: Any, ex: _Export, name: str, path: str) -> Any:
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if isinstance(v, str) and _OPTIONAL_PLACEHOLDER.fullmatch(v):
                ex.warn(
                    name,
                    "transform",
                    f"{path}{k} is left out of every value (ours fills it from {v!r} when the output has it)",
                )
                continue
            out[k] = _strip_optional_placeholders(v, ex, name, f"{path}{k}.")
        return out
    if isinstance(value, list):
        if any(isinstance(v, str) and _OPTIONAL_PLACEHOLDER.fullmatch(v) for v in value):
            raise ex.refuse(
                "an optional placeholder '{path?}' inside a list has no equivalent", name, "transform"
            )
        return [_strip_optional_placeholders(v, ex, name, path) for v in value]
    if isinstance(value, str) and _OPTIONAL_PLACEHOLDER.fullmatch(value):
        raise ex.refuse(
            "a transform that is one optional placeholder '{path?}' has no equivalent", name, "transform"
        )
    return value


def _handle_field_features(ex: _Export, name: str, declared: tuple[str, ...]) -> None:
    spec = ex.fields[name]
    implicit = _implicit_name(ex.fields)
    for ext_name, key in list(_uses_features(name, spec, declared)):
        if ext_name == "into":
            continue  # handled across fields, before this
        if ext_name == "interleaved":
            inside = spec.pop("within")
            ex.warn(
                name,
                "within",
                f"a {name!r} region written inside an unclosed {', '.join(map(repr, inside))} region is read "
                "as that region's text (delimiters included)",
            )
        elif ext_name == "python-calls":
            args = spec.get("content_args") or {}
            if ex.target in ENGINES:
                raise ex.refuse(
                    "content parser 'python-calls' has no equivalent: its strict form 'python-call-list' is "
                    "not in the engines' vendored parser (transformers 5.23's)",
                    name,
                    "content",
                )
            if args:
                raise ex.refuse(
                    f"content parser 'python-calls' with content_args {sorted(args)} has no equivalent "
                    "(the target's 'python-call-list' takes no arguments)",
                    name,
                    "content_args",
                )
            spec["content"] = "python-call-list"
            spec.pop("content_args", None)
            ex.warn(
                name,
                "content",
                "'python-calls' approximated by the strict 'python-call-list': outputs it rejects fail to "
                "parse in the target (calls without the enclosing [...], positional arguments, trailing "
                "commas, tuples, \\x escapes, integers beyond 2^53-1, raw newlines in strings)",
            )
        elif ext_name == "xml-values":
            arg = key.split(".", 1)[1]
            args = spec["content_args"]
            if arg in ("type_group", "type_parsers") and ex.target not in ENGINES:
                if "type_group" in args and "type_parsers" in args:
                    _type_group_to_value_parser_by(ex, name, args)
                continue
            args.pop(arg, None)
            if _XML_VALUES_WARNINGS.get(arg):
                ex.warn(name, f"content_args.{arg}", _XML_VALUES_WARNINGS[arg])
        elif ext_name == "json-value-end":
            spec.pop("close_json")
            closes = ex.fields[implicit].get("close") if implicit else None
            if closes is not None:
                spec["close"] = copy.deepcopy(closes)
                until = f"until the end of the turn ({json.dumps(closes, ensure_ascii=False)})"
            else:
                until = "until the end of the output"
            ex.warn(
                name,
                "close_json",
                f"the region runs {until} instead of ending with its JSON value: text after the value (a "
                "second call, a remark) is read into it and makes it fail to parse",
            )
        elif ext_name == "optional-placeholders" and key == "transform":
            spec["transform"] = _strip_optional_placeholders(spec["transform"], ex, name, "")
        else:
            raise ex.refuse(
                f"it uses the extension {ext_name!r} (key {key!r}), which the target lacks and which has no "
                "portable approximation",
                name,
                key,
            )
    if spec.get("content_args") == {}:
        del spec["content_args"]


def _type_group_to_value_parser_by(ex: _Export, name: str, args: dict[str, Any]) -> None:
    """``type_group`` + ``type_parsers`` (``xml-values``) -> 5.25's ``value_parser_by``: the same parser per
    tag, chosen by the same capture, falling back to ``value_parser`` alike; only the tools' typing differs."""
    args["value_parser_by"] = {"group": args.pop("type_group"), "parsers": args.pop("type_parsers")}
    ex.warn(
        name,
        "content_args.type_group",
        "written as 'value_parser_by' (transformers 5.25 reads the value parser per tag the same way), under "
        "which transformers does not type the field's arguments by the request's tools: a value read as a "
        "string stays a string where a tool's schema asks for another type (ours casts it)",
    )


def _value_parsers(parser: Any, args: Any, depth: int = 0) -> Iterator[tuple[Any, Any]]:
    """``(name, args)`` of a content parser and of every value parser nested in its arguments
    (``value_parser``, the entries of ``value_parser_by.parsers``)."""
    yield parser, args
    if not isinstance(args, Mapping) or depth > 16:
        return
    inner = args.get("value_parser")
    if isinstance(inner, Mapping):
        yield from _value_parsers(inner.get("name", "text"), inner.get("args"), depth + 1)
    by = args.get("value_parser_by")
    parsers = by.get("parsers") if isinstance(by, Mapping) else None
    if isinstance(parsers, Mapping):
        for spec in parsers.values():
            if isinstance(spec, Mapping):
                yield from _value_parsers(spec.get("name", "text"), spec.get("args"), depth + 1)


def _check_reference_vocabulary(ex: _Export) -> None:
    known = ENGINE_PARSERS if ex.target in ENGINES else REFERENCE_PARSERS
    for key in ex.data:
        if key not in REFERENCE_TOP_KEYS:
            raise ex.refuse(f"the target has no top-level key {key!r}", None, key)
    for name, spec in ex.fields.items():
        for key in spec:
            if key not in REFERENCE_FIELD_KEYS:
                raise ex.refuse(f"the target has no field key {key!r}", name, key)
        for parser, _ in _value_parsers(spec.get("content", "text"), spec.get("content_args")):
            if parser not in known:
                why = (
                    " (the engines' vendored parser is transformers 5.23's, which has none)"
                    if parser in REFERENCE_PARSERS
                    else ""
                )
                raise ex.refuse(f"the target has no content parser {parser!r}{why}", name, "content")


def _engine_vocabulary(ex: _Export) -> None:
    """What the engines' parser (a fork of transformers 5.23's) reads differently from 5.25's: a
    ``value_parser_by`` it would ignore is dropped; the 5.24 readings of ``unquoted_keys`` and
    ``merge_duplicates`` it lacks are warned about."""
    for name, spec in ex.fields.items():
        args = spec.get("content_args")
        if not isinstance(args, dict):
            continue
        parser = spec.get("content", "text")
        if parser == "xml-inline" and "value_parser_by" in args:
            del args["value_parser_by"]
            ex.warn(
                name,
                "content_args.value_parser_by",
                "dropped (the engines' parser, transformers 5.23's, ignores it): every tag's value is read by "
                "'value_parser' (as text without one) and typed by the request's tools, whatever the tag's "
                "group captured",
            )
        if parser == "json" and args.get("unquoted_keys") is True:
            ex.warn(
                name,
                "content_args.unquoted_keys",
                "the engines read it as transformers 5.23 did: key-like text inside a string value is rewritten "
                "too, and a key with spaces around it is not quoted, so such outputs fail to parse there",
            )
        if parser in ("xml-inline", "kv-lines") and args.get("merge_duplicates") is True:
            inner = args.get("value_parser")
            if isinstance(inner, Mapping) and inner.get("name") == "json":
                ex.warn(
                    name,
                    "content_args.merge_duplicates",
                    "the engines merge as transformers 5.23 did: when a repeated key's first value is a list, the "
                    "later values are appended to that list instead of being collected beside it",
                )
        if args == {}:
            del spec["content_args"]


def _check_numbers(ex: _Export) -> None:
    """NaN and the infinities have no JSON form: a template holding one is refused, naming where."""

    def refuse(value: float, field_name: str | None, key: str) -> ExportError:
        return ex.refuse(
            f"it holds the number {value!r}, which JSON cannot write (it has no NaN or Infinity; "
            "a number such as 1e400 is read as infinity by some readers and refused by others)",
            field_name,
            key,
        )

    for key, value in ex.data.items():
        found = non_finite(value) if key != "fields" else None
        if found is not None:
            raise refuse(found, None, key)
    for name, spec in ex.fields.items():
        for key, value in spec.items():
            found = non_finite(value)
            if found is not None:
                raise refuse(found, name, key)


_AT_START = re.compile(r"\^|\\A")


def _opens_only_at_start(spec: Mapping[str, Any]) -> bool:
    """Whether a field's region can open only at the very start of the text (an ``open_pattern`` anchored
    with ``^`` or ``\\A``, and no literal ``open``)."""
    pattern = spec.get("open_pattern")
    return "open" not in spec and isinstance(pattern, str) and _AT_START.match(pattern) is not None


def _reference_implicit_pieces(ex: _Export) -> None:
    """The reference keeps only the last piece of an implicit field without ``repeats``: when its text can
    surround another field's region, the text before the region is lost if anything follows the region."""
    implicit = _implicit_name(ex.fields)
    if implicit is None or ex.fields[implicit].get("repeats"):
        return
    others = [name for name, spec in ex.fields.items() if name != implicit and not _opens_only_at_start(spec)]
    if not others:
        return
    regions = " or ".join(repr(name) for name in others) if len(others) < 3 else "another field"
    ex.warn(
        implicit,
        None,
        f"transformers (5.24, 5.25) keeps only the last piece of the implicit field {implicit!r}: text "
        f"written before a region of {regions} is lost when anything, even a newline, follows that region "
        "(e.g. 'Let me check.' and then two tool calls reads as tool calls and no content); ours keeps "
        "every piece",
    )


def _is_placeholder(value: Any) -> bool:
    return isinstance(value, str) and value.startswith("{") and value.endswith("}")


def _is_chat_call(transform: Any) -> bool:
    """Whether a tool-call transform can build the chat shape: ``function`` holds ``name`` and
    ``arguments``, or is a placeholder (the model's own text decides)."""
    if _is_placeholder(transform):
        return True
    function = transform.get("function") if isinstance(transform, Mapping) else None
    if _is_placeholder(function):
        return True
    return isinstance(function, Mapping) and "name" in function and "arguments" in function


def _engine_join(ex: _Export, name: str, spec: dict[str, Any]) -> None:
    """``repeats`` with ``join`` on an engine's text field: dropped (the engines stream every region)."""
    sep = spec.pop("join")
    spec.pop("repeats", None)
    between = f"without the separator {json.dumps(sep, ensure_ascii=False)}" if sep else 'as "join": "" does'
    ex.warn(
        name,
        "join",
        f"dropped (the engines refuse it): with more than one {name!r} region the engines stream every "
        f"region's text back to back ({between}), and a parse of the whole output keeps only the last region",
    )


def _engine_renames(ex: _Export) -> None:
    """Our field names -> the engines' (``reasoning_content`` -> ``thinking``), references included."""
    for old, new in ENGINE_RENAMES.items():
        if old in ex.fields:
            if new in ex.fields:
                raise ex.refuse(f"both {old!r} and {new!r} would be the engines' {new!r}", old, None)
            ex.rename_field(old, new)
            ex.notes.append(f"field {old!r} renamed to {new!r} (the engines' name for reasoning)")
    for spec in ex.fields.values():
        if isinstance(spec.get("into"), str):
            spec["into"] = ENGINE_RENAMES.get(spec["into"], spec["into"])
        if isinstance(spec.get("within"), list):
            spec["within"] = [ENGINE_RENAMES.get(n, n) if isinstance(n, str) else n for n in spec["within"]]


def _engine_constraints(ex: _Export) -> None:
    for name in ex.fields:
        if name not in ENGINE_FIELDS:
            raise ex.refuse(
                f"the engines route only the fields {sorted(ENGINE_FIELDS)}; {name!r} has no equivalent",
                name,
                None,
            )
    defaults = ex.data.get("defaults")
    if isinstance(defaults, dict):
        for key in [k for k in defaults if k != "role"]:
            del defaults[key]
            ex.warn(
                None,
                "defaults",
                f"default {key!r} dropped (the engines accept only 'role'): messages where no region gives "
                f"{key!r} lack it",
            )
    for name in ("thinking", "content"):
        spec = ex.fields.get(name)
        if spec is None:
            continue
        parser = spec.get("content", "text")
        if parser != "text":
            raise ex.refuse(
                f"the engines stream {name!r} as text; content parser {parser!r} cannot", name, "content"
            )
        if "transform" in spec:
            raise ex.refuse(
                f"the engines stream {name!r} as plain text, without a transform", name, "transform"
            )
        if "join" in spec:
            _engine_join(ex, name, spec)
        args = spec.get("content_args") or {}
        if ex.target == "sglang" and args.get("strip") is True:
            del args["strip"]
            if not args:
                spec.pop("content_args", None)
            ex.notes.append(
                f'field {name!r}: explicit "strip": true dropped (SGLang refuses it; the text parser strips '
                "by default, so the parsed value is the same)"
            )
    calls = ex.fields.get("tool_calls")
    if calls is not None and ex.target == "sglang" and "open" not in calls and "open_pattern" not in calls:
        raise ex.refuse(
            "SGLang reads 'tool_calls' only as a region with an opener ('open' or 'open_pattern'); this one is "
            "the implicit field",
            "tool_calls",
            None,
        )
    if calls is not None:
        if "transform" not in calls:
            ex.warn(
                "tool_calls",
                "transform",
                'no transform: the engines take a call only in the chat shape {"function": {"name", '
                '"arguments"}}; calls the model writes in another shape are dropped',
            )
        elif not _is_chat_call(calls["transform"]):
            raise ex.refuse(
                'the engines take a tool call only in the chat shape {"function": {"name", '
                '"arguments"}}; this transform builds another shape, so every call would be dropped',
                "tool_calls",
                "transform",
            )
    for name, spec in ex.fields.items():
        if spec.get("optional") is False:
            ex.warn(name, "optional", "not enforced: the engines make every field optional")
    if "content" not in ex.fields and _implicit_name(ex.fields) is None:
        ex.warn(
            None,
            "fields",
            "no implicit field: the engines add one named 'content', so text outside every region becomes "
            "content (ours discards it)",
        )


def export(name_or_template: Any, target: str = "transformers", *, literal: bool = True) -> ExportResult:
    """The ``response_template`` JSON of a template for ``target`` (``"transformers"``, ``"vllm"``, ``"sglang"``).

    For vLLM, the library families listed in ``export.literal.FOR_VLLM`` have their reasoning and call
    delimiters spelled literally (a repeated opener written once, ``\\s*`` between tags as ``\\n?``), so
    that vLLM's ``beam`` parser derives its grammar for forced tool choice; each listed change was measured
    to lose nothing on the family's recorded outputs, and is a note of the result. ``literal=False`` keeps
    the lenient spelling.

    The targets are the releases of :data:`TARGET_VERSIONS`; the engines read it with the parser flags of
    :data:`PARSER_FLAGS`.

    ``name_or_template`` is a library family name or alias, a model id (as for
    :func:`response_templates.templates.for_model`), template data (a dict or JSON text) or a compiled
    template. Raises :class:`ExportError` (a ``TemplateError``) naming the field, the key and the target
    for what the target cannot express; an approximation is an :class:`ExportWarning` in the result.

    >>> import response_templates as rt
    >>> result = rt.templates.export("qwen3")
    >>> result.verdict, result.template["fields"]["content"]
    ('exportable with warnings', {'close': ['<|im_end|>', '<|endoftext|>']})
    >>> print(result.warnings[0])  # doctest: +ELLIPSIS
    field 'content': transformers (5.24, 5.25) keeps only the last piece of the implicit field 'content': ...
    """
    if target not in TARGETS:
        raise ResponseTemplateError(f"unknown export target {target!r}; choose one of {', '.join(TARGETS)}")
    template, source = _resolve(name_or_template)
    ex = _Export(target, template.to_dict())
    declared = tuple(ex.data.pop("extensions", ()))
    if target in ENGINES:
        _engine_renames(ex)
    _handle_into(ex)
    for name in list(ex.fields):
        _handle_field_features(ex, name, declared)
    if declared:
        used = {
            e
            for e, _ in (
                u for n, s in template.source["fields"].items() for u in _uses_features(n, s, declared)
            )
        }
        unused = [e for e in declared if e not in used]
        if unused:
            ex.notes.append(f"declared but unused extensions dropped: {', '.join(unused)}")
    if target in ENGINES:
        _engine_vocabulary(ex)
    _check_reference_vocabulary(ex)
    _check_numbers(ex)
    if target in ENGINES:
        _engine_constraints(ex)
    else:
        _reference_implicit_pieces(ex)
    if target == "vllm" and literal:
        for change in spell_for_vllm(source, ex.data):
            ex.notes.append(f"spelled literally for vLLM's beam grammar (docs/grammar.md): {change}")
    return ExportResult(target, ex.data, tuple(ex.warnings), tuple(ex.notes), source)


# ---------------------------------------------------------------------------------- model folders


def update_tokenizer_config(
    model_dir: str | os.PathLike[str],
    result: ExportResult | Mapping[str, Any],
    *,
    notes: list[str] | None = None,
) -> Path:
    """Set ``response_template`` in ``model_dir/tokenizer_config.json``, in place; return the file's path.

    The file is edited as text: only the value of ``response_template`` is written (an existing one is
    replaced where it stands, a new one goes last, laid out as the file's other keys), and every other byte
    is kept, so the other keys come back exactly as they were. Where the file has the key more than once,
    each one gets the template. A ``tokenizer_config.json`` that is a symbolic link (the Hub cache's
    layout) is replaced by a file of its own, the file it linked to left unchanged. The new file keeps the
    old one's mode and, where the process may set them, its owner and group; it replaces the old one
    atomically, and a killed export leaves no temporary file in the folder (one left in the instant it has a
    name is removed by the next export; see docs/export.md). A folder without ``tokenizer_config.json``, a
    broken link, or a file that is not a JSON object raises :class:`ModelFolderError`; a template holding
    NaN or an infinity raises ``ResponseTemplateError``. When ``notes`` is a list, it receives a line for
    each of: a link replaced, other hard links, an owner that could not be kept, several
    ``response_template`` keys, temporary files of an interrupted export removed.
    """
    template = result.template if isinstance(result, ExportResult) else result
    return set_response_template(model_dir, template, notes)
