"""Detection survives forks of a chat template (issue 10, item 6).

Every real chat template of tests/data/chat_templates is edited the way forks edit them (re-indented,
another system prompt, a Jinja comment, an added tool rule, a renamed variable, deleted lines) with seeded
random edits, and :func:`library.detect_family` must still name a family of the same format, with
:func:`library.detect_all` saying how sure it is. :func:`measure` counts the variants detected correctly;
``python tests/library/test_detection_forks.py`` prints the counts per family and edit kind (the numbers in
docs/detection.md).
"""

from __future__ import annotations

import random
import re
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

import response_templates as rt
from response_templates import library
from response_templates.library import detection

CHAT_TEMPLATES = Path(__file__).resolve().parents[1] / "data" / "chat_templates"
OWNERS = {name: fam for fam in library.families() for name in fam.chat_templates}
#: The chat templates of families that have marker rules (the others are known by fingerprint only).
DETECTABLE = sorted(p.name for p in CHAT_TEMPLATES.glob("*.jinja") if OWNERS[p.name].markers)
VARIANTS = 8  # per template and edit kind, for the numbers of docs/detection.md
TEST_VARIANTS = 4  # per template and edit kind in the tests: the first ones of the same seeded series

# ------------------------------------------------------------------------------------------ the edits

_TAG = re.compile(r"\{%.*?%\}|\{\{.*?\}\}", re.DOTALL)
_STRING = re.compile(r"'(?:\\.|[^'\\])*'|\"(?:\\.|[^\"\\])*\"")
_PROSE = re.compile(r"(?<=['\"])[A-Z][a-z]+(?: [A-Za-z,.'-]+){4,}[.:]?(?=['\"\n])")


def _lines(text: str, rng: random.Random) -> tuple[list[str], int]:
    lines = text.split("\n")
    return lines, rng.randrange(len(lines) + 1)


def reindent(text: str, rng: random.Random) -> str:
    """Whitespace between lines: indentation, trailing spaces, blank lines, ``{%-`` for ``{%``, CRLF."""
    lines = text.split("\n")
    out = []
    for line in lines:
        roll = rng.random()
        if roll < 0.2:
            line = "    " + line.lstrip()
        elif roll < 0.3:
            line = line + "  "
        elif roll < 0.35:
            out.append("")
        out.append(line)
    edited = "\n".join(out)
    if rng.random() < 0.5:
        edited = edited.replace("{%- ", "{% ").replace(" -%}", " %}")
    if rng.random() < 0.3:
        edited = edited.replace("\n", "\r\n")
    return edited


def respace(text: str, rng: random.Random) -> str:
    """Whitespace inside lines: a third of the single spaces doubled or turned into a line break (prose
    reflowed, ``{{ a + b }}`` re-spaced)."""
    return re.sub(" ", lambda m: rng.choice(["  ", "\n", " ", " ", " ", " "]), text)


def new_system_prompt(text: str, rng: random.Random) -> str:
    """Another default system prompt: a prose string literal replaced, or a new one set at the top."""
    prompt = rng.choice(
        [
            "You are Aria, a careful assistant made by Example Corp. Answer briefly.",
            "Du bist ein hilfreicher Assistent. Antworte auf Deutsch.",
            "You are a coding agent. Think step by step before you answer.",
        ]
    )
    prose = list(_PROSE.finditer(text))
    if prose:
        hit = rng.choice(prose)
        return text[: hit.start()] + prompt + text[hit.end() :]
    return '{%- set default_system_message = "' + prompt + '" %}\n' + text


def add_comment(text: str, rng: random.Random) -> str:
    """A Jinja comment on a new line somewhere."""
    lines, at = _lines(text, rng)
    lines.insert(at, "{#- fork: tuned for our deployment, " + str(rng.randrange(10**6)) + " -#}")
    return "\n".join(lines)


