"""Internal: extension ``xml-values`` (E4): typed, escaped, CDATA and nested values of ``xml-inline``.

It adds five ``content_args`` keys to the ``xml-inline`` content parser (``type_group``,
``type_parsers``, ``unescape``, ``cdata``, ``nested``). The loader rejects any of them, also in a nested
``value_parser``, when the template does not declare the extension; the ``xml-inline`` parser validates
their values when the template loads.

At run time: the ``xml-inline`` content parser (:mod:`response_templates.content`) applies them when a
region closes.
"""

from __future__ import annotations

from ...content import XML_VALUES_ARGS
from ..extension import Extension

__all__ = ["EXTENSION", "NAME"]

NAME = "xml-values"

EXTENSION: Extension = Extension(
    name=NAME,
    design="E4",
    summary="'xml-inline' arguments type_group/type_parsers, unescape, cdata and nested: typed XML values (E4)",
    content_args={"xml-inline": XML_VALUES_ARGS},
    runtime="the 'xml-inline' content parser in response_templates.content",
)
