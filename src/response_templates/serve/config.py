"""The server's configuration: the upstream, the model's chat template and its response template.

:func:`load_config` reads what ``response-templates serve`` is given: the chat template from a tokenizer
folder (``chat_template.jinja``, else ``tokenizer_config.json``'s ``chat_template``) or a file, and the
response template from the folder's ``response_template``, else the library by model id, else the
library by chat template. Nothing here needs the web framework.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from .. import library
from ..errors import ResponseTemplateError
from ..language import ResponseTemplate, load_template

__all__ = ["UPSTREAM_KINDS", "ConfigError", "ServeConfig", "UpstreamKind", "load_config"]

UpstreamKind = Literal["openai", "vllm", "sglang", "llama.cpp"]
#: What the upstream is: the plain OpenAI completions protocol, or an engine with a grammar parameter.
UPSTREAM_KINDS: tuple[UpstreamKind, ...] = ("openai", "vllm", "sglang", "llama.cpp")


class ConfigError(ValueError):
    """The server cannot start with what it was given; the message says what to change."""


@dataclass
class ServeConfig:
    """Everything the app needs; build it with :func:`load_config` (or directly, in tests)."""

    upstream: str  # the base URL: requests go to {upstream}/completions
    model: str  # sent upstream as the completion's model
    chat_template: str
    template: ResponseTemplate
    upstream_kind: UpstreamKind = "openai"
    bos_token: str = ""
    eos_token: str = ""
    special_tokens: list[str] = field(default_factory=list)  # for the Lark grammar (llama.cpp)
    chat_template_kwargs: dict[str, Any] = field(default_factory=dict)  # defaults for every request
    timeout: float = 600.0  # seconds without a byte from the upstream
    max_concurrency: int = 8  # requests generating at once
    max_queue: int = 32  # requests waiting for a slot; more get a 429
    default_max_tokens: int = 4096  # when the request gives none
    reasoning_key: str = "reasoning_content"  # Chat Completions: "reasoning_content", "reasoning" or "both"


def _read_text(path: str, what: str) -> str:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read the {what} {path!r}: {exc}") from None


def _token(value: Any) -> str:
    """A special token of tokenizer_config.json: a string, or an AddedToken dict with its ``content``."""
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping) and isinstance(value.get("content"), str):
        return str(value["content"])
    return ""


def _chat_template_value(value: Any, path: str) -> str | None:
    """``chat_template`` of a tokenizer_config.json: a string, or a list of named templates ("default")."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, list):
        named = {t.get("name"): t.get("template") for t in value if isinstance(t, Mapping)}
        chosen = named.get("default")
        if isinstance(chosen, str):
            return chosen
    raise ConfigError(f"{path}: 'chat_template' is neither a string nor a list with a 'default' template")


@dataclass
class _ModelFiles:
    chat_template: str | None = None
    response_template: Any = None
    bos_token: str = ""
    eos_token: str = ""
    special_tokens: list[str] = field(default_factory=list)


def _model_dir(folder: str) -> _ModelFiles:
    config_path = os.path.join(folder, "tokenizer_config.json")
    if not os.path.isdir(folder):
        raise ConfigError(f"--model-dir {folder!r} is not a folder")
    files = _ModelFiles()
    if os.path.isfile(config_path):
        try:
            data = json.loads(_read_text(config_path, "tokenizer config"))
        except ValueError as exc:
            raise ConfigError(f"{config_path} is not valid JSON: {exc}") from None
        if not isinstance(data, dict):
            raise ConfigError(f"{config_path} is not a JSON object")
        files.chat_template = _chat_template_value(data.get("chat_template"), config_path)
        files.response_template = data.get("response_template")
        files.bos_token = _token(data.get("bos_token"))
        files.eos_token = _token(data.get("eos_token"))
        decoder = data.get("added_tokens_decoder")
        if isinstance(decoder, Mapping):
            files.special_tokens = sorted(
                {_token(t) for t in decoder.values() if isinstance(t, Mapping) and t.get("special")} - {""}
            )
    jinja = os.path.join(folder, "chat_template.jinja")
    if os.path.isfile(jinja):  # transformers 5 reads it before tokenizer_config.json's chat_template
        files.chat_template = _read_text(jinja, "chat template")
    if files.chat_template is None:
        raise ConfigError(
            f"--model-dir {folder!r} holds no chat template (chat_template.jinja, or 'chat_template' in "
            "tokenizer_config.json): pass --chat-template FILE"
        )
    return files


def _response_template(model: str, files: _ModelFiles, template: Any) -> ResponseTemplate:
    try:
        if template is not None:
            return load_template(template)
        if files.response_template is not None:
            return load_template(files.response_template)
    except ResponseTemplateError as exc:
        raise ConfigError(f"invalid response template: {exc}") from None
    try:
        return library.for_model(model)
    except library.UnknownModelError:
        pass
    except ResponseTemplateError as exc:  # the family needs an extension
        raise ConfigError(str(exc)) from None
    try:
        return library.detect(files.chat_template)
    except ResponseTemplateError as exc:
        not_in_library = exc
    # No library family: a template derived from the chat template, with a DerivedTemplateWarning.
    from ..derivation.fallback import derive_for

    try:
        source = {
            "chat_template": files.chat_template,
            "bos_token": files.bos_token,
            "eos_token": files.eos_token,
        }
        return derive_for(source, context=f"the model {model!r}")[0]
    except ResponseTemplateError as exc:
        raise ConfigError(
            f"no response template for {model!r}: the library knows neither the model id nor its chat "
            f"template ({not_in_library}), and none could be derived from the chat template ({exc}); set "
            "'response_template' in the tokenizer folder's tokenizer_config.json "
            "(response-templates export ... --model-dir DIR) or pass --template"
        ) from None


def load_config(
    *,
    upstream: str,
    model: str,
    model_dir: str | None = None,
    chat_template: str | None = None,
    template: Any = None,
    **options: Any,
) -> ServeConfig:
    """The configuration for ``model`` served from ``upstream``; :class:`ConfigError` if it cannot start.

    ``model_dir`` is a tokenizer folder, ``chat_template`` a Jinja file (one of the two is needed; the
    file wins over the folder's template). ``template`` is a response template (data, compiled or a
    library name) that overrides the folder's and the library's. ``options`` are the other fields of
    :class:`ServeConfig`.
    """
    if not upstream.startswith(("http://", "https://")):
        raise ConfigError(f"--upstream must be an http:// or https:// URL, got {upstream!r}")
    files = _model_dir(model_dir) if model_dir is not None else _ModelFiles()
    if chat_template is not None:
        files.chat_template = _read_text(chat_template, "chat template")
    if files.chat_template is None:
        raise ConfigError("give the model's chat template: --model-dir DIR or --chat-template FILE")
    if isinstance(template, str) and not template.lstrip().startswith("{"):
        try:
            template = library.family_or_model(template).template()
        except ResponseTemplateError as exc:
            raise ConfigError(str(exc)) from None
    kind = options.get("upstream_kind", "openai")
    if kind not in UPSTREAM_KINDS:
        raise ConfigError(f"--upstream-kind must be one of {', '.join(UPSTREAM_KINDS)}, got {kind!r}")
    return ServeConfig(
        upstream=upstream.rstrip("/"),
        model=model,
        chat_template=files.chat_template,
        template=_response_template(model, files, template),
        bos_token=files.bos_token,
        eos_token=files.eos_token,
        special_tokens=files.special_tokens,
        **options,
    )
