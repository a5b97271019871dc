"""Seed corpora and marker dictionaries for the fuzz harnesses, generated, never hand-copied.

* Seeds come from the golden vectors in ``tests/corpus/``: every case's model text, in
  the input layout each harness reads (see :mod:`harnesses`), plus what the library
  itself makes of those texts (the argument JSON of the calls, the values of the
  Python calls) for the harnesses that take a payload or a value.
* Dictionaries hold every marker of every family, taken from the compiled grammars:
  a literal terminal as written, a pattern terminal as a few strings that match it
  (:func:`samples`), so that nothing here repeats a marker by hand.

``python fuzz/seeds.py OUT`` writes ``OUT/<harness>/`` seed files and ``OUT/dicts/``.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import random
import re
import sys
from collections.abc import Iterator
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
for _p in (ROOT / "src", ROOT / "tests", HERE):
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))

import harnesses
from support import all_cases, options

import tooldialect as td
from tooldialect.families import piece

try:  # Python 3.11+
    import re._constants as _c
    import re._parser as _p
except ImportError:  # pragma: no cover - Python 3.10
    import sre_constants as _c  # type: ignore[no-redef]
    import sre_parse as _p  # type: ignore[no-redef]

__all__ = ["dictionary", "family_markers", "samples", "seed_corpus", "write_all"]

# -- strings that match a terminal ------------------------------------------------------------

_MAX_SAMPLES = 6
_PICK = "a _-0<>|\t\n.:=\"'/x"  # characters tried for a negated class or '.'


def samples(regex: str, limit: int = _MAX_SAMPLES) -> list[str]:
    """A few short strings the pattern matches whole: each alternative, the fewest repeats
    (and one more), the first character of each class.  Only verified matches are kept."""
    rx = re.compile(regex)
    out: list[str] = []
    for s in itertools.islice(_seq(_p.parse(regex, 0), False), 64):
        if s not in out and rx.fullmatch(s):
            out.append(s)
            if len(out) >= limit:
                break
    return out


def _seq(items, ic: bool) -> Iterator[str]:
    items = list(items.data if hasattr(items, "data") else items)
    if not items:
        yield ""
        return
    first = list(itertools.islice(_item(items[0], ic), 8))
    for head in first:
        for tail in itertools.islice(_seq(items[1:], ic), 8):
            yield head + tail


def _item(item, ic: bool) -> Iterator[str]:
    op, av = item
    if op is _c.LITERAL:
        yield chr(av)
    elif op is _c.NOT_LITERAL or op is _c.ANY:
        yield from (ch for ch in _PICK if op is _c.ANY or ord(ch) != av)
    elif op is _c.IN:
        yield from _class(av)
    elif op is _c.SUBPATTERN:
        yield from _seq(av[3], ic or bool(av[1] & _c.SRE_FLAG_IGNORECASE))
    elif op is _c.BRANCH:
        for alt in av[1]:
            yield from itertools.islice(_seq(alt, ic), 4)
    elif op in (_c.MAX_REPEAT, _c.MIN_REPEAT):
        lo, hi, sub = av
        counts = [lo] + ([lo + 1] if hi > lo else [])
        for n in counts:
            for one in itertools.islice(_seq(sub, ic), 2):
                yield one * n
    elif op is _c.AT:
        yield ""


def _class(av) -> Iterator[str]:
    negate = any(iop is _c.NEGATE for iop, _ in av)
    members = [(iop, iav) for iop, iav in av if iop is not _c.NEGATE]
    pattern = re.compile("[" + ("^" if negate else "") + "".join(_class_src(m) for m in members) + "]")
    if not negate:
        for iop, iav in members:
            if iop is _c.LITERAL:
                yield chr(iav)
            elif iop is _c.RANGE:
                yield chr(iav[0])
    yield from (ch for ch in _PICK if pattern.fullmatch(ch))


def _class_src(member) -> str:
    iop, iav = member
    if iop is _c.LITERAL:
        return re.escape(chr(iav))
    if iop is _c.RANGE:
        return re.escape(chr(iav[0])) + "-" + re.escape(chr(iav[1]))
    return {
        _c.CATEGORY_DIGIT: r"\d",
        _c.CATEGORY_NOT_DIGIT: r"\D",
        _c.CATEGORY_SPACE: r"\s",
        _c.CATEGORY_NOT_SPACE: r"\S",
        _c.CATEGORY_WORD: r"\w",
        _c.CATEGORY_NOT_WORD: r"\W",
    }[iav]


# -- markers per family -------------------------------------------------------------------------


def family_markers() -> dict[str, list[tuple[str, str]]]:
    """Every marker terminal of every family, as (terminal name, matching string) pairs;
    ``_reasoning`` holds the wrappers every family shares."""
    out: dict[str, list[tuple[str, str]]] = {}
    for fam in td.families.all_families():
        out[fam.name] = _terminal_strings(fam.grammar.terminals.values())
    out["_reasoning"] = _terminal_strings(piece("_reasoning").values())
    return out


def _terminal_strings(terms) -> list[tuple[str, str]]:
    got: list[tuple[str, str]] = []
    for term in terms:
        pat = term.pattern
        if pat is None:
            continue
        strings = [pat.literal] if pat.literal is not None else samples(pat.source)
        got.extend((term.name, s) for s in strings if s and (term.name, s) not in got)
    return got


def dictionary(families: list[str] | None = None) -> list[str]:
    """libFuzzer dictionary lines: every marker of these families (all by default)."""
    markers = family_markers()
    chosen = list(markers) if families is None else [*families, "_reasoning"]
    lines, seen = [], set()
    for fam in chosen:
        for name, s in markers.get(fam, []):
            if s in seen:
                continue
            seen.add(s)
            lines.append(f'{fam}_{name.lower()}="{_dict_escape(s)}"')
    return lines


def _dict_escape(s: str) -> str:
    out = []
    for b in s.encode("utf-8"):
        ch = chr(b)
        if ch in '"\\' or not (32 <= b < 127):
            out.append(f"\\x{b:02x}")
        else:
            out.append(ch)
    return "".join(out)


# -- seed corpora ---------------------------------------------------------------------------------


def seed_corpus(harness: str) -> list[bytes]:
    """The seed inputs of one harness, from the golden vectors."""
    return list(dict.fromkeys(_SEEDS[harness]()))


def _toolset_index(case) -> int:
    name = case.attrs.get("tools")
    return harnesses.TOOLSET_NAMES.index(name) + 1 if name in harnesses.TOOLSET_NAMES else 0


def _header(case) -> tuple[int, int, int]:
    """The family byte (the case's own family), the policy flags and the toolset byte of a case."""
    fams = td.families.names()
    policy = options(case).get("policy") or td.Policy()
    one = case.attrs.get("families", case.family).split(",")[0].strip()
    family = 2 * fams.index(one) + 1 if one in fams else 0
    return family, harnesses.policy_flags(policy), _toolset_index(case)


def _text_seeds() -> Iterator[bytes]:
    for i, case in enumerate(all_cases()):
        family, flags, tools = _header(case)
        # all families, then the case's own family; cuts drawn from the case number
        yield harnesses.text_input(case.text, 0, flags, tools, mode=i % 4, seed=i)
        yield harnesses.text_input(case.text, family, flags, tools, mode=(i + 1) % 4, seed=i + 1)


def _truncation_seeds() -> Iterator[bytes]:
    """Each case once, cut (``seed % (len + 1)``) inside the name of its first call, where a
    cut does the most damage, or in its middle."""
    for i, (case, result) in enumerate(_parsed_cases()):
        _family, flags, tools = _header(case)
        first = result.calls[0].name if result.calls else ""
        at = case.text.find(first) if first else -1
        cut = at + max(1, len(first) // 2) if at >= 0 else len(case.text) // 2
        yield harnesses.text_input(case.text, 0, flags, tools, mode=i % 4, seed=cut)


def _limits_seeds() -> Iterator[bytes]:
    """Each case once; the seed picks the limit (``LIMITS[seed % n]``) in turn."""
    for i, case in enumerate(all_cases()):
        _family, flags, tools = _header(case)
        yield harnesses.text_input(case.text, 0, flags, tools, mode=i % 4, seed=i)


def _reply_seeds() -> Iterator[bytes]:
    """The generator reads choices from bytes: seeded random bytes make varied replies."""
    for i in range(200):
        rng = random.Random(f"replies:{i}")
        yield rng.randbytes(rng.randint(16, 384))


def _parsed_cases() -> Iterator[tuple[object, td.ParseResult]]:
    for case in all_cases():
        yield case, td.parse(case.text, **options(case))


def _binding_seeds() -> Iterator[bytes]:
    for case, result in _parsed_cases():
        tools = _toolset_index(case)
        for call in result.calls:
            yield harnesses.binding_input(tools, 0, call.name, call.arguments_json)
            params = [
                (k, v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)) for k, v in call.arguments.items()
            ]
            yield harnesses.binding_input(tools, 1, call.name, params=params)


def _repair_seeds() -> Iterator[bytes]:
    for case, result in _parsed_cases():
        for call in result.calls:
            yield harnesses.repair_input(call.arguments_json, 0)
        text = case.text
        start, end = text.find("{"), text.rfind("}")
        if 0 <= start < end:
            yield harnesses.repair_input(text[start : end + 1], 1)


def _literal_seeds() -> Iterator[bytes]:
    for _case, result in _parsed_cases():
        for call in result.calls:
            for value in call.arguments.values():
                yield harnesses.literal_input(repr(value))  # the Python spelling of the value
    for case in all_cases():
        if case.family == "pythonic":
            for m in re.finditer(r"=([^,()\[\]]{1,60})", case.text):
                yield harnesses.literal_input(m.group(1))


def _envelope_seeds() -> Iterator[bytes]:
    for i, case in enumerate(all_cases()):
        # model text and markup as tool output: bodies that mention every protocol tag
        yield harnesses.envelope_input(f"tool_{case.family}", f"call_{i}", [case.text, "done"], status=i)
    # look-alikes that NFKC and case folding turn into protocol tags
    for i, body in enumerate(
        ["＜/tool_result＞", "﹤tool_call﹥", "＜/ＴＯＯＬ_ＲＥＳＵＬＴ>", "<tool_reſult>", "‹/tool_result>"]
    ):
        yield harnesses.envelope_input("ｔool＂", f"id＂{i}", [body, "x" + body], status=i)


def _roundtrip_seeds() -> Iterator[bytes]:
    for i, (_case, result) in enumerate(_parsed_cases()):
        for call in result.calls:
            yield harnesses.roundtrip_input(list(call.arguments.values()), dialect=i, name=i)


_SEEDS = {
    "parse": _text_seeds,
    "stream": _text_seeds,
    "detect": _text_seeds,
    "binding": _binding_seeds,
    "repair": _repair_seeds,
    "literal": _literal_seeds,
    "envelope": _envelope_seeds,
    "roundtrip": _roundtrip_seeds,
    "truncation": _truncation_seeds,
    "limits": _limits_seeds,
    "replies": _reply_seeds,
}


def write_all(out: Path) -> dict[str, int]:
    """Write every harness's seeds to ``out/<harness>/`` and the dictionaries to
    ``out/dicts/``; returns how many seeds each harness got."""
    counts = {}
    for name in harnesses.HARNESSES:
        folder = out / name
        folder.mkdir(parents=True, exist_ok=True)
        seeds = seed_corpus(name)
        for data in seeds:
            (folder / hashlib.sha1(data).hexdigest()).write_bytes(data)
        counts[name] = len(seeds)
    dicts = out / "dicts"
    dicts.mkdir(parents=True, exist_ok=True)
    (dicts / "all.dict").write_text("\n".join(dictionary()) + "\n", encoding="ascii")
    for fam in td.families.names():
        (dicts / f"{fam}.dict").write_text("\n".join(dictionary([fam])) + "\n", encoding="ascii")
    return counts


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else HERE / "corpus-out"
    for harness, n in write_all(target).items():
        print(f"{harness}: {n} seeds")
