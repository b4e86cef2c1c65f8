"""``model.generate(..., streamer=s)`` as an iterator of parser events.

:class:`ResponseStreamer` implements the two methods ``generate`` calls on a streamer (``put`` and
``end``, the protocol of transformers' ``BaseStreamer``). ``generate`` runs in one thread and the
application iterates the streamer in another, as with ``TextIteratorStreamer``; but instead of text
pieces cut at spaces, the iterator yields the parser's events (``region_open``, ``region_chunk``,
``region_close``), decoded exactly from the token ids, and the final message is on the streamer when
the iteration ends.

The first ``put`` carries the prompt: it is not parsed as output, but it is the parser's ``prefix`` and
primes the decoder. Errors reach the iterating thread: a :class:`~response_templates.ParseError` (say,
a tool call that is not JSON) is raised by the iterator at the point where it happened, and iterating
again goes on with the rest of the generation; any other error in ``put``/``end`` (or in ``generate``
itself, when started with :meth:`ResponseStreamer.run`) is raised by the iterator and ends it.

With :meth:`ResponseStreamer.run`, the iteration ends only once the generation thread has finished
(``result`` then holds what ``generate`` returned), and a consumer that stops early calls
:meth:`ResponseStreamer.close` (or uses the streamer as a context manager): the next ``put`` then
raises inside ``generate``, which stops it, and ``close`` waits for the thread. Streamers still running
when the interpreter exits are closed the same way, so that no generation thread is left running then.

>>> import numpy as np
>>> from tokenizers import Tokenizer, decoders, models
>>> words = ["<|im_start|>", "assistant", "\\n", "<think>", "Hmm", "</think>", "Hi!", "<|im_end|>"]
>>> tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="Hi!"))
>>> tok.decoder = decoders.Fuse()
>>> template = {"start_anchor": "<|im_start|>assistant\\n",
...             "fields": {"reasoning_content": {"open": "<think>", "close": "</think>"},
...                        "content": {"close": "<|im_end|>"}}}
>>> class FakeModel:  # what generate() does with a streamer
...     def generate(self, input_ids, streamer, new_ids):
...         streamer.put(input_ids)
...         for i in new_ids:
...             streamer.put(np.array([i]))
...         streamer.end()
>>> streamer = ResponseStreamer(tok, template, timeout=10)
>>> thread = streamer.run(FakeModel().generate, np.array([[0, 1, 2]]), new_ids=[3, 4, 5, 6, 7])
>>> [e["type"] for e in streamer if e["field"] == "reasoning_content"]
['region_open', 'region_chunk', 'region_close']
>>> streamer.message
{'reasoning_content': 'Hmm', 'content': 'Hi!'}
>>> thread.is_alive()  # the iteration ended after generate() returned
False
"""

from __future__ import annotations

import atexit
import contextlib
import queue
import threading
import weakref
from collections.abc import Callable, Mapping
from types import TracebackType
from typing import Any, NoReturn

from ..errors import ParseError, ParserStateError, ResponseTemplateError
from ..events import ParserEvent
from ..language import ResponseTemplate
from ..parser import ResponseParser
from .config import resolve_template
from .parsing import Controls, Template, TokenResponseParser, Tools, _one_row

__all__ = ["ResponseStreamer", "StreamTimeout"]


class StreamTimeout(queue.Empty, TimeoutError):
    """No event arrived within the streamer's ``timeout``.

    A :class:`queue.Empty` (what ``TextIteratorStreamer`` raises) and a :class:`TimeoutError`. The stream
    is not closed: iterate again to keep waiting.
    """


class _Raise:
    __slots__ = ("error", "fatal")

    def __init__(self, error: BaseException, fatal: bool = False) -> None:
        self.error = error
        self.fatal = fatal  # the stream ends after it


class _Closed(ParserStateError):
    """Raised by ``put`` after :meth:`ResponseStreamer.close`: it stops ``generate`` at its next token."""


#: The streamers whose generation thread (started by ``run``) may still be running.
_RUNNING: weakref.WeakSet[ResponseStreamer] = weakref.WeakSet()
_RUNNING_LOCK = threading.Lock()
_AT_EXIT: list[bool] = []


def _close_running() -> None:
    """At interpreter exit: stop and join the generation threads still running (a daemon thread killed
    inside native code, such as torch's, aborts the process)."""
    for streamer in list(_RUNNING):
        streamer.close()


class _End:
    """The end-of-stream marker's type (one instance, :data:`_END`)."""

    __slots__ = ()


_END = _End()


