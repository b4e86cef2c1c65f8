"""Internal: extension ``into`` (E8, and E6 for the implicit field): several fields feeding one output key.

It adds the field key ``into``: the field's values accumulate under another output key, a list, in
stream order. Checked here at load time:

* per field: a non-empty output key, not the field itself; not on the implicit field, nor with ``join``
  or ``"optional": false``;
* across fields: the target is a field with ``repeats`` and no ``join`` that does not itself feed
  ``into``, or an output key that no field and no ``defaults`` entry uses. A field feeding the implicit
  field is a wrapper (``into_implicit``): its text is one more segment of the implicit field, parsed by
  the implicit field's parser, so it may not set the keys of :data:`WRAPPER_FORBIDS`.

At run time: the message assembler (:mod:`response_templates.assembly`) adds the values to the target
list; the parser (:mod:`response_templates.parser`) treats a wrapper's text as implicit text; the wire
adapters (``wire/_base.py``) and the tool streamer (``toolstream/streamer.py``) stream what feeds
``tool_calls`` as tool calls and a wrapper's text as the field it feeds.
"""

from __future__ import annotations

from dataclasses import replace

from ...errors import TemplateError
from ..extension import Extension, FieldDraft, TemplateDraft
from ..model import FieldExtensionData, FieldSpec

__all__ = ["EXTENSION", "NAME", "WRAPPER_FORBIDS"]

NAME = "into"

#: Keys a field feeding ``into`` the implicit field may not have: its text is parsed with the implicit field.
WRAPPER_FORBIDS = (
    "content",
    "content_args",
    "transform",
    "transform_each",
    "repeats",
    "route",
    "close_json",
)


def _compile_field(draft: FieldDraft, data: FieldExtensionData) -> FieldExtensionData:
    """Field-level checks (the target is checked with all the fields)."""
    spec, name = draft.spec, draft.name
    if "into" not in spec:
        return data
    target = spec["into"]
    if not isinstance(target, str) or not target:
        raise TemplateError(f"must be a non-empty output key, got {target!r}", field=name, key="into")
    if target == name:
        raise TemplateError("a field cannot feed 'into' itself", field=name, key="into")
    if draft.implicit:
        raise TemplateError(
            "the implicit field cannot use 'into' (its text is parsed once, at the end)",
            field=name,
            key="into",
        )
    if "join" in spec:
        raise TemplateError("'into' cannot be combined with 'join'", field=name, key="into")
    if not draft.optional:
        raise TemplateError(
            "'optional': false cannot be combined with 'into' (the field has no output key of its own)",
            field=name,
            key="optional",
        )
    return replace(data, into=target)


def _wrapper(f: FieldSpec, target: FieldSpec, draft: TemplateDraft) -> FieldSpec:
    """``f`` as a wrapper of the implicit field ``target``: its text is parsed with the implicit field."""
    for key in WRAPPER_FORBIDS:
        if key in draft.raw_fields[f.name]:
            raise TemplateError(
                f"a field feeding 'into' the implicit field {f.into!r} adds its text as one more "
                f"segment of it, parsed with it; it cannot have {key!r}",
                field=f.name,
                key=key,
            )
    return replace(
        f,
        extension_data=replace(f.extension_data, into_implicit=True),
        dirty=target.dirty,
        parser=target.parser,
    )


def _check_target(f: FieldSpec, target: FieldSpec | None, draft: TemplateDraft) -> None:
    if target is None:
        if f.into in draft.defaults:
            raise TemplateError(
                f"output key {f.into!r} is a 'defaults' key; 'into' may name a field with 'repeats' or a "
                "key that no field and no default uses",
                field=f.name,
                key="into",
            )
        return
    if target.into is not None:
        raise TemplateError(
            f"field {f.into!r} itself feeds 'into' {target.into!r}; name the final output key",
            field=f.name,
            key="into",
        )
    if not target.repeats or target.join is not None:
        raise TemplateError(
            f"the target field {f.into!r} must have 'repeats': true and no 'join' (its value is the list "
            "the fields feeding it add to)",
            field=f.name,
            key="into",
        )


def _compile_template(draft: TemplateDraft) -> TemplateDraft:
    """Check every ``into`` target; mark the fields that feed the implicit field (its wrappers)."""
    by_name = {f.name: f for f in draft.fields}
    out = []
    for f in draft.fields:
        target = by_name.get(f.into) if f.into is not None else None
        if target is not None and target.implicit:
            f = _wrapper(f, target, draft)
        out.append(f)
    for f in out:
        if f.into is not None and not f.into_implicit:
            _check_target(f, by_name.get(f.into), draft)
    return replace(draft, fields=tuple(out))


EXTENSION: Extension = Extension(
    name=NAME,
    design="E8",
    summary="the field key 'into': a field's values accumulate under another output key (E8)",
    field_keys=("into",),
    field_attributes=("into", "into_implicit"),
    compile_field=_compile_field,
    compile_template=_compile_template,
    runtime="assembly.py (the target list), parser.py (wrappers), wire/_base.py and toolstream/streamer.py",
)
