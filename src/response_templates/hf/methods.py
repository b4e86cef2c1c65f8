"""Opt-in tokenizer methods for transformers versions that lack them.

transformers 5 tokenizers have ``parse_response``, ``get_response_parser`` and a saved
``response_template`` attribute of their own. :func:`install` gives older versions the same surface,
backed by this library: it adds whichever of them the tokenizer base class lacks (nothing happens
unless you call it, and nothing that exists is replaced unless ``force=True``). :func:`uninstall`
removes what it added.

* ``tokenizer.parse_response(response, schema=None, *, prefix, tools=None)``
* ``tokenizer.get_response_parser(response_template=None, *, prefix, tools=None)``
* ``tokenizer.response_template``: on versions that do not know the key, a property stored in
  ``init_kwargs``, which those versions write to ``tokenizer_config.json`` and read back.

The signatures are those of transformers 5, so code written for it runs unchanged.

>>> class OldTokenizer:  # stands in for a transformers 4.x tokenizer class
...     init_kwargs: dict = {}
>>> sorted(install(OldTokenizer))
['get_response_parser', 'parse_response', 'response_template']
>>> install(OldTokenizer)   # already there
[]
>>> sorted(uninstall(OldTokenizer))
['get_response_parser', 'parse_response', 'response_template']
"""

from __future__ import annotations

from typing import Any

from ..language import ResponseTemplate
from ..parser import ParsedMessage, ResponseParser
from ..policy import MISSING
from .config import CONFIG_KEY, knows_response_template, resolve_template, template_data
from .parsing import TokenResponseParser, Tools, get_response_parser, parse_response

__all__ = ["install", "uninstall"]

_ABSENT = object()
_MARK = "__response_templates__"
#: class -> {attribute name: what was there before install() (or _ABSENT)}
_SAVED: dict[type, dict[str, Any]] = {}


def _parse_response_method(
    self: Any,
    response: Any,
    schema: dict[str, Any] | ResponseTemplate | str | None = None,
    *,
    prefix: Any = MISSING,
    tools: Tools = None,
) -> ParsedMessage | list[ParsedMessage]:
    """Parse model output (text or token ids, one or a batch) into a message dict (response-templates).

    ``schema`` overrides the tokenizer's ``response_template``; ``prefix`` (the prompt, text or ids) is
    required (``""`` opts out). See :func:`response_templates.hf.parse_response`.
    """
    return parse_response(self, response, prefix=prefix, tools=tools, template=schema)


def _get_response_parser_method(
    self: Any,
    response_template: dict[str, Any] | ResponseTemplate | str | None = None,
    *,
    prefix: Any = MISSING,
    tools: Tools = None,
    token_ids: bool = False,
) -> TokenResponseParser | ResponseParser:
    """A streaming parser for one generation, fed with ``feed(text)`` or ``feed_tokens(ids)``
    (response-templates). See :func:`response_templates.hf.get_response_parser`.

    ``token_ids=True`` (transformers 5.25's flag): a :class:`~response_templates.ResponseParser` whose
    ``feed`` takes the generated ids, parsed as ids (docs/tokenizers.md, control tokens)."""
    if token_ids:
        if prefix is MISSING:
            return get_response_parser(self, prefix=prefix)  # raises: the prefix is required
        return ResponseParser(resolve_template(self, response_template), prefix, tools=tools, tokenizer=self)
    return get_response_parser(self, prefix=prefix, tools=tools, template=response_template)


def _get_template(self: Any) -> dict[str, Any] | None:
    value = self.init_kwargs.get(CONFIG_KEY)
    return value if isinstance(value, dict) or value is None else template_data(value)


def _set_template(self: Any, value: Any) -> None:
    if value is None:
        self.init_kwargs.pop(CONFIG_KEY, None)
    else:
        self.init_kwargs[CONFIG_KEY] = template_data(value)


_response_template_property = property(
    _get_template,
    _set_template,
    doc="The response template, kept in init_kwargs so that save_pretrained writes it (response-templates).",
)

for _fn in (_parse_response_method, _get_response_parser_method, _get_template):
    setattr(_fn, _MARK, True)
_METHODS: dict[str, Any] = {
    "parse_response": _parse_response_method,
    "get_response_parser": _get_response_parser_method,
}


def _ours(value: Any) -> bool:
    target = value.fget if isinstance(value, property) else value
    return getattr(target, _MARK, False)


def _base_class() -> type:
    try:
        from transformers.tokenization_utils_base import PreTrainedTokenizerBase
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("install() needs transformers (pip install transformers)") from exc
    return PreTrainedTokenizerBase


def install(cls: type | None = None, *, force: bool = False) -> list[str]:
    """Add ``parse_response``, ``get_response_parser`` and ``response_template`` where they are missing.

    ``cls`` defaults to transformers' ``PreTrainedTokenizerBase`` (every tokenizer). With ``force=True``
    existing methods are replaced too, e.g. the incompatible experimental ``parse_response`` of some
    late 4.x releases. Returns the names added; calling it again adds nothing.
    """
    cls = _base_class() if cls is None else cls
    saved = _SAVED.setdefault(cls, {})
    added = []
    wanted = dict(_METHODS)
    if not knows_response_template(cls):
        wanted[CONFIG_KEY] = _response_template_property
    for name, value in wanted.items():
        current = cls.__dict__.get(name, _ABSENT)
        if _ours(current):
            continue
        if hasattr(cls, name) and not force:
            continue
        saved.setdefault(name, current)
        setattr(cls, name, value)
        added.append(name)
    return added


def uninstall(cls: type | None = None) -> list[str]:
    """Undo :func:`install` on ``cls``: remove what it added, restore what it replaced."""
    cls = _base_class() if cls is None else cls
    saved = _SAVED.pop(cls, {})
    removed = []
    for name, previous in saved.items():
        if not _ours(cls.__dict__.get(name, _ABSENT)):
            continue  # changed by someone else since: leave it
        if previous is _ABSENT:
            delattr(cls, name)
        else:
            setattr(cls, name, previous)
        removed.append(name)
    return removed
