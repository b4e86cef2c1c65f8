"""Internal: extension ``json-value-end`` (E3): a region that ends exactly where its JSON value ends.

It adds the field key ``close_json`` (a boolean). Checked here at load time: it needs ``open`` or
``open_pattern`` (the implicit field has no region of its own), it cannot be combined with ``close`` or
``close_pattern``, and the field's ``content_args`` must be a JSON dialect whose value end the lexer can
find (:func:`response_templates.jsonlex.end.value_end_problem`). The field gets ``close_json``.

At run time: :class:`response_templates.jsonlex.end.JsonEnd` finds the end; the parser
(:mod:`response_templates.parser`) creates one when such a region opens and routes text through it. An
explicit field that ends with its JSON value cannot be an outer field of ``interleaved``
(extensions/interleaved.py checks that).
"""

from __future__ import annotations

from dataclasses import replace

from ...errors import TemplateError
from ...jsonlex.end import value_end_problem
from ..extension import Extension, FieldDraft
from ..model import FieldExtensionData

__all__ = ["EXTENSION", "NAME"]

NAME = "json-value-end"


def _compile_field(draft: FieldDraft, data: FieldExtensionData) -> FieldExtensionData:
    value = draft.spec.get("close_json", False)
    if not isinstance(value, bool):
        raise TemplateError(f"must be true or false, got {value!r}", field=draft.name, key="close_json")
    if not value:
        return data
    if draft.open is None:
        raise TemplateError(
            "the implicit field has no region of its own to end; 'close_json' needs 'open' or 'open_pattern'",
            field=draft.name,
            key="close_json",
        )
    if draft.close is not None:
        raise TemplateError(
            "'close_json' ends the region where its JSON value ends; it cannot be combined with "
            "'close' or 'close_pattern'",
            field=draft.name,
            key="close_json",
        )
    problem = value_end_problem(draft.content_args)  # the lexer's verdict on the field's JSON dialect
    if problem is not None:
        raise TemplateError(problem, field=draft.name, key="close_json")
    return replace(data, close_json=True)


EXTENSION: Extension = Extension(
    name=NAME,
    design="E3",
    summary="the field key 'close_json': a region ends exactly where its JSON value ends (E3)",
    field_keys=("close_json",),
    field_attributes=("close_json",),
    compile_field=_compile_field,
    runtime="jsonlex.end.JsonEnd, created by parser.py when a close_json region opens",
)
