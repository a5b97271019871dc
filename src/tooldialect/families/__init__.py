"""The registry of families: one ``.lark`` grammar each, found by listing ``grammars/``.

Listing reads grammar headers only.  A grammar compiles on first use, once (a lock
makes concurrent first uses wait for one compilation), and stays in memory; nothing
is cached on disk.
"""

from __future__ import annotations

import fnmatch
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from ..errors import GrammarError, UnknownFamilyError
from ..grammar import CompiledGrammar, Header, Terminal, compile_grammar, read_header, read_terminals
from ..models import Policy
from ..shape import Shape

__all__ = ["Family", "ModelProfile", "all_families", "compile_count", "for_model", "get", "grammar_dir", "names"]


def grammar_dir() -> Path:
    """Where the grammars are: inside the installed package, or at the top of a checkout."""
    here = Path(__file__).resolve().parent.parent
    packaged = here / "grammars"
    if packaged.is_dir():
        return packaged
    checkout = here.parent.parent / "grammars"
    if checkout.is_dir():
        return checkout
    raise GrammarError(f"no grammars directory next to {here} (a broken installation?)")


_lock = threading.Lock()
_compiles = 0


def compile_count() -> int:
    """How many grammars this process has compiled (importing the package compiles none)."""
    return _compiles


@dataclass(eq=False)
class Family:
    """A family: its grammar file, its header, and its compiled grammar (on first use)."""

    name: str
    path: Path
    header: Header
    _compiled: CompiledGrammar | None = None
    _writer: Any = None

    @property
    def title(self) -> str:
        return self.header.title

    @property
    def models(self) -> tuple[str, ...]:
        return self.header.models

    @property
    def checked_against(self) -> tuple[str, ...]:
        """The templates and documents the grammar's syntax was checked against."""
        return self.header.checked_against

    @property
    def grammar(self) -> CompiledGrammar:
        compiled = self._compiled
        if compiled is None:
            with _lock:
                compiled = self._compiled
                if compiled is None:
                    global _compiles
                    compiled = compile_grammar(self.path, self.header)
                    _compiles += 1
                    self._compiled = compiled
        return compiled

    @property
    def shape(self) -> Shape:
        """How the family writes a call (its grammar's ``// write`` lines), for
        :meth:`render_call` and ``td.export``."""
        return self._write().shape

    def render_call(self, call: Any, tools: Any = None) -> str:
        """``call`` (a ``td.ToolCall``, a transcript call or ``{"name", "arguments"[, "id"]}``)
        written as this family's model writes it; parsing the text gives the call back.
        ``tools`` gives the parameter order of P-Format and code calls (without it, the
        arguments' own order).  A call the syntax cannot say raises ``PolicyError``."""
        return self._write().render([call], tools)

    def render_calls(self, calls: Any, tools: Any = None) -> str:
        """Several calls written as one reply of this family (its block and separator)."""
        if isinstance(calls, (str, bytes, Mapping)) or not isinstance(calls, Iterable):
            from ..errors import PolicyError

            raise PolicyError(f"render_calls() takes a list of calls, got {type(calls).__name__}")
        return self._write().render(list(calls), tools)

    def _write(self) -> Any:
        writer = self._writer
        if writer is None:
            from ..render.family import compile_writer

            grammar = self.grammar
            with _lock:
                writer = self._writer
                if writer is None:
                    writer = self._writer = compile_writer(grammar)
        return writer

    def __repr__(self) -> str:
        return f"<Family {self.name}>"


_registry: dict[str, Family] | None = None
_pieces: dict[str, dict[str, Terminal]] = {}


def _load_registry() -> dict[str, Family]:
    global _registry
    reg = _registry
    if reg is None:
        with _lock:
            reg = _registry
            if reg is None:
                reg = {}
                for path in sorted(grammar_dir().glob("*.lark")):
                    if path.name.startswith("_"):
                        continue
                    header = read_header(path.read_text(encoding="utf-8"), path.stem)
                    if header.family != path.stem:
                        raise GrammarError(
                            f"grammar {path.name}: header says family {header.family!r}; it must match the file name"
                        )
                    reg[path.stem] = Family(path.stem, path, header)
                _registry = reg
    return reg


def piece(name: str) -> dict[str, Terminal]:
    """Terminals of a shared piece such as ``_reasoning`` (loaded once)."""
    got = _pieces.get(name)
    if got is None:
        with _lock:
            got = _pieces.get(name)
            if got is None:
                global _compiles
                got = read_terminals(grammar_dir() / f"{name}.lark")
                _compiles += 1
                _pieces[name] = got
    return got


def names() -> list[str]:
    """Family names, ordered by rank then name (the order used to break ties)."""
    reg = _load_registry()
    return [f.name for f in sorted(reg.values(), key=lambda f: (f.header.rank, f.name))]


def all_families() -> list[Family]:
    reg = _load_registry()
    return [reg[n] for n in names()]


def get(name: str) -> Family:
    reg = _load_registry()
    fam = reg.get(name)
    if fam is None:
        known = ", ".join(names())
        raise UnknownFamilyError(f"unknown family {name!r}; known families: {known}")
    return fam


class ModelProfile(BaseModel):
    """What :func:`for_model` suggests: the families to enable and the policy to use."""

    model_config = ConfigDict(frozen=True)

    model: str
    matched: bool
    families: list[str]
    policy: Policy


def _coerce(field: str, value: str) -> Any:
    low = value.lower()
    if low in ("true", "false"):
        return low == "true"
    if value.isascii() and value.isdigit():
        return int(value)
    return value


def for_model(model_id: str) -> ModelProfile:
    """Families and policy for a model id, from the model globs in the grammar headers.

    Families written for any model (``models: *``) are suggested alongside a match.
    With no match, every family is suggested with the default policy (``matched`` False).
    """
    if not isinstance(model_id, str):
        from ..errors import PolicyError

        raise PolicyError("for_model() needs a model id string such as 'Qwen/Qwen3-8B'")
    key = model_id.strip().lower()
    matched = []
    generic = []  # families for any model (models: *): suggested alongside a match
    settings: dict[str, Any] = {}
    for fam in all_families():
        if "*" in fam.header.models:
            generic.append(fam.name)
        elif any(fnmatch.fnmatchcase(key, g.lower()) for g in fam.header.models):
            matched.append(fam.name)
        for glob, pairs in fam.header.policies:
            if fnmatch.fnmatchcase(key, glob.lower()):
                for field, value in pairs:
                    settings[field] = _coerce(field, value)
    if not matched:
        return ModelProfile(model=model_id, matched=False, families=names(), policy=Policy(**settings))
    families = [n for n in names() if n in matched or n in generic]
    return ModelProfile(model=model_id, matched=True, families=families, policy=Policy(**settings))