class ResponseStreamer:
    """A ``generate()`` streamer that yields parser events to another thread.

    Args:
        tokenizer: the tokenizer of the model (any transformers version, or a ``tokenizers.Tokenizer``).
        template: the response template; default: the tokenizer's ``response_template``.
        tools: the request's tools, for tool-argument typing.
        timeout: seconds the iterator waits for the next event before raising :class:`StreamTimeout`
            (``None``: forever). Always set one when ``generate`` runs in a plain thread: if it dies
            outside the streamer, nothing else would wake the iterator up (:meth:`run` does).
        control_tokens: which tokens are control tokens (docs/tokenizers.md): ``"auto"`` (default), the
            token texts, or ``()`` for the text reading; the generated ids are parsed as ids.

    Use::

        with ResponseStreamer(tokenizer, timeout=60) as streamer:
            streamer.run(model.generate, input_ids=prompt_ids, max_new_tokens=512)  # a daemon thread
            for event in streamer:
                render(event)
        message, output_ids = streamer.message, streamer.result

    The loop ends once ``generate`` has returned (its thread is joined, :attr:`result` is set). Leaving
    the ``with`` block early (``break``, an exception) calls :meth:`close`, which stops the generation at
    its next token and joins its thread; without ``with``, call :meth:`close` yourself.

    One streamer follows one ``generate`` call with a single sequence (batch size 1).
    """

    def __init__(
        self,
        tokenizer: Any,
        template: Template | None = None,
        *,
        tools: Tools = None,
        timeout: float | None = None,
        control_tokens: Controls = "auto",
    ) -> None:
        self._tokenizer = tokenizer
        self._controls = control_tokens
        self._template: ResponseTemplate = resolve_template(tokenizer, template)
        if tools:
            ResponseParser(self._template, "", tools=tools)  # bad tools fail here, not in generate()
        self._tools = tools
        #: Seconds the iterator waits for an event (``None``: no limit).
        self.timeout = timeout
        self._queue: queue.SimpleQueue[ParserEvent | _Raise | _End] = queue.SimpleQueue()
        self._parser: TokenResponseParser | None = None
        self._state = "new"  # new -> streaming -> ended, or failed
        self._done = False  # the iteration is over
        self._end_seen = False  # the end marker was read; the thread is joined before StopIteration
        self._closed = False  # close() was called (or the stream failed): put() stops generate()
        self._thread: threading.Thread | None = None
        self._late_error: BaseException | None = None  # raised by generate() after end()
        #: The final message, once the iteration has ended (``None`` if finalizing failed; a
        #: ``ParseError`` raised by finalize carries what could be built as ``partial_message``).
        self.message: dict[str, Any] | None = None
        #: What the function started by :meth:`run` returned (e.g. generate()'s output ids); set before
        #: the iteration ends. ``None`` if it raised, or was stopped by :meth:`close`.
        self.result: Any = None

    @property
    def parser(self) -> TokenResponseParser | None:
        """The token parser, created at the first ``put`` (the prompt)."""
        return self._parser

    # -- the BaseStreamer protocol (called by generate, in its thread) --------------------------------

    def put(self, value: Any) -> None:
        """Receive token ids from ``generate``: the prompt first, then the new tokens.

        After :meth:`close` (or an error that ended the stream) it raises :class:`ParserStateError`, which
        stops ``generate``.
        """
        if self._closed:
            raise _Closed("the ResponseStreamer was closed: the generation stops here")
        if self._state == "failed":
            return
        if self._state == "ended":
            raise ParserStateError("put() after end(): one ResponseStreamer follows one generate() call")
        parser = self._parser
        if parser is None:
            try:
                self._parser = TokenResponseParser(
                    self._tokenizer,
                    self._template,
                    prefix=_prompt(value),
                    tools=self._tools,
                    control_tokens=self._controls,
                )
            except BaseException as exc:
                self._fail(exc)
                raise
            self._state = "streaming"
            self._emit(self._parser.initial_events)
            return
        try:
            events = parser.feed_tokens(value)
        except ParseError as exc:  # the parser keeps working: deliver the error in sequence, go on
            self._emit(exc.events or [])
            self._queue.put(_Raise(exc))
            return
        except BaseException as exc:
            self._fail(exc)
            raise
        self._emit(events)

    def end(self) -> None:
        """Generation is over: finalize the parser and close the iteration."""
        if self._state == "failed" or self._closed:
            return
        if self._state == "ended":
            raise ParserStateError("end() called twice: one ResponseStreamer follows one generate() call")
        try:
            if self._parser is None:  # generate() never sent a prompt
                self._parser = TokenResponseParser(
                    self._tokenizer,
                    self._template,
                    prefix="",
                    tools=self._tools,
                    control_tokens=self._controls,
                )
                self._emit(self._parser.initial_events)
            message, events = self._parser.finalize()
        except ResponseTemplateError as exc:
            self._state = "ended"
            self._emit(exc.events or [])
            self._queue.put(_Raise(exc))
            self._queue.put(_END)
            return
        except BaseException as exc:
            self._fail(exc)
            raise
        self._state = "ended"
        self._emit(events)
        self.message = message
        self._queue.put(_END)

    # -- the consuming side --------------------------------------------------------------------------

    def __iter__(self) -> ResponseStreamer:
        return self

    def __next__(self) -> ParserEvent:
        if self._done:
            raise StopIteration
        if self._end_seen:
            self._stop_iteration()
        try:
            item = self._queue.get(timeout=self.timeout)
        except queue.Empty:
            raise StreamTimeout(
                f"no event from generate() within {self.timeout} s (iterate again to keep waiting)"
            ) from None
        if isinstance(item, _End):
            self._end_seen = True
            self._stop_iteration()
        if isinstance(item, _Raise):
            if item.fatal:  # the end marker follows: stop generate() and wait for its thread first
                self._closed = True
                self._join(self.timeout)
            raise item.error
        return item

    def _stop_iteration(self) -> NoReturn:
        """The end marker was read: join the generation thread, then end the iteration."""
        thread = self._thread
        if not self._join(self.timeout):
            assert thread is not None
            raise StreamTimeout(
                f"generate() called end() but had not returned within {self.timeout} s "
                "(iterate again to keep waiting)"
            )
        self._done = True
        late, self._late_error = self._late_error, None
        if late is not None:
            raise late  # generate() failed after end(): the next call stops
        raise StopIteration

    def run(self, generate: Callable[..., Any], /, *args: Any, **kwargs: Any) -> threading.Thread:
        """Call ``generate(*args, streamer=self, **kwargs)`` in a daemon thread and return the thread.

        Whatever it raises comes out of the iterator instead of being lost in the thread (after the
        events before it); what it returns is kept in :attr:`result`. The iteration ends only once the
        thread has finished, so ``result`` is set then and no thread is left running; if ``generate``
        returns without calling ``end()``, the streamer ends the stream itself. See :meth:`close` for a
        consumer that stops early.
        """
        if self._thread is not None:
            raise ParserStateError("run() called twice: one ResponseStreamer follows one generate() call")
        kwargs.setdefault("streamer", self)

        def target() -> None:
            try:
                result = generate(*args, **kwargs)
            except _Closed:
                return  # close() stopped it
            except BaseException as exc:
                if self._state in ("new", "streaming"):
                    self._fail(exc)
                elif self._state == "ended" and not self._closed:
                    self._late_error = exc
                return
            self.result = result
            if self._state in ("new", "streaming") and not self._closed:
                # generate() returned without ending the stream; an error is queued for the consumer
                with contextlib.suppress(BaseException):
                    self.end()

        thread = threading.Thread(target=target, name="response-templates-generate", daemon=True)
        self._thread = thread
        with _RUNNING_LOCK:
            if not _AT_EXIT:
                atexit.register(_close_running)
                _AT_EXIT.append(True)
            _RUNNING.add(self)
        thread.start()
        return thread

    def close(self, timeout: float | None = None) -> None:
        """Stop following the generation: end the iteration, stop ``generate`` and wait for its thread.

        Call it when the consumer stops before the end (or use the streamer as a context manager, whose
        exit calls it). The next ``put`` of ``generate`` raises :class:`ParserStateError`, which ends
        ``generate`` (with :meth:`run` the error is absorbed and :attr:`result` stays ``None``); then the
        thread started by :meth:`run` is joined, for up to ``timeout`` seconds (``None``: until it ends,
        which is at most one generation step). Events not read yet are dropped. Closing a stream that
        already ended, or closing twice, does nothing more.
        """
        self._closed = True
        self._done = True
        self._join(timeout)
        try:
            while True:
                self._queue.get_nowait()
        except queue.Empty:
            pass

    def __enter__(self) -> ResponseStreamer:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    # -- internals -----------------------------------------------------------------------------------

    def _join(self, timeout: float | None) -> bool:
        """Wait for the thread started by :meth:`run`; whether it has finished (or there is none)."""
        thread = self._thread
        if thread is None or thread is threading.current_thread():
            return True
        thread.join(timeout)
        if thread.is_alive():
            return False
        with _RUNNING_LOCK:
            _RUNNING.discard(self)
        return True

    def _emit(self, events: list[ParserEvent]) -> None:
        put = self._queue.put
        for event in events:
            put(event)

    def _fail(self, exc: BaseException) -> None:
        if self._state in ("failed", "ended"):
            return
        self._state = "failed"
        self._queue.put(_Raise(exc, fatal=True))
        self._queue.put(_END)


def _prompt(value: Any) -> Any:
    if isinstance(value, Mapping):
        value = value.get("input_ids")
    return _one_row(value)
