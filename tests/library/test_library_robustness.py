"""Every library template, fed adversarial text made of its own markers: nothing but the library's typed
errors comes out, and any chunking gives the same result as the whole text (docs/spec.md, section 4),
extensions included."""

from __future__ import annotations

import random
from functools import cache
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import response_templates as rt
from hypothesis_profiles import examples
from library_checks import MARKUP, delimiter_words, random_pieces
from response_templates import library

NAMES = rt.templates.names()

#: Text every format may meet: JSON calls, Python calls, XML-ish values, near misses, whitespace.
_GENERIC = (
    '{"name": "f", "arguments": {"a": 1}}',
    '{"a": "x}"}',
    "[f(a=1), g()]",
    '"',
    "}",
    "]",
    "<",
    "</",
    "|>",
    "x",
    " ",
    "\n",
    "é",
    "1",
)


@cache
def vocabulary(name: str) -> tuple[str, ...]:
    """The family's literal delimiters and the markup that its regex delimiters spell out."""
    template = rt.templates.get(name)
    words = delimiter_words(template)
    for field in template.fields:
        for key in field.route or {}:  # json-envelope: the keys that route a whole-message JSON
            words.add(f'{{"{key}": ' if key != "*" else "[")
    words.update(MARKUP.findall(library.family(name).tool_calls))
    return tuple(sorted(words)) + _GENERIC


def run(template: rt.ResponseTemplate, prefix: str, pieces: list[str]) -> Any:
    parser = rt.ResponseParser(template, prefix=prefix)
    events: list[dict[str, Any]] = list(parser.initial_events)
    for piece in pieces:
        try:
            events += parser.feed(piece)
        except rt.ResponseTemplateError as exc:
            events += exc.events or []
    try:
        message, final = parser.finalize()
    except rt.ResponseTemplateError as exc:
        message, final = {"error": getattr(exc, "field", None)}, exc.events or []
    skeleton = [(e["type"], e["field"]) for e in events + final if e["type"] != "region_chunk"]
    errors = [
        (type(e).__name__, getattr(e, "field", None), getattr(e, "offset", None)) for e in parser.errors
    ]
    return message, errors, skeleton


@settings(max_examples=examples(600), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(NAMES), st.data(), st.integers(0, 2**32 - 1))
def test_library_templates_never_crash_and_never_depend_on_chunking(name: str, data: Any, seed: int) -> None:
    fam = library.family(name)
    template = fam.template()
    words = data.draw(st.lists(st.sampled_from(vocabulary(name)), max_size=16))
    text = "".join(words)
    prefix = data.draw(st.sampled_from([fam.generation_prompt, *(v.generation_prompt for v in fam.variants)]))
    whole = run(template, prefix, [text])
    pieces = random_pieces(text, random.Random(seed))
    assert run(template, prefix, list(text)) == whole
    assert run(template, prefix, pieces) == whole
    # parse_response reads the whole text in one final pass: the same message, or the first error
    message, errors, _ = whole
    if errors:
        with pytest.raises(rt.ResponseTemplateError):
            rt.parse_response(text, template, prefix=prefix)
    else:
        assert rt.parse_response(text, template, prefix=prefix) == message


@pytest.mark.parametrize("name", NAMES)
def test_every_family_has_a_vocabulary_of_its_own(name: str) -> None:
    assert len(vocabulary(name)) > len(_GENERIC), name
