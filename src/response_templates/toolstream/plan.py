"""Where a template's tool calls get their name, id and arguments (read once from the transform)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from ..calls import ARGUMENTS_KEYS, ID_KEY, NAME_KEY, arguments_key, call_function
from ..errors import ContentError, ResponseTemplateError
from ..jsonlex.scanner import Path
from ..language import FieldSpec
from ..transforms import apply_transform, transform_placeholders

__all__ = ["Source", "ToolCallPlan", "tool_call_plan"]


class _PathProbe(Mapping[str, Any]):
    """Stands for the JSON value at ``path`` of a region's content while a transform is evaluated."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __getitem__(self, key: str) -> _PathProbe:
        return _PathProbe((*self.path, key))

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str)

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0


class _CaptureProbe:
    """Stands for a named group of the open delimiter while a transform is evaluated."""

    def __init__(self, group: str) -> None:
        self.group = group


class _UnknownProbe:
    """Stands for a variable whose value is only known when the region closes."""


#: Where a value comes from: ``("literal", value)``, ``("capture", group)`` (a named group of the open
#: delimiter, known at ``region_open``), ``("json", paths)`` (the first of these paths in the region's JSON
#: content), or ``None`` (only known when the region closes).
Source = tuple[str, Any] | None


@dataclass(frozen=True)
class ToolCallPlan:
    """How the calls of a tool-call field can be streamed early (see :func:`tool_call_plan`).

    Attributes:
        field: the template field.
        name / id / arguments: the :data:`Source` of each part of a call (``id`` is ``None`` also when the
            transform has no id, in which case the wire adapters generate one: see ``wait_for_id``).
        wait_for_id: whether a call is announced only once its id is known (the transform gives the
            call an id of its own). When the whole call is the model's JSON, an ``"id"`` written before the
            name is used, but not waited for.
        each: the content is a JSON array with one call per element (``transform_each``).
        scan: whether the region's text is read by a :class:`JsonScanner` (``json`` content).
        unquoted_keys / string_delims: the JSON dialect of the field's content parser.
    """

    field: str
    name: Source
    id: Source
    arguments: Source
    wait_for_id: bool
    each: bool
    scan: bool
    unquoted_keys: bool = False
    string_delims: tuple[tuple[str, str], ...] = ()


def _source(value: Any) -> Source:
    if isinstance(value, _PathProbe):
        return ("json", (value.path,))
    if isinstance(value, _CaptureProbe):
        return ("capture", value.group)
    if isinstance(value, (_UnknownProbe, dict, list)):
        return None
    if isinstance(value, str) or value is None or isinstance(value, (int, float, bool)):
        return ("literal", value)
    return None


def _stand_ins(field: FieldSpec) -> dict[str, Any]:
    """A stand-in for every variable of the field's transform (see :func:`tool_call_plan`)."""
    open_groups = field.open.group_names if field.open is not None else frozenset()
    close_groups = field.close.group_names if field.close is not None else frozenset()
    variables: dict[str, Any] = {}
    for root in transform_placeholders(field.transform):
        if root in close_groups or (field.transform_each and root in open_groups):
            variables[root] = _UnknownProbe()  # a close capture, or an element key may shadow it
        elif root in open_groups:
            variables[root] = _CaptureProbe(root)
        elif field.transform_each:
            variables[root] = _PathProbe((root,))
        elif root == "content":
            variables[root] = _PathProbe(())
        else:
            variables[root] = _UnknownProbe()
    return variables


def _call_template(field: FieldSpec) -> Any:
    """What one call of the field looks like: its transform evaluated over stand-ins (the model's JSON
    itself when there is no transform), or ``None`` when the stand-ins cannot evaluate it."""
    if not field.has_transform:
        return _PathProbe(())
    try:
        return apply_transform(field.transform, _stand_ins(field), copy_values=False)
    except (ContentError, ResponseTemplateError, TypeError, ValueError):
        return None


