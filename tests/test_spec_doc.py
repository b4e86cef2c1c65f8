"""The specification in ``docs/spec.md`` and the citations of it stay in step.

Code, tests and docs cite the specification as "docs/spec.md, section 4" (a section) or "docs/spec.md
4.4" (one rule). These tests read the document's sections and rule ids and check that

* the document keeps its fixed layout: sections 1-10 on the topics code has always cited them for,
  then the later sections, each rule id unique and inside its own section;
* every citation found in ``src/``, ``tests/``, ``docs/`` and ``README.md`` names a section or a rule
  that exists, so a citation cannot rot when the document changes;
* the links and cross references inside the document resolve;
* nothing cites the old internal specification by its section numbers any more (the repository does
  not contain it; its rules now live in ``docs/spec.md``).
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "docs" / "spec.md"
SCANNED = [ROOT / "src", ROOT / "tests", ROOT / "docs", ROOT / "README.md"]
SKIPPED_DIRS = {"__pycache__", ".hypothesis", ".pytest_cache"}

#: Sections 1-10 keep the numbers and topics of the original specification; code cites them by number.
FIXED_TOPICS = {
    1: "problem",
    2: "entry points",
    3: "template format",
    4: "matching",
    5: "prefix",
    6: "content parsers",
    7: "tool-call argument typing",
    8: "events",
    9: "errors",
    10: "portability",
}

_HEADING = re.compile(r"^## (\d+)\. (.+)$", re.MULTILINE)
_RULE = re.compile(r"^\* \*\*(\d+)\.(\d+)\*\*", re.MULTILINE)
_NUMBER = r"\d+(?:\.\d+)?"
#: A citation: "docs/spec.md, section 4", "docs/spec.md sections 3 and 6", "docs/spec.md 4.4",
#: "docs/spec.md, rules 6.15 and 6.16", also with the file name quoted (``docs/spec.md``) and the rest
#: wrapped onto a comment line. Inside docs/ pages the file is linked as "spec.md".
_CITATION = re.compile(
    r"(?<![\w/.-])(?:docs/)?spec\.md[`'\"\]]*(?:\([^)\s]*\))?,?(?:\s|(?<=\s)#)*\(?(?:(?:sections?|rules?)\s+)?"
    rf"(?P<refs>{_NUMBER}(?:\s*(?:,|and|or|-|–)\s*{_NUMBER})*)(?!\d|\.\d)"
)
#: A link to a heading of the document: "spec.md#4-matching".
_ANCHOR_LINK = re.compile(r"(?<![\w/.-])(?:docs/)?spec\.md#([\w-]+)")
#: The old form, which must disappear: the internal spec's name followed by "section(s)".
_OLD_CITATION = re.compile("SP" + r"EC,?\s+sections?\b")


def _spec_text() -> str:
    return SPEC.read_text(encoding="utf-8")


def _sections(text: str) -> dict[int, str]:
    return {int(number): title for number, title in _HEADING.findall(text)}


def _rules(text: str) -> list[tuple[int, int]]:
    return [(int(section), int(rule)) for section, rule in _RULE.findall(text)]


def _slug(title: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", title.strip().lower()).replace(" ", "-")


def _scanned_files() -> list[Path]:
    files: list[Path] = []
    for place in SCANNED:
        if place.is_file():
            files.append(place)
            continue
        for path in sorted(place.rglob("*")):
            if path.is_file() and not SKIPPED_DIRS & set(path.parts) and ".egg-info" not in str(path):
                files.append(path)
    return files


def _texts() -> list[tuple[Path, str]]:
    out = []
    for path in _scanned_files():
        try:
            out.append((path, path.read_text(encoding="utf-8")))
        except (UnicodeDecodeError, OSError):
            continue  # binary data
    return out


def _line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def test_spec_keeps_the_fixed_sections_in_order() -> None:
    sections = _sections(_spec_text())
    numbers = list(sections)
    assert numbers == list(range(1, len(numbers) + 1)), f"sections out of order: {numbers}"
    for number, topic in FIXED_TOPICS.items():
        assert number in sections, f"docs/spec.md has no section {number} ({topic})"
        assert topic in sections[number].lower(), (number, sections[number])
    assert "extensions" in sections[11].lower()


def test_rule_ids_are_unique_ordered_and_inside_their_section() -> None:
    text = _spec_text()
    rules = _rules(text)
    assert len(rules) > 100  # every section states its rules one by one
    assert len(set(rules)) == len(rules), "a rule id is used twice"
    assert rules == sorted(rules), "rule ids must appear in increasing order"
    headings = [(m.start(), int(m.group(1))) for m in _HEADING.finditer(text)]
    for match in _RULE.finditer(text):
        section = max((number for start, number in headings if start < match.start()), default=None)
        assert section == int(match.group(1)), (
            f"rule {match.group(1)}.{match.group(2)} sits in section {section}"
        )
    assert {section for section, _ in rules} == set(_sections(text)), "every section states rules"


def test_cross_references_inside_the_spec_resolve() -> None:
    text = _spec_text()
    rules = set(_rules(text))
    slugs = {_slug(title) for title in re.findall(r"^#+ (.+)$", text, re.MULTILINE)}
    for match in re.finditer(r"\((\d+)\.(\d+)(?:-(\d+)\.(\d+))?\)", text):
        numbers = [int(n) for n in match.groups() if n is not None]
        for section, rule in zip(numbers[::2], numbers[1::2], strict=True):
            assert (section, rule) in rules, f"docs/spec.md refers to missing rule {section}.{rule}"
    for anchor in re.findall(r"\]\(#([\w-]+)\)", text):
        assert anchor in slugs, f"docs/spec.md links to missing heading #{anchor}"
    for target in re.findall(r"\]\(([\w./-]+\.md)(?:#[\w-]*)?\)", text):
        assert (SPEC.parent / target).is_file(), f"docs/spec.md links to missing page {target}"


def test_every_citation_names_an_existing_section_or_rule() -> None:
    text = _spec_text()
    sections = set(_sections(text))
    rules = set(_rules(text))
    slugs = {_slug(title) for title in re.findall(r"^#+ (.+)$", text, re.MULTILINE)}
    found = 0
    broken = []
    for path, content in _texts():
        where = path.relative_to(ROOT)
        for match in _CITATION.finditer(content):
            for ref in re.findall(_NUMBER, match.group("refs")):
                found += 1
                section, _, rule = ref.partition(".")
                ok = (int(section), int(rule)) in rules if rule else int(section) in sections
                if not ok:
                    broken.append(f"{where}:{_line_of(content, match.start())}: {match.group(0)!r}")
        for match in _ANCHOR_LINK.finditer(content):
            if match.group(1) not in slugs:
                broken.append(f"{where}:{_line_of(content, match.start())}: {match.group(0)!r}")
    assert not broken, "citations of docs/spec.md that name nothing in it:\n" + "\n".join(broken)
    assert found > 0  # the document cites itself in its introduction, at least


def test_nothing_cites_the_old_spec_sections() -> None:
    stale = [
        f"{path.relative_to(ROOT)}:{_line_of(content, match.start())}: {match.group(0)!r}"
        for path, content in _texts()
        for match in _OLD_CITATION.finditer(content)
    ]
    assert not stale, (
        "these cite a specification the repository does not contain; cite docs/spec.md (same section "
        "numbers) instead:\n" + "\n".join(stale)
    )


def test_citation_pattern_reads_the_citation_forms() -> None:
    """The forms the code and tests use are all recognised (so the citation test checks them)."""
    samples = {
        "see docs/spec.md, section 4.": ["4"],
        "(docs/spec.md sections 2, 4, 5 and 8)": ["2", "4", "5", "8"],
        "docs/spec.md 4.4": ["4.4"],
        "``docs/spec.md``, rule 6.17": ["6.17"],
        "# docs/spec.md,\n    # section 10": ["10"],
        "[spec.md](spec.md), section 3": ["3"],
        "docs/spec.md, rules 6.15 and 6.16": ["6.15", "6.16"],
        "[section 4](spec.md#4-matching)": [],
        "(docs/spec.md, sections 2-8)": ["2", "8"],
        "docs/spec.md (section 4)": ["4"],
    }
    for sample, expected in samples.items():
        refs = [ref for m in _CITATION.finditer(sample) for ref in re.findall(_NUMBER, m.group("refs"))]
        assert refs == expected, (sample, refs)
    assert _OLD_CITATION.search("SP" + "EC section 4") and _OLD_CITATION.search("SP" + "EC, sections 3 and 6")
    assert not _OLD_CITATION.search("docs/spec.md, section 4")
