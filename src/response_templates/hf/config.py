"""Response templates saved with the tokenizer, as the ``response_template`` key of ``tokenizer_config.json``.

transformers 5 knows the key: ``tokenizer.response_template = template`` then ``save_pretrained`` writes
it, and ``from_pretrained`` reads it back. Older versions keep unknown keys of ``tokenizer_config.json``
in ``tokenizer.init_kwargs`` and write those back when saving, but have no attribute for them. The
helpers here work on both, without patching anything:

* :func:`save_response_template` validates a template and stores it on a tokenizer (so that its next
  ``save_pretrained`` writes it) or directly into a saved tokenizer directory;
* :func:`load_response_template` reads it back from a tokenizer (attribute or ``init_kwargs``) or from a
  directory.

>>> import json, pathlib, tempfile
>>> folder = pathlib.Path(tempfile.mkdtemp())
>>> _ = (folder / "tokenizer_config.json").write_text(json.dumps({"model_max_length": 4096}))
>>> save_response_template(folder, {"start_anchor": "<|im_start|>assistant\\n",
...                                 "fields": {"content": {"close": "<|im_end|>"}}})
>>> load_response_template(folder)["fields"]
{'content': {'close': '<|im_end|>'}}
>>> json.loads((folder / "tokenizer_config.json").read_text())["model_max_length"]
4096
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import ResponseTemplateError, TemplateError
from ..language import ResponseTemplate, load_template

__all__ = [
    "CONFIG_FILE",
    "CONFIG_KEY",
    "MissingTemplateError",
    "knows_response_template",
    "load_response_template",
    "resolve_template",
    "save_response_template",
    "template_data",
]

CONFIG_FILE = "tokenizer_config.json"
CONFIG_KEY = "response_template"


#: ``template=AUTO``: the tokenizer's own response template, else the model library's for its chat template.
AUTO = "auto"


class MissingTemplateError(ResponseTemplateError, AttributeError):
    """The tokenizer has no response template and none was passed.

    Also an :class:`AttributeError`, which is what transformers' own ``parse_response`` raises here.
    """


def template_data(template: Mapping[str, Any] | ResponseTemplate | str) -> dict[str, Any]:
    """Validate ``template`` and return it as plain JSON data (a fresh copy), ready to be saved."""
    return load_template(template).to_dict()


def _native_base(cls: type) -> type | None:
    for klass in cls.__mro__:
        if klass.__name__ == "PreTrainedTokenizerBase" and klass.__module__.startswith("transformers."):
            return klass
    return None


def knows_response_template(tokenizer_or_class: Any) -> bool:
    """Whether this transformers version reads and writes ``response_template`` by itself (5.x does)."""
    cls = tokenizer_or_class if isinstance(tokenizer_or_class, type) else type(tokenizer_or_class)
    base = _native_base(cls)
    if base is None:
        return False
    init = getattr(getattr(base, "__init__", None), "__code__", None)
    save = getattr(getattr(base, "save_pretrained", None), "__code__", None)
    return bool(init and save and CONFIG_KEY in init.co_consts and CONFIG_KEY in save.co_consts)


def _config_path(target: str | os.PathLike[str]) -> Path:
    path = Path(target)
    return path / CONFIG_FILE if path.is_dir() or path.suffix != ".json" else path


def _read_config(path: Path) -> dict[str, Any]:
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise FileNotFoundError(
            f"{path} not found: save the tokenizer there first (tokenizer.save_pretrained(...))"
        ) from None
    except json.JSONDecodeError as exc:
        raise ResponseTemplateError(f"{path} is not valid JSON: {exc}") from None
    if not isinstance(config, dict):
        raise ResponseTemplateError(f"{path} does not hold a JSON object")
    return config


def save_response_template(target: Any, template: Mapping[str, Any] | ResponseTemplate | str | None) -> None:
    """Store a response template with a tokenizer, on any transformers version.

    ``target`` is a tokenizer (the template is set on it, and its next ``save_pretrained`` writes it) or a
    directory where a tokenizer was saved (its ``tokenizer_config.json`` gets the key; other keys are
    kept). The template is validated first. ``None`` removes it. A bare ``tokenizers.Tokenizer`` keeps
    it in memory only (``tokenizer.json`` has no place for it).

    Raises :class:`~response_templates.TemplateError` for an invalid template, ``FileNotFoundError``
    when the directory has no ``tokenizer_config.json``.
    """
    data = None if template is None else template_data(template)
    if isinstance(target, (str, os.PathLike)):
        path = _config_path(target)
        config = _read_config(path)
        if data is None:
            config.pop(CONFIG_KEY, None)
        else:
            config[CONFIG_KEY] = data
        text = json.dumps(config, indent=2, ensure_ascii=False) + "\n"
        fd, tmp = tempfile.mkstemp(prefix=".tokenizer_config.", dir=path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return
    try:
        target.response_template = data
    except AttributeError:
        raise ResponseTemplateError(
            f"cannot store a template on a {type(target).__name__}: pass template= to the parsing functions, "
            "or use a transformers tokenizer (PreTrainedTokenizerFast(tokenizer_object=...))"
        ) from None
    init_kwargs = getattr(target, "init_kwargs", None)
    if isinstance(init_kwargs, dict) and not knows_response_template(target):
        # transformers 4.x writes init_kwargs back to tokenizer_config.json
        if data is None:
            init_kwargs.pop(CONFIG_KEY, None)
        else:
            init_kwargs[CONFIG_KEY] = data


def load_response_template(source: Any) -> dict[str, Any] | None:
    """The response template saved with a tokenizer, as plain data, or ``None`` if there is none.

    ``source`` is a tokenizer (its ``response_template`` attribute, else the ``response_template`` entry
    that transformers 4.x keeps in ``init_kwargs``) or a saved tokenizer directory. The template is
    validated: a broken one raises :class:`~response_templates.TemplateError`.
    """
    if isinstance(source, (str, os.PathLike)):
        path = _config_path(source)
        value = _read_config(path).get(CONFIG_KEY)
        where = str(path)
    else:
        value = getattr(source, CONFIG_KEY, None)
        if value is None:
            init_kwargs = getattr(source, "init_kwargs", None)
            if isinstance(init_kwargs, Mapping):
                value = init_kwargs.get(CONFIG_KEY)
        where = f"the tokenizer's {CONFIG_KEY}"
    if value is None:
        return None
    try:
        return template_data(value)
    except TemplateError as exc:
        _note(exc, f"(the template read from {where})")
        raise


def resolve_template(
    tokenizer: Any, template: Mapping[str, Any] | ResponseTemplate | str | None
) -> ResponseTemplate:
    """``template`` compiled, else the tokenizer's own; a clear error when there is neither.

    ``template="auto"`` picks the library's template for the tokenizer's chat template
    (:func:`response_templates.templates.detect`) when the tokenizer has no ``response_template``, and
    when no library family fits, a template derived from the chat template (docs/derive.md), with a
    :class:`~response_templates.derivation.fallback.DerivedTemplateWarning` naming its confidence.
    """
    auto = isinstance(template, str) and template == AUTO
    if template is not None and not auto:
        return load_template(template)
    value = getattr(tokenizer, CONFIG_KEY, None)
    if value is None:
        init_kwargs = getattr(tokenizer, "init_kwargs", None)
        if isinstance(init_kwargs, Mapping):
            value = init_kwargs.get(CONFIG_KEY)
    if value is None and auto:
        from .. import library

        try:
            return library.detect(tokenizer)
        except ResponseTemplateError as exc:  # unknown chat template, or a family without a template
            not_in_library = exc
        # No library family: a template derived from the chat template, with a DerivedTemplateWarning.
        from ..derivation.fallback import derive_for

        try:
            return derive_for(tokenizer, context=f"this {type(tokenizer).__name__}")[0]
        except ResponseTemplateError as exc:  # nothing derivable, or jinja2 missing
            raise MissingTemplateError(
                f"this {type(tokenizer).__name__} has no response_template, the model library does not "
                f"give one for its chat template ({not_in_library}), and none could be derived from it "
                f"({exc}). Pass template=... (a template, or a library name: "
                "response_templates.templates.get(name))."
            ) from None
    if value is None:
        raise MissingTemplateError(
            f"this {type(tokenizer).__name__} has no response_template, and none was passed. Pass "
            'template=..., or template="auto" to use the model library\'s template for its chat template, '
            "or attach one to the tokenizer: response_templates.hf.save_response_template("
            "tokenizer, template) on any transformers version (or tokenizer.response_template = template "
            "on transformers 5); tokenizer.save_pretrained() then keeps it in tokenizer_config.json."
        )
    try:
        return load_template(value)
    except TemplateError as exc:
        _note(exc, f"(the template read from the tokenizer's {CONFIG_KEY})")
        raise


def _note(exc: BaseException, note: str) -> None:
    if hasattr(exc, "add_note"):  # Python 3.11+
        exc.add_note(note)
