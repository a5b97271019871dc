"""``tooldialect grammar check``: everything a grammar author needs to hear about one file.

The checks, in order (each is one line of the report):

1. the header: the file name is a family name, the header parses, ``family`` equals the
   file stem, a title, model globs and a ``checked against`` line are present, every
   ``key:`` line is a key the registry knows, and ``policy`` lines name real fields;
2. the name is free: no other registered grammar file defines the family;
3. the grammar compiles strictly (LALR; a conflict is an error naming the rules);
4. the reader reads what the grammar parses: a rule yields calls, and no call holds a
   node the reader drops (``grammar.unread``);
5. the ``// write`` lines write a call (``grammar.unwritable``, then the writer itself);
6. what they write reads back as written: sample calls, and the calls the corpus expects,
   in every spelling (``grammar_samples``);
7. its markers are its own: no marker it writes is one another grammar file already
   writes (a shared container such as ``<tool_call>`` is ``%import``ed from its owner);
8. with a corpus (given, or the ``.txt`` file of the grammar's name beside it), every case
   passes four ways (batch, whole, one character at a time, seeded random cuts), as the
   project's own golden vectors do.

With ``update_new`` / ``update_titles`` (``--update``), the expected results of the cases
the author approves are written into the corpus file first: cases with none yet, and
cases named by title.  Each one written is a line of the report; an expectation that
differs is rewritten only when its case is named, and the report shows what it was.


While the corpus runs the checked family is part of the registry, beside every family
registered already (so the cases read as they will when the family is installed).
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from pydantic import ValidationError

from . import families as registry
from .errors import CorpusError, GrammarError, ToolDialectError
from .grammar import CompiledGrammar, Header, NodeReads, Terminal, compile_grammar, read_header, unread, unwritable
from .grammar_where import locate
from .markers import samples
from .models import Policy

if TYPE_CHECKING:
    from .corpus import Case

__all__ = ["Check", "Report", "check_grammar", "own_markers"]

#: Header keys the registry reads (``policy GLOB`` lines aside).
HEADER_KEYS = (
    "family",
    "title",
    "models",
    "checked against",
    "rank",
    "reply",
    "value newlines",
    "text escapes",
    "gated",
    "no tool",
)
_KEYISH = re.compile(r"([a-z][a-z-]{0,20}(?: [a-z-]{1,20}){0,2})\s*:")
_IMPORT = re.compile(r"^%import\s+([\w.]+)(?:\s*->\s*(\w+))?(?:\s*\(([^)]*)\))?", re.M)


@dataclass
class Check:
    """One line of the report."""

    name: str
    ok: bool
    detail: str = ""

    def line(self) -> str:
        mark = "ok  " if self.ok else "FAIL"
        first, *rest = (self.detail or "").splitlines() or [""]
        out = f"  {mark}  {self.name}" + (f": {first}" if first else "")
        return "\n".join([out, *(f"          {r}" for r in rest)])


@dataclass
class Report:
    """What ``grammar check`` found: one :class:`Check` per line, failed or not."""

    path: Path
    checks: list[Check] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.checks)

    def text(self) -> str:
        failed = sum(1 for c in self.checks if not c.ok)
        lines = [f"grammar check {self.path}"] + [c.line() for c in self.checks]
        verdict = "passed" if not failed else f"{failed} failed"
        lines.append(f"{len(self.checks)} checks, {verdict}")
        return "\n".join(lines) + "\n"


def check_grammar(
    path: str | Path,
    corpus: str | Path | None = None,
    *,
    update_new: bool = False,
    update_titles: Collection[str] = (),
) -> Report:
    """Check one grammar file (and its golden vectors: ``corpus``, else the ``.txt`` file of
    the same name beside the grammar when there is one).  Problems with the grammar are
    failed checks in the report; a file that cannot be read raises
    :class:`~tooldialect.GrammarError` (or :class:`~tooldialect.CorpusError` for the corpus).

    ``update_new`` writes the expected result of every corpus case that has none yet;
    ``update_titles`` writes (or rewrites) those of the cases with these titles.  A title
    that names no case raises :class:`~tooldialect.CorpusError` before anything is written."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise GrammarError(f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}") from None
    cases: list[Case] | None = None
    if corpus is None and not (update_new or update_titles) and path.with_suffix(".txt").is_file():
        corpus = path.with_suffix(".txt")  # the grammar's own corpus, found beside it (--update names its file)
    if corpus is not None:
        from .corpus import read_corpus

        try:
            cases = read_corpus(Path(corpus))
        except (OSError, UnicodeDecodeError) as exc:
            raise CorpusError(f"cannot read {corpus}: {getattr(exc, 'strerror', None) or exc}") from None
        unknown = [t for t in update_titles if t not in {c.title for c in cases}]
        if unknown:
            raise CorpusError(
                f"{corpus}: no case titled {unknown[0]!r} to update (titles are the line after the = rule)"
            )
    elif update_new or update_titles:
        raise CorpusError("--update writes a corpus file's expectations: give the file with --corpus")
    report = Report(path)
    header = _check_header(report, path, text)
    free = _check_name(report, path)
    compiled = _check_compiles(report, path, header)
    if compiled is None:
        for name in ("reads", "writes", "samples", "markers"):
            report.checks.append(Check(name, False, "not checked: the grammar does not compile"))
        if cases is not None:
            report.checks.append(Check("corpus", False, "not run: the grammar does not compile"))
        return report
    _check_reads(report, path, compiled)
    writes = _check_writes(report, compiled)
    _check_samples(report, path, compiled, cases or [], writes and free)
    _check_markers(report, path, text, compiled)
    if cases is not None and not free:
        report.checks.append(Check("corpus", False, "not run: another grammar has the family's name"))
    elif cases is not None and corpus is not None:  # (cases are read from a corpus)
        update = _Update(update_new, frozenset(update_titles))
        _check_corpus(report, path, compiled, cases, Path(corpus), update)
    return report