def add_tool_rule(text: str, rng: random.Random) -> str:
    """A line of instructions about tools, as forks add to the tools section."""
    rule = rng.choice(
        [
            "Never call more than one tool per turn unless the user asks for it.",
            "Always check the arguments against the schema before you call a tool.",
            "If no tool fits, answer directly and say so.",
        ]
    )
    lines, at = _lines(text, rng)
    lines.insert(at, rule)
    return "\n".join(lines)


def rename_variable(text: str, rng: random.Random) -> str:
    """A variable renamed inside Jinja tags (string literals are left alone, as a real rename does)."""
    names = sorted(set(re.findall(r"\{%-?\s*(?:set|for)\s+([A-Za-z_]\w*)", text)) - {"ns"})
    if not names:
        return text
    old = rng.choice(names)
    word = re.compile(rf"\b{re.escape(old)}\b")

    def in_tag(tag: re.Match[str]) -> str:
        parts = _STRING.split(tag.group(0))
        strings = _STRING.findall(tag.group(0))
        renamed = [word.sub(old + "_v2", part) for part in parts]
        return "".join(p + (strings[i] if i < len(strings) else "") for i, p in enumerate(renamed))

    return _TAG.sub(in_tag, text)


def delete_lines(text: str, rng: random.Random) -> str:
    """One to three lines deleted (they may hold a marker: a fork that drops a format's line)."""
    lines = text.split("\n")
    for _ in range(rng.randint(1, 3)):
        if len(lines) > 1:
            del lines[rng.randrange(len(lines))]
    return "\n".join(lines)


_WORDS = re.compile(r"[A-Za-z][A-Za-z,'()-]*(?:[ :][A-Za-z][A-Za-z,'()-]*){2,}[.:]?")
_IF_BLOCK = re.compile(r"\{%-?\s*if\b(?:(?!\{%-?\s*(?:if|endif)\b).)*?\{%-?\s*endif\s*-?%\}", re.DOTALL)


def rewrite_prose(text: str, rng: random.Random) -> str:
    """Instructions reworded: about half of the runs of three or more words replaced by other words
    (a fork that rewrites the system prompt or the tool instructions in its own words)."""
    filler = ["please respond concisely", "use the functions listed below", "reply in the user language"]

    def reword(match: re.Match[str]) -> str:
        return rng.choice(filler) if rng.random() < 0.5 else match.group(0)

    return _WORDS.sub(reword, text)


def drop_branch(text: str, rng: random.Random) -> str:
    """One ``{% if %}...{% endif %}`` block without nested ifs removed (a feature the fork dropped)."""
    blocks = list(_IF_BLOCK.finditer(text))
    if not blocks:
        return delete_lines(text, rng)
    hit = rng.choice(blocks)
    return text[: hit.start()] + text[hit.end() :]


def mixed(text: str, rng: random.Random) -> str:
    """Three edits of the kinds above (not deletions) one after another."""
    for edit in rng.sample(KEEPING_EDITS, 3):
        text = edit(text, rng)
    return text


Edit = Callable[[str, random.Random], str]
#: Edits that keep every line of the template.
KEEPING_EDITS: list[Edit] = [
    reindent,
    respace,
    new_system_prompt,
    add_comment,
    add_tool_rule,
    rename_variable,
]
#: Edits that remove or reword parts of the template (markers may go with them).
LOSSY_EDITS: list[Edit] = [delete_lines, drop_branch, rewrite_prose]
EDITS: dict[str, Edit] = {e.__name__: e for e in [*KEEPING_EDITS, mixed, *LOSSY_EDITS]}


def variants(name: str, kind: str, n: int = VARIANTS) -> list[str]:
    """``n`` seeded fork variants of a chat template file, each differing from the original."""
    text = (CHAT_TEMPLATES / name).read_text(encoding="utf-8")
    rng = random.Random(f"{name}/{kind}")
    out = []
    for _ in range(n):
        edited = EDITS[kind](text, rng)
        if library.fingerprint(edited) == library.fingerprint(text):
            edited += "\n{#- fork -#}"
        out.append(edited)
    return out


