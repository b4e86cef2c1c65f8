"""Internal: extension ``python-calls`` (E1): tool calls written as Python calls.

It adds one content parser, ``python-calls``; the loader rejects a field naming it when the template does
not declare the extension. The parser validates its one argument, ``name_suffix``, when the template loads.

At run time: the ``python-calls`` content parser (:mod:`response_templates.content`) reads the region's
text with :func:`ast.parse` and a whitelist of literal nodes, never evaluating it.
"""

from __future__ import annotations

from ..extension import Extension

__all__ = ["EXTENSION", "NAME"]

NAME = "python-calls"

EXTENSION: Extension = Extension(
    name=NAME,
    design="E1",
    summary="the 'python-calls' content parser: tool calls written as Python calls (E1)",
    content_parsers=("python-calls",),
    runtime="the 'python-calls' content parser in response_templates.content",
)
