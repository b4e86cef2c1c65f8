"""response-templates: parse raw language-model output back into structured chat messages.

The names in ``__all__`` are the top-level API: :func:`parse_response` and :class:`ResponseParser` (whole
text and streaming), :func:`parse_batch` and its :class:`BatchResult` (many records), :func:`load_template` and what it returns (:class:`ResponseTemplate`,
:class:`FieldSpec`), :func:`lint`, the error classes, and the modules :mod:`.templates` (the built-in
model library) and :mod:`.verify`.

Public modules: their import paths are stable, and each one's API is what its ``__all__`` lists. For a
package, that is the ``__all__`` of the package itself; its submodules are how it is built.

* ``templates`` -- the built-in library by name, model id or chat template (``rt.templates.get(...)``);
  ``library`` -- the model families behind it; ``export`` -- a template for transformers, vLLM or
  SGLang, written out or into a model folder's ``tokenizer_config.json``.
* ``controls`` -- control tokens: a marker spelled out with ordinary tokens is text (token-exact parsing,
  docs/tokenizers.md).
* ``errors`` -- the error classes (also exported here); ``events`` -- the type of every event the
  library emits (at run time plain dicts).
* ``content`` -- the content parsers and their registry (``register_content_parser`` adds your own);
  ``transforms`` -- transform templates, applicable on their own.
* ``tools`` -- tool specifications (JSON schemas, typed Python functions) and argument typing;
  ``calls`` -- what a tool call is, its parts and how its arguments are typed.
* ``batch`` -- many recorded generations at once (:func:`parse_batch`, in order, on every core), and the
  same parser for the columnar batches of Ray Data and Hugging Face ``datasets`` (``batch.ColumnParser``).
* ``toolstream`` -- early, incremental tool calls from the parser's events; ``wire`` -- the events as
  OpenAI and Anthropic stream chunks; ``hf`` -- Hugging Face tokenizers: token ids in, templates saved
  with the tokenizer.
* ``grammar`` -- a template and a request's tools as a grammar for constrained decoding (xgrammar
  structural tags, llguidance Lark);
* ``engines`` -- the plugins that make this parser vLLM's and SGLang's (``--tool-call-parser
  response_templates``): registering one imports its engine, importing the package does not;
* ``serve`` -- ``response-templates serve``: an OpenAI- and Anthropic-compatible server in front of an
  engine that streams raw completions (needs the ``serve`` extra to run);
* ``verify`` -- the round trip of a response template through a chat template (needs jinja2);
  ``derivation`` -- a response template derived from a chat template's renders (``rt.templates.derive``,
  needs jinja2);
  ``lint`` -- portability rules and suspicious patterns (``rt.lint`` is its entry point); ``cli`` -- the
  ``response-templates`` command; ``demo`` -- the demo it runs.

Internal modules, with no promise from one release to the next: ``matching`` (delimiters, watch sets,
hold-back), ``values`` (the value pipeline), ``assembly`` (building the message), ``jsonlex`` (the
incremental JSON lexer; ``toolstream`` re-exports its public parts), ``policy`` (the error and anchor
policies of the parser), ``utf8`` (its byte input), ``compiled`` (the optional mypyc build) and the submodules of ``language``. The first line of their docstrings
starts with "Internal:". ``language``, ``parser`` and ``whole`` are the homes of ``load_template``,
``ResponseTemplate``, ``FieldSpec``, ``ResponseParser`` and ``parse_response`` (whole-text parsing): import
those from here; the rest of these modules is internal too.

The layers: the core (``controls``, ``errors``, ``events``, ``matching``, ``language``, ``parser``, ``policy``, ``utf8``, ``whole``, ``values``,
``assembly``, ``content``, ``jsonlex``, ``calls``, ``tools``, ``transforms``, ``compiled``) never imports the outer
rings (``library``, ``templates``, ``batch``, ``toolstream``, ``wire``, ``hf``, ``cli``, ``lint``, ``verify``,
``derivation``, ``demo``, ``grammar``, ``engines``, ``serve``), and no module imports itself back through others; ``tests/test_import_layers.py`` checks both.
"""

from __future__ import annotations

from typing import Any as _Any

from . import batch, controls, templates, verify
from .batch import BatchResult, RecordError, parse_batch
from .errors import (
    AnchorNotFoundError,
    ContentError,
    ParseError,
    ParserStateError,
    PatternTimeoutError,
    ResponseTemplateError,
    TemplateError,
)
from .language import FieldSpec, ResponseTemplate, load_template
from .lint import lint
from .matching import RegexBudget
from .parser import ParsedMessage, ResponseParser
from .tools import ToolSchemaError, ToolSpecError
from .whole import parse_response

__version__ = "0.1.0"

__all__ = [
    "AnchorNotFoundError",
    "BatchResult",
    "ContentError",
    "FieldSpec",
    "ParseError",
    "ParsedMessage",
    "ParserStateError",
    "PatternTimeoutError",
    "RecordError",
    "RegexBudget",
    "ResponseParser",
    "ResponseTemplate",
    "ResponseTemplateError",
    "TemplateError",
    "ToolSchemaError",
    "ToolSpecError",
    "__version__",
    "batch",
    "lint",
    "load_template",
    "parse_batch",
    "parse_response",
    "templates",
    "verify",
]


class _TokenizerRing:
    """The tokenizer integration as the core reaches it (controls.tokenizer_ring): response_templates.hf,
    imported when a tokenizer is first passed to ResponseParser or parse_response."""

    @staticmethod
    def reader(tokenizer: _Any, prefix: _Any, control_tokens: _Any) -> _Any:
        from .hf.control_tokens import token_input

        return token_input(tokenizer, prefix, control_tokens)

    @staticmethod
    def parse(tokenizer: _Any, output: _Any, **options: _Any) -> _Any:
        from .hf.parsing import parse_response as parse_ids

        return parse_ids(tokenizer, output, **options)


controls.tokenizer_ring = _TokenizerRing()