# -------------------------------------------------------------------------------------- measurement


def _old_detect(text: str) -> str | None:
    """Detection before issue 10: exact fingerprint, else the most specific complete marker rule."""
    table = {fp: fam.name for fam in library.families() for fp in fam.fingerprints}
    if (found := table.get(library.fingerprint(text))) is not None:
        return found
    hits = []
    for fam in library.families():
        scores = [(len(r), sum(map(len, r))) for r in fam.markers if r and all(m in text for m in r)]
        if scores:
            hits.append((max(scores), fam.name))
    hits.sort(key=lambda h: (-h[0][0], -h[0][1], h[1]))
    return hits[0][1] if hits else None


def _new_detect(text: str) -> str | None:
    try:
        return library.detect_family(text).name
    except library.UnknownModelError:
        return None


def _same_format(found: str | None, owner: library.Family) -> bool:
    return found is not None and library.family(found).resolved().name == owner.resolved().name


def measure(n: int = VARIANTS) -> dict[str, dict[str, list[int]]]:
    """Edit kind -> family -> [variants, correct before, correct now, wrong before, wrong now] (wrong: a
    family of another format named; the rest were reported unknown or ambiguous)."""
    table: dict[str, dict[str, list[int]]] = {}
    for kind in EDITS:
        for name in DETECTABLE:
            owner = OWNERS[name]
            row = table.setdefault(kind, {}).setdefault(owner.name, [0, 0, 0, 0, 0])
            for text in variants(name, kind, n):
                old, new = _old_detect(text), _new_detect(text)
                row[0] += 1
                row[1] += _same_format(old, owner)
                row[2] += _same_format(new, owner)
                row[3] += old is not None and not _same_format(old, owner)
                row[4] += new is not None and not _same_format(new, owner)
    return table


# ------------------------------------------------------------------------------------------- tests


@pytest.mark.parametrize("kind", [e.__name__ for e in KEEPING_EDITS] + ["mixed"])
@pytest.mark.parametrize("name", DETECTABLE)
def test_forks_that_keep_every_line_are_detected_with_confidence(name: str, kind: str) -> None:
    owner = OWNERS[name]
    for i, text in enumerate(variants(name, kind, TEST_VARIANTS)):
        found = library.detect_family(text)
        assert found.resolved().name == owner.resolved().name, (name, kind, found.name)
        best = library.detect_all(text)[0]
        assert best.matched_by == "markers" and best.family.resolved() is owner.resolved()
        # At least 0.25: the lowest are families with a close relative one marker away.
        assert best.confidence >= 0.25 and best.score == 1.0, best
        if owner.has_template and i == 0:
            # The same compiled template; the family it names may be another alias of the format.
            assert rt.templates.detect(text).fields is owner.template().fields


def test_deleting_lines_rarely_loses_the_family_and_rarely_names_a_wrong_one() -> None:
    wrong, missed, total = [], 0, 0
    for name in DETECTABLE:
        owner = OWNERS[name]
        lossy = [
            *variants(name, "delete_lines", TEST_VARIANTS),
            *variants(name, "drop_branch", TEST_VARIANTS),
        ]
        for text in lossy:
            total += 1
            try:
                found = library.detect_family(text)
            except library.UnknownModelError:  # ambiguous or unknown: the markers went with the lines
                missed += 1
                continue
            if found.resolved() is not owner.resolved():
                wrong.append((name, found.name))
    assert missed <= total * 0.05, (missed, total)
    assert len(wrong) <= total * 0.02, wrong


def test_whitespace_inside_a_marker_line_does_not_hide_it() -> None:
    text = (CHAT_TEMPLATES / "meta-llama-Llama-3.1-8B-Instruct.jinja").read_text(encoding="utf-8")
    edited = text.replace("Environment: ipython", "Environment:   ipython")
    assert _old_detect(edited) != "llama-3-json"  # the old exact-substring rule missed it
    assert library.detect_family(edited).name == "llama-3-json"


