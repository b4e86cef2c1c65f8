"""The boundary scanner never commits a match that more input could change (docs/spec.md, section 4).

The central property: for any pattern, any final text T and any prefix B of T seen while streaming,
a match the scanner reports as final on B is exactly the match a plain search finds on T, and when it
reports none, the true first match on T does not start before the position it calls undecided.
"""

from __future__ import annotations

from typing import Any

import regex
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from hypothesis_profiles import examples
from response_templates.matching import FLAGS, Delimiter, WatchSet, rewrite_end_assertions

ALPHABET = "ab<>\n "

# -- a small grammar of regexes over the alphabet -------------------------------------------------------

_atoms = st.sampled_from(
    ["a", "b", "<", ">", r"\n", " ", "[ab]", "[^<]", ".", r"\s", r"\w", "ab", "<a>", "</a>", "a<"]
)
_anchors = st.sampled_from(
    ["$", r"\Z", r"\b", r"\B", "(?=a)", "(?!ab)", "(?<=a)", "(?<!b)", "(?=\n)", "(?!$)"]
)
_quants = st.sampled_from(["", "", "", "*", "+", "?", "*?", "+?", "??", "{1,2}", "{2}"])


@st.composite
def patterns(draw: st.DrawFn, depth: int = 0) -> str:
    parts = []
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.integers(0, 9 if depth < 2 else 6))
        if kind <= 5:
            parts.append(draw(_atoms) + draw(_quants))
        elif kind == 6:
            parts.append(draw(_anchors))
        elif kind == 7:
            parts.append("(?:" + draw(patterns(depth + 1)) + ")" + draw(_quants))
        elif kind == 8:
            parts.append("(?:" + draw(patterns(depth + 1)) + "|" + draw(patterns(depth + 1)) + ")")
        else:
            parts.append("(?P<g" + str(depth) + str(len(parts)) + ">" + draw(patterns(depth + 1)) + ")")
    return "".join(parts)


texts = st.text(alphabet=ALPHABET, max_size=14)


def _truth(pattern: str, text: str) -> tuple[int, int, dict[str, str]] | None:
    m = regex.compile(pattern, FLAGS).search(text)
    if m is None:
        return None
    return m.start(), m.end(), {k: v for k, v in m.groupdict().items() if v is not None}


def _check_all_prefixes(watch: WatchSet, truth: tuple[int, int, dict[str, str]] | None, text: str) -> None:
    for k in range(len(text) + 1):
        buf = text[:k]
        m, undecided = watch.scan(buf, 0, False, -1, 5.0)
        if m is not None:
            assert (m.start, m.end, m.captures) == truth, (buf, text)
        elif truth is not None:
            assert truth[0] >= undecided, (buf, text, undecided)
    m, _ = watch.scan(text, 0, True, -1, 5.0)
    assert (None if m is None else (m.start, m.end, m.captures)) == truth


