"""A regex delimiter whose matches all end with a literal is not searched where that literal is absent.

Where the text after the scan position lacks the literal every match ends with (``required_suffix``), the
scanner skips the search and takes the undecided position from the pattern's own partial search instead
of the probe. That is exact only if, with no complete match in the text, the two agree: checked here for
every regex delimiter of the library on texts made of the pattern's own pieces, cut anywhere.
"""

from __future__ import annotations

import regex
from hypothesis import given, settings
from hypothesis import strategies as st

import response_templates as rt
from hypothesis_profiles import examples
from response_templates.matching import Delimiter
from response_templates.matching.patterns import regex_required_suffix


def _suffixed_delimiters() -> list[Delimiter]:
    found: dict[int, Delimiter] = {}
    for name in rt.templates.names():
        t = rt.templates.get(name)
        for watch in (t.outside, *t.inside.values()):
            for d in watch.delimiters:
                if d.literals is None and d.required_suffix:
                    found.setdefault(id(d), d)
    return list(found.values())


DELIMITERS = _suffixed_delimiters()


def _pieces(d: Delimiter) -> list[str]:
    """The pattern's literal runs and characters, as material for texts that nearly match it."""
    assert isinstance(d.source, str)
    bare = regex.sub(r"\\(.)", r"\1", regex.sub(r"\(\?[^)]*\)|[()?*+|\[\]{}^$]", " ", d.source))
    words = [w for w in bare.split(" ") if w]
    return [*words, *{c for c in d.source if c.isprintable()}, " ", "\n", "x", "="]


def test_the_library_has_such_delimiters() -> None:
    assert len(DELIMITERS) >= 20  # gpt-oss headers, DeepSeek calls, XML calls, ...


@settings(max_examples=examples(400))
@given(st.data())
def test_partial_search_agrees_with_the_probe_without_the_suffix(data: st.DataObject) -> None:
    d = data.draw(st.sampled_from(DELIMITERS))
    pieces = data.draw(st.lists(st.sampled_from(_pieces(d)), max_size=12))
    text = "".join(pieces)
    text = text[: data.draw(st.integers(0, len(text)))]
    text = text.replace(d.required_suffix, "")
    pos = data.draw(st.integers(0, len(text)))
    probe = d.probe.search(text, pos, partial=True)
    partial = d.pattern.search(text, pos, partial=True)
    assert d.pattern.search(text, pos) is None  # no complete match without the suffix
    assert (probe and probe.start()) == (partial and partial.start())


@given(st.sampled_from(DELIMITERS), st.text(alphabet="<|>abc\n =", max_size=20))
def test_every_match_ends_with_the_suffix(d: Delimiter, filler: str) -> None:
    """Where the pattern matches a text, the match ends with its required suffix."""
    for m in d.pattern.finditer(filler + "".join(_pieces(d)) + d.required_suffix):
        assert m.group().endswith(d.required_suffix)


def test_required_suffix_reading() -> None:
    assert regex_required_suffix(r"<\|channel\|>\w+\s*<\|message\|>") == "<|message|>"
    assert regex_required_suffix(r"(?P<n>a)|(?P<n>b)c") == ""  # a branch at the top: no common suffix
    assert regex_required_suffix(r"(?:(?P<n>a)|(?P<n>b))c") == "c"  # a name used twice is fine
    assert regex_required_suffix(r"x$") == ""
    assert regex_required_suffix(r"(?i)ab") == ""  # case-insensitive: not a literal


def test_a_text_without_the_suffix_is_not_searched() -> None:
    """A complete text that lacks the literal a pattern's matches end with is not searched for it, so a
    catastrophic pattern cannot stall there (the same text with the literal does time out). While
    streaming, where the text stops being decided is still searched (and bounded by the budgets)."""
    template = rt.load_template(
        {"start_anchor": "<A>", "fields": {"c": {"close_pattern": "(?:a|aa)+c"}}}, regex_timeout=0.2
    )
    assert rt.parse_response("a" * 40, template, prefix="") == {"c": "a" * 40}
    try:
        rt.parse_response("a" * 40 + "!c", template, prefix="")
    except rt.PatternTimeoutError as error:
        assert error.key == "close_pattern"
    else:  # pragma: no cover - the engine found a shortcut
        raise AssertionError("expected the search to time out")
