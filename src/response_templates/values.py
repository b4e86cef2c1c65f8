"""Internal: the value pipeline, how the raw text of a region becomes its value, in one place.

A region's text goes through three steps, always in this order:

1. the field's **content parser** (``text``, ``json``, ``int``, ...) turns the text into a value;
2. then either **routing** (``route``, extension ``json-envelope``: the value split into
   ``{output key: value}`` by :func:`route_value`), or the field's **transform** (a template filled
   with ``{content}`` and the open/close captures; ``transform_each`` fills it once per list item, with
   ``{key}``/``{value}`` under the ``item-transform`` extension);
3. **tool-argument typing**: when the request has tools, the string arguments of tool calls in the
   value are cast by the tools' parameter schemas (:func:`~response_templates.calls.type_tool_calls`;
   for a routed value, in each routed entry), as the field's ``argument_typing`` says (for ``json``
   and ``python-call-list`` not where the schema admits a string; with ``value_parser_by``, not at all).

:class:`ValuePipeline` holds what these steps need beyond the field (the template and the request's
tool parameters). The parser calls it when an explicit region closes (and, for display only, for each
segment of the implicit field); the message assembler calls it once at the end for the implicit field,
whose segments are joined and parsed together. Both get the same pipeline object, so neither calls the
other.

>>> from response_templates.language import load_template
>>> t = load_template({"start_anchor": "A", "fields": {
...     "tool_calls": {"open": "<c>", "close": "</c>", "content": "json", "repeats": True,
...                    "transform": {"type": "function", "function": "{content}"}},
...     "content": {}}})
>>> tools = {"f": {"n": {"type": "integer"}}}
>>> ValuePipeline(t, tools).value(t.by_name["tool_calls"], '{"name": "f", "arguments": {"n": "3"}}', {})
{'type': 'function', 'function': {'name': 'f', 'arguments': {'n': 3}}}
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from .calls import type_tool_calls
from .content.registry import CUT_OFF_ARG, ContentArgs
from .errors import ContentError, ParseError, ResponseTemplateError
from .language import ROUTE_OTHER, FieldSpec, ResponseTemplate
from .transforms import apply_transform_each

__all__ = ["ToolParams", "ValuePipeline", "route_value"]

#: Tool name -> parameter schemas (the ``properties`` dicts), as :func:`~response_templates.tools.
#: tool_parameters` returns them.
ToolParams = Mapping[str, dict[str, Any]]

# What a content parser, a transform or the typing may raise besides ContentError, caught defensively so
# that a bug in one of them fails the region (a ParseError naming it) rather than the whole stream.
_DEFENSIVE: Final = (ValueError, TypeError, LookupError, RecursionError)


class ValuePipeline:
    """Content parser -> routing or transform -> tool-argument typing, for one template and request.

    Args:
        template: the compiled template whose fields' values this pipeline builds.
        tool_params: the request's tool parameters (``{}`` when there are no tools: nothing is typed).

    :meth:`value` raises what the steps raise (:class:`~response_templates.errors.ContentError` for text
    that does not fit); :meth:`region_value`, :meth:`segment_value` and :meth:`implicit_value` are the
    three ways its callers handle that.
    """

    __slots__ = ("template", "tool_params")

    def __init__(self, template: ResponseTemplate, tool_params: ToolParams) -> None:
        self.template = template
        self.tool_params = tool_params

    def value(self, field: FieldSpec, raw: str, captures: Mapping[str, str], cut_off: bool = False) -> Any:
        """The value of ``raw`` as the text of ``field`` (raises ContentError if it does not fit).

        ``cut_off``: the end of the output ended the region before its close delimiter came; the content
        parser then sees the validated args with ``_cut_off`` set (``xml-inline`` refuses a value that only
        the end of the text ends, which the model did not finish).
        """
        args = field.content_args
        if cut_off and isinstance(args, ContentArgs):
            args = ContentArgs(args)
            args[CUT_OFF_ARG] = True
        value = field.parser.parse(raw, args)
        typing = field.argument_typing
        params = self.tool_params if typing != "none" else None
        keep_strings = typing == "non-string"
        if field.route is not None:
            routed = route_value(field, value, captures)
            if params:
                routed = {k: type_tool_calls(v, params, keep_strings=keep_strings) for k, v in routed.items()}
            return routed
        if field.has_transform:
            if field.transform_each:
                value = apply_transform_each(field.transform, value, captures, items=field.item_transform)
            else:
                build = field.build_transform
                assert build is not None  # compiled for every field with a plain transform
                value = build({**captures, "content": value} if captures else {"content": value})
        if params:
            value = type_tool_calls(value, params, keep_strings=keep_strings)
        return value

    def region_value(
        self,
        field: FieldSpec,
        raw: str,
        captures: Mapping[str, str],
        offset: int,
        prefix_length: int,
        cut_off: bool = False,
    ) -> Any:
        """The value of a closed explicit region; raises ParseError naming the region if it fails.

        ``offset`` is where the region's text starts in the stream, whose first ``prefix_length``
        characters came from the prefix (both go to the error); ``cut_off``: the end of the output closed
        the region (see :meth:`value`). Anything other than a ContentError (a bug
        in a content parser or transform) becomes a ParseError that says so.
        """
        try:
            return self.value(field, raw, captures, cut_off)
        except ContentError as exc:
            raise ParseError(
                str(exc), field=field.name, raw=raw, offset=offset, prefix_length=prefix_length
            ) from exc
        except (*_DEFENSIVE, TimeoutError) as exc:  # defensive
            raise ParseError(
                f"unexpected {type(exc).__name__} while parsing the region: {exc}",
                field=field.name,
                raw=raw,
                offset=offset,
                prefix_length=prefix_length,
            ) from exc

    def segment_value(self, raw: str, captures: Mapping[str, str]) -> Any:
        """The value of one segment of the implicit field on its own, or None when it does not parse.

        Only for the segment's ``region_close`` event: the message's value is :meth:`implicit_value`
        of all segments joined (whitespace between two tool calls need not parse as an ``int``).
        """
        implicit = self.template.implicit
        assert implicit is not None
        try:
            return self.value(implicit, raw, captures)
        except (ResponseTemplateError, *_DEFENSIVE):
            return None

    def implicit_value(self, raw: str, captures: Mapping[str, str], offset: int, prefix_length: int) -> Any:
        """The implicit field's value from all its segments joined (``raw``); raises ParseError.

        ``offset`` is where its first segment starts. A routed implicit field gives its routed dict.
        """
        implicit = self.template.implicit
        assert implicit is not None
        try:
            return self.value(implicit, raw, captures)
        except (ContentError, *_DEFENSIVE) as exc:
            if isinstance(exc, ParseError) and implicit.route is not None:
                raise  # kept as it is for a routed value, as the assembler always did
            raise ParseError(
                str(exc), field=implicit.name, raw=raw, offset=offset, prefix_length=prefix_length
            ) from exc


def route_value(field: FieldSpec, value: Any, captures: Mapping[str, Any]) -> dict[str, Any]:
    """Split a parsed value by the field's ``route`` into ``{output key: value}`` (raises ContentError).

    A JSON object's top-level keys each go where the route says; a value that is not an object goes to
    the ``"*"`` entry. An ``add`` entry gives a list (one item, or the value's items), transformed item by
    item when the entry has a ``transform``.
    """
    routes = field.route
    assert routes is not None
    if isinstance(value, dict):
        entries = list(value.items())
    elif ROUTE_OTHER in routes:
        entries = [(ROUTE_OTHER, value)]
    else:
        raise ContentError(
            f"route: the value must be a JSON object, got {type(value).__name__} (add a {ROUTE_OTHER!r} entry "
            "to route other values)"
        )
    out: dict[str, Any] = {}
    for key, item in entries:
        route = routes.get(key)
        if route is None:
            raise ContentError(
                f"route: the object has the key {key!r}, which the route does not list; it lists "
                f"{', '.join(repr(k) for k in routes)}"
            )
        if route.add is None:
            if route.to not in out:
                out[route.to] = item
            elif isinstance(out[route.to], str) and isinstance(item, str):
                out[route.to] += item
            else:
                raise ContentError(f"route: several non-string values for the output key {route.to!r}")
            continue
        if route.add == "item":
            items = [item]
        elif isinstance(item, list):
            items = item
        else:
            raise ContentError(f"route entry {key!r} adds the items of a list, got {type(item).__name__}")
        if route.has_transform:
            try:
                items = apply_transform_each(route.transform, items, captures)
            except ContentError as exc:
                raise ContentError(f"route entry {key!r}: {exc}") from exc
        out.setdefault(route.to, []).extend(items)
    return out
