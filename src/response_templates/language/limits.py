"""Internal: the load-time limits of a template, each defined once here (docs/usage.md lists them).

A template may come from an untrusted source (a model hub), so loading one must take bounded time and
memory whatever it contains: every template loads, or fails with a :class:`~response_templates.TemplateError`
that says which limit it exceeds. The limits are far above what a real template needs (the templates of
the built-in library are under 2 KB of JSON, nested at most 7 levels deep, with at most 7 fields).

>>> from response_templates.language import limits
>>> limits.check_pattern_limits("<tool_call>\\\\s{0,8}", field="tool_calls", key="open_pattern")
>>> limits.check_pattern_limits("a{1000000000}", field="x", key="open_pattern")
Traceback (most recent call last):
...
response_templates.errors.TemplateError: response_template field 'x', key 'open_pattern': the counted repeat {1000000000} exceeds the limit of 1,000 repetitions
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ..errors import TemplateError

__all__ = [
    "MAX_DELIMITER_LENGTH",
    "MAX_FIELDS",
    "MAX_LITERALS",
    "MAX_NESTING",
    "MAX_REPEAT",
    "MAX_REPEAT_PRODUCT",
    "MAX_TEMPLATE_SIZE",
    "check_delimiter_value",
    "check_field_count",
    "check_pattern_limits",
    "check_template_data",
    "loads_template_json",
]

#: Characters of a template: its JSON text, or, for template data, the total length of its strings (keys
#: included) plus one per value.
MAX_TEMPLATE_SIZE = 1_000_000
#: Levels of nesting of objects and lists (the template object itself is level 1).
MAX_NESTING = 100
#: Fields of one template.
MAX_FIELDS = 1000
#: Literals in one delimiter list (``open``, ``close`` or ``start_anchor`` given as a list).
MAX_LITERALS = 1000
#: Characters of one delimiter: one literal, or the source of one pattern.
MAX_DELIMITER_LENGTH = 4096
#: The largest number in a counted repeat of a pattern (``{m}``, ``{m,}``, ``{m,n}``, ``{,n}``).
MAX_REPEAT = 1000
#: The largest product of counted repeats nested in one another (``(?:a{100}){100}`` is 10,000).
MAX_REPEAT_PRODUCT = 10_000


def _where(path: tuple[str, ...]) -> str:
    return "".join(f"[{p!r}]" for p in path) or "the template"


def loads_template_json(text: str, *, check_size: bool = True) -> Any:
    """Decode a template's JSON text, with a :class:`TemplateError` for every way it can fail.

    The text is at most :data:`MAX_TEMPLATE_SIZE` characters (unless ``check_size`` is false: the text
    was made from data that :func:`check_template_data` checks); nesting too deep for the decoder is
    reported as a TemplateError (the decoded data is then checked by :func:`check_template_data`).
    """
    if check_size and len(text) > MAX_TEMPLATE_SIZE:
        raise TemplateError(
            f"the template's JSON text is {len(text):,} characters; the limit is {MAX_TEMPLATE_SIZE:,}"
        )
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise TemplateError(f"not valid JSON: {exc}") from None
    except RecursionError:
        raise TemplateError(f"the template is nested more than {MAX_NESTING} levels deep") from None


def check_template_data(data: Any) -> None:
    """Check the size and nesting depth of template data, without recursion (cycles stop at the limit).

    Raises :class:`TemplateError` naming the top-level key under which the limit was exceeded.
    """
    # (value, depth, top-level key); depth 1 is the template object itself
    stack: list[tuple[Any, int, str | None]] = [(data, 1, None)]
    size = 0
    while stack:
        value, depth, top = stack.pop()
        size += 1
        if isinstance(value, str):
            size += len(value)
        elif isinstance(value, (Mapping, list, tuple)):
            if depth > MAX_NESTING:
                raise TemplateError(
                    f"the template is nested more than {MAX_NESTING} levels deep", key=top
                ) from None
            if isinstance(value, Mapping):
                for k, v in value.items():
                    size += len(k) if isinstance(k, str) else 1
                    stack.append((v, depth + 1, top if top is not None else str(k)))
            else:
                stack.extend((v, depth + 1, top) for v in value)
        if size > MAX_TEMPLATE_SIZE:
            raise TemplateError(
                f"the template is larger than {MAX_TEMPLATE_SIZE:,} characters of data", key=top
            )


def check_field_count(count: int) -> None:
    """At most :data:`MAX_FIELDS` fields."""
    if count > MAX_FIELDS:
        raise TemplateError(f"{count:,} fields; a template may have at most {MAX_FIELDS:,}", key="fields")


def check_delimiter_value(value: Any, *, field: str | None, key: str, pattern: bool) -> None:
    """A delimiter's value within the limits: length of each literal or of the pattern, list length.

    Only the limits are checked here; types and emptiness are checked where the delimiter is compiled.
    """
    if isinstance(value, list):
        if len(value) > MAX_LITERALS:
            raise TemplateError(
                f"lists {len(value):,} literals; a delimiter list may have at most {MAX_LITERALS:,}",
                field=field,
                key=key,
            )
        items: list[Any] = value
    else:
        items = [value]
    for item in items:
        if isinstance(item, str) and len(item) > MAX_DELIMITER_LENGTH:
            what = "pattern" if pattern else "literal"
            raise TemplateError(
                f"a {what} of {len(item):,} characters; a delimiter may have at most "
                f"{MAX_DELIMITER_LENGTH:,}",
                field=field,
                key=key,
            )
    if pattern and isinstance(value, str):
        check_pattern_limits(value, field=field, key=key)


def _count_at(source: str, i: int) -> tuple[int, list[str]] | None:
    """A counted repeat ``{m}``, ``{m,}``, ``{,n}`` or ``{m,n}`` at ``source[i]`` (a ``{``): its end and numbers."""
    j = source.find("}", i + 1)
    if j < 0:
        return None
    body = source[i + 1 : j]
    parts = body.split(",")
    if len(parts) > 2 or not all(p.isascii() and (p.isdigit() or p == "") for p in parts):
        return None
    if not any(parts):
        return None
    return j + 1, [p for p in parts if p]


def check_pattern_limits(source: str, *, field: str | None, key: str) -> None:
    """Every counted repeat of ``source`` within :data:`MAX_REPEAT`, nested products within :data:`MAX_REPEAT_PRODUCT`.

    A linear scan of the pattern text (escapes and character sets skipped): a brace that does not form a
    counted repeat is a literal to the regex engine and is ignored here too, as is a fuzzy constraint
    such as ``{e<=1}``.
    """
    # Per open group: the largest product of repeats inside it so far. `last` is the weight of the item
    # just read (the product inside it, 1 for a plain atom), which a following count multiplies.
    stack: list[int] = [1]
    last = 1
    i, n = 0, len(source)
    while i < n:
        c = source[i]
        if c == "\\":
            i += 2
            last = 1
            continue
        if c == "[":
            i += 1
            if i < n and source[i] == "^":
                i += 1
            if i < n and source[i] == "]":
                i += 1
            while i < n and source[i] != "]":
                i += 2 if source[i] == "\\" else 1
            i += 1
            last = 1
            continue
        if c == "(":
            stack.append(1)
            i += 1
            continue
        if c == ")":
            inner = stack.pop() if len(stack) > 1 else 1
            stack[-1] = max(stack[-1], inner)
            last = inner
            i += 1
            continue
        if c == "{":
            count = _count_at(source, i)
            if count is not None:
                end, numbers = count
                for number in numbers:
                    if len(number) > 9 or int(number) > MAX_REPEAT:
                        raise TemplateError(
                            f"the counted repeat {source[i:end]} exceeds the limit of {MAX_REPEAT:,} "
                            "repetitions",
                            field=field,
                            key=key,
                        )
                product = last * max(int(x) for x in numbers)
                if product > MAX_REPEAT_PRODUCT:
                    raise TemplateError(
                        f"nested counted repeats multiply to {product:,} repetitions (at {source[i:end]}); "
                        f"the limit is {MAX_REPEAT_PRODUCT:,}",
                        field=field,
                        key=key,
                    )
                stack[-1] = max(stack[-1], product)
                last = product
                i = end
                continue
        last = 1
        i += 1
