"""Internal: the optional compiled build, the hot modules compiled to C extensions with mypyc.

The package is pure Python, and that copy is the reference. ``make wheel-mypyc`` builds a wheel in which
the modules of :data:`HOT_MODULES` are compiled by mypyc from the very same sources; ``make test-mypyc``
runs the whole test suite against it (docs/streaming.md, "The compiled build"). This module holds what
the sources need for that: :func:`mypyc_attr`, the class options mypyc reads (a no-op at run time when
``mypy_extensions`` is not installed), and :func:`is_compiled`.

>>> from response_templates.compiled import HOT_MODULES, is_compiled
>>> "response_templates.parser" in HOT_MODULES and isinstance(is_compiled(), bool)
True
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

__all__ = ["HOT_MODULES", "is_compiled", "mypyc_attr"]

_C = TypeVar("_C")

if TYPE_CHECKING:
    from mypy_extensions import mypyc_attr
else:
    try:
        from mypy_extensions import mypyc_attr
    except ImportError:  # the pure-Python package does not need it: class options are for mypyc only

        def mypyc_attr(*args: Any, **kwargs: Any) -> Callable[[_C], _C]:
            return lambda cls: cls


#: The modules the compiled build compiles: the streaming path, from text to wire chunks.
HOT_MODULES = (
    "response_templates.parser",
    "response_templates.policy",
    "response_templates.utf8",
    "response_templates.matching",
    "response_templates.matching.budget",
    "response_templates.assembly",
    "response_templates.values",
    "response_templates.jsonlex.end",
    "response_templates.jsonlex.scanner",
    "response_templates.jsonlex.verbatim",
    "response_templates.jsonlex.state",
    "response_templates.toolstream.completion",
    "response_templates.toolstream.plan",
    "response_templates.toolstream.streamer",
    "response_templates.wire._base",
    "response_templates.wire.openai_chat",
    "response_templates.wire.openai_responses",
    "response_templates.wire.anthropic",
)


def is_compiled() -> bool:
    """Whether this copy of the package runs the compiled build (its hot modules are C extensions)."""
    module = importlib.import_module(HOT_MODULES[0])
    return not str(getattr(module, "__file__", "")).endswith(".py")
