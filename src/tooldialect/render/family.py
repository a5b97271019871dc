"""A call written back in a family's own syntax: ``td.families.get(f).render_call(call)``.

The grammar header says how (``// write …`` lines, docs/authoring.md "Writing calls
back"); :func:`compile_writer` reads those lines against the compiled grammar into a
:class:`~tooldialect.shape.Shape` plus the checks that keep writing faithful, and
:meth:`Writer.render` fills the shape with calls.  Every marker comes from a terminal of
the grammar, by name: this module names none.

Faithful means the family's parser reads the text back as the same call (given the
tool's schema, for the families whose values are text).  What a syntax cannot say is
refused with :class:`~tooldialect.errors.PolicyError`, never written approximately:
a raw name or key its terminal does not accept, a raw value that holds the text which
ends it, a P-Format blank value, a NaN.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from .. import families
from ..compiled_grammar import CompiledGrammar, Terminal
from ..coverage import WRITE_ITEM as _ITEM
from ..coverage import write_marker_problem
from ..errors import GrammarError, PolicyError
from ..shape import Arguments, Id, Index, Key, Lit, Name, Params, Part, Shape, Value
from ..toolset import Tool, Toolset
from .calls import _pformat, _python, _typescript, as_call, check_nesting
from .signatures import _py_literal, _py_name

__all__ = ["Writer", "compile_writer"]

#: The groups of a write line's item (grammar.WRITE_ITEM): a "quoted" JSON string, a TERMINAL, a slot and its option.
_STR, _TERM, _SLOT, _OPT = 1, 2, 3, 4
#: The ids an ``id`` slot without a terminal accepts: ``shape.Id``'s default pattern.
_DEFAULT_ID = re.compile(r"[A-Za-z0-9]{9}")
_SLOTS = {
    "call": ("name", "arguments", "params", "id", "index"),
    "param": ("key", "value"),
    "block": ("calls",),
    "sep": (),
}
#: The options of a slot (``name:json``), each spelled as its part's field takes it.
_ENCODINGS: dict[str, Literal["raw", "json"]] = {"raw": "raw", "json": "json"}
_ARGUMENT_SYNTAXES: dict[str, Literal["json", "python", "keywords", "typescript", "pformat"]] = {
    "json": "json",
    "python": "python",
    "keywords": "keywords",
    "typescript": "typescript",
    "pformat": "pformat",
}
_VALUE_SYNTAXES: dict[str, Literal["text", "json", "python"]] = {"text": "text", "json": "json", "python": "python"}
_OPTIONS: dict[str, Mapping[str, str]] = {
    "name": _ENCODINGS,
    "key": _ENCODINGS,
    "arguments": _ARGUMENT_SYNTAXES,
    "value": _VALUE_SYNTAXES,
    "id": {},
    "index": {},
    "params": {},
    "calls": {},
}


@dataclass(frozen=True)
class _Raw:
    """What a raw slot may not hold: its terminal (when named) and the text that ends it."""

    accept: re.Pattern[str] | None = None
    stops: tuple[str | re.Pattern[str], ...] = ()  # fixed text, or a terminal's own pattern


@dataclass
class Writer:
    """A family's shape and the checks that keep what it writes readable."""

    shape: Shape
    raw: dict[int, _Raw] = field(default_factory=dict)  # id(part) -> checks of a raw slot

    # -- writing -------------------------------------------------------------------------

    def render(self, calls: Iterable[Any], tools: Any = None) -> str:
        toolset = Toolset.coerce(tools) if tools is not None else None
        written = []
        for index, call in enumerate(calls):
            name, arguments, _exact = as_call(call)
            if arguments is None:
                raise PolicyError(
                    f"the arguments of {name!r} are not one JSON object; a call can only be written with one"
                )
            check_nesting(name, arguments)
            _check_finite(name, arguments)
            call_id = call.get("id") if isinstance(call, Mapping) else getattr(call, "id", None)
            written.append(self._call(name, arguments, call_id, index, toolset))
        if not written:
            raise PolicyError("no calls to write: pass at least one")
        if len(written) > 1 and not self.shape.parallel:
            raise PolicyError(f"{self.shape.family} writes one call per reply; got {len(written)} calls")
        shape = self.shape
        return self._fixed(shape.block_open) + shape.sep.join(written) + self._fixed(shape.block_close)

    def _fixed(self, parts: tuple[Part, ...]) -> str:
        return "".join(p.text for p in parts if isinstance(p, Lit))

    def _call(self, name: str, arguments: dict[str, Any], call_id: Any, index: int, tools: Toolset | None) -> str:
        fam = self.shape.family
        out = []
        for part in self.shape.call:
            if isinstance(part, Lit):
                out.append(part.text)
            elif isinstance(part, Name):
                out.append(
                    self.check_raw(part, name, f"the tool name {name!r}") if part.encoding == "raw" else _json(name)
                )
            elif isinstance(part, Arguments):
                out.append(self._arguments(part, name, arguments, tools))
            elif isinstance(part, Params):
                out.append(part.sep.join(self._param(part, name, k, v) for k, v in arguments.items()))
            elif isinstance(part, Id):
                if not isinstance(call_id, str) or not call_id:
                    raise PolicyError(f"{fam} writes the call's id: give {name!r} an id (parse never makes one up)")
                checks = self.raw.get(id(part))
                accept = checks.accept if checks is not None and checks.accept is not None else _DEFAULT_ID
                if accept.fullmatch(call_id) is None:
                    raise PolicyError(f"{fam} cannot write the id {call_id!r}: it must match {part.pattern}")
                out.append(call_id)
            elif isinstance(part, Index):
                out.append(str(index))
        return "".join(out)

    def _param(self, params: Params, name: str, key: str, value: Any) -> str:
        out = []
        for part in params.item:
            if isinstance(part, Lit):
                out.append(part.text)
            elif isinstance(part, Key):
                out.append(
                    self.check_raw(part, key, f"the parameter name {key!r}") if part.encoding == "raw" else _json(key)
                )
            elif isinstance(part, Value):
                if part.syntax == "json":
                    out.append(_json(value))
                elif part.syntax == "python":
                    out.append(_py_literal(value))
                else:
                    text = (
                        value
                        if isinstance(value, str)
                        else json.dumps(value, ensure_ascii=False, separators=(",", ":"))
                    )
                    out.append(self.check_raw(part, text, f"the value of {key!r}"))
        return "".join(out)

    def check_raw(self, part: Part, text: str, what: str) -> str:
        """``text`` as the raw slot ``part`` writes it, or PolicyError when the slot cannot
        hold it (its terminal refuses it, or it holds text that ends it)."""
        fam = self.shape.family
        checks = self.raw.get(id(part), _Raw())
        if checks.accept is not None and checks.accept.fullmatch(text) is None:
            raise PolicyError(f"{fam} cannot write {what}: it must match {checks.accept.pattern}")
        for stop in checks.stops:
            if isinstance(stop, str):
                found = stop if stop in text else None
            else:
                m = stop.search(text)
                found = m.group(0) if m is not None else None
            if found is not None:
                raise PolicyError(f"{fam} cannot write {what}: it holds {found!r}, which ends it in this syntax")
        return text

    def _arguments(self, part: Arguments, name: str, arguments: dict[str, Any], tools: Toolset | None) -> str:
        if part.syntax == "json":
            return _json(arguments)
        if part.syntax == "keywords":
            if not _py_name(name):
                raise PolicyError(
                    f"{self.shape.family} cannot write the tool name {name!r}: it is not a Python identifier"
                )
            bad = [k for k in arguments if not _py_name(k)]
            if bad:
                raise PolicyError(
                    f"{self.shape.family} writes keyword arguments: {bad[0]!r} is not a Python identifier"
                )
            return ", ".join(f"{k}={_py_literal(v)}" for k, v in arguments.items())
        if part.syntax in ("python", "typescript"):
            unset = next((k for k, v in arguments.items() if v is None), None)
            if unset is not None:
                raise PolicyError(
                    f"{self.shape.family} cannot write {unset!r}: None: a code call reads a top-level None as not given"
                )
        tool = _tool_for(name, arguments, tools, self.shape.family)
        writer = {"python": _python, "typescript": _typescript, "pformat": _pformat}[part.syntax]
        body = writer(tool, arguments)  # name(…) or name[…]: the slot is what the brackets hold
        return body[len(name) + 1 : -1]


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, allow_nan=False)


