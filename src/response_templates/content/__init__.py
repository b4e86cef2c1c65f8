"""Content parsers: turn the raw text of one region into a value.

A field's ``content`` names a parser and its ``content_args`` configure it. Each parser is a pair of pure
functions: ``validate`` runs once when the template is loaded (it checks the arguments, fills in the
defaults, precompiles what can be precompiled and raises :class:`~response_templates.errors.TemplateError`
naming the field and the ``content_args`` key), and ``parse`` runs once per region (it raises
:class:`~response_templates.errors.ContentError`, never a foreign exception).

Parsers (one module each; :mod:`.registry` holds the table, :mod:`._args` the shared argument checks):

* ``text`` (:mod:`.scalars`, as the next two) -- the region text, stripped of surrounding whitespace
  unless ``strip`` is false.
* ``int`` / ``float`` -- ``int()`` / ``float()`` of the stripped text. Whatever Python accepts is accepted,
  so ``"1_000"``, ``"nan"``, ``"inf"`` and ``"-Infinity"`` are numbers.
* ``bool`` -- ``true``/``false``/``1``/``0`` in any case; any other text is an error.
* ``json`` (:mod:`.json`; the dialect is lexed by :mod:`response_templates.jsonlex.dialect`) --
  ``json.loads`` of the text (non-finite ``NaN``/``Infinity`` accepted, as ``json.loads`` does), with
  optional dialect knobs: ``unquoted_keys`` (``{name: "x"}``), ``string_delims`` (``[[open, close], ...]``
  markers that delimit string values instead of ``"``) and ``allow_non_json`` (return the stripped text
  when the region cannot be read as JSON). Nesting deeper than :data:`MAX_JSON_DEPTH` is an error.
* ``xml-inline`` (:mod:`.xml`) -- a flat run of tags matched by ``tag_pattern`` (a regex with named
  groups ``key`` and ``value``) becomes a dict; ``value_parser`` parses each value, ``value_parser_by``
  picks it per tag from what another group captured, ``merge_duplicates`` collects repeated keys into a
  list. With the extension ``xml-values``: ``type_group`` +
  ``type_parsers`` pick the value parser per tag from a captured attribute, ``unescape`` decodes HTML
  entities, ``cdata`` unwraps ``<![CDATA[...]]>``, ``nested`` reads values written as child tags into
  objects and arrays.
* ``kv-lines`` (:mod:`.kvlines`) -- ``key: value`` lines become a dict (``line_sep``, ``kv_sep``,
  ``strip``, ``value_parser``); blank lines and lines without ``kv_sep`` are skipped.
* ``python-call-list`` (:mod:`.python_call_list`) -- a list of keyword-argument calls in a strict,
  portable grammar (the reference's): ``[f(a=1, b="x"), ns.g-h()]`` becomes ``[{"name", "arguments"}]``;
  values are quoted strings, JSON numbers, lists, dicts, ``True``/``False``/``None`` (or ``true``/
  ``false``/``null``); integers within +-(2**53 - 1), nesting within :data:`MAX_CALL_LIST_DEPTH`.
* ``python-calls`` (:mod:`.python_calls`; extension ``python-calls``, see docs/extensions.md) -- tool
  calls written as Python calls (``[f(a=1), g()]``, a bare call, one call per line) become
  ``[{"name", "arguments"}]``; read with :func:`ast.parse` and a whitelist of literal nodes, never
  evaluated.

Example::

    >>> from response_templates.content import get_content_parser, parse_content
    >>> parser = get_content_parser("json", field="tool_calls")
    >>> args = parser.validate({"unquoted_keys": True, "string_delims": [["<e>", "<e>"]]}, "tool_calls")
    >>> parser.parse('{city: <e>Paris, "FR"<e>, days: 3}', args)
    {'city': 'Paris, "FR"', 'days': 3}
    >>> parse_content("<k>a</k><v>1</v>", "xml-inline", {
    ...     "tag_pattern": "<k>(?P<key>.*?)</k><v>(?P<value>.*?)</v>", "value_parser": {"name": "int"}})
    {'a': 1}
"""

from __future__ import annotations

from ._args import MAX_VALUE_PARSER_NESTING
from .json import JSON, MAX_JSON_DEPTH
from .kvlines import KV_LINES
from .python_call_list import MAX_CALL_LIST_DEPTH, PYTHON_CALL_LIST
from .python_calls import MAX_PYTHON_DEPTH, PYTHON_CALLS
from .registry import (
    CONTENT_PARSERS,
    ContentArgs,
    ContentParser,
    get_content_parser,
    parse_content,
    register_content_parser,
)
from .scalars import BOOL, FLOAT, INT, TEXT
from .xml import MAX_XML_DEPTH, REGEX_TIMEOUT, XML_INLINE, XML_VALUES_ARGS

__all__ = [
    "CONTENT_PARSERS",
    "MAX_CALL_LIST_DEPTH",
    "MAX_JSON_DEPTH",
    "MAX_PYTHON_DEPTH",
    "MAX_VALUE_PARSER_NESTING",
    "MAX_XML_DEPTH",
    "REGEX_TIMEOUT",
    "XML_VALUES_ARGS",
    "ContentArgs",
    "ContentParser",
    "get_content_parser",
    "parse_content",
    "register_content_parser",
]

# The built-in parsers, in this order (the registry keeps it).
for _parser in (TEXT, INT, FLOAT, BOOL, JSON, XML_INLINE, KV_LINES, PYTHON_CALL_LIST, PYTHON_CALLS):
    register_content_parser(_parser)
del _parser
