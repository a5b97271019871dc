"""Linear time: every regular expression over model text is audited, and degenerate inputs
cost work that grows linearly (docs/security.md).

The growth tests measure the same thing two ways, each between an input of size n and
one of size 4n in the same run: Python-level work (function calls, deterministic) and
CPU time (the best of a few runs).  Linear work gives a ratio near 4; a step that reads
the accumulated text again per delta gives 16.  CPU time is what catches a quadratic
step hidden inside one C call (a regex re-scan, a string copy); it is compared, never
held to a wall-clock limit.
"""

from __future__ import annotations

import ast
import gc
import sys
import time

import pytest
from support import ROOT, count_calls, sweep

import tooldialect as td
from tooldialect.catalog import OPEN, catalog_for
from tooldialect.families import piece
from tooldialect.grammar import MAX_MARKER_WIDTH
from tooldialect.lalr import LRParser, Tok

sys.path.insert(0, str(ROOT / "fuzz"))

from seeds import samples

try:  # Python 3.11+
    import re._constants as _c
    import re._parser as _p
except ImportError:  # pragma: no cover - Python 3.10
    import sre_constants as _c  # type: ignore[no-redef]
    import sre_parse as _p  # type: ignore[no-redef]

SRC = ROOT / "src" / "tooldialect"
SECURITY = ROOT / "docs" / "security.md"
UNBOUNDED = _c.MAXREPEAT

# -- the regex audit -----------------------------------------------------------------------------


def _items(sub):
    return list(sub.data if hasattr(sub, "data") else sub)


def _chars(items) -> object:
    """A predicate over characters for what an item sequence can begin with (None: anything)."""
    tests = []
    for op, av in items:
        if op is _c.LITERAL:
            c = chr(av)
            tests.append(lambda ch, c=c: ch == c)
            return tests
        if op is _c.NOT_LITERAL:
            c = chr(av)
            tests.append(lambda ch, c=c: ch != c)
            return tests
        if op is _c.ANY:
            return None
        if op is _c.IN:
            rx = __import__("re").compile(_class_source(av))
            tests.append(lambda ch, rx=rx: bool(rx.match(ch)))
            return tests
        if op in (_c.MAX_REPEAT, _c.MIN_REPEAT):
            inner = _chars(_items(av[2]))
            if inner is None:
                return None
            tests.extend(inner)
            if av[0] > 0:
                return tests
            continue
        if op is _c.SUBPATTERN:
            inner = _chars(_items(av[3]))
            if inner is None:
                return None
            tests.extend(inner)
            return tests
        if op is _c.BRANCH:
            for alt in av[1]:
                inner = _chars(_items(alt))
                if inner is None:
                    return None
                tests.extend(inner)
            return tests
        if op in (_c.AT, _c.ASSERT, _c.ASSERT_NOT):
            continue
        return None
    return tests


def _class_source(av) -> str:
    parts, neg = [], ""
    for iop, iav in av:
        if iop is _c.NEGATE:
            neg = "^"
        elif iop is _c.LITERAL:
            parts.append(f"\\x{iav:02x}" if iav < 256 else f"\\u{iav:04x}")
        elif iop is _c.RANGE:
            parts.append(f"\\u{iav[0]:04x}-\\u{iav[1]:04x}" if iav[1] < 0x10000 else f"\\u{iav[0]:04x}-\\U{iav[1]:08x}")
        elif iop is _c.CATEGORY:
            parts.append(
                {
                    _c.CATEGORY_DIGIT: r"\d",
                    _c.CATEGORY_NOT_DIGIT: r"\D",
                    _c.CATEGORY_SPACE: r"\s",
                    _c.CATEGORY_NOT_SPACE: r"\S",
                    _c.CATEGORY_WORD: r"\w",
                    _c.CATEGORY_NOT_WORD: r"\W",
                }[iav]
            )
    return "[" + neg + "".join(parts) + "]"


_PROBE = [chr(c) for c in range(0x20, 0x7F)] + ["\t", "\n", "\r", "\u00a0", "é", "｜", "▁", "中"]


