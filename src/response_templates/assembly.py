"""Internal: message assembly, how region values become the output message (docs/spec.md, sections 3, 6).

One place for the accumulation rules, independent of scanning:

* ``repeats``: one list item per match; with ``join``, the matches (which must be strings) joined by the
  separator.
* an explicit field without ``repeats`` that matches more than once: its string values concatenated in
  order; values that are not strings are an error naming the field **[ours]**.
* the implicit field: all its segments concatenated in order and parsed once **[ours]**, so text before
  and after a tool call both survive. With ``repeats`` each segment is parsed on its own and gives one
  item (with ``join``, the items joined), as the reference does.
* ``into`` (extension): a field's values go to another output key, a list, in stream order (region close
  order); a field with ``repeats`` adds one item per match, a field without adds the items of its value,
  which must be a list.
* ``route`` (extension ``json-envelope``): a field's value is a dict output key -> value (built by
  :func:`~response_templates.values.route_value`); list keys (``add``) are extended in stream order,
  value keys are set (several string values concatenated, as for a field without ``repeats``).
* ``defaults`` are copied into every message and always kept; other keys are dropped when empty (None,
  "", [] or {}); then fields with ``optional: false`` must be present **[ours: checked after dropping]**.
* kept text (``errors="keep"``, :meth:`MessageAssembler.add_kept`): the text of a region that did not
  parse becomes a segment of the implicit field, in stream order; without an implicit field (or with a
  routed one) it goes to the ``content`` key, after that key's other values in close order. With
  ``keep``, :meth:`MessageAssembler.message` records its failures instead of raising: an implicit value
  that does not parse becomes its raw text, a missing required field is left out.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from .compiled import mypyc_attr
from .errors import ParseError
from .language import FieldSpec, ResponseTemplate
from .values import ValuePipeline, route_value

__all__ = ["MessageAssembler", "is_empty", "route_value"]  # route_value: re-exported from .values

#: Where kept text goes when the template has no implicit field (or a routed one).
KEPT_KEY: Final = "content"


@mypyc_attr(native_class=False)  # a str subclass: an ordinary Python class in the compiled build
class _KeptText(str):
    """Kept text among a key's values (errors="keep"): joined as a string, never type-checked."""

    __slots__ = ()


def is_empty(value: Any) -> bool:
    """Whether a value counts as "captured nothing" (None, "", [] or {})."""
    return value is None or (isinstance(value, (str, list, dict)) and not value)