# -- header ------------------------------------------------------------------------------


def _check_header(report: Report, path: Path, text: str) -> Header:
    fallback = Header(family=path.stem)
    if path.stem.startswith("_"):
        piece = f"{path.name} is a shared piece (its name starts with _), not a family"
        report.checks.append(Check("header", False, piece))
        return fallback
    if not registry._NAME.fullmatch(path.stem):
        report.checks.append(
            Check("header", False, f"{path.stem!r} is not a family name: use lowercase letters, digits and _")
        )
        return fallback
    try:
        header = read_header(text, path.stem)
    except GrammarError as exc:
        report.checks.append(Check("header", False, str(exc)))
        return fallback
    problems = []
    if header.family != path.stem:
        problems.append(f"family is {header.family!r}; it must equal the file name {path.stem!r}")
    if not header.title:
        problems.append("no title: add '// title: what the format looks like, in one line'")
    if not header.models:
        problems.append("no models: add '// models: org/model-*' (comma-separated globs; * for any model)")
    if not header.checked_against:
        problems.append("no 'checked against' line: name the template or document the syntax was checked against")
    for note in header.notes:
        m = _KEYISH.match(note.strip())
        if m and not m.group(1).startswith("policy "):
            key = m.group(1)
            close = difflib.get_close_matches(key, HEADER_KEYS, n=1, cutoff=0.75)
            if close and close[0] != key:  # a misspelt key would silently become a note
                problems.append(f"unknown header key {key!r} (did you mean {close[0]!r}?)")
    for glob, pairs in header.policies:
        settings = {k: registry._coerce(k, v) for k, v in pairs}
        try:
            Policy(**settings)
        except (ValidationError, ToolDialectError) as exc:
            first = str(exc).splitlines()
            problems.append(f"policy {glob}: {' '.join(first[:3])}")
    if problems:
        report.checks.append(Check("header", False, "\n".join(problems)))
    else:
        n = len(header.models)
        report.checks.append(
            Check("header", True, f"family {header.family}, {n} model glob{'s' * (n != 1)}, {header.title!r}")
        )
    return header


def _check_name(report: Report, path: Path) -> bool:
    try:
        other = registry._load_registry().get(path.stem)
    except GrammarError as exc:
        report.checks.append(Check("name", False, f"the registry does not load: {exc}"))
        return False
    if other is not None and other.path.resolve() != path.resolve():
        taken = (
            f"family {path.stem!r} is already defined by {other.path} (from {registry._label(other)}); rename the file"
        )
        report.checks.append(Check("name", False, taken))
        return False
    where = "registered from this file" if other is not None else "not registered yet"
    report.checks.append(Check("name", True, f"{path.stem!r} is free ({where})"))
    return True


def _check_compiles(report: Report, path: Path, header: Header) -> CompiledGrammar | None:
    try:
        compiled = compile_grammar(path, header, pieces=registry.grammar_dir(), conventions=False)
    except GrammarError as exc:
        report.checks.append(Check("compiles (LALR, strict)", False, str(exc)))
        return None
    openers = sorted(t.name for t in compiled.openers.get("start", ()))
    detail = "rules " + ", ".join(compiled.starts) + (f"; openers {', '.join(openers)}" if openers else "")
    report.checks.append(Check("compiles (LALR, strict)", True, detail))
    return compiled