@settings(max_examples=examples(3000), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(patterns(), texts)
@example(r"</invoke>(?:\s*</minimax:tool_call>)?", "</invoke>\n</minimax:tool_call>")
@example(r"abc$", "abc\nd")
@example(r"a\b", "aab")
@example(r"abcd|c", "abcd")
@example(r"foo(?!bar)", "foobar")
@example(r"a.*?b", "aab")
def test_regex_match_is_final_when_committed(pattern: str, text: str) -> None:
    try:
        d = Delimiter.regex(pattern, field="f", kind="close", key="close_pattern")
    except Exception:
        assume(False)
        raise
    _check_all_prefixes(WatchSet.build([d]), _truth(pattern, text), text)


@settings(max_examples=examples(400), deadline=None)
@given(st.lists(st.text(alphabet="ab<>", min_size=1, max_size=5), min_size=1, max_size=4), texts)
@example(["STOP", "STOPPED"], "xSTOPPED")
@example(["STOP", "STOPPED"], "xSTOPPEx")
def test_literal_list_match_is_final_when_committed(literals: list[str], text: str) -> None:
    d = Delimiter.literal(literals, field="f", kind="close", key="close")
    pattern = "|".join(regex.escape(s) for s in sorted(set(literals), key=len, reverse=True))
    _check_all_prefixes(WatchSet.build([d]), _truth(pattern, text), text)


@settings(max_examples=examples(300), deadline=None)
@given(patterns(), texts, st.integers(0, 14))
def test_rewrite_keeps_meaning(pattern: str, text: str, pos: int) -> None:
    try:
        original = regex.compile(pattern, FLAGS)
    except regex.error:
        assume(False)
        raise
    rewritten = regex.compile(rewrite_end_assertions(pattern)[0], FLAGS)
    pos = min(pos, len(text))
    a, b = original.search(text, pos), rewritten.search(text, pos)
    assert (a and (a.span(), a.groupdict())) == (b and (b.span(), b.groupdict()))


def test_mixed_watch_set_prefers_earliest_then_longest_then_open() -> None:
    think = Delimiter.literal("<think>", field="reasoning", kind="open", key="open")
    tool = Delimiter.regex(r"<tool_call>\s*", field="tools", kind="open", key="open_pattern")
    end = Delimiter.literal("<|im_end|>", field="content", kind="close", key="close")
    watch = WatchSet.build([think, tool, end])
    m, _ = watch.scan("hello <tool_call>\n{", 0, False, -1, 1.0)
    assert m is not None and (m.start, m.end, m.delimiter.field) == (6, 18, "tools")
    # a complete literal is committed at once, even at the very end of the buffer
    m, _ = watch.scan("hello <think>", 0, False, -1, 1.0)
    assert m is not None and m.delimiter is think
    # the regex could still grow (more whitespace): nothing is committed, and the hold starts there
    m, undecided = watch.scan("hello <tool_call>\n", 0, False, -1, 1.0)
    assert m is None and undecided == 6


def test_literal_hold_back_is_the_longest_partial_suffix() -> None:
    watch = WatchSet.build(
        [Delimiter.literal(["</think>", "<tool_call>"], field="f", kind="close", key="close")]
    )
    assert watch.scan("abc </thi", 0, False, -1, 1.0) == (None, 4)
    assert watch.scan("abc <", 0, False, -1, 1.0) == (None, 4)
    assert watch.scan("abc <x", 0, False, -1, 1.0) == (None, 6)


def test_rewrite_leaves_sets_escapes_and_comments_alone() -> None:
    assert rewrite_end_assertions(r"[$\b]\$(?#$)")[0] == r"[$\b]\$(?#$)"
    assert rewrite_end_assertions(r"[]$]")[0] == r"[]$]"
    assert rewrite_end_assertions(r"(?<=a)b") == (r"(?=[\s\S]|)(?<=a)b", True)


# -- the parser's fast path: the characters a regex match can start at ----------------------------------


@settings(max_examples=examples(3000), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(patterns(), texts)
@example(r"(?:<a>\s*)?<b", "x <a> <b")
@example(r"</a>|(?=<a>)", "x<a>")
@example(r"(?<=a)b|<", "ab<")
def test_first_chars_bound_every_match_start(pattern: str, text: str) -> None:
    """Wherever a match starts (after the start of the text), its first character is in the set."""
    from response_templates.matching import regex_first_chars

    try:
        compiled = regex.compile(pattern, FLAGS)
    except regex.error:
        assume(False)
        raise
    first = regex_first_chars(pattern)
    assume(first is not None)
    assert first
    for p in range(1, len(text) + 1):
        if compiled.match(text, p) is not None:
            assert p < len(text) and text[p] in first, (pattern, text, p, first)


@settings(max_examples=examples(1500), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(patterns(), patterns(), st.lists(st.text(alphabet=ALPHABET, min_size=1, max_size=4), max_size=8))
@example("^a|<", ">", ["a<b", "x>", "a"])
def test_parser_fast_path_never_changes_the_result(open_p: str, close_p: str, chunks: list[str]) -> None:
    """A template whose regex delimiters have known first characters streams exactly as it parses whole."""
    import response_templates as rt

    template = {
        "start_anchor": "@",
        "fields": {"r": {"open_pattern": open_p, "close_pattern": close_p}, "c": {}},
    }
    try:
        rt.load_template(template)
    except rt.TemplateError:
        assume(False)
        raise
    text = "".join(chunks)

    def run(pieces: list[str]) -> Any:
        parser = rt.ResponseParser(template, prefix="")
        events = []
        for piece in pieces:
            events += parser.feed(piece)
        message, final = parser.finalize()
        return message, [(e["type"], e["field"]) for e in events + final if e["type"] != "region_chunk"]

    assert run(chunks) == run([text]) if text else True
