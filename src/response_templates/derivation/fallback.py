"""The derived template as a fallback: what servers and ``template="auto"`` use when no library family fits.

:func:`derive_for` takes whatever carries a chat template (its text, a tokenizer, a tokenizer config or
the named templates of one), derives a response template from it (:func:`~response_templates.derivation.derive`)
and warns with a :class:`DerivedTemplateWarning` that names the confidence, so that nobody parses with a
derived template without being told. :func:`differences` lists where a hand-written template and the
derived one disagree on the markers of each part of a turn (``response-templates verify --derived``).

>>> import warnings
>>> from response_templates.derivation.fallback import DerivedTemplateWarning, derive_for
>>> chat_template = (
...     "{% for m in messages %}<|im_start|>{{ m.role }}\\n{{ m.content }}<|im_end|>\\n{% endfor %}"
...     "{% if add_generation_prompt %}<|im_start|>assistant\\n{% endif %}"
... )
>>> with warnings.catch_warnings(record=True) as caught:
...     warnings.simplefilter("always")
...     template, derivation = derive_for(chat_template, context="this example")
>>> caught[0].category is DerivedTemplateWarning, derivation.confidence
(True, 1.0)
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import DeriveError
from ..language import ResponseTemplate, load_template

__all__ = [
    "MIN_CONFIDENCE",
    "DerivedTemplateWarning",
    "chat_template_of",
    "derive_for",
    "differences",
    "special_tokens_of",
]


class DerivedTemplateWarning(UserWarning):
    """A response template derived from the chat template is in use: no library family matched.

    The message names the derivation's confidence and its first warnings; docs/derive.md says what a
    derived template can miss.
    """


def chat_template_of(source: Any) -> str:
    """The chat template text of a string, a tokenizer, a tokenizer config, or named templates (the
    ``default`` one first, else the first). Raises :class:`DeriveError` when there is none."""
    if isinstance(source, str):
        return source
    value: Any = source
    if not isinstance(source, (Mapping, Sequence)):
        value = getattr(source, "chat_template", None)
    elif isinstance(source, Mapping) and "chat_template" in source:
        value = source["chat_template"]
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        named = [v for _, v in sorted(value.items(), key=lambda kv: kv[0] != "default") if isinstance(v, str)]
        if named:
            return named[0]
    if isinstance(value, Sequence):
        for item in value:
            named_default = isinstance(item, Mapping) and item.get("name") in (None, "default")
            if named_default and isinstance(item.get("template"), str):
                return str(item["template"])
        for item in value:
            if isinstance(item, Mapping) and isinstance(item.get("template"), str):
                return str(item["template"])
    raise DeriveError(f"{type(source).__name__} carries no chat template", where="chat template source")


def special_tokens_of(source: Any) -> dict[str, str]:
    """``bos_token`` / ``eos_token`` of a tokenizer or a tokenizer config, as texts (``{}`` for a string)."""
    tokens: dict[str, str] = {}
    for key in ("bos_token", "eos_token"):
        value = source.get(key) if isinstance(source, Mapping) else getattr(source, key, None)
        if isinstance(value, Mapping):
            value = value.get("content")
        if isinstance(value, str):
            tokens[key] = value
    return tokens


#: The least confidence a derived template needs to be used in place of an error (docs/derive.md).
MIN_CONFIDENCE = 0.5


def derive_for(
    source: Any, *, context: str, min_confidence: float = MIN_CONFIDENCE
) -> tuple[ResponseTemplate, Any]:
    """Derive a template from ``source``'s chat template and warn that a derived template is in use.

    ``context`` says who falls back (``"model 'acme/new-1'"``, ``"this tokenizer"``) in the warning.
    Returns ``(template, derivation)``; raises :class:`DeriveError` when nothing usable can be derived,
    or when the derivation's confidence is below ``min_confidence`` (the share of its own probe renders
    it reads back, lowered for guesses: a template below half is more likely to garble output than not).
    """
    from . import derive

    derivation = derive(chat_template_of(source), special_tokens=special_tokens_of(source))
    notes = "; ".join(derivation.warnings[:3])
    if derivation.confidence < min_confidence:
        raise DeriveError(
            f"the derived template's confidence {derivation.confidence:.2f} is below {min_confidence:.2f}"
            + (f": {notes}" if notes else ""),
            where="derived template",
        )
    template = load_template(derivation.template)
    warnings.warn(
        f"no library template for {context}: using a response template derived from its chat template "
        f"(confidence {derivation.confidence:.2f}){': ' + notes if notes else ''}. Check it with "
        "'response-templates derive' and pass template=... to choose another.",
        DerivedTemplateWarning,
        stacklevel=2,
    )
    return template, derivation


def _markers(data: Mapping[str, Any]) -> dict[str, str]:
    """``field.key`` -> the delimiter or content kind, as JSON text, for the keys that make a turn's shape."""
    out: dict[str, str] = {}
    if "start_anchor" in data:
        out["start_anchor"] = json.dumps(data["start_anchor"], ensure_ascii=False)
    for name, spec in (data.get("fields") or {}).items():
        if not isinstance(spec, Mapping):
            continue
        for key in ("open", "open_pattern", "close", "close_pattern", "content"):
            if spec.get(key) is not None:
                out[f"{name}.{key}"] = json.dumps(spec[key], ensure_ascii=False, sort_keys=True)
    return out


def differences(written: Mapping[str, Any], derived: Mapping[str, Any]) -> list[str]:
    """Where a hand-written template and a derived one disagree, one line each: a field one has and the
    other lacks, a delimiter pattern or a content kind that differs. ``[]`` when they agree on all.

    >>> a = {"fields": {"content": {}, "thinking": {"open": "<think>", "close": "</think>"}}}
    >>> b = {"fields": {"content": {}, "thinking": {"open": "<think>", "close": ["</think>", "<eos>"]}}}
    >>> differences(a, b)
    ['thinking.close: hand-written "</think>", derived ["</think>", "<eos>"]']
    >>> differences(a, {"fields": {"content": {}}})
    ['thinking: only in the hand-written template']
    """
    ours, theirs = _markers(written), _markers(derived)
    fields_a = set(written.get("fields") or {})
    fields_b = set(derived.get("fields") or {})
    out = [f"{f}: only in the hand-written template" for f in sorted(fields_a - fields_b)]
    out += [f"{f}: only in the derived template" for f in sorted(fields_b - fields_a)]
    for key in sorted(set(ours) & set(theirs)):
        if ours[key] != theirs[key]:
            out.append(f"{key}: hand-written {ours[key]}, derived {theirs[key]}")
    for key in sorted(set(ours) ^ set(theirs)):
        if key.split(".", 1)[0] in fields_a & fields_b:
            side = "hand-written" if key in ours else "derived"
            out.append(f"{key}: only the {side} template sets it ({(ours | theirs)[key]})")
    return out