def _check_reads(report: Report, path: Path, compiled: CompiledGrammar) -> None:
    """What the grammar parses, against what its reader reads: the family's own reader when
    this file is the registered family, else the generic one."""
    from .transform import Reader, reader_class

    registered = registry._load_registry().get(path.stem)
    mine = registered is not None and registered.path.resolve() == path.resolve()
    reader = reader_class(path.stem) if mine else Reader
    # a reader class is what it reads: its call_nodes, read_nodes and picked_nodes are class attributes
    problems = unread(compiled, cast(NodeReads, reader))
    if problems:
        report.checks.append(Check("reads", False, "\n".join(_at(path, p) for p in problems)))
        return
    calls = sorted(compiled.nodes & reader.call_nodes)
    parts = sorted((compiled.nodes & reader.read_nodes) - reader.call_nodes)
    detail = "calls from " + ", ".join(calls) + (f"; parts read: {', '.join(parts)}" if parts else "")
    report.checks.append(Check("reads", True, detail))


def _check_writes(report: Report, compiled: CompiledGrammar) -> bool:
    """The ``// write`` lines: a ``write call`` line, string terminals, then the writer the
    lines describe (its slots and what each raw slot may hold).  Whether they write."""
    from .render.family import compile_writer

    problems = unwritable(compiled)
    if not problems:
        try:
            shape = compile_writer(compiled).shape
        except GrammarError as exc:
            problems = [str(exc)]
    if problems:
        report.checks.append(Check("writes", False, "\n".join(_at(compiled.path, p) for p in problems)))
        return False
    kinds = ", ".join(dict.fromkeys(kind for kind, _spec in compiled.header.writes))
    one = "" if shape.parallel else "; one call per reply"
    report.checks.append(Check("writes", True, f"write {kinds}{one}"))
    return True


def _check_samples(report: Report, path: Path, compiled: CompiledGrammar, cases: list[Case], run: bool) -> None:
    """The family's own writing read back (``grammar_samples``), with the checked family in the
    registry as it will be once installed."""
    from .grammar_samples import check_samples

    if not run:
        why = "not checked: the '// write' lines do not write a call, or another grammar has the family's name"
        report.checks.append(Check("samples", False, why))
        return
    with _trial(path, compiled):
        ok, detail = check_samples(path.stem, compiled, cases)
    report.checks.append(Check("samples", ok, detail))


def _at(path: Path, problem: str) -> str:
    """``problem`` led by the file and line it is about (``acts.lark:12: …``), when it names one."""
    if re.match(r"grammar \S+:\d", problem):
        return problem  # the writer's own message cites it already
    try:
        line = locate(path.read_text(encoding="utf-8"), problem)
    except (OSError, UnicodeDecodeError):
        line = None
    return f"{path.name}:{line}: {problem}" if line else problem


# -- markers -----------------------------------------------------------------------------


def imported_names(text: str) -> set[str]:
    """The names a grammar's ``%import`` statements bring in (their aliases)."""
    out = set()
    for m in _IMPORT.finditer(text):
        dotted, alias, names = m.groups()
        if names is not None:
            out |= {n.strip() for n in names.split(",") if n.strip()}
        else:
            out.add(alias or dotted.rsplit(".", 1)[-1])
    return out


def own_markers(text: str, terminals: dict[str, Terminal], compiled: CompiledGrammar | None = None) -> list[Terminal]:
    """The markers a grammar file writes itself: its terminals with a pattern that are
    markup (see :func:`_is_marker`), neither ``%import``ed nor ``%ignore``d, other than
    one-character punctuation."""
    imported = imported_names(text)
    skipped = {t.name for t in compiled.ignore} if compiled is not None else set()
    out = []
    for term in terminals.values():
        pat = term.pattern
        if pat is None or term.name in imported or term.name in skipped:
            continue
        if pat.max_width < 2 or not _is_marker(term, compiled):
            continue
        out.append(term)
    return out


@dataclass
class _File:
    stem: str
    label: str
    text: str
    markers: list[Terminal]


def _others(path: Path) -> Iterator[_File]:
    """Every other grammar file and its own markers: the built-in shared pieces, then every
    registered family but the one at ``path``."""
    for piece in sorted(registry.grammar_dir().glob("_*.lark")):
        text = piece.read_text(encoding="utf-8")
        yield _File(piece.stem, piece.name, text, own_markers(text, registry.piece(piece.stem)))
    for fam in registry.all_families():
        if fam.path.resolve() == path.resolve():
            continue
        text = fam.path.read_text(encoding="utf-8")
        markers = own_markers(text, fam.grammar.terminals, fam.grammar)
        yield _File(fam.name, f"{fam.path.name} (family {fam.name})", text, markers)


