"""response-templates: parse raw language-model output back into structured chat messages."""

from __future__ import annotations

from .errors import (
    ContentError,
    ParseError,
    ParserStateError,
    PatternTimeoutError,
    ResponseTemplateError,
    TemplateError,
)

__version__ = "0.1.0"

__all__ = [
    "ContentError",
    "ParseError",
    "ParserStateError",
    "PatternTimeoutError",
    "ResponseTemplateError",
    "TemplateError",
    "__version__",
]