def _check_finite(name: str, arguments: dict[str, Any]) -> None:
    stack: list[Any] = [arguments]
    while stack:
        item = stack.pop()
        if isinstance(item, float) and not math.isfinite(item):
            raise PolicyError(f"the arguments of {name!r} hold {item!r}, which JSON cannot write")
        if isinstance(item, Mapping):
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item)


def _tool_for(name: str, arguments: dict[str, Any], tools: Toolset | None, family: str) -> Tool:
    """The tool whose parameter order a code or P-Format call follows: from ``tools``, or
    (without a toolset) one whose parameters are the arguments, in their order."""
    if tools is None:
        props: dict[str, dict[str, Any]] = {k: {} for k in arguments}
        return Tool(name=name, parameters={"type": "object", "properties": props, "required": list(props)})
    tool = tools.get(name)
    if tool is None:
        raise PolicyError(
            f"{family} writes a call against its tool's schema, and the tools given do not offer {name!r}"
        )
    return tool


# -- reading the `// write` lines ------------------------------------------------------------


def compile_writer(grammar: CompiledGrammar, variant: str | None = None) -> Writer:
    """The writer a family's ``// write`` lines describe, checked against its terminals.

    ``variant`` (a name from the grammar's ``// variant`` lines other than the first): that
    spelling's own ``// write KIND VARIANT`` lines replace the plain lines of their kind;
    the other kinds are the plain lines'."""
    header = grammar.header
    fam = grammar.name
    lines: dict[str, tuple[str, str]] = {}
    for kind, spec in header.writes:
        line = f"// write {kind}" + (f": {spec}" if spec else "")
        if kind in lines:
            raise GrammarError(f"grammar {fam!r}: line '{line}': a second 'write {kind}' line; keep one")
        lines[kind] = (spec, line)
    if variant is not None:
        for name, kind, spec in header.variant_writes:
            if name == variant:
                lines[kind] = (spec, f"// write {kind} {name}" + (f": {spec}" if spec else ""))
    if "call" not in lines:
        raise GrammarError(
            f"grammar {fam!r} has no '// write call: …' line, so its calls cannot be written back "
            '(docs/authoring.md, "Writing calls back")'
        )
    reader = _LineReader(grammar)
    param: tuple[Part, ...] = ()
    if "param" in lines:
        param = reader.parts(*lines["param"], "param")
    call = reader.parts(*lines["call"], "call", param)
    if "param" in lines and not any(isinstance(p, Params) for p in call):
        raise GrammarError(
            f"grammar {fam!r}: line '{lines['param'][1]}': the 'write call' line has no params slot to use it"
        )
    block_open: tuple[Part, ...] = ()
    block_close: tuple[Part, ...] = ()
    if "block" in lines:
        block = reader.parts(*lines["block"], "block")
        at = next((i for i, p in enumerate(block) if p is _CALLS), None)
        if at is None or sum(p is _CALLS for p in block) != 1:
            raise GrammarError(f"grammar {fam!r}: line '{lines['block'][1]}': write 'calls' once, where the calls go")
        block_open, block_close = tuple(_merge(block[:at])), tuple(_merge(block[at + 1 :]))
    sep = ""
    if "sep" in lines:
        parts = reader.parts(*lines["sep"], "sep")
        sep = "".join(p.text for p in parts if isinstance(p, Lit))
    shape = Shape(
        family=fam,
        variant=variant or (header.variants[0][0] if header.variants else ""),
        call=tuple(_merge(call)),
        block_open=block_open,
        block_close=block_close,
        sep=sep,
        parallel="single" not in lines,
        prose_before=_prose_before(grammar, block_open or tuple(_merge(call))),
    )
    writer = Writer(shape)
    reader.checks(writer, shape, block_close)
    return writer