_DEFINITION = re.compile(r"([A-Z_][A-Z0-9_]*)(?:\.-?\d+)?\s*:")
_OVERLAPS = re.compile(r"//\s*overlaps\s+(\w+)\.([A-Z_][A-Z0-9_]*)\s*:\s*\S")


def declared_overlaps(text: str, terminal: str) -> set[tuple[str, str]]:
    """The ``// overlaps FILE.TERMINAL: why`` comments right above a terminal's definition:
    spellings the grammar shares on purpose, each with its reason."""
    lines = text.splitlines()
    out: set[tuple[str, str]] = set()
    for i, line in enumerate(lines):
        m = _DEFINITION.match(line)
        if m and m.group(1) == terminal:
            j = i - 1
            while j >= 0 and lines[j].lstrip().startswith("//"):
                m = _OVERLAPS.match(lines[j].strip())
                if m:
                    out.add((m.group(1), m.group(2)))
                j -= 1
    return out


def _check_markers(report: Report, path: Path, text: str, compiled: CompiledGrammar) -> None:
    mine = own_markers(text, compiled.terminals, compiled)
    problems = []
    shared = 0
    try:
        for other in _others(path):
            for term in mine:
                for theirs in other.markers:
                    example = _overlap(term, theirs)
                    if example is None:
                        continue
                    if (other.stem, theirs.name) in declared_overlaps(text, term.name) or (
                        path.stem,
                        term.name,
                    ) in declared_overlaps(other.text, theirs.name):
                        shared += 1
                        continue
                    problems.append(
                        f"{term.name} writes {example!r}, a marker {other.label} already writes as {theirs.name}: "
                        f"use '%import .{other.stem} ({theirs.name})' instead of writing it again "
                        f"(or, if both must read it, say why in '// overlaps {other.stem}.{theirs.name}: …' "
                        f"above {term.name})"
                    )
    except GrammarError as exc:
        report.checks.append(Check("markers", False, f"another registered grammar does not compile: {exc}"))
        return
    problems += _language_fence_openers(compiled)
    if problems:
        report.checks.append(Check("markers", False, "\n".join(problems)))
    else:
        note = f" ({shared} shared on purpose, with the reason written)" if shared else ""
        report.checks.append(Check("markers", True, f"{len(mine)} written here, none written by another grammar{note}"))


#: the fences whose language says "calls" (``_tagged.lark``): a family may open a block on them
_CALL_FENCES = ("FENCE_TOOL_CALL_OPEN", "FENCE_TOOL_CODE_OPEN")
_FENCE_LINE = re.compile(r" {0,3}(?:`{3,256}|~{3,256})([^\n]{0,256})\n?")


def _language_fence_openers(compiled: CompiledGrammar) -> list[str]:
    """Openers of rule ``start`` that would open on a fence whose info string names a
    language: that fence holds examples, never calls (DESIGN §6), and an opener is tried
    before a fence is protected.  The call fences (``_tagged``'s FENCE_TOOL_CALL_OPEN and
    FENCE_TOOL_CODE_OPEN) may."""
    tagged = registry.piece("_tagged")
    call_fences = [tagged[name].pattern for name in _CALL_FENCES]
    out = []
    for term in compiled.openers.get("start", ()):
        if term.pattern is None:
            continue
        for example in samples(term.pattern.source):
            m = _FENCE_LINE.fullmatch(example)
            if m is None or not m.group(1).strip() or not term.pattern.regex.fullmatch(example):
                continue
            if any(fence is not None and fence.regex.fullmatch(example) for fence in call_fences):
                continue
            out.append(
                f"{term.name} opens a block on {example!r}, a fence whose info string names a language: such a "
                'fence holds examples, never calls (docs/authoring.md, "Fences"); open calls with '
                "'%import ._tagged (FENCE_TOOL_CALL_OPEN)', or read a fenced payload only inside a block or "
                "as the whole reply (a 'reply' rule)"
            )
            break
    return out


def _overlap(a: Terminal, b: Terminal) -> str | None:
    """A spelling both markers write (one of the spellings each pattern lists, matched by
    both), or None.  An open class (a name, a namespace) lists only its first character, so
    ``<seed:tool_call>`` is not a spelling of ``<NS:tool_call>``; ``<tool_call>`` is one of
    ``<[|]{0,3}tool[_-]?call>``."""
    assert a.pattern is not None and b.pattern is not None
    if not _folded(a.pattern.source) & _folded(b.pattern.source):
        return None
    for example in samples(a.pattern.source) + samples(b.pattern.source):
        common = example.casefold() in _folded(a.pattern.source) and example.casefold() in _folded(b.pattern.source)
        if common and a.pattern.regex.fullmatch(example) and b.pattern.regex.fullmatch(example):
            return example
    return None


