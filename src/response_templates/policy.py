"""Internal: the parser's policies: what happens to output that does not parse (``errors="keep"``,
:class:`ParsedMessage` and its ``errors``), to a prompt without the start anchor and to a missing
prompt (bytes that are not UTF-8: :mod:`response_templates.utf8`); and the tools' parameter schemas the parser types arguments with."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Final, Literal

from .compiled import mypyc_attr
from .errors import AnchorNotFoundError, ParseError, ResponseTemplateError
from .language import ResponseTemplate
from .tools import tool_parameters

__all__ = [
    "MAX_ERRORS",
    "AnchorPolicy",
    "ErrorPolicy",
    "ParsedMessage",
    "ToolParams",
    "Tools",
    "anchor_not_found",
    "check_policy",
    "detach",
    "missing_prefix_error",
    "tool_params",
]


Tools = Sequence[Mapping[str, Any] | Callable[..., Any]]

#: What ``errors=`` takes: raise a ParseError (the default), or keep the text that did not parse.
ErrorPolicy = Literal["raise", "keep"]
#: What ``missing_anchor=`` takes: raise AnchorNotFoundError (the default), or parse the whole prefix.
AnchorPolicy = Literal["raise", "parse"]

#: At most this many errors are stored (``parser.errors``, ``ParsedMessage.errors``); later ones are only
#: counted (``errors_dropped``), so that a long stream of failing regions keeps bounded memory.
MAX_ERRORS: Final = 100


class ToolParams(dict[str, dict[str, Any]]):
    """Tool name -> parameter schemas, already extracted (shared by the items of a batch)."""


def tool_params(tools: Tools | ToolParams | None) -> ToolParams:
    if isinstance(tools, ToolParams):
        return tools
    # tool_parameters checks each tool (a mapping or a function) and says which one is malformed.
    tool_list: Any = tools
    return ToolParams(tool_parameters(tool_list))


class ParsedMessage(dict[str, Any]):
    """A parsed message: the message ``dict``, plus the errors met while parsing it.

    It compares, prints, serializes (``json.dumps``) and pickles like the plain dict it is. ``errors``
    lists the :class:`~response_templates.ParseError` of every region that did not parse, in stream
    order (empty when everything parsed); with ``errors="keep"`` this is how a caller learns that some
    text is in the message unparsed. At most :data:`MAX_ERRORS` are listed; ``errors_dropped`` counts
    the rest.

    >>> import response_templates as rt
    >>> message = rt.ParsedMessage({"content": "hi"})
    >>> message, message.errors, message == {"content": "hi"}
    ({'content': 'hi'}, [], True)
    """

    def __init__(
        self,
        message: Mapping[str, Any] | None = None,
        errors: Iterable[ParseError] = (),
        errors_dropped: int = 0,
    ) -> None:
        super().__init__(message or {})
        #: The errors, in stream order (see the class documentation).
        self.errors: list[ParseError] = list(errors)
        #: How many errors beyond :data:`MAX_ERRORS` were not kept.
        self.errors_dropped = errors_dropped


def check_policy(name: str, value: Any, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        choices = " or ".join(repr(a) for a in allowed)
        raise ResponseTemplateError(f"{name} must be {choices}, got {value!r}")


def detach(exc: BaseException) -> None:
    """Drop the tracebacks of a stored error and of every error in its chain (causes and contexts, to
    the end: a suppressed ``JSONDecodeError`` two levels down holds the frames too): their frames hold
    whole buffers, and through their callers the parser and every other error of the call."""
    seen: set[int] = set()
    pending: list[BaseException] = [exc]
    while pending:
        current = pending.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        current.__traceback__ = None
        for linked in (current.__cause__, current.__context__):
            if linked is not None:
                pending.append(linked)


def anchor_not_found(template: ResponseTemplate, prefix: str) -> AnchorNotFoundError:
    source = template.source
    key = "start_anchor" if "start_anchor" in source else "start_anchor_pattern"
    anchor = source.get(key)
    end = prefix[-80:]
    shown = ("..." if len(prefix) > len(end) else "") + repr(end)
    message = (
        f"the prefix does not contain the start anchor ({key} {anchor!r}), so where the assistant message "
        f"begins is unknown and the whole prompt would be read as model output; the prefix ends with {shown}."
    )
    for literal in template.start_anchor.literals or ():
        stripped = literal.rstrip()
        if stripped and stripped != literal and prefix.endswith(stripped):
            message += (
                f" It ends with {stripped!r} but the anchor is {literal!r}: the prompt lost its final "
                f"{literal[len(stripped) :]!r} (jinja2 drops a template's trailing newline unless "
                "keep_trailing_newline=True); pass the prompt exactly as the model read it."
            )
            break
    message += (
        ' Pass the prompt the model continued (rendered with add_generation_prompt=True), prefix="" when '
        'there is none, or missing_anchor="parse" to read the whole prefix as model output.'
    )
    return AnchorNotFoundError(message, anchor=anchor, prefix_end=end)


@mypyc_attr(native_class=False)
class _Missing(str):
    """The default of a required ``prefix``: a string that no caller passes (a ``str``, so that the
    compiled build's typed signatures accept it), shown as ``<required>``."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<required>"


MISSING: Any = _Missing("<required>")


def missing_prefix_error() -> ResponseTemplateError:
    return ResponseTemplateError(
        "prefix is required: pass the prompt the model continued (a string), because chat templates "
        "often write the start of the assistant message themselves (an opening <think>, a prefill) and "
        'the parser must see it to read the output correctly. Pass prefix="" to opt out explicitly.'
    )
