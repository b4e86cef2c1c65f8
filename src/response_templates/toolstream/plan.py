"""Where a template's tool calls get their name, id and arguments (read once from the transform)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

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
    open_groups = field.open.group_names if field.open is not None else frozenset()
    close_groups = field.close.group_names if field.close is not None else frozenset()
    args = field.content_args
    is_json = field.parser.name == "json"
    scan = is_json and not args.get("allow_non_json", False)
    dialect = {
        "unquoted_keys": bool(args.get("unquoted_keys", False)) if is_json else False,
        "string_delims": tuple((str(a), str(b)) for a, b in args.get("string_delims", ())) if is_json else (),
    }
    variables: dict[str, Any] = {}
    if field.has_transform:
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
        try:
            call = apply_transform(field.transform, variables, copy_values=False)
        except (ContentError, ResponseTemplateError, TypeError, ValueError):
            call = None
    else:
        call = _PathProbe(())
    name: Source = None
    call_id: Source = None
    arguments: Source = None
    wait_for_id = False
    if isinstance(call, _PathProbe):  # the call is a JSON object written by the model
        function: Any = call
        call_id = ("json", ((*call.path, "id"),))
    elif isinstance(call, dict):
        function = call.get("function")
        if not isinstance(function, (dict, _PathProbe)):
            function = call
        if "id" in call:
            wait_for_id = True
            call_id = _source(call["id"])
    else:
        function = None
    if isinstance(function, _PathProbe):
        name = ("json", ((*function.path, "name"),))
        arguments = ("json", ((*function.path, "arguments"), (*function.path, "parameters")))
    elif isinstance(function, dict):
        name = _source(function.get("name"))
        if "arguments" in function:
            arguments = _source(function["arguments"])
        elif "parameters" in function:
            arguments = _source(function["parameters"])
        else:
            arguments = ("literal", {})
    if name is not None and name[0] == "literal" and not isinstance(name[1], str):
        name = None
    if arguments is not None and arguments[0] == "capture":
        arguments = None  # a capture is a string: the arguments are then whatever it holds, at close
    if not scan:
        name = name if name is None or name[0] != "json" else None
        call_id = call_id if call_id is None or call_id[0] != "json" else None
        arguments = arguments if arguments is None or arguments[0] != "json" else None
    if field.transform_each:
        # Each element is one call: its parts must come from the element (or be literal).
        name = name if name is not None and name[0] == "json" else None
        arguments = arguments if arguments is not None and arguments[0] == "json" else None
    return ToolCallPlan(
        field=field.name,
        name=name,
        id=call_id,
        arguments=arguments,
        wait_for_id=wait_for_id,
        each=field.transform_each,
        scan=scan,
        unquoted_keys=dialect["unquoted_keys"],
        string_delims=dialect["string_delims"],
    )
