"""Counting the matching work of a parse, for linear-time tests that time nothing (issue 28, item 12).

:func:`counting` puts a counting wrapper around every compiled pattern a template's delimiter matching
uses -- each delimiter's search pattern, streaming probe and required-literal check, and each watch set's
combined literal search and character classes -- and adds up the *characters each call reads*: from the
start position to the end of the match it returns, or to the end of the text when it finds none (a
search that fails has read the rest of the text; a ``match`` that fails, at least one character). This is
what makes a rescan visible: a state that searches the rest of the text again at every copy of a repeated
stop token reads a quadratic number of characters, although the number of searches stays linear (and the
required-literal look-ups are not regex searches, so the meter does not count them at all).

A required literal that is looked up with ``str.find`` (``Delimiter.required_one``) is looked up through
an equivalent counted pattern instead while the wrapper is on. The end finder of a json-value-end region
(``JsonEnd.feed``) adds the length of each text it is handed: a parser that handed it the whole rest of
the buffer at every region it opens read a quadratic number of characters. Everything is restored on
exit (compiled templates are cached and shared). The wrappers replace attributes of the Python sources:
tests that use them are ``pure_python`` (not run against the compiled build).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import Any

import regex

import response_templates as rt
from response_templates.jsonlex.end import JsonEnd
from response_templates.matching import Delimiter, WatchSet

_PATTERN_TYPES = (re.Pattern, type(regex.compile("")))


class Counter:
    """Characters read by the counted searches (``chars``) and how many calls read them (``calls``).

    ``longest_partial`` is the longest text a partial ``search`` was run on (from its start position):
    the one search whose cost the characters do not tell, since the ``regex`` module looks for a complete
    match at every start before it reports a partial one (quadratic where many starts run to the end).
    """

    def __init__(self) -> None:
        self.chars = 0
        self.calls = 0
        self.longest_partial = 0


class CountingPattern:
    """A compiled pattern (``re`` or ``regex``) whose ``search``, ``match`` and ``finditer`` add the
    characters they read to a :class:`Counter`; every other attribute is the pattern's own."""

    def __init__(self, pattern: Any, counter: Counter) -> None:
        self._pattern = pattern
        self._counter = counter

    def __getattr__(self, name: str) -> Any:
        return getattr(self._pattern, name)

    @staticmethod
    def _span(string: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[int, int]:
        pos = args[0] if args else kwargs.get("pos", 0)
        endpos = args[1] if len(args) > 1 else kwargs.get("endpos")
        n = len(string)
        return (pos or 0), (n if endpos is None else min(endpos, n))

    def search(self, string: str, *args: Any, **kwargs: Any) -> Any:
        pos, end = self._span(string, args, kwargs)
        m = self._pattern.search(string, *args, **kwargs)
        self._counter.calls += 1
        if kwargs.get("partial"):
            self._counter.longest_partial = max(self._counter.longest_partial, end - pos)
        self._counter.chars += max(1, (end if m is None else m.end()) - pos)
        return m

    def match(self, string: str, *args: Any, **kwargs: Any) -> Any:
        pos, _ = self._span(string, args, kwargs)
        m = self._pattern.match(string, *args, **kwargs)
        self._counter.calls += 1
        self._counter.chars += 1 if m is None else max(1, m.end() - pos)
        return m

    def finditer(self, string: str, *args: Any, **kwargs: Any) -> Iterator[Any]:
        pos, end = self._span(string, args, kwargs)
        self._counter.calls += 1
        reached = pos
        try:
            for m in self._pattern.finditer(string, *args, **kwargs):
                reached = max(reached, m.end())
                yield m
            reached = end
        finally:
            self._counter.chars += max(1, reached - pos)


def _watch_sets(template: rt.ResponseTemplate) -> list[WatchSet]:
    return [template.outside, *template.inside.values()]


@contextmanager
def counting(template: rt.ResponseTemplate) -> Iterator[Counter]:
    """Count the characters the delimiter matching of ``template`` reads while the block runs."""
    counter = Counter()
    saved: list[tuple[Any, str, Any]] = []
    seen: set[int] = set()

    def wrap(obj: Any) -> None:
        if obj is None or id(obj) in seen:
            return
        seen.add(id(obj))
        for f in dataclasses.fields(obj):
            value = getattr(obj, f.name)
            if isinstance(value, _PATTERN_TYPES):
                saved.append((obj, f.name, value))
                object.__setattr__(obj, f.name, CountingPattern(value, counter))
        if isinstance(obj, Delimiter) and obj.required_one:
            saved.append((obj, "required_one", obj.required_one))
            saved.append((obj, "required", obj.required))
            as_pattern = re.compile(re.escape(obj.required_one))
            object.__setattr__(obj, "required", CountingPattern(as_pattern, counter))
            object.__setattr__(obj, "required_one", "")

    delimiters: list[Any] = [template.start_anchor]
    for ws in _watch_sets(template):
        wrap(ws)
        delimiters += ws.delimiters
        if ws.indexed is not None:
            wrap(ws.indexed)
            delimiters += ws.indexed.delimiters
    for spec in template.fields:
        delimiters += [spec.open, spec.close]
    for d in delimiters:
        wrap(d)
    feed = JsonEnd.feed

    def counted_feed(self: JsonEnd, text: str) -> int:
        counter.calls += 1
        counter.chars += max(1, len(text))
        return feed(self, text)

    saved.append((JsonEnd, "feed", feed))
    JsonEnd.feed = counted_feed  # type: ignore[method-assign]
    try:
        yield counter
    finally:
        for obj, name, value in reversed(saved):
            if isinstance(obj, type):
                setattr(obj, name, value)
            else:
                object.__setattr__(obj, name, value)


def work(template: rt.ResponseTemplate, run: Callable[[], Any]) -> int:
    """The characters the delimiter matching of ``template`` reads during ``run()``."""
    with counting(template) as counter:
        run()
    return counter.chars


def parse_whole(template: rt.ResponseTemplate, prefix: str, text: str) -> None:
    """``parse_response(errors="keep")``; a typed error ends the run (the work up to it counts)."""
    with suppress(rt.ResponseTemplateError):
        rt.parse_response(text, template, prefix=prefix, errors="keep")


def parse_streamed(template: rt.ResponseTemplate, prefix: str, text: str, chunk: int) -> None:
    """``text`` fed ``chunk`` characters at a time, then ``finalize`` (errors kept)."""
    with suppress(rt.ResponseTemplateError):
        parser = rt.ResponseParser(template, prefix, errors="keep")
        for i in range(0, len(text), chunk):
            parser.feed(text[i : i + chunk])
        parser.finalize()
