"""response-templates: parse raw language-model output back into structured chat messages."""

from __future__ import annotations

from . import templates, verify
from .errors import (
    ContentError,
    ParseError,
    ParserStateError,
    PatternTimeoutError,
    ResponseTemplateError,
    TemplateError,
)
from .language import FieldSpec, ResponseTemplate, load_template
from .lint import lint
from .parser import ResponseParser, parse_response
from .tools import ToolSpecError

__version__ = "0.1.0"

__all__ = [
    "ContentError",
    "FieldSpec",
    "ParseError",
    "ParserStateError",
    "PatternTimeoutError",
    "ResponseParser",
    "ResponseTemplate",
    "ResponseTemplateError",
    "TemplateError",
    "ToolSpecError",
    "__version__",
    "lint",
    "load_template",
    "parse_response",
    "templates",
    "verify",
]
