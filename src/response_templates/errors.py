"""The error hierarchy.

Every error the library raises on bad input is a :class:`ResponseTemplateError`, which is a
:class:`ValueError` so that code written against the reference implementation (which raises plain
``ValueError``) keeps working.

* :class:`TemplateError` -- the response template itself is wrong (raised when it is loaded, or when
  one of its patterns misbehaves at parse time). Names the field and the key.
* :class:`ParseError` -- the model output does not fit the template (bad JSON in a tool call, an
  integer field that holds words, a transform path that does not resolve, a required field that never
  appeared). Names the field, carries the raw region text and its offset in the stream.
* :class:`ParserStateError` -- the parser was used out of order (``feed`` after ``finalize``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .events import ParserEvent

__all__ = [
    "AnchorNotFoundError",
    "ContentError",
    "DeriveError",
    "ParseError",
    "ParserStateError",
    "PatternTimeoutError",
    "ResponseTemplateError",
    "TemplateError",
]


class ResponseTemplateError(ValueError):
    """Base class of every error raised by this library on bad input.

    Attributes set by the parser when it raises:
        events: the events the failing ``feed``/``finalize`` call produced. A region whose value fails
            is reported once the call has read all its text, so these are all of the call's events, the
            failed region's ``region_close`` (``value`` None and an ``error`` message) among them: a
            streaming consumer loses nothing.
        partial_message: for errors raised by ``finalize`` while building the message, everything that
            could be built.
        index: for ``parse_response`` on a batch, the position of the failing item.
    """

    events: list[ParserEvent] | None = None
    partial_message: dict[str, Any] | None = None
    index: int | None = None

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickled as its message and attributes, without running __init__ again (which would build the
        # message a second time): errors cross process boundaries unchanged (parse_batch's workers).
        return (_rebuild, (type(self), self.args), self.__dict__)


def _rebuild(cls: type[ResponseTemplateError], args: tuple[Any, ...]) -> ResponseTemplateError:
    error = cls.__new__(cls)
    error.args = args
    return error


class TemplateError(ResponseTemplateError):
    """The response template is invalid.

    ``field`` is the template field at fault (``None`` for top-level keys) and ``key`` the key inside it.
    """

    def __init__(self, message: str, *, field: str | None = None, key: str | None = None) -> None:
        where = []
        if field is not None:
            where.append(f"field {field!r}")
        if key is not None:
            where.append(f"key {key!r}")
        prefix = f"response_template {', '.join(where)}: " if where else "response_template: "
        super().__init__(prefix + message)
        self.field = field
        self.key = key
        self.detail = message


class ContentError(ResponseTemplateError):
    """A content parser or transform rejected a value.

    Raised by the pure functions in :mod:`response_templates.content` and
    :mod:`response_templates.transforms`; the parser wraps it into a :class:`ParseError` that adds the
    field, the raw text and the offset.
    """


class ParseError(ResponseTemplateError):
    """The model output could not be parsed as the template says.

    Attributes:
        field: the template field whose region failed (``None`` for errors not tied to one region).
        raw: the raw text of the region (exactly what the model wrote between the delimiters).
        offset: the position of the region's first character in the parsed stream. The stream is the
            part of the prefix after the start anchor followed by the generated text; ``prefix_length``
            tells how many of its characters came from the prefix, so ``offset - prefix_length`` is the
            position in the generated text (negative when the region began in the prompt).
        prefix_length: see ``offset``.
        cut_off: true when the end of the output closed the region before its close delimiter came (the
            output was cut inside it, by a token limit or a stop string): what failed to parse is then
            the start of a value, not a malformed one. A tool call cut off this way is never completed
            (docs/wire.md, "A call cut off by the end of the output").
    """

    #: See the class docstring; set by the parser on the error of a region it closed at the end.
    cut_off: bool = False

    def __init__(
        self,
        message: str,
        *,
        field: str | None = None,
        raw: str | None = None,
        offset: int | None = None,
        prefix_length: int = 0,
    ) -> None:
        parts = [message]
        if field is not None:
            parts.insert(0, f"field {field!r}:")
        if offset is not None:
            parts.append(f"(region at offset {offset} of the stream")
            parts[-1] += f", {offset - prefix_length} of the generated text)" if prefix_length else ")"
        if raw is not None:
            shown = raw if len(raw) <= 200 else raw[:100] + "..." + raw[-100:]
            parts.append(f"raw text: {shown!r}")
        super().__init__(" ".join(parts))
        self.field = field
        self.raw = raw
        self.offset = offset
        self.prefix_length = prefix_length
        self.detail = message


class PatternTimeoutError(TemplateError):
    """A delimiter pattern took longer than its time budget (catastrophic backtracking).

    ``budget`` says which bound ran out (see ``RegexBudget``): ``"per_search"`` (one search longer than
    ``regex_timeout``), ``"per_feed"`` (the regex time of one ``feed``/``finalize`` call) or
    ``"per_stream"`` (the regex time of the whole stream). ``field`` and ``key`` name the pattern that
    was running (both None when the delimiters of a state were searched together).
    """

    budget: str = "per_search"


class ParserStateError(ResponseTemplateError, RuntimeError):
    """The parser was used out of order, e.g. ``feed`` after ``finalize``."""


class AnchorNotFoundError(ResponseTemplateError):
    """A non-empty prefix does not contain the template's start anchor (docs/errors.md).

    Without the anchor the parser cannot tell where the assistant message starts, and reading the whole
    prompt as model output would put it (system prompt included) into the message. ``anchor`` is the
    anchor as the template writes it (a string, a list of strings or the pattern), ``prefix_end`` the last
    characters of the prefix. Pass ``missing_anchor="parse"`` to read the whole prefix anyway.
    """

    def __init__(self, message: str, *, anchor: Any = None, prefix_end: str = "") -> None:
        super().__init__(message)
        self.anchor = anchor
        self.prefix_end = prefix_end


class DeriveError(ResponseTemplateError):
    """Nothing usable could be derived from a chat template (``rt.templates.derive``, docs/derive.md).

    ``where`` names the part of the derivation that failed (the plain assistant turn every other probe
    builds on, the derived template, the chat template's source) and ``detail`` says what went wrong
    there: the probes the chat template refused, with its own error messages.
    """

    def __init__(self, message: str, *, where: str = "") -> None:
        super().__init__(f"cannot derive a response template ({where}): {message}" if where else message)
        self.where = where
        self.detail = message
