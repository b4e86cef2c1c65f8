"""Internal: extension ``interleaved`` (E5): a field may open inside another field's region, which resumes after it.

It adds the field key ``within``: a field name or a list of them, the outer fields. Checked here at load
time:

* per field: names given once each, not the field itself, and not on the implicit field (it has no open);
* across fields: each outer field is an explicit field that does not end with its JSON value
  (``close_json``) and does not open ``within`` another field itself (one level of nesting).

Compiled here too: inside an outer field's region the scanner also watches the opens of the fields that
list it (:func:`_watch_inside`). At run time the parser (:mod:`response_templates.parser`) suspends the
outer region while the inner one is open and resumes it after; the block-based wire adapters
(``wire/``) split the outer block around the inner one.
"""

from __future__ import annotations

from dataclasses import replace

from ...errors import TemplateError
from ...matching import Delimiter
from ..extension import Extension, FieldDraft, TemplateDraft
from ..model import FieldExtensionData, FieldSpec

__all__ = ["EXTENSION", "NAME"]

NAME = "interleaved"


def _compile_field(draft: FieldDraft, data: FieldExtensionData) -> FieldExtensionData:
    """Field-level checks (the outer fields are checked with all fields)."""
    spec, name = draft.spec, draft.name
    if "within" not in spec:
        return data
    raw = spec["within"]
    if isinstance(raw, str):
        raw = [raw]
    if not isinstance(raw, list) or not raw or not all(isinstance(n, str) and n for n in raw):
        raise TemplateError(
            f"must be a field name or a non-empty list of field names, got {spec['within']!r}",
            field=name,
            key="within",
        )
    if len(set(raw)) != len(raw):
        raise TemplateError(f"lists a field more than once: {raw!r}", field=name, key="within")
    if name in raw:
        raise TemplateError("a field cannot open inside itself", field=name, key="within")
    if draft.implicit:
        raise TemplateError(
            "the implicit field has no open delimiter, so it cannot open inside another region",
            field=name,
            key="within",
        )
    return replace(data, within=tuple(raw))


def _problem(outer_name: str, outer: FieldSpec | None, fields: list[str]) -> str | None:
    """Why ``outer`` cannot be an outer field, or None."""
    if outer is None:
        return f"names {outer_name!r}, which is not a field; fields: {fields}"
    if outer.implicit:
        return (
            f"{outer_name!r} is the implicit field: every field already opens wherever it is (its "
            "text is segments between other regions); 'within' names explicit fields"
        )
    if outer.close_json:
        return f"{outer_name!r} ends where its JSON value ends ('close_json'); nothing can open inside it"
    if outer.within:
        return f"{outer_name!r} itself opens 'within' {list(outer.within)!r}; regions nest one level deep"
    return None


def _compile_template(draft: TemplateDraft) -> TemplateDraft:
    """Each outer field of ``within`` can hold inner regions."""
    by_name = {f.name: f for f in draft.fields}
    for f in draft.fields:
        for outer_name in f.within:
            why = _problem(outer_name, by_name.get(outer_name), sorted(by_name))
            if why is not None:
                raise TemplateError(why, field=f.name, key="within")
    return draft


def _watch_inside(field: FieldSpec, fields: tuple[FieldSpec, ...]) -> list[Delimiter]:
    """The opens of the fields that may open inside ``field``'s region."""
    return [g.open for g in fields if field.name in g.within and g.open is not None]


EXTENSION: Extension = Extension(
    name=NAME,
    design="E5",
    summary="the field key 'within': a field may open inside another field's region, which resumes after it (E5)",
    field_keys=("within",),
    field_attributes=("within",),
    compile_field=_compile_field,
    compile_template=_compile_template,
    watch_inside=_watch_inside,
    runtime="parser.py (suspending and resuming the outer region) and the wire adapters (blocks)",
)