def _overlap(a, b) -> bool:
    if a is None or b is None:
        return True
    return any(any(t(ch) for t in a) and any(t(ch) for t in b) for ch in _PROBE)


def _nullable(item) -> bool:
    op, av = item
    if op in (_c.MAX_REPEAT, _c.MIN_REPEAT):
        return av[0] == 0 or all(_nullable(i) for i in _items(av[2]))
    if op is _c.SUBPATTERN:
        return all(_nullable(i) for i in _items(av[3]))
    if op is _c.BRANCH:
        return any(all(_nullable(i) for i in _items(alt)) for alt in av[1])
    return op in (_c.AT, _c.ASSERT, _c.ASSERT_NOT)


def _unbounded(item) -> bool:
    op, av = item
    if op in (_c.MAX_REPEAT, _c.MIN_REPEAT):
        return av[1] == UNBOUNDED
    if op is _c.SUBPATTERN:
        return any(_unbounded(i) for i in _items(av[3]))
    if op is _c.BRANCH:
        return any(any(_unbounded(i) for i in _items(alt)) for alt in av[1])
    return False


def backtracking_risks(pattern: str) -> list[str]:
    """Shapes that make a backtracking engine super-linear on some input: an unbounded
    repetition of something that itself repeats or branches, and two unbounded repetitions
    that can read the same characters with only optional items between them."""
    risks: list[str] = []
    _seq_risks(_items(_p.parse(pattern, 0)), risks)
    return risks


def _seq_risks(items, risks: list[str]) -> None:
    pending = []  # unbounded repetitions reachable from here through nullable items only
    for item in items:
        op, av = item
        if op in (_c.MAX_REPEAT, _c.MIN_REPEAT) and av[1] == UNBOUNDED:
            inner = _items(av[2])
            while len(inner) == 1 and inner[0][0] is _c.SUBPATTERN:
                inner = _items(inner[0][1][3])
            if any(_unbounded(i) or (i[0] in (_c.MAX_REPEAT, _c.MIN_REPEAT) and i[1][1] > 1) for i in inner):
                risks.append("nested quantifier")
            for branch in (i for i in inner if i[0] is _c.BRANCH):
                alts = [_items(a) for a in branch[1][1]]
                starts = [_chars(a) for a in alts]
                empty = sum(1 for a in alts if all(_nullable(i) for i in a))
                if empty > 1 or any(_overlap(x, y) for k, x in enumerate(starts) for y in starts[k + 1 :]):
                    risks.append("repeated alternation whose branches overlap")
                    break
        first = _chars([item])
        if _unbounded(item) and any(_overlap(p, first) for p in pending):
            risks.append("adjacent unbounded repetitions over the same characters")
        if op is _c.SUBPATTERN:
            _seq_risks(_items(av[3]), risks)
        elif op is _c.BRANCH:
            for alt in av[1]:
                _seq_risks(_items(alt), risks)
        elif op in (_c.MAX_REPEAT, _c.MIN_REPEAT):
            _seq_risks(_items(av[2]), risks)
        if not _nullable(item):
            pending = []
        if _unbounded(item):
            pending.append(_chars([item]))


