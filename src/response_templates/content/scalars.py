"""The scalar content parsers: ``text``, ``int``, ``float`` and ``bool`` (all streamable).

``text`` and ``bool`` read ``strip`` (default true); ``int`` and ``float`` accept it but it changes
nothing, so it is ignored (``lint`` says so).

>>> from response_templates.content import parse_content
>>> parse_content(" 1_000 ", "int"), parse_content("nan", "float"), parse_content("TRUE", "bool")
(1000, nan, True)
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from typing import Any

from ..errors import ContentError
from ._args import bool_arg, check_args, ensure_valid, ignore_arg, show
from .registry import ContentArgs, ContentParser

__all__ = ["BOOL", "FLOAT", "INT", "TEXT"]


def _validate_text(args: Any, field: str | None) -> dict[str, Any]:
    args = check_args(args, ("strip",), "text", field, unknown="ignore")
    return ContentArgs(strip=bool_arg(args, "strip", True, "text", field))


def _parse_text(text: str, args: Mapping[str, Any]) -> str:
    # Hot path: avoid re-validation when the args are already normalized.
    strip = args["strip"] if isinstance(args, ContentArgs) else ensure_valid(args, _validate_text)["strip"]
    return text.strip() if strip else text


def _number_validator(parser: str) -> Callable[[Any, str | None], dict[str, Any]]:
    """``int`` and ``float`` read the stripped text; ``strip`` is accepted but changes nothing (Python's
    ``int()`` and ``float()`` ignore the same surrounding whitespace that ``str.strip`` removes)."""

    def validate(args: Any, field: str | None) -> dict[str, Any]:
        check_args(args, ("strip",), parser, field, unknown="ignore")
        if "strip" in args:
            ignore_arg(field, parser, "strip", f"{parser} ignores surrounding whitespace either way")
        return ContentArgs()

    validate.__name__ = f"_validate_{parser}"
    return validate


def _validate_bool(args: Any, field: str | None) -> dict[str, Any]:
    args = check_args(args, ("strip",), "bool", field, unknown="ignore")
    return ContentArgs(strip=bool_arg(args, "strip", True, "bool", field))


def _looks_like_long_int(text: str) -> bool:
    """True if ``text`` is a well-formed integer that only failed because of Python's digit limit."""
    digits = text.lstrip("+-").replace("_", "")
    limit = sys.get_int_max_str_digits() if hasattr(sys, "get_int_max_str_digits") else 0
    return bool(limit) and digits.isdigit() and len(digits) > limit


def _parse_int(text: str, args: Mapping[str, Any]) -> int:
    stripped = text.strip()
    try:
        return int(stripped)
    except ValueError:
        if _looks_like_long_int(stripped):
            raise ContentError(
                f"int: the integer has more digits than Python converts "
                f"(limit {sys.get_int_max_str_digits()}): {show(stripped)}"
            ) from None
        raise ContentError(f"int: {show(stripped)} is not an integer") from None


def _parse_float(text: str, args: Mapping[str, Any]) -> float:
    stripped = text.strip()
    try:
        return float(stripped)
    except ValueError:
        raise ContentError(f"float: {show(stripped)} is not a number") from None


_TRUE_WORDS = frozenset({"true", "1"})
_FALSE_WORDS = frozenset({"false", "0"})


def _parse_bool(text: str, args: Mapping[str, Any]) -> bool:
    strip = args["strip"] if isinstance(args, ContentArgs) else ensure_valid(args, _validate_bool)["strip"]
    read = text.strip() if strip else text
    word = read.lower()
    if word in _TRUE_WORDS:
        return True
    if word in _FALSE_WORDS:
        return False
    raise ContentError(f"bool: expected true, false, 1 or 0 (in any case), got {show(read)}")


TEXT = ContentParser("text", True, _parse_text, _validate_text)
INT = ContentParser("int", True, _parse_int, _number_validator("int"))
FLOAT = ContentParser("float", True, _parse_float, _number_validator("float"))
BOOL = ContentParser("bool", True, _parse_bool, _validate_bool)
