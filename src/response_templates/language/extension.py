"""Internal: what a template-language extension is: the :class:`Extension` description and the hooks it plugs in.

An extension module (``language/extensions/<name>.py``) describes itself with one :class:`Extension`:

* what it adds to the language, as data -- field keys, content parsers, ``content_args`` keys per
  parser, transform features -- which the loader uses to reject a feature used without its declaration
  and :mod:`response_templates.lint` uses to report extension use;
* hooks that validate and compile what it adds, each run by the loader at one defined point:

  ========================  ===========================================================================
  ``check_transform``       per field, right after the field's transform is validated (its placeholders)
  ``compile_field``         per field, after every base key of the field is checked
  ``compile_template``      once, after all fields are compiled (checks across fields)
  ``watch_inside``          once per explicit field: extra delimiters watched inside its region
  ========================  ===========================================================================

Field hooks receive a :class:`FieldDraft` (the base keys, already checked) and the field's
:class:`~.model.FieldExtensionData` so far, and return it updated; template hooks receive and return a
:class:`TemplateDraft`. Hooks run in registry order (:mod:`.registry`). A hook raises
:class:`~response_templates.errors.TemplateError` naming the field and key at fault.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..content import ContentParser
from ..errors import TemplateError
from ..matching import Delimiter
from .model import FieldExtensionData, FieldSpec, TemplateExtensionData

__all__ = [
    "Extension",
    "FieldDraft",
    "FieldHook",
    "TemplateDraft",
    "TemplateHook",
    "TransformFeature",
    "WatchHook",
    "undeclared",
]


@dataclass(frozen=True)
class FieldDraft:
    """One field while it is compiled: its raw spec and its base keys, already checked."""

    name: str
    spec: Mapping[str, Any]
    #: The extensions the template declares.
    declared: tuple[str, ...]
    open: Delimiter | None
    close: Delimiter | None
    repeats: bool
    optional: bool
    join: str | None
    parser: ContentParser
    content_args: Mapping[str, Any]
    transform: Any
    transform_each: bool
    has_transform: bool
    #: The named groups of the open and close patterns.
    groups: frozenset[str]
    #: The transform features (:attr:`TransformFeature.name`) of the declared extensions.
    transform_features: frozenset[str]

    @property
    def implicit(self) -> bool:
        """Whether this is the implicit field (no open delimiter)."""
        return self.open is None


@dataclass(frozen=True)
class TemplateDraft:
    """The template while it is compiled: every field compiled, checks across fields still to run."""

    fields: tuple[FieldSpec, ...]
    defaults: Mapping[str, Any]
    #: The raw ``fields`` object of the template.
    raw_fields: Mapping[str, Any]
    data: TemplateExtensionData


FieldHook = Callable[[FieldDraft, FieldExtensionData], FieldExtensionData]
TemplateHook = Callable[[TemplateDraft], TemplateDraft]
WatchHook = Callable[[FieldSpec, tuple[FieldSpec, ...]], list[Delimiter]]


@dataclass(frozen=True)
class TransformFeature:
    """A transform syntax an extension adds."""

    #: The feature's name; the loader passes the features of the declared extensions to the field hooks.
    name: str
    #: What it is, in one line.
    summary: str
    #: Whether a raw field spec uses it, given the declared extensions: the key where (for lint), or None.
    used_in: Callable[[Mapping[str, Any], tuple[str, ...]], str | None]
    #: Field keys that use it, as an example (for the documentation and the tests).
    example: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Extension:
    """One template-language extension: what it adds, and the hooks that check and compile it."""

    #: The name a template declares in ``"extensions"``.
    name: str
    #: Its id in the extension design (``docs/design/extensions.md``), e.g. ``"E1"``.
    design: str
    #: What it adds, in one line (the value of ``rt.templates.EXTENSIONS``).
    summary: str
    #: Field keys it adds.
    field_keys: tuple[str, ...] = ()
    #: Content parsers it adds (a field may name them in ``content`` only when it is declared).
    content_parsers: tuple[str, ...] = ()
    #: ``content_args`` keys it adds, per content parser.
    content_args: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    #: Transform syntax it adds.
    transform_features: tuple[TransformFeature, ...] = ()
    #: The attributes of :class:`~.model.FieldExtensionData` / :class:`~.model.TemplateExtensionData` it sets.
    field_attributes: tuple[str, ...] = ()
    template_attributes: tuple[str, ...] = ()
    check_transform: FieldHook | None = None
    compile_field: FieldHook | None = None
    compile_template: TemplateHook | None = None
    watch_inside: WatchHook | None = None
    #: Where its behaviour while parsing is implemented (modules outside this package), in one line.
    runtime: str = ""


def undeclared(extension: str, what: str, field: str, key: str) -> TemplateError:
    """The error for a feature of ``extension`` used by a template that does not declare it."""
    return TemplateError(
        f"{what} belongs to the extension {extension!r}; declare it at the top level: "
        f'"extensions": ["{extension}"] (see docs/extensions.md)',
        field=field,
        key=key,
    )