def test_an_unrelated_template_is_not_detected() -> None:
    made_up = (
        "{% for message in messages %}### {{ message.role | upper }}:\n{{ message.content }}\n\n{% endfor %}"
        "{% if add_generation_prompt %}### ASSISTANT:\n{% endif %}"
    )
    assert library.detect_all(made_up) == []
    with pytest.raises(library.UnknownModelError) as info:
        library.detect_family(made_up)
    assert not isinstance(info.value, library.AmbiguousChatTemplateError)
    # One generic ChatML token is not enough to name a family, but the near matches say where to look.
    chatml = "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
    with pytest.raises(library.UnknownModelError) as info:
        library.detect_family(chatml)
    assert "hermes" in info.value.near_matches
    assert all(c.confidence < detection.MIN_CONFIDENCE or c.score < 1 for c in library.detect_all(chatml))


def test_a_template_mixing_two_formats_is_ambiguous_and_names_both() -> None:
    mixed_up = (
        "{% for m in messages %}<seed:bos>{{ m.role }}\n{{ m.content }}{% endfor %}"
        "{% if tools %}<seed:tool_call> or <TOOLCALL>{% endif %}<SPECIAL_11>Assistant\n<SPECIAL_12><seed:eos>"
    )  # seed-oss' markers and end token and nemotron-nano-v2's, nothing that tells them apart
    with pytest.raises(library.AmbiguousChatTemplateError) as info:
        library.detect_family(mixed_up)
    names = [c.family.name for c in info.value.candidates]
    assert set(names) == {"seed-oss", "nemotron-nano-v2"} == set(info.value.near_matches), names
    assert "seed-oss" in str(info.value) and "nemotron-nano-v2" in str(info.value)
    assert isinstance(info.value, LookupError) and isinstance(info.value, library.UnknownModelError)
    with pytest.raises(library.AmbiguousChatTemplateError):
        rt.templates.detect(mixed_up)
    # More markers of one rule decide (the most specific complete rule wins, as before).
    assert library.detect_family(mixed_up + "<｜Assistant｜>DSML function_calls>").name == "deepseek-v3.2"


def test_a_fingerprint_is_certain_and_evidence_is_reported() -> None:
    text = (CHAT_TEMPLATES / "Qwen3-Coder.jinja").read_text(encoding="utf-8")
    best = library.detect_all(text)[0]
    assert (best.family.name, best.confidence, best.matched_by) == ("qwen3-coder", 1.0, "fingerprint")
    fork = library.detect_all(text.replace("<|im_start|>system", "<|im_start|>system\n"))[0]
    assert fork.family.name == "qwen3-coder" and fork.matched_by == "markers"
    assert set(fork.matched) == {"<|im_start|>", "<tool_call>", "<function=", "<parameter="}
    assert fork.to_dict()["format"] == "qwen3-coder" and 0.5 < fork.confidence <= 1.0


if __name__ == "__main__":  # the numbers of docs/detection.md
    n = int(sys.argv[1]) if len(sys.argv) > 1 else VARIANTS
    results = measure(n)
    print("| edit | variants | correct before | correct now | wrong before | wrong now |")
    print("|---|---|---|---|---|---|")
    for kind, per_family in results.items():
        t, b, c, wb, wc = (sum(row[i] for row in per_family.values()) for i in range(5))
        print(f"| `{kind}` | {t} | {b} ({b / t:.1%}) | {c} ({c / t:.1%}) | {wb} | {wc} |")
    print()
    for fam_name in sorted({f for per in results.values() for f in per}):
        rows = [results[k][fam_name] for k in results if fam_name in results[k]]
        t, b, c, wb, wc = (sum(row[i] for row in rows) for i in range(5))
        if b != t or c != t:
            print(
                f"{fam_name:28} {t:4} variants: correct before {b:4}, now {c:4}; wrong before {wb}, now {wc}"
            )
