"""A regex delimiter whose matches all contain one of a few literals is not searched where they are absent.

Where the text after the scan position holds none of the literal texts one of which every match contains
(``required_literals``), the scanner skips the search and takes the undecided position from the pattern's
own partial search instead of the probe. That is exact only if, with no complete match in the text, the
two agree: checked here for every regex delimiter of the library on texts made of the pattern's own
pieces, cut anywhere; and the reading itself is checked: every match contains one of the literals.
"""

from __future__ import annotations

import regex
from hypothesis import given, settings
from hypothesis import strategies as st

import response_templates as rt
from hypothesis_profiles import examples
from response_templates.matching import Delimiter
from response_templates.matching.patterns import regex_required_literals


def _suffixed_delimiters() -> list[Delimiter]:
    found: dict[int, Delimiter] = {}
    for name in rt.templates.names():
        t = rt.templates.get(name)
        for watch in (t.outside, *t.inside.values()):
            for d in watch.delimiters:
                if d.literals is None and d.required_literals:
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
    assert len(DELIMITERS) >= 70  # gpt-oss headers, DeepSeek calls, XML calls, reasoning openers, ...


@settings(max_examples=examples(400))
@given(st.data())
def test_partial_search_agrees_with_the_probe_without_the_suffix(data: st.DataObject) -> None:
    d = data.draw(st.sampled_from(DELIMITERS))
    pieces = data.draw(st.lists(st.sampled_from(_pieces(d)), max_size=12))
    text = "".join(pieces)
    text = text[: data.draw(st.integers(0, len(text)))]
    for literal in d.required_literals:
        text = text.replace(literal, "")
    assert not d.may_match(text, 0)
    pos = data.draw(st.integers(0, len(text)))
    probe = d.probe.search(text, pos, partial=True)
    partial = d.pattern.search(text, pos, partial=True)
    assert d.pattern.search(text, pos) is None  # no complete match without the suffix
    assert (probe and probe.start()) == (partial and partial.start())


@given(st.sampled_from(DELIMITERS), st.data())
def test_every_match_contains_a_required_literal(d: Delimiter, data: st.DataObject) -> None:
    """Where the pattern matches a text, the match contains one of its required literals."""
    pieces = data.draw(st.lists(st.sampled_from([*_pieces(d), *d.required_literals]), max_size=16))
    for m in d.pattern.finditer("".join(pieces)):
        assert any(literal in m.group() for literal in d.required_literals), (m.group(), d.required_literals)


def test_required_literals_reading() -> None:
    read = regex_required_literals
    assert read(r"<\|channel\|>\w+\s*<\|message\|>") == ("<|message|>",)  # the longest run
    assert read(r"(?P<n>ab)|(?P<n>b)c") == ("ab", "c")  # one per branch; a name used twice is fine
    assert read(r"(?:(?P<n>a)|(?P<n>b))cd") == ("cd",)
    assert read(r"x$") == ("x",) and read(r"(?<=<b>)x") == ("x",)  # lookarounds are not the match
    assert read(r"(?i)ab") == () and read(r"(?i:ab)") == ()  # case-insensitive: not a literal
    assert read(r"a|\w") == () and read(r"(?:abc)?d*") == ()  # a branch, or a match, with no literal
    assert read(r"(?:xyz)+|(?:uv){2}") == ("xyz", "uv")  # repeated at least once
    # The branches come after the '<' they share (Python's parser moves it out of them).
    assert read(r"</tool_call>|<\|im_end\|>") == ("/tool_call>", "|im_end|>")
    assert read(r"```\s*<｜tool▁call▁end｜>(?:\s*<｜tool▁calls▁end｜>)?|<｜end▁of▁sentence｜>") == (
        "<｜tool▁call▁end｜>",
        "<｜end▁of▁sentence｜>",
    )


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