def _json_parts(probe: _PathProbe) -> tuple[Source, Source]:
    """``(name, arguments)`` of a call whose name and arguments sit in the model's JSON at ``probe``:
    every key the call shape allows for the arguments, the first one the model writes wins."""
    name: Source = ("json", ((*probe.path, NAME_KEY),))
    arguments: Source = ("json", tuple((*probe.path, key) for key in ARGUMENTS_KEYS))
    return name, arguments


def _read_call(call: Any) -> tuple[Source, Source, Source, bool]:
    """``(name, id, arguments, wait_for_id)`` of the evaluated transform, read with the call shape of
    :mod:`response_templates.calls` (:func:`call_function`, :func:`arguments_key`), as a parsed call is."""
    if isinstance(call, _PathProbe):
        # The whole call is a JSON object written by the model: its name, id and arguments are read at its
        # top (a chat-shaped object the model writes is read at close, by call_parts).
        name, arguments = _json_parts(call)
        return name, ("json", ((*call.path, ID_KEY),)), arguments, False
    if not isinstance(call, dict):
        return None, None, None, False
    wait_for_id = ID_KEY in call  # the transform gives the call an id of its own
    call_id = _source(call[ID_KEY]) if wait_for_id else None
    function = call_function(call)
    if isinstance(function, _PathProbe):
        name, arguments = _json_parts(function)
    else:
        name = _source(function.get(NAME_KEY))
        key = arguments_key(function)
        arguments = _source(function[key]) if key is not None else ("literal", {})
    return name, call_id, arguments, wait_for_id


def _json_only(source: Source) -> Source:
    return source if source is not None and source[0] == "json" else None


def _not_json(source: Source) -> Source:
    return source if source is None or source[0] != "json" else None


# A plan depends on the compiled field only (fields are immutable, compared by identity), and every
# adapter of a stream needs one: computed once per field.
@lru_cache(maxsize=512)
def tool_call_plan(field: FieldSpec) -> ToolCallPlan:
    """Work out, from a field's transform, where its calls' name, id and arguments come from.

    The transform is evaluated once with stand-ins for its variables (``content`` becomes "the JSON at
    this path", a named group of the open delimiter "this capture"), and the result is read the way
    :func:`call_parts` reads a parsed call. Anything the stand-ins cannot express (a path into a capture, a
    group of the close delimiter, an arguments object built from several variables) is "known at close".

    >>> import response_templates as rt
    >>> t = rt.load_template({"start_anchor": "<|assistant|>", "fields": {"tool_calls": {
    ...     "open_pattern": "<call name=(?P<name>\\\\w+)>", "close": "</call>", "content": "json",
    ...     "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}}}}})
    >>> plan = tool_call_plan(t.by_name["tool_calls"])
    >>> plan.name, plan.arguments, plan.scan
    (('capture', 'name'), ('json', ((),)), True)
    """
    args = field.content_args
    is_json = field.parser.name == "json"
    scan = is_json and not args.get("allow_non_json", False)
    name, call_id, arguments, wait_for_id = _read_call(_call_template(field))
    if name is not None and name[0] == "literal" and not isinstance(name[1], str):
        name = None
    if arguments is not None and arguments[0] == "capture":
        arguments = None  # a capture is a string: the arguments are then whatever it holds, at close
    if not scan:
        name, call_id, arguments = _not_json(name), _not_json(call_id), _not_json(arguments)
    if field.transform_each:
        # Each element is one call: its parts must come from the element (or be literal).
        name, arguments = _json_only(name), _json_only(arguments)
    return ToolCallPlan(
        field=field.name,
        name=name,
        id=call_id,
        arguments=arguments,
        wait_for_id=wait_for_id,
        each=field.transform_each,
        scan=scan,
        unquoted_keys=bool(args.get("unquoted_keys", False)) if is_json else False,
        string_delims=tuple((str(a), str(b)) for a, b in args.get("string_delims", ())) if is_json else (),
    )