class MessageAssembler:
    """Collects region values for one message.

    ``values`` is the request's value pipeline (the one the parser uses for its regions): the assembler
    uses it once, at the end, for the implicit field's segments joined together.
    """

    def __init__(self, template: ResponseTemplate, values: ValuePipeline) -> None:
        self._template = template
        self._pipeline = values
        self._values: dict[str, list[Any]] = {}  # insertion order = order of first appearance
        self._implicit_segments: list[str] = []
        self._implicit_captures: dict[str, str] = {}
        self._implicit_start = 0
        # (raw, captures, offset) per segment: an implicit field with 'repeats' gives one item per segment.
        self._implicit_items: list[tuple[str, dict[str, str], int]] = []
        self._kept = False  # whether some key's values hold kept text (errors="keep")

    def _add_routed(
        self,
        values: dict[str, list[Any]],
        field: FieldSpec,
        routed: Mapping[str, Any],
        raw: str,
        offset: int,
        prefix_length: int,
    ) -> None:
        for key, value in routed.items():
            target = values.setdefault(key, [])
            if key in self._template.route_lists:
                target.extend(value)
            elif target and not (isinstance(value, str) and isinstance(target[0], str)):
                why = (
                    f"routes a second value to {key!r}; several values are concatenated, which needs strings"
                )
                raise ParseError(why, field=field.name, raw=raw, offset=offset, prefix_length=prefix_length)
            else:
                target.append(value)

    def add(self, field: FieldSpec, value: Any, raw: str, offset: int, prefix_length: int) -> None:
        """Record the value of one closed explicit region (raises ParseError if it cannot combine)."""
        if field.route is not None:
            self._add_routed(self._values, field, value, raw, offset, prefix_length)
            return
        if field.into is not None:
            target = self._values.setdefault(field.into, [])
            if field.repeats:
                target.append(value)
            elif isinstance(value, list):
                target.extend(value)
            else:
                why = (
                    f"feeds 'into' {field.into!r} without 'repeats', so its value must be a list whose items "
                    f"are added, got {type(value).__name__} (set 'repeats': true to add it as one item)"
                )
                raise ParseError(why, field=field.name, raw=raw, offset=offset, prefix_length=prefix_length)
            return
        values = self._values.get(field.name)
        if field.join is not None:
            if not isinstance(value, str):
                why = f"'join' needs every match to parse to a string, got {type(value).__name__}"
                raise ParseError(why, field=field.name, raw=raw, offset=offset, prefix_length=prefix_length)
        elif values and not field.repeats and not (isinstance(value, str) and isinstance(values[0], str)):
            kinds = sorted({type(v).__name__ for v in [*values, value]})
            why = (
                "matched more than once without 'repeats'; repeated matches are concatenated, which "
                f"needs string values, got {', '.join(kinds)} (set 'repeats': true to collect a list)"
            )
            raise ParseError(why, field=field.name, raw=raw, offset=offset, prefix_length=prefix_length)
        if values is None:
            self._values[field.name] = [value]
        else:
            values.append(value)

    def add_implicit_segment(self, raw: str, captures: Mapping[str, str], offset: int) -> None:
        """Record one segment of the implicit field (parsed once, concatenated, at the end)."""
        field = self._template.implicit
        assert field is not None
        if not self._implicit_segments:
            self._implicit_start = offset
            self._values.setdefault(field.name, [])
        self._implicit_segments.append(raw)
        self._implicit_captures.update(captures)
        self._implicit_items.append((raw, dict(captures), offset))

    def add_kept(self, text: str, offset: int) -> None:
        """Keep the text of a region that did not parse (errors="keep"), in stream order (see above)."""
        implicit = self._template.implicit
        if implicit is not None and implicit.route is None:
            self.add_implicit_segment(text, {}, offset)
        else:
            self._values.setdefault(KEPT_KEY, []).append(_KeptText(text))
            self._kept = True

    def message(self, prefix_length: int, keep: list[ParseError] | None = None) -> dict[str, Any]:
        """Build the final message.

        Raises ParseError for an implicit value that does not parse or a missing required field; the
        error's ``partial_message`` holds everything else. With ``keep`` (a list), these errors are
        appended to it instead: the implicit field then gets its raw text, a missing field stays missing.
        """
        t = self._template
        message = t.defaults()
        all_values = self._values
        if t.implicit is not None and t.implicit.route is not None and t.implicit.name in all_values:
            # A routed implicit field: parse it first, then its keys combine with the other values.
            all_values = {k: list(v) for k, v in all_values.items() if k != t.implicit.name}
            raw = "".join(self._implicit_segments)
            try:
                routed = self._pipeline.implicit_value(
                    raw, self._implicit_captures, self._implicit_start, prefix_length
                )
                self._add_routed(all_values, t.implicit, routed, raw, self._implicit_start, prefix_length)
            except ParseError as err:
                if keep is None:
                    err.partial_message = self._partial(t.implicit.name)
                    raise
                keep.append(err)
                all_values.setdefault(KEPT_KEY, []).insert(0, _KeptText(raw))
                self._kept = True
        for name, values in all_values.items():
            field = t.by_name.get(name)
            if self._kept and any(type(v) is _KeptText for v in values):
                message[name] = self._with_kept(field, values)
            elif field is None:  # an output key fed only through 'into' or 'route'
                message[name] = self._unfielded(name, values)
            elif field.implicit and field.repeats:
                message[name] = self._implicit_repeated(field, prefix_length, keep)
            elif field.implicit:
                raw = "".join(segment for segment, _, _ in self._implicit_parts())
                try:
                    value = self._pipeline.implicit_value(
                        raw, self._implicit_captures, self._implicit_start, prefix_length
                    )
                except ParseError as err:
                    if keep is None:
                        err.partial_message = self._partial(name)
                        raise
                    keep.append(err)
                    value = raw
                message[name] = value
            else:
                message[name] = self._combined(field, values)
        message = self._drop_empty(message)
        for field in t.fields:
            if not field.optional and is_empty(message.get(field.name)):
                missing = ParseError(
                    "required field ('optional': false) never matched or captured only an empty value",
                    field=field.name,
                )
                missing.partial_message = message
                if keep is None:
                    raise missing
                keep.append(missing)
        return message

    def _implicit_parts(self) -> list[tuple[str, dict[str, str], int]]:
        """The implicit field's segments, without a final newline that a zero-width close left behind.

        ``$`` matches before the final newline of the text, so an implicit close such as
        ``<\\|im_end\\|>\\s*|$`` ends the last segment there; the newline after it would be one more
        segment, touching the previous one. Like the text after the end of the text, it belongs to no
        segment (the reference never reads it either).
        """
        items = self._implicit_items
        if len(items) >= 2 and items[-1][0] == "\n":
            previous_raw, _, previous_offset = items[-2]
            if previous_offset + len(previous_raw) == items[-1][2]:
                return items[:-1]
        return items

    def _implicit_repeated(self, field: FieldSpec, prefix_length: int, keep: list[ParseError] | None) -> Any:
        """The value of an implicit field with ``repeats``: one item per segment, or the items joined.

        A segment is each run of text the implicit field receives between two other regions (or the
        implicit close, or the ends of the stream): whitespace-only runs count (``""`` with the ``text``
        parser, as an explicit match of whitespace would be); two regions that touch leave no segment.
        Each segment is parsed on its own, with its own close captures. With ``keep`` a segment that does
        not parse (or, with ``join``, is not a string) is recorded there and kept as its raw text.
        """
        items: list[Any] = []
        for raw, captures, offset in self._implicit_parts():
            try:
                value = self._pipeline.implicit_value(raw, captures, offset, prefix_length)
                if field.join is not None and not isinstance(value, str):
                    why = f"'join' needs every segment to parse to a string, got {type(value).__name__}"
                    raise ParseError(
                        why, field=field.name, raw=raw, offset=offset, prefix_length=prefix_length
                    )
            except ParseError as err:
                if keep is None:
                    err.partial_message = self._partial(field.name)
                    raise
                keep.append(err)
                value = raw
            items.append(value)
        return items if field.join is None else field.join.join(items)

    @staticmethod
    def _with_kept(field: FieldSpec | None, values: list[Any]) -> Any:
        """A key's value when kept text is among its values: the strings joined, else the items."""
        if (field is None or not field.repeats or field.join is not None) and all(
            isinstance(v, str) for v in values
        ):
            separator = field.join if field is not None and field.join is not None else ""
            return separator.join(str(v) for v in values)
        return [str(v) if type(v) is _KeptText else v for v in values]

    def _partial(self, implicit: str) -> dict[str, Any]:
        """The message without the implicit field (an error's ``partial_message``)."""
        rest = {k: v for k, v in self._values.items() if k != implicit}
        return self._drop_empty(self._combine(self._template.defaults(), rest))

    def _combine(self, message: dict[str, Any], values: Mapping[str, list[Any]]) -> dict[str, Any]:
        for name, items in values.items():
            field = self._template.by_name.get(name)
            message[name] = self._unfielded(name, items) if field is None else self._combined(field, items)
        return message

    def _unfielded(self, name: str, values: list[Any]) -> Any:
        """The value of an output key that no field has (filled by 'into' or 'route')."""
        if name not in self._template.route_values:
            return values
        return values[0] if len(values) == 1 else "".join(values)

    @staticmethod
    def _combined(field: FieldSpec, values: list[Any]) -> Any:
        if field.join is not None:
            return field.join.join(values)
        if field.repeats:
            return values
        if len(values) == 1:
            return values[0]
        return "".join(values)

    def _drop_empty(self, message: dict[str, Any]) -> dict[str, Any]:
        keep = self._template.defaults_keys
        return {k: v for k, v in message.items() if k in keep or not is_empty(v)}