def _is_marker(term: Terminal, compiled: CompiledGrammar | None) -> bool:
    """Markup rather than payload: a terminal with a role (an opener, a closer, furniture,
    a reasoning wrapper, a quote) or one whose every spelling has a character that is not
    a letter, digit, ``_ . -`` or white space (``<arg_key>``, ``[ARGS]``, ``to=``)."""
    name = term.name
    if name.endswith("_CLOSE") or name.startswith(("FURNITURE_", "REASONING_", "QUOTE_", "SOFT_")):
        return True
    if compiled is not None and any(term in openers for openers in compiled.openers.values()):
        return True
    assert term.pattern is not None
    return all(any(not (ch.isalnum() or ch in "_.-" or ch.isspace()) for ch in s) for s in samples(term.pattern.source))


@lru_cache(maxsize=4096)
def _folded(source: str) -> frozenset[str]:
    return frozenset(t.casefold() for t in samples(source))


# -- corpus ------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Update:
    """Which expectations ``--update`` writes: cases with none yet, and cases by title."""

    new: bool = False
    titles: frozenset[str] = frozenset()


def _check_corpus(
    report: Report, path: Path, compiled: CompiledGrammar, cases: list[Case], corpus: Path, update: _Update = _Update()
) -> None:
    from .corpus import MODES, case_problem

    if not cases:
        empty = "no cases: write at least one (see docs/authoring.md)"
        report.checks.append(Check(f"corpus {corpus.name}", False, empty))
        return
    failed = 0
    with _trial(path, compiled):
        if update.new or update.titles:
            _write_expectations(report, cases, corpus, update)
        for case in cases:
            for mode in MODES:
                try:
                    problem = case_problem(case, mode)
                except ToolDialectError as exc:
                    problem = str(exc)
                if problem is not None:
                    failed += 1
                    if mode == "batch" and problem.startswith(("no expected", "result differs")):
                        how = "--update" if case.expected is None else f"--update {json.dumps(case.title)}"
                        problem = problem.replace(
                            "; it reads as:", f" (when it reads right, {how} writes it); it reads as:", 1
                        )
                    report.checks.append(Check(f"case {case.title!r} (line {case.line}, {mode})", False, problem))
                    if mode == "batch":
                        break  # the stream checks compare with a batch result that is already wrong
    n = len(cases)
    detail = f"{n} case{'s' * (n != 1)}, four ways each"
    report.checks.append(Check(f"corpus {corpus.name}", failed == 0, detail + (f"; {failed} failed" if failed else "")))


def _write_expectations(report: Report, cases: list[Case], corpus: Path, update: _Update) -> None:
    """Write what the grammar reads as the expected result of the approved cases (one report
    line each); an expectation that differs is rewritten only for a case named by title."""
    from .corpus import canonical, options, set_expectations, summary
    from .stream import parse

    written: dict[int, dict[str, Any]] = {}
    for i, case in enumerate(cases):
        named = case.title in update.titles
        if not named and not (update.new and case.expected is None):
            continue
        try:
            got = summary(parse(case.text, **options(case)))
        except ToolDialectError as exc:
            report.checks.append(Check(f"update {case.title!r} (line {case.line})", False, f"not written: {exc}"))
            continue
        if got == case.expected:
            report.checks.append(
                Check(f"update {case.title!r} (line {case.line})", True, "unchanged: the expectation already says this")
            )
            continue
        was = (
            "written (it had none); review it"
            if case.expected is None
            else ("REWRITTEN; it was:\n" + canonical(case.expected) + "\nnow")
        )
        report.checks.append(Check(f"update {case.title!r} (line {case.line})", True, f"{was}:\n{canonical(got)}"))
        written[i] = got
        case.expected = got
    if written:
        set_expectations(corpus, written)


@contextmanager
def _trial(path: Path, compiled: CompiledGrammar) -> Iterator[None]:
    """The checked family in the registry (with its compiled grammar) while the corpus runs."""
    reg = registry._load_registry()
    existing = reg.get(path.stem)
    if existing is not None and existing.path.resolve() == path.resolve():
        yield
        return
    source = registry.Source("trial", path.parent, f"grammar check {path}")
    fam = registry.Family(path.stem, path, compiled.header, compiled, source)
    with registry._changing() as current:
        current[fam.name] = fam
    try:
        yield
    finally:
        with registry._changing() as current:
            if current.get(fam.name) is fam:
                del current[fam.name]