_RE_CALLS = {"compile", "match", "search", "fullmatch", "sub", "subn", "split", "finditer", "findall"}
#: Files whose regexes never see model text (grammar headers, documentation tables).
NOT_MODEL_TEXT = {"grammar.py", "header.py", "coverage.py", "_docs.py"}
#: Regexes built at run time, by file and function: each is explained in docs/security.md.
DYNAMIC = {
    ("watches.py", "<module>"): "a string's plain run for each quote character: one negated class",
    ("fences.py", "_closer"): "a fence's closing line: bounded run of the fence character",
    ("fences.py", "step_fence"): "a fence's closing line: bounded run of the fence character",
    ("loops.py", "loop_rx"): "an alternation of marker terminals (bounded)",
    ("loops.py", "_loop_pattern"): "an alternation of marker terminals (bounded), their common first character once",
    ("values.py", "stops"): "an alternation of marker terminals (bounded)",
    ("catalog.py", "closers"): "an alternation of marker terminals (bounded)",
    ("catalog.py", "recovery"): "an alternation of marker terminals (bounded)",
    ("catalog.py", "_build"): "an alternation of marker terminals",
    ("markerpattern.py", "_char_class"): "one class of the characters markers begin with (Leads)",
    ("names.py", "line_starts"): "blanks, then one class of the toolset's first characters or the end",
    ("catalog.py", "_lead"): "a marker's first character with a one-character lookahead class, per first character",
    ("markers.py", "analyse"): "a grammar terminal, audited with the terminals",
    ("markers.py", "_likely"): "a grammar terminal, matched once against its own spelling",
    ("tool_results.py", "__init__"): "the envelope's tag terminal (bounded), with ASCII case folding",
    ("openai.py", "__init__"): "the caller's id pattern (Ids(valid=...)), applied to call ids",
    ("jsoncheck.py", "_search"): "a tool schema's pattern / patternProperties, applied as jsonschema applies them",
    (
        "_reply.py",
        "text_value",
    ): "a grammar's marker pattern matched against another marker's: grammars, never model text",
    ("_docs.py", "pieces_table"): "a shared piece's name in grammar files: never model text",
    ("_template.py", "_opened"): "a reasoning terminal, over a chat template's rendering: never model text",
    ("_template.py", "_reasoning_keys"): "a reasoning terminal, over a chat template's rendering: never model text",
}


