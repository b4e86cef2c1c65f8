"""The built-in model library, by name, model id or chat template (``rt.templates``).

Thin entry points into :mod:`response_templates.library` and :mod:`response_templates.export`
(:func:`export`: a template in the vocabulary of transformers, vLLM or SGLang), plus the names of the template language that
users reach through this namespace (:func:`load_template`, and :data:`EXTENSIONS`: extension name -> what
it adds, read from the extension registry of :mod:`response_templates.language`).

>>> import response_templates as rt
>>> rt.templates.get("qwen3").by_name["tool_calls"].repeats
True
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from . import export as _export
from . import library
from .export import ExportError, ExportResult
from .language import EXTENSIONS, FieldSpec, ResponseTemplate, load_template

if TYPE_CHECKING:
    from .derivation import Derivation

__all__ = [
    "EXTENSIONS",
    "ExportError",
    "ExportResult",
    "FieldSpec",
    "ResponseTemplate",
    "derive",
    "detect",
    "detect_all",
    "export",
    "for_model",
    "get",
    "load_template",
    "names",
]


def names(*, include_unsupported: bool = False) -> list[str]:
    """Names of the model families in the built-in library that have a template.

    With ``include_unsupported=True`` also the families whose format needs a template-language extension.

    >>> import response_templates as rt
    >>> "qwen3" in rt.templates.names()
    True
    """
    return library.names(include_unsupported=include_unsupported)


def get(name: str) -> ResponseTemplate:
    """The built-in template of the model family ``name`` (or one of its aliases).

    Raises :class:`~response_templates.library.UnknownModelError` (a ``LookupError`` and a
    ``ResponseTemplateError``) listing near matches for an unknown name, and
    :class:`~response_templates.library.ExtensionRequiredError` for a family whose format needs an
    extension.

    >>> import response_templates as rt
    >>> rt.templates.get("qwen3").by_name["tool_calls"].repeats
    True
    """
    return library.get(name)


def for_model(model_id: str, *, chat_template: Any = None) -> ResponseTemplate:
    """The built-in template for a model id such as ``"Qwen/Qwen3-8B"``.

    With ``chat_template`` (its text, or a tokenizer that carries one), a model id the library does not
    know falls back to :func:`detect` with ``derive=True``: the library's family of that chat template,
    else a template derived from it, with a
    :class:`~response_templates.derivation.fallback.DerivedTemplateWarning`.

    >>> import response_templates as rt
    >>> rt.templates.for_model("Qwen/Qwen3-8B") is rt.templates.get("qwen3")
    True
    """
    if chat_template is None:
        return library.for_model(model_id)
    try:
        return library.for_model(model_id)
    except library.UnknownModelError:
        return detect(chat_template, derive=True, context=f"the model {model_id!r}")


def detect(
    chat_template: Any, *, derive: bool = False, context: str = "this chat template"
) -> ResponseTemplate:
    """The built-in template for a chat template: its text, or a tokenizer that carries one.

    With ``derive=True``, a chat template no library family fits gets a template derived from it
    (:func:`derive`) instead of an error, with a
    :class:`~response_templates.derivation.fallback.DerivedTemplateWarning` naming its confidence
    (``context`` says whose template in that warning). Deriving needs jinja2.

    >>> import response_templates as rt
    >>> rt.templates.detect("...<|start|>assistant<|channel|>final<|message|>...<|call|>...") is rt.templates.get("gpt-oss")
    True
    >>> import warnings
    >>> new_model = (
    ...     "{% for m in messages %}<|turn|>{{ m.role }}\\n{{ m.content }}<|end_turn|>\\n{% endfor %}"
    ...     "{% if add_generation_prompt %}<|turn|>assistant\\n{% endif %}"
    ... )
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     template = rt.templates.detect(new_model, derive=True)
    >>> rt.parse_response("Hello!<|end_turn|>", template, prefix="<|turn|>assistant\\n")["content"]
    'Hello!'
    """
    if not derive:
        return library.detect(chat_template)
    try:
        return library.detect(chat_template)
    except library.UnknownModelError:
        from .derivation.fallback import derive_for

        return derive_for(chat_template, context=context)[0]


def detect_all(chat_template: Any) -> list[library.Candidate]:
    """Every library family whose markers a chat template renders, best first, with confidence and evidence.

    >>> import response_templates as rt
    >>> best = rt.templates.detect_all("<|im_start|>{{ m.content }}<|im_end|>{% if tools %}<tool_call>{% endif %}")[0]
    >>> best.family.name, best.confidence
    ('hermes', 1.0)
    """
    return library.detect_all(chat_template)


def export(name_or_template: Any, target: str = "transformers", *, literal: bool = True) -> ExportResult:
    """A template as the ``response_template`` JSON of ``target``: ``"transformers"``, ``"vllm"`` or ``"sglang"``.

    ``name_or_template`` is a family name, a model id, template data or a compiled template. What the
    target cannot express raises :class:`ExportError` naming the field, the key and the target; an
    approximation is exported with warnings saying which outputs read differently (docs/export.md). For
    vLLM, a few families get literal delimiters so that vLLM's ``beam`` parser derives its grammar for
    forced tool choice, where that was measured to lose nothing (a note of the result; ``literal=False``
    keeps the lenient spelling; docs/grammar.md).

    >>> import response_templates as rt
    >>> result = rt.templates.export("Qwen/Qwen3-8B", target="sglang")
    >>> result.verdict, sorted(result.template["fields"])
    ('exportable', ['content', 'thinking', 'tool_calls'])
    """
    return _export.export(name_or_template, target, literal=literal)


def derive(
    chat_template: str, *, special_tokens: Mapping[str, str] | None = None, check: bool = True
) -> Derivation:
    """Derive a response template from a chat template's text, without the library (docs/derive.md).

    Returns a :class:`~response_templates.derivation.Derivation` (``.template``, ``.confidence``,
    ``.evidence``, ``.warnings``); raises :class:`~response_templates.errors.DeriveError` when nothing
    usable can be derived. Needs jinja2 (the ``verify`` extra).

    >>> import response_templates as rt
    >>> chat_template = (
    ...     "{% for m in messages %}<|im_start|>{{ m.role }}\\n{{ m.content }}"
    ...     "{% for c in m.tool_calls or [] %}<tool_call>\\n{{ c.function | tojson }}\\n</tool_call>{% endfor %}"
    ...     "<|im_end|>\\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\\n{% endif %}"
    ... )
    >>> d = rt.templates.derive(chat_template)
    >>> d.confidence
    1.0
    >>> out = rt.parse_response(
    ...     '<tool_call>\\n{"name": "f", "arguments": {"x": 1}}\\n</tool_call><|im_end|>',
    ...     d.template,
    ...     prefix="<|im_start|>assistant\\n",
    ... )
    >>> out["tool_calls"][0]["function"]
    {'name': 'f', 'arguments': {'x': 1}}
    """
    from .derivation import derive as _derive

    return _derive(chat_template, special_tokens=special_tokens, check=check)
