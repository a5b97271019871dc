"""docs/decisions.md is cited by number and by title across the tree; every citation names
an entry that exists.

An entry is a line that begins ``N. `` (the number at the start of the line, a dot, a
space).  Numbers are stable: an entry that recorded a change or a measurement rather than
a decision moved to CHANGELOG.md, which gives its old number, and left a gap; no entry is
renumbered.  A citation by number is "decision N", "decisions N", "decisions.md N",
"decisions.md #N", "decisions.md, N" or "[decisions.md](decisions.md) N", with a list or a
range after it ("decisions.md 34, 35", "decisions 168–176 and 183"), split across lines
and comment markers as prose is; inside decisions.md, "refines N" too.  A range spans no
gap.  A citation by title, ``decisions.md, "TITLE"``, names the start of a heading or of an
entry.
"""

from __future__ import annotations

import re
from pathlib import Path

from support import ROOT

DECISIONS = ROOT / "docs" / "decisions.md"
CHANGELOG = ROOT / "CHANGELOG.md"

ENTRY = re.compile(r"^(\d+)\. ", re.M)
NUMBERS = r"#?\d+(?:\s*(?:,|and|–|-)\s*#?\d+)*"
BY_NUMBER = re.compile(rf"\bdecisions?(?:\.md)?(?:\]\([^)]*\))?\s*[,#]?\s*({NUMBERS})", re.I)
REFINES = re.compile(rf"\brefines ({NUMBERS})")
BY_TITLE = re.compile(r"\bdecisions(?:\.md)?(?:\]\([^)]*\))?(?:,\s*|\s+\()\"([^\"]+)\"", re.I)
#: a line break and what continues a comment or a docstring on the next line
CONTINUATION = re.compile(r"\s*\n\s*(?:#|//|\*)?\s*")


def entries(text: str) -> list[int]:
    return [int(n) for n in ENTRY.findall(text)]


def cited(numbers: str) -> list[tuple[int, int]]:
    """``"34, 35"`` -> [(34, 34), (35, 35)]; ``"168–176 and 183"`` -> [(168, 176), (183, 183)]."""
    found = []
    for part in re.split(r"\s*(?:,|and)\s*", numbers):
        ends = [int(n.lstrip("#")) for n in re.split(r"\s*[–-]\s*", part)]
        found.append((ends[0], ends[-1]))
    return found


def _flat(text: str) -> str:
    return CONTINUATION.sub(" ", text)


def _normal(text: str) -> str:
    return " ".join(text.replace("`", "").replace("*", "").split()).lower()


def _tree() -> list[Path]:
    files = [ROOT / "README.md", CHANGELOG, *sorted((ROOT / "docs").glob("*.md"))]
    files += sorted((ROOT / "grammars").glob("*.lark"))
    for folder in ("src", "tests", "benchmarks", "fuzz", "examples"):
        files += sorted(p for p in (ROOT / folder).rglob("*") if p.suffix in {".py", ".md", ".sh"})
    # this file's strings are examples of the syntax
    return [p for p in files if p.name != "test_decisions.py"]


def citations(text: str, inside_decisions: bool = False) -> list[tuple[str, list[tuple[int, int]]]]:
    flat = _flat(text)
    found = [(m.group(0), cited(m.group(1))) for m in BY_NUMBER.finditer(flat)]
    if inside_decisions:
        found += [(m.group(0), cited(m.group(1))) for m in REFINES.finditer(flat)]
    return found


def test_the_reading_of_citations():
    text = (
        "see decision 4) and decisions 93: also (docs/decisions.md 96), decisions.md #7,\n"
        "(docs/decisions.md, 135) [decisions.md](decisions.md) 96 and decisions.md 34, 35;\n"
        '    # a comment (decision\n    # 39) decisions 168–176 and 183 (decisions.md, "Explain")'
    )
    assert [c for _, c in citations(text)] == [
        [(4, 4)],
        [(93, 93)],
        [(96, 96)],
        [(7, 7)],
        [(135, 135)],
        [(96, 96)],
        [(34, 34), (35, 35)],
        [(39, 39)],
        [(168, 176), (183, 183)],
    ]
    assert [c for _, c in citations("(refines 55 and 124) this refines decision 58", True)] == [
        [(58, 58)],
        [(55, 55), (124, 124)],
    ]
    assert BY_TITLE.findall('(decisions.md, "GLM lines on their\n// own")'.replace("\n// ", " ")) == [
        "GLM lines on their own"
    ]
    assert entries("1. a\n   2. not an entry\n10. b\n") == [1, 10]


def test_entry_numbers_rise_and_every_gap_is_in_the_changelog():
    numbers = entries(DECISIONS.read_text(encoding="utf-8"))
    assert numbers == sorted(set(numbers)) and numbers[0] == 1, "entry numbers are unique and rise"
    changelog = _flat(CHANGELOG.read_text(encoding="utf-8"))
    gaps = sorted(set(range(1, numbers[-1])) - set(numbers))
    missing = [n for n in gaps if f"Formerly entry {n} of docs/decisions.md" not in changelog]
    assert not missing, f"numbers gone from decisions.md that CHANGELOG.md does not account for: {missing}"


def test_every_citation_names_an_entry_that_exists():
    numbers = set(entries(DECISIONS.read_text(encoding="utf-8")))
    wrong, count = [], 0
    for path in _tree():
        text = path.read_text(encoding="utf-8", errors="replace")
        for where, spans in citations(text, inside_decisions=path == DECISIONS):
            count += 1
            if not all(set(range(first, last + 1)) <= numbers for first, last in spans):
                wrong.append((str(path.relative_to(ROOT)), where))
    assert count > 50, "the citations are read"
    assert not wrong, f"citations of entries docs/decisions.md does not hold: {wrong}"


def test_every_citation_by_title_names_a_heading_or_an_entry():
    text = DECISIONS.read_text(encoding="utf-8")
    starts = [_normal(h) for h in re.findall(r"^#+ (.*)$", text, re.M)]
    starts += [_normal(_flat(m)) for m in re.findall(r"^\d+\. (.{0,300})", _flat_entries(text), re.M)]
    wrong = []
    for path in _tree():
        for title in BY_TITLE.findall(_flat(path.read_text(encoding="utf-8", errors="replace"))):
            if not any(s.startswith(_normal(title)) for s in starts):
                wrong.append((str(path.relative_to(ROOT)), title))
    assert not wrong, wrong


def _flat_entries(text: str) -> str:
    """Each entry on one line."""
    return re.sub(r"\n(?!\d+\. |#|\n)\s*", " ", text)


#: how a log says what changed: "went from 23.9 to 17.4", "30.6 → 29.3", "(was 200)",
#: "no longer", "as before"
CHANGE_LOG = re.compile(r"went from|\d\s*→\s*\d|\(was \d|\bno longer\b|\bas before\b", re.I)


def test_decisions_hold_no_log_of_changes():
    """What changed and by how much goes to CHANGELOG.md; a decision says what holds."""
    text = _flat_entries(DECISIONS.read_text(encoding="utf-8"))
    logged = [
        (line.split(".", 1)[0], m.group(0))
        for line in text.splitlines()
        if ENTRY.match(line)
        for m in CHANGE_LOG.finditer(line)
    ]
    assert not logged, logged
    assert CHANGE_LOG.search(CHANGELOG.read_text(encoding="utf-8")), "the log is in CHANGELOG.md"