def regex_sites() -> tuple[list[tuple[str, int, str]], set[tuple[str, str]]]:
    """Every ``re`` call in src/: (file, line, pattern) for constant patterns, and the
    (file, function) of every pattern built at run time."""
    constant, dynamic = [], set()
    for path in sorted(SRC.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        scopes = [(n, n.name) for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        for node in ast.walk(tree):
            if not (
                isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _RE_CALLS
            ):
                continue
            if not (isinstance(node.func.value, ast.Name) and node.func.value.id == "re") or not node.args:
                continue
            arg = node.args[0]
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                constant.append((path.name, node.lineno, arg.value))
            else:
                scope = "<module>"
                for fn, name in scopes:
                    if fn.lineno <= node.lineno <= (fn.end_lineno or fn.lineno):
                        scope = name
                dynamic.add((path.name, scope))
    return constant, dynamic


def test_no_regex_over_model_text_can_backtrack_super_linearly():
    constant, _ = regex_sites()
    assert len(constant) > 30
    bad = [
        f"{f}:{line}: {pattern!r}: {', '.join(risks)}"
        for f, line, pattern in constant
        if f not in NOT_MODEL_TEXT and (risks := backtracking_risks(pattern))
    ]
    assert not bad, "\n".join(bad)


def test_every_regex_built_at_run_time_is_audited():
    _, dynamic = regex_sites()
    assert dynamic == set(DYNAMIC), "audit the new run-time regexes in docs/security.md and list them here"
    doc = SECURITY.read_text(encoding="utf-8")
    for f, fn in DYNAMIC:
        assert f"{f}" in doc and (fn == "<module>" or fn in doc), (f, fn)


def test_the_audit_finds_the_shapes_it_looks_for():
    assert backtracking_risks(r"(a+)+b") == ["nested quantifier"]
    assert backtracking_risks(r"(?:a|a)*b") == ["repeated alternation whose branches overlap"]
    assert backtracking_risks(r'(?:"|x")*z') == []
    # the fence pattern the repair ladder used to have: spaces, an optional word, spaces
    assert backtracking_risks(r"`{3,}[ \t]*[A-Za-z]*[ \t]*\n") == [
        "adjacent unbounded repetitions over the same characters"
    ]
    assert backtracking_risks(r"\s*(`{3,}|~{3,})[ \t]*(?:[A-Za-z0-9_+.-]+[ \t]*)?\r?\n") == []
    assert backtracking_risks(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?") == []


def _terminals():
    seen = {}
    for fam in td.families.all_families():
        g = fam.grammar
        for term in g.terminals.values():
            if term.pattern is not None:
                seen.setdefault(term.pattern.source, (g.name, term, term in g.ignore))
    for path in sorted(td.families.grammar_dir().glob("_*.lark")):  # shared pieces
        for term in piece(path.stem).values():
            if term.pattern is not None:
                seen.setdefault(term.pattern.source, (path.stem, term, False))
    return list(seen.values())


def test_every_grammar_terminal_is_bounded_and_cannot_backtrack_super_linearly():
    for family, term, ignored in _terminals():
        pat = term.pattern
        assert not backtracking_risks(pat.source), (family, term.name, pat.source)
        # skipped between tokens, white space may be one character class repeated; every
        # other terminal is bounded
        one_class = ignored and len(_items(_p.parse(pat.source, 0))) == 1
        assert one_class or pat.max_width <= MAX_MARKER_WIDTH, (family, term.name)


# -- growth ------------------------------------------------------------------------------------------

#: Linear work gives a ratio near 4 between n and 4n, a quadratic step 16.
CALLS_BOUND = 4.8
TIME_BOUND = 8.0
#: The shortest small run timed: below it the ratio is noise.
MIN_CPU = 0.02
#: The quick tier (make test) times inputs a quarter of the size the full tier times.
SCALE = sweep(1, 4)


def _cpu(fn, repeat: int = 3) -> float:
    """The best CPU time of ``repeat`` runs, with the collector off (as ``timeit`` times): in a
    process that ran many tests before, a collection walks every object those left behind."""
    best = float("inf")
    gc.collect()
    gc.disable()
    try:
        for _ in range(repeat):
            t0 = time.process_time()
            fn()
            best = min(best, time.process_time() - t0)
    finally:
        gc.enable()
    return max(best, 1e-6)


def _batch(text: str, **opts) -> None:
    td.parse(text, **opts)


def _stream(step: int):
    def run(text: str, **opts) -> None:
        s = td.ToolStream(**opts)
        for i in range(0, len(text), step):
            s.feed(text[i : i + step])
        s.close()

    return run


def assert_linear(make, n: int, run, *, calls: bool = True, repeat: int = 3, **opts) -> None:
    n = max(1, n // SCALE)
    small = make(n)
    run(small, **opts)  # grammars compiled, caches warm
    t_small = _cpu(lambda: run(small, **opts), repeat)
    # A run of a millisecond or two is mostly noise (a page fault, a cache miss): grow the
    # input until the small run is long enough to time.
    for _ in range(3):
        if t_small >= MIN_CPU:
            break
        n *= 4
        small = make(n)
        t_small = _cpu(lambda small=small: run(small, **opts), repeat)
    big = make(4 * n)
    t_big = _cpu(lambda: run(big, **opts), repeat)
    if t_big > TIME_BOUND * t_small:
        # a busy machine can stall one sample: time both again, more carefully, before
        # calling it growth (quadratic work is 16×, and stays so when measured again)
        t_small = _cpu(lambda: run(small, **opts), 2 * repeat)
        t_big = _cpu(lambda: run(big, **opts), 2 * repeat)
    assert t_big <= TIME_BOUND * t_small, f"CPU time grew {t_big / t_small:.1f}× for 4× the input"
    if calls:
        c_small = count_calls(lambda: run(small, **opts))
        c_big = count_calls(lambda: run(big, **opts))
        assert c_big <= CALLS_BOUND * c_small, f"work grew {c_big / c_small:.1f}× for 4× the input"


PROSE = "The quick brown fox jumps over the lazy dog; it reads the file and writes a summary. "


def prose(n: int) -> str:
    return (PROSE * (n // len(PROSE) + 1))[:n]


MB = 1 << 20


def test_a_megabyte_of_prose():
    assert_linear(prose, MB // 4, _batch, calls=False)
    assert_linear(prose, 16_000, _stream(64))


LINE_TOOLS = td.Toolset([td.Tool(name="shell"), td.Tool(name="echo")])


def lines(n: int) -> str:
    """Prose lines with a GLM line on its own every tenth line (read against a toolset, each
    line start is looked at): prose stops at every line break, and searches each line once."""
    block = "".join("shell/command>ls -la\n" if i == 9 else PROSE.strip() + "\n" for i in range(10))
    return (block * (n // len(block) + 1))[:n]


def test_a_megabyte_of_lines_read_against_a_toolset():
    assert_linear(lines, MB // 4, _batch, calls=False, tools=LINE_TOOLS)
    assert_linear(lines, 16_000, _stream(64), tools=LINE_TOOLS)
    assert_linear(lambda n: "\n" * n, MB // 4, _batch, calls=False, tools=LINE_TOOLS)


def test_a_megabyte_of_less_than_signs():
    assert_linear(lambda n: "<" * n, MB // 4, _batch, calls=False, repeat=2)
    assert_linear(lambda n: "<" * n, 2_000, _stream(64), repeat=2)


def test_fifty_thousand_partial_markers():
    assert_linear(lambda n: "<tool_" * n, 50_000 // 4, _batch, calls=False)
    assert_linear(lambda n: "<tool_" * n, 1_000, _stream(64))


def _openers() -> list[tuple[str, str]]:
    """One string for every opener of every family (from the grammars)."""
    out = []
    for mk in catalog_for(None).markers:
        if mk.role == OPEN:
            got = samples(mk.terminal.pattern.source, 1)
            if got:
                out.append(("/".join(g.name for g in mk.grammars) + ":" + mk.terminal.name, got[0]))
    return sorted(out)  # the catalog lists markers of one width in no fixed order


OPENERS = _openers()


def test_every_family_has_an_opener_sample():
    covered = {name for key, _ in OPENERS for name in key.split(":")[0].split("/")}
    with_openers = {f.name for f in td.families.all_families() if f.grammar.openers.get("start")}
    assert with_openers <= covered


@pytest.mark.exhaustive(every=4)
@pytest.mark.parametrize("opener", [s for _, s in OPENERS], ids=[k for k, _ in OPENERS])
def test_one_hundred_fifty_unclosed_openers(opener):
    unit = opener + ' {"name": "f", "arguments": {"a": "' + prose(120)
    make = lambda n: unit * n  # noqa: E731
    for run in (_batch, _stream(64)):
        c_small = count_calls(lambda run=run: run(make(150 // 4)))
        c_big = count_calls(lambda run=run: run(make(150)))
        assert c_big <= CALLS_BOUND * c_small, f"work grew {c_big / c_small:.1f}× for 4× the openers"


def test_unclosed_openers_of_every_family_together():
    units = "".join(s + ' {"name": "f", "arguments": {"a": "' + prose(120) for _, s in OPENERS)
    assert_linear(lambda n: units * n, 150 // 4 // len(OPENERS) + 1, _batch, calls=False)
    assert_linear(lambda n: units * n, 150 // 4 // len(OPENERS) + 1, _stream(64), calls=False)


@pytest.mark.parametrize(
    "make",
    [
        lambda n: "[" * n,
        lambda n: "{" * n,
        lambda n: '<tool_call>{"name": "f", "arguments": ' + "[" * n,
        lambda n: "[f(a=" + "[" * n,
        lambda n: "<function=f><parameter=x>" + "[" * n,
    ],
    ids=["bare list", "bare object", "json payload", "python literal", "text value"],
)
@pytest.mark.exhaustive(every=3)
def test_ten_thousand_deep_brackets(make):
    assert_linear(make, 10_000 // 4, _batch)
    assert_linear(make, 10_000 // 4, _stream(64))


def test_the_dsml_loop_is_linear_in_tests_test_repetition_loop():
    """The 244 KB DSML loop is tests/test_repetition_loop.py's (batch and 7-character deltas)."""
    assert (ROOT / "tests" / "test_repetition_loop.py").read_text(encoding="utf-8").count("count_calls") >= 2


def test_an_opener_repeated_in_one_block_and_a_long_literal_list():
    """A grammar list (``X+``) of n items used to copy itself on every item: n²/2 copies."""
    assert_linear(lambda n: "<tool_call>" * n, 5_000, _batch)
    assert_linear(lambda n: "<|python_start|>[f(a=" + "1 " * n + ")]", 2_500, _batch)


@pytest.mark.parametrize(
    "make",
    [
        lambda n: "`" * n,
        lambda n: "~" * n,
        lambda n: "```\n" + "`" * n,
        lambda n: "`code\n" + " " * n,
        lambda n: "`code " + "`" * n,
    ],
    ids=["backticks", "tildes", "fence closing run", "inline code then white space", "inline code then a long run"],
)
@pytest.mark.exhaustive(every=3)
def test_runs_that_are_held_while_undecided_are_read_once(make):
    assert_linear(make, 50_000, _stream(7), calls=False)


@pytest.mark.parametrize(
    "opener",
    [
        "<tool_call>\n<function=f>\n<parameter=x>\nabc</parameter> and then ",
        '<function_calls><invoke name="f"><parameter name="x">abc</parameter> then ',
        "<tool_call>f\n<arg_key>k</arg_key>\n<arg_value>v</arg_value> then ",
    ],
    ids=["qwen3_coder", "invoke_xml", "glm"],
)
def test_a_value_after_a_closer_that_may_end_it_is_not_held_in_the_window(opener):
    """A closer followed by prose may still end the value if the text ends with nothing
    better (docs/decisions.md); that position used to pin the window, which then grew (and
    was copied) with every delta up to max_block_chars."""
    text = opener + "word " * 4_000
    s = td.ToolStream()
    for i in range(0, len(text), 16):
        s.feed(text[i : i + 16])
        assert len(s._engine.window.win) <= catalog_for(None).max_width
    assert _collect(text, 16) == (td.parse(text).text, [c.name for c in td.parse(text).calls])


def test_a_run_of_more_than_256_backticks_is_text_at_every_chunking():
    for text in ("`" * 300 + "code" + "`" * 300, "```\n" + "`" * 300 + '\n<tool_call>{"name": "f"}</tool_call>'):
        batch = td.parse(text)
        for step in (1, 7, 64):
            events = _collect(text, step)
            assert events == (batch.text, [c.name for c in batch.calls])
    assert td.parse("`" * 257 + '<tool_call>{"name": "f"}</tool_call>' + "`" * 257).calls != []


def _collect(text: str, step: int):
    from tooldialect.stream import collect

    s = td.ToolStream()
    events = []
    for i in range(0, len(text), step):
        events += s.feed(text[i : i + step])
    events += s.close()
    got = collect(events)
    return got.text, [c.name for c in got.calls]


def test_restoring_a_parser_state_gives_back_the_list_items_read_since():
    g = td.families.get("hermes").grammar
    p = LRParser(g.tables, "start")
    tok = lambda i: Tok("TOOL_CALL_OPEN", "<tool_call>", i, i + 11)  # noqa: E731
    for i in range(3):
        assert p.feed(tok(i * 11))
    saved = (list(p.stack), list(p.values))
    lists = [v for v in p.values if getattr(v, "name", "").startswith("_")]
    before = [list(v.children) for v in lists]
    for i in range(3, 6):
        assert p.feed(tok(i * 11))
    p.restore(*saved)
    assert [list(v.children) for v in lists] == before
    assert p.feed(tok(66))


def test_the_repair_ladder_reads_a_fence_in_linear_time():
    """The fence pattern it used to have backtracked on a line of spaces: n² steps."""
    from tooldialect.repair import strip_fence

    for make in (
        lambda n: "```" + " " * n + "x",
        lambda n: "```json\n" + "a" * n + " " * n,
        lambda n: "\n" * n + "```",
    ):
        assert_linear(make, 250_000, strip_fence, calls=False)
    assert strip_fence('```json\n{"a": 1}\n```') == '{"a": 1}'
    assert strip_fence("~~~\r\n[1]\r\n  ~~~  ") == "[1]"
    assert strip_fence("````\nx\n```") is None and strip_fence("``` a b\nx\n```") is None
