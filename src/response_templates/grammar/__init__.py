"""The template as a grammar: constrain an engine to generate what the response template reads.

:func:`build` turns a response template (or a library family name, or a model id), a request's tools and
its tool choice into a grammar that grammar-constrained decoding engines consume, in two forms:

* :attr:`Grammar.structural_tag`: an xgrammar *structural tag*, the ``response_format`` that vLLM and
  SGLang accept (``{"type": "structural_tag", "format": {...}}``);
* :attr:`Grammar.lark`: an llguidance Lark grammar (llguidance itself, llama.cpp built with llguidance,
  and the engines that embed it).

What the grammar allows: reasoning and content stay free text (any text that does not contain the
delimiters that would open another region), the call syntax is exact, and each call's arguments are
constrained by the tool's JSON schema in the format's own syntax: JSON bodies, XML parameters (string
parameters raw up to the close tag, the others as JSON), Python call lists.

>>> from response_templates import grammar
>>> tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {
...     "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]
>>> g = grammar.build("qwen3", tools=tools, tool_choice="required")
>>> g.structural_tag["type"], g.structural_tag["format"]["type"]
('structural_tag', 'sequence')
>>> calls = g.structural_tag["format"]["elements"][-1]  # after the optional reasoning block
>>> calls["type"], calls["at_least_one"], calls["tags"][0]["begin"]
('triggered_tags', True, '<tool_call>')
>>> g.lark.splitlines()[0]
'%llguidance {}'

The grammar is pure data: building it needs no engine. :func:`coverage` says which library families
compile, and why the others do not. Building is documented in ``docs/grammar.md``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..language import ResponseTemplate, load_template
from .arguments import GrammarError, read_tools
from .derive import derive, reasoning_state, tool_fields
from .lark import to_lark
from .nodes import Node, structural_tag_format

__all__ = ["COVERAGE_TOOLS", "Coverage", "Grammar", "GrammarError", "build", "coverage"]


@dataclass(frozen=True)
class Grammar:
    """A compiled grammar: the same language as an xgrammar structural tag and as an llguidance Lark grammar.

    Attributes:
        structural_tag: ``{"type": "structural_tag", "format": {...}}`` (the ``response_format`` of vLLM
            and SGLang).
        lark: the llguidance Lark grammar (starts with ``%llguidance {}``).
        reasoning_open: whether the prompt (``prefix``) left the reasoning block open, so that the
            grammar starts inside it.
        family: the library family the template came from, if it came from the library.
    """

    structural_tag: dict[str, Any]
    lark: str
    reasoning_open: bool = False
    family: str | None = None
    tree: Node | None = None


@dataclass(frozen=True)
class Coverage:
    """Whether a library family compiles to a grammar, and if not, why.

    ``calls`` is False for a family whose template reads no tool calls (no tool-call field): it compiles
    for ``tool_choice="none"`` (and ``"auto"``, which is then the same), and a forced choice
    (``"required"``, a tool name) raises :class:`GrammarError`.
    """

    compiles: bool
    reason: str | None = None
    calls: bool = True


def _resolve(template: Any) -> tuple[ResponseTemplate, str | None]:
    from .. import library

    if isinstance(template, ResponseTemplate):
        return template, None
    if isinstance(template, Mapping):
        return load_template(template), None
    if not isinstance(template, str):
        raise GrammarError(
            f"expected a template, a template dict, a family name or a model id, got {type(template).__name__}"
        )
    try:
        family = library.family(template)
    except library.UnknownModelError:
        family = library.family_for_model(template)
    return family.template(), family.name


def _special_tokens(special_tokens: Any) -> dict[str, int | None]:
    if special_tokens is None:
        return {}
    decoder = getattr(special_tokens, "added_tokens_decoder", None)
    if isinstance(decoder, Mapping):  # a Hugging Face tokenizer: its special added tokens, by id
        return {
            str(getattr(tok, "content", tok)): int(index)
            for index, tok in decoder.items()
            if getattr(tok, "special", True)
        }
    if isinstance(special_tokens, Mapping):
        return {str(k): (int(v) if v is not None else None) for k, v in special_tokens.items()}
    if isinstance(special_tokens, (str, bytes)) or not isinstance(special_tokens, Iterable):
        raise GrammarError("special_tokens must be a list of strings, a {token: id} dict or a tokenizer")
    return {str(t): None for t in special_tokens}


def build(
    template: Any,
    tools: Sequence[Mapping[str, Any] | Callable[..., Any]] | None = None,
    tool_choice: Any = "auto",
    parallel_tool_calls: bool = True,
    reasoning: str = "allowed",
    prefix: str | None = None,
    *,
    special_tokens: Any = None,
) -> Grammar:
    """The grammar of what a model may write, for one request.

    Args:
        template: a response template (compiled or as data), a library family name or a model id.
        tools: the request's tools (JSON-schema dicts in any shape the wire formats carry, or typed
            Python functions), read and checked as the parser reads them.
        tool_choice: ``"auto"`` (calls allowed), ``"required"`` (at least one call, first thing after the
            reasoning), ``"none"`` (no call syntax at all), a tool name or
            ``{"type": "function", "function": {"name": ...}}`` (only that tool, at least once).
        parallel_tool_calls: ``False`` allows one call at most.
        reasoning: ``"allowed"``, ``"required"`` or ``"forbidden"``: the reasoning block before the answer.
        prefix: the prompt; when it leaves the reasoning block open, the grammar starts inside it.
        special_tokens: the strings that are single special tokens of the model's tokenizer (a list, a
            ``{token: id}`` dict, or a Hugging Face tokenizer): a delimiter that is one is written as
            that token (a token reference in the Lark grammar, which llguidance needs to match a special
            token; a ``token`` format in the structural tag, so that xgrammar does not take its spelling
            in ordinary tokens either), and free text holds none of those the grammar writes.

    Raises:
        GrammarError: the template's call syntax (or the request) cannot be written as a grammar; the
            message names the field and key.
        ToolSchemaError: a tool's schema is refused (the tool, where in its schema, what is wrong), as
            the parser refuses it; see :func:`response_templates.tools.check_schema`.
        ToolSpecError: a tool cannot be read (no name, no schema key, ...).
    """
    compiled, family = _resolve(template)
    tool_list = read_tools(tools)
    tree = derive(compiled, tool_list, tool_choice, parallel_tool_calls, reasoning, prefix)
    tokens = _special_tokens(special_tokens)
    return Grammar(
        structural_tag={
            "type": "structural_tag",
            "format": structural_tag_format(tree, special_tokens=tokens),
        },
        lark=to_lark(tree, tokens),
        reasoning_open=reasoning_state(compiled, prefix) == "open",
        family=family,
        tree=tree,
    )


#: The tools :func:`coverage` compiles each family with: a string, an integer, an object and an
#: optional array parameter.
COVERAGE_TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string"},
                    "days": {"type": "integer"},
                    "options": {"type": "object", "properties": {"metric": {"type": "boolean"}}},
                    "tags": {"type": "array", "items": {"type": "string"}},
                },
                "required": ["city", "days"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "search",
            "parameters": {"type": "object", "properties": {"query": {"type": "string"}}},
        },
    },
]


def coverage() -> dict[str, Coverage]:
    """Every family of the library: whether its call syntax compiles to a grammar, and if not, why.

    >>> from response_templates import grammar
    >>> grammar.coverage()["qwen3-coder"]
    Coverage(compiles=True, reason=None, calls=True)
    """
    from .. import library

    out: dict[str, Coverage] = {}
    for fam in library.families():
        if not fam.has_template:
            out[fam.name] = Coverage(False, "no template: the format needs a template-language extension")
            continue
        try:
            build(fam.template(), COVERAGE_TOOLS, "auto")
        except GrammarError as exc:
            out[fam.name] = Coverage(False, str(exc))
        else:
            out[fam.name] = Coverage(True, calls=bool(tool_fields(fam.template())))
    return out
