"""Internal: the keyword arguments of a Python call (``get_weather(city='Paris', days=3)``) as a grammar.

Each value is a Python literal as the Python-call parsers read it, typed by the tool's schema: the
Python dialect of :mod:`.dialects` where it writes the schema, JSON (valid Python too) elsewhere. Apart
from :mod:`.arguments` so that the dialects, which build on the argument writers, stay below it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .arguments import Tool, _ordered_params, _schema_kinds
from .dialects import PYTHON, dialect_value
from .nodes import Alt, Lit, Node, PyString, seq

__all__ = ["python_arguments"]


def _python_value(schema: Any, tool: Tool) -> Node:
    """One keyword argument's value: a Python literal as the Python-call parsers read it (strings and dict
    keys in either quote, ``True``/``true``, ``None``/``null``), typed by the schema where the Python
    dialect writes it (:func:`~.dialects.dialect_value`), else JSON (valid Python too)."""
    kinds = _schema_kinds(schema)
    if kinds == {"boolean"}:
        return Alt((Lit("True"), Lit("False"), Lit("true"), Lit("false")))
    if kinds == {"null"}:
        return Alt((Lit("None"), Lit("null")))
    if (
        kinds == {"string"}
        and isinstance(schema, Mapping)
        and not schema.get("enum")
        and "const" not in schema
    ):
        return PyString()
    return dialect_value(schema, tool, PYTHON)


#: The largest magnitude of an integer the strict Python-call parser reads (``python-call-list``).
_PY_INTEGER_MAX = 2**53 - 1
#: Keywords whose values are data, not schemas (a bound added there would change the data).
_DATA_KEYS = frozenset({"const", "enum", "default", "examples"})


def _bounded_integers(schema: Any) -> Any:
    """``schema`` with every integer it allows bounded to what ``python-call-list`` reads (an integer
    beyond ``2**53 - 1`` is an error there), where the schema does not bound it already."""
    if isinstance(schema, list):
        return [_bounded_integers(item) for item in schema]
    if not isinstance(schema, Mapping):
        return schema
    out = {k: v if k in _DATA_KEYS else _bounded_integers(v) for k, v in schema.items()}
    declared = out.get("type")
    if declared == "integer" or (isinstance(declared, list) and "integer" in declared):
        for key, bound in (("minimum", -_PY_INTEGER_MAX), ("maximum", _PY_INTEGER_MAX)):
            if not isinstance(out.get(key), (int, float)) or isinstance(out.get(key), bool):
                out[key] = bound
    return out


def python_arguments(tool: Tool) -> Node:
    # JSON written inside Python arguments keeps its integers within what the strict parser reads.
    tool = Tool(tool.name, _bounded_integers(dict(tool.parameters)))
    items = [
        (name, seq(Lit(f"{name}="), _python_value(schema, tool))) for name, schema in tool.properties.items()
    ]
    return _ordered_params(tool, items, Lit(", "))