_CALLS = Lit("")  # the place of the calls in a `write block` line (identity-compared)


def _merge(parts: Iterable[Part]) -> list[Part]:
    out: list[Part] = []
    for part in parts:
        if isinstance(part, Lit) and part is not _CALLS and out and isinstance(out[-1], Lit) and out[-1] is not _CALLS:
            out[-1] = Lit(out[-1].text + part.text)
        elif not (isinstance(part, Lit) and part is not _CALLS and not part.text):
            out.append(part)
    return out


def _prose_before(grammar: CompiledGrammar, first: tuple[Part, ...]) -> bool:
    """Whether the written block may follow prose: it begins with an opener of rule ``start``
    (else only a reply that begins with it is read, as bare JSON and Python lists are)."""
    if not first or not isinstance(first[0], Lit):
        return False
    text = first[0].text
    return any(t.pattern is not None and t.pattern.regex.match(text) for t in grammar.openers.get("start", ()))


def _is_raw(part: Part) -> bool:
    """A slot written as its characters, which the text after it must be able to end."""
    return (isinstance(part, (Name, Key)) and part.encoding == "raw") or (
        isinstance(part, Value) and part.syntax == "text"
    )


class _LineReader:
    def __init__(self, grammar: CompiledGrammar) -> None:
        self.g = grammar
        self.markers: dict[str, Terminal] = {}  # the terminals the lines write
        self.accept: dict[int, Terminal] = {}  # id(raw slot part) -> its terminal

    def fail(self, line: str, why: str) -> GrammarError:
        return GrammarError(f"grammar {self.g.name!r}: line '{line}': {why}")

    def parts(self, spec: str, line: str, kind: str, param: tuple[Part, ...] = ()) -> tuple[Part, ...]:
        out: list[Part] = []
        pos = 0
        spec = spec.rstrip()
        while pos < len(spec):
            m = _ITEM.match(spec, pos)
            if m is None or m.end() == pos:
                raise self.fail(
                    line, f'cannot read {spec[pos:].strip()[:30]!r}: write TERMINAL names, "quoted text" or slots'
                )
            pos = m.end()
            if m.group(_STR) is not None:
                out.append(Lit(self.string(m.group(_STR), line)))
            elif m.group(_TERM) is not None:
                out.append(self.marker(m.group(_TERM), line))
            else:
                out.append(self.slot(m.group(_SLOT), m.group(_OPT), line, kind, param, spec, pos))
                if isinstance(out[-1], Params) and out[-1].sep:
                    sep_item = _ITEM.match(spec, pos)
                    assert sep_item is not None  # the separator string was read
                    pos = sep_item.end()
        if kind == "call" and not any(isinstance(p, Name) for p in out):
            raise self.fail(line, "a call needs a name slot (name, name:json or name:TERMINAL)")
        if kind == "call" and sum(isinstance(p, (Arguments, Params)) for p in out) != 1:
            raise self.fail(
                line, "a call needs one arguments slot (arguments[:json|python|keywords|typescript|pformat]) or params"
            )
        if kind == "param" and [type(p) for p in out if not isinstance(p, Lit)] not in (
            [Key, Value],
            [Key, Value, Key],
        ):
            raise self.fail(
                line,
                "a param is a key slot, then a value slot, and the key again if its closer names it (with text and markers around them)",
            )
        return tuple(out)

    def string(self, quoted: str, line: str) -> str:
        try:
            return str(json.loads(quoted))
        except json.JSONDecodeError as exc:
            raise self.fail(line, f'{quoted} is not a JSON string ({exc.msg}); escape \\ and " as JSON does') from None

    def marker(self, name: str, line: str) -> Lit:
        why = write_marker_problem(self.g.terminals, name)
        if why is not None:
            raise self.fail(line, why)
        term = self.g.terminals[name]
        assert term.pattern is not None and term.pattern.literal is not None
        self.markers[name] = term
        return Lit(term.pattern.literal)

    def slot(
        self, slot: str, opt: str | None, line: str, kind: str, param: tuple[Part, ...], spec: str, pos: int
    ) -> Part:
        if slot not in _SLOTS[kind]:
            allowed = ", ".join(_SLOTS[kind]) or "no slot (only quoted text)"
            raise self.fail(line, f"unknown slot {slot!r} in a write {kind} line; use {allowed}")
        term = None
        if opt is not None and opt[:1].isupper():
            if slot not in ("name", "key", "id"):
                raise self.fail(line, f"only name, key and id take a TERMINAL (the text they must match), not {slot}")
            term = self.g.terminals.get(opt)
            if term is None or term.pattern is None:
                raise self.fail(
                    line,
                    f"{opt} is not a terminal of this grammar with a pattern; name the terminal that reads the {slot}",
                )
            opt = None
        elif opt is not None and opt not in _OPTIONS[slot]:
            choices = ", ".join(f"{slot}:{o}" for o in _OPTIONS[slot]) or f"{slot} alone"
            raise self.fail(line, f"unknown option {slot}:{opt}; write {choices}")
        part: Part
        if slot == "name":
            part = Name(_ENCODINGS[opt or "raw"])
        elif slot == "key":
            part = Key(_ENCODINGS[opt or "raw"])
        elif slot == "arguments":
            part = Arguments(_ARGUMENT_SYNTAXES[opt or "json"])
        elif slot == "value":
            part = Value(_VALUE_SYNTAXES[opt or "text"])
        elif slot == "id":
            part = Id(term.pattern.source) if term is not None and term.pattern is not None else Id()
        elif slot == "index":
            part = Index()
        elif slot == "calls":
            return _CALLS
        else:  # params
            if not param:
                raise self.fail(line, "a params slot needs a '// write param: …' line (how one parameter is written)")
            m = _ITEM.match(spec, pos)
            sep = self.string(m.group(_STR), line) if m is not None and m.group(_STR) is not None else ""
            part = Params(tuple(_merge(param)), sep)
        if term is not None:
            self.accept[id(part)] = term
        return part

    # -- checks of raw slots -------------------------------------------------------------

    def checks(self, writer: Writer, shape: Shape, block_close: tuple[Part, ...]) -> None:
        """For each raw slot: its terminal, and what may not appear in it — the fixed text
        right after it, and every marker written after it in the call (in any spelling the
        grammar reads)."""
        tail: list[Part] = [p for p in block_close if isinstance(p, Lit)]
        call = list(shape.call)
        for i, part in enumerate(call):
            if isinstance(part, Name) and part.encoding == "raw":
                writer.raw[id(part)] = self._raw(part, call[i + 1 :] + tail)
            if isinstance(part, Id) and id(part) in self.accept:
                pattern = self.accept[id(part)].pattern
                writer.raw[id(part)] = _Raw(pattern.regex if pattern is not None else None)
            if isinstance(part, Params):
                after = call[i + 1 :] + tail
                item = list(part.item)
                for j, inner in enumerate(item):
                    if _is_raw(inner):
                        # the next item begins with the item's own head, so all its markers follow too
                        writer.raw[id(inner)] = self._raw(inner, [*item[j + 1 :], Lit(part.sep), *item[:j], *after])

    def _raw(self, part: Part, after: list[Part]) -> _Raw:
        stops: list[str | re.Pattern[str]] = []
        nxt = ""
        for p in after:
            if not isinstance(p, Lit):
                break
            nxt += p.text
        if nxt.strip():
            stops.append(nxt.strip())
        slot_terms = set(self.accept.values())
        for p in after:
            if not isinstance(p, Lit) or not p.text.strip():
                continue
            for lit, _term in self._spelled(p):
                stops.append(lit)
                for reader in self.g.terminals.values():
                    pat = reader.pattern
                    if pat is None or reader in slot_terms or reader in self.g.ignore or pat.regex.fullmatch("a"):
                        continue
                    if pat.regex.fullmatch(lit):
                        stops.append(pat.regex)
        term = self.accept.get(id(part))
        accept = term.pattern.regex if term is not None and term.pattern is not None else None
        return _Raw(accept, tuple(dict.fromkeys(stops)))

    def _spelled(self, lit: Lit) -> list[tuple[str, Terminal]]:
        """The markers a (merged) fixed text holds, as (literal, terminal)."""
        return [
            (t.pattern.literal, t)
            for t in self.markers.values()
            if t.pattern and t.pattern.literal and t.pattern.literal in lit.text
        ]


# The registry's families write through this module; it sits above the registry, so it
# hands the registry its compiler instead of being imported by it.
families.set_writer_compiler(compile_writer)
