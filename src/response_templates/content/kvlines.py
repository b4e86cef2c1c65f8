"""The ``kv-lines`` content parser: ``key: value`` lines become an object.

>>> from response_templates.content import parse_content
>>> parse_content("city: Paris\\n\\n days : 3", "kv-lines")
{'city': 'Paris', 'days': '3'}

Blank lines are skipped; any other line without ``kv_sep`` is a ContentError (its text would be lost).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import ContentError
from ._args import (
    bool_arg,
    check_args,
    ensure_valid,
    parse_value,
    separator_arg,
    show,
    validate_value_parser,
)
from .registry import ContentArgs, ContentParser

__all__ = ["KV_LINES"]


def _validate_kv_lines(args: Any, field: str | None) -> dict[str, Any]:
    name = "kv-lines"
    args = check_args(args, ("line_sep", "kv_sep", "strip", "value_parser"), name, field, unknown="ignore")
    value_parser, sub = validate_value_parser(args.get("value_parser"), name, field)
    return ContentArgs(
        line_sep=separator_arg(args, "line_sep", "\n", name, field),
        kv_sep=separator_arg(args, "kv_sep", ":", name, field),
        strip=bool_arg(args, "strip", True, name, field),
        value_parser=value_parser,
        _value_parser=sub,
    )


def _parse_kv_lines(text: str, args: Mapping[str, Any]) -> dict[str, Any]:
    args = ensure_valid(args, _validate_kv_lines)
    kv_sep: str = args["kv_sep"]
    strip: bool = args["strip"]
    out: dict[str, Any] = {}
    for number, line in enumerate(text.split(args["line_sep"]), start=1):
        if strip:
            line = line.strip()
        if kv_sep not in line:
            if line.strip():
                raise ContentError(
                    f"kv-lines: line {number} {show(line)} has no separator {kv_sep!r}; a line that is "
                    f"not blank must read key{kv_sep}value (its text would be lost otherwise)"
                )
            continue
        key, value = line.split(kv_sep, 1)
        if strip:
            key, value = key.strip(), value.strip()
        out[key] = parse_value(value, args, f"kv-lines value of {key!r}")
    return out


KV_LINES = ContentParser("kv-lines", False, _parse_kv_lines, _validate_kv_lines)
