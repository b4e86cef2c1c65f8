"""The order in which a scan asks its regex delimiters changes its cost, never its answer.

``WatchSet.scan`` keeps the earliest position where more text could still start or change a match
(the undecided position). Once one delimiter holds text back from some position, the others need not look
for text to hold back at or after it (``Delimiter.find_regex(below=...)``), and the delimiter that held
text back at the last scan is asked first (the parser's ``hint``). Checked here for every watch set of the
library with several regex delimiters, on texts made of their own pieces, cut anywhere, whichever
delimiter the hint names; and the saving itself: a gpt-oss header streamed token by token costs about one
regex search per token, not one per pattern.
"""

from __future__ import annotations

import regex
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import response_templates as rt
from hypothesis_profiles import examples
from response_templates.language import load_template
from response_templates.matching import WatchSet


def _watch_sets() -> list[WatchSet]:
    found: dict[int, WatchSet] = {}
    for name in rt.templates.names():
        t = rt.templates.get(name)
        for watch in (t.outside, *t.inside.values()):
            if len(watch.regexes) > 1:
                found.setdefault(id(watch), watch)
    return list(found.values())


WATCH_SETS = _watch_sets()


def _pieces(watch: WatchSet) -> list[str]:
    """The delimiters' literal runs and characters, as material for texts that nearly match them."""
    out = {" ", "\n", "x", "=", "{"}
    for d in watch.delimiters:
        source = d.source if isinstance(d.source, str) else ""
        bare = regex.sub(r"\\(.)", r"\1", regex.sub(r"\(\?[^)]*\)|[()?*+|\[\]{}^$]", " ", source))
        out.update(w for w in bare.split(" ") if w)
        out.update(d.literals or ())
    return sorted(out)


def _answer(watch: WatchSet, text: str, pos: int, final: bool, hint: dict[object, object] | None) -> object:
    match, undecided = watch.scan(text, pos, final, -1, 1.0, {}, hint)
    if match is None:
        return None, undecided
    return match.start, match.end, match.delimiter.field, match.delimiter.kind, match.captures, undecided


def test_the_library_has_such_watch_sets() -> None:
    assert len(WATCH_SETS) >= 10  # gpt-oss, the XML call formats, the DeepSeek family, ...


@settings(max_examples=examples(400))
@given(st.data())
def test_the_hint_changes_no_answer(data: st.DataObject) -> None:
    watch = data.draw(st.sampled_from(WATCH_SETS))
    text = "".join(data.draw(st.lists(st.sampled_from(_pieces(watch)), max_size=14)))
    text = text[: data.draw(st.integers(0, len(text)))]
    pos = data.draw(st.integers(0, len(text)))
    final = data.draw(st.booleans())
    plain = _answer(watch, text, pos, final, None)
    for d in watch.regexes:
        hint: dict[object, object] = {watch: d}
        assert _answer(watch, text, pos, final, hint) == plain, d.source
    # and the hint a scan leaves behind is one of this watch set's delimiters
    hint = {}
    _answer(watch, text, pos, final, hint)
    assert set(hint.values()) <= set(watch.regexes)


@settings(max_examples=examples(400))
@given(st.data())
def test_held_back_text_starts_where_the_earliest_partial_match_does(data: st.DataObject) -> None:
    """With no complete match in the text, the undecided position is the earliest start of a partial
    match of any delimiter (each searched on its own here), whichever delimiter the hint names."""
    watch = data.draw(st.sampled_from(WATCH_SETS))
    text = "".join(data.draw(st.lists(st.sampled_from(_pieces(watch)), max_size=14)))
    text = text[: data.draw(st.integers(0, len(text)))]
    pos = data.draw(st.integers(0, len(text)))
    patterns = [d.pattern for d in watch.regexes]
    patterns += [regex.compile(regex.escape(lit)) for d in watch.delimiters for lit in d.literals or ()]
    assume(all(p.search(text, pos) is None for p in patterns))
    starts = [m.start() for p in patterns if (m := p.search(text, pos, partial=True)) is not None]
    expected = min(starts, default=len(text))
    hint = {watch: data.draw(st.sampled_from([None, *watch.regexes]))}
    assert _answer(watch, text, pos, False, hint) == (None, min(expected, len(text)))


def test_an_earlier_hold_back_is_kept_whichever_delimiter_is_asked_first() -> None:
    """In "xab", "a" may start at 1 and "b" at 2: the text is held back from 1 whichever is asked first."""
    compiled = load_template(
        {
            "start_anchor": "<s>",
            "fields": {
                "a": {"open_pattern": "ab+c", "close": "/a"},
                "b": {"open_pattern": "bd+e", "close": "/b"},
            },
        }
    )
    watch = compiled.outside
    a, b = sorted(watch.regexes, key=lambda d: d.field)
    for hint in (None, {watch: a}, {watch: b}):
        assert _answer(watch, "xab", 0, False, hint) == (None, 1)
        assert _answer(watch, "xab", 2, False, hint) == (None, 2)
    hint = {watch: b}
    _answer(watch, "xab", 0, False, hint)
    assert hint[watch] is a  # the one that held back the most, asked first next time


def test_a_streamed_header_costs_about_one_search_per_token() -> None:
    template = rt.templates.get("gpt-oss")
    header = [
        "<|start|>", "assistant", "<|channel|>", "comment", "ary", " to", "=", "functions", ".get",
        "_weather", " ", "<|constrain|>", "json",
    ]  # fmt: skip
    parser = rt.ResponseParser(template, prefix="<|start|>assistant")
    parser.feed("<|channel|>final<|message|>Sure.<|end|>")
    meter = parser._meter  # the parser's regex budget counts every search it charges
    before = meter.searches
    for token in header:
        assert parser.feed(token) == []  # all of it is held back: it may open a region
    # four open patterns could still match; with the hint, each token asks one of them (give or take
    # the token where the one that held text back stops doing so)
    assert meter.searches - before <= len(header) + 3
    events = parser.feed('<|message|>{"city": "Paris"}<|call|>')
    assert {"type": "region_open", "field": "tool_calls", "captures": {"name": "get_weather"}} in events
    message, _ = parser.finalize()
    assert message["tool_calls"][0]["function"] == {"name": "get_weather", "arguments": {"city": "Paris"}}
