"""The registry of families: one ``.lark`` grammar each, found by listing directories.

Families come from ordered, named sources: the built-in ``grammars/``, each directory on
``TOOLDIALECT_GRAMMAR_PATH``, each directory given to :func:`register_path`, and each
installed package that names itself in the ``tooldialect.families`` entry-point group.
A family name defined by two sources is an error that names both.

Listing reads grammar headers only.  A grammar is made ready on first use, once (a lock
makes concurrent first uses wait for one), and stays in memory: a bundled grammar is read
from the tables built ahead of time and shipped beside it (``prebuilt.py``), any other is
compiled from its source with lark, imported then.  Nothing is cached on disk.
"""

from __future__ import annotations

import fnmatch
import os
import re
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from .. import pieces, prebuilt
from ..compiled_grammar import CompiledGrammar, NodeReads
from ..errors import GrammarError, UnknownFamilyError
from ..header import Header, read_header
from ..models import Policy
from ..pieces import grammar_dir
from ..pieces import piece as piece  # offered by the registry too: callers above it import it from here
from ..shape import Shape
from ._report import FamilyProgress, ProbeReport, TemplateReport

__all__ = [
    "ENTRY_POINT_GROUP",
    "PATH_VARIABLE",
    "Family",
    "FamilyProgress",
    "ModelProfile",
    "ProbeReport",
    "Profile",
    "Source",
    "TemplateReport",
    "all_families",
    "compile_count",
    "for_model",
    "from_template",
    "from_template_file",
    "get",
    "grammar_dir",
    "names",
    "register_path",
    "reload",
    "sources",
]

#: The environment variable listing extra grammar directories (``os.pathsep``-separated).
PATH_VARIABLE = "TOOLDIALECT_GRAMMAR_PATH"
#: The entry-point group through which installed packages provide families.
ENTRY_POINT_GROUP = "tooldialect.families"


_lock = threading.RLock()  # re-entrant: an entry-point package may use the registry as it loads
_compiles = 0


def compile_count() -> int:
    """How many grammars this process has made ready, compiled or read from the shipped
    tables, shared pieces included (importing the package makes none ready)."""
    return _compiles + pieces.load_count()


def compile_grammar(
    path: Path, header: Header, pieces: Path | None = None, reads: NodeReads | None = None
) -> CompiledGrammar:
    """A grammar compiled from its source (``grammar.compile_grammar``; lark is imported at
    the first call, never for a bundled grammar the shipped tables hold)."""
    from ..grammar import compile_grammar as compile_source

    return compile_source(path, header, pieces, reads)


#: Builds a family's writer from its compiled grammar.  Writing calls is render's work and
#: render sits above the registry, so ``tooldialect.render.family`` hands its compiler in
#: when it loads (the package loads it) and the registry never imports render.
_writer_compiler: Callable[..., Any] | None = None


def set_writer_compiler(compile_writer: Callable[..., Any]) -> None:
    """Install the function :meth:`Family.writer` builds writers with (called by render)."""
    global _writer_compiler
    _writer_compiler = compile_writer


#: What a family's reader reads (``tooldialect.grammar.NodeReads``), by the module that may
#: define it (:attr:`Family.reader_module`): a grammar is checked against it when it
#: compiles.  The readers sit above the registry, so ``tooldialect.transform`` hands in its
#: lookup when it loads.  It is keyed by module, not by family name, so that a family can be
#: compiled before it is in the registry (:func:`register_path` checks its grammars first).
_reads_lookup: Callable[[str | None], NodeReads] | None = None


def set_reads_lookup(lookup: Callable[[str | None], NodeReads]) -> None:
    """Install the function that gives the reader a module defines (called by transform)."""
    global _reads_lookup
    _reads_lookup = lookup


def reads_of(name: str) -> NodeReads | None:
    """What the reader of family ``name`` reads (None before transform is loaded)."""
    return _reads_lookup(reader_module(name)) if _reads_lookup is not None else None


@dataclass(frozen=True)
class Source:
    """A place families come from: a directory, and what put it on the list."""

    kind: str  # "built-in" | "environment" | "registered" | "entry point"
    directory: Path
    label: str  # how messages name it
    module: str | None = None  # the package whose ``<family>`` submodule may define a Reader

    @property
    def builtin(self) -> bool:
        return self.kind == "built-in"


@dataclass(eq=False)
class Family:
    """A family: its grammar file, its header, and its compiled grammar (on first use)."""

    name: str
    path: Path
    header: Header
    _compiled: CompiledGrammar | None = None
    source: Source | None = None  # None: built in
    _writer: Any = None
    _variant_writers: dict[str, Any] = field(default_factory=dict)

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
                    reads = _reads_lookup(self.reader_module) if _reads_lookup is not None else None
                    if self.source is None:  # bundled: the tables built ahead of time, if they match
                        compiled = prebuilt.grammar(self.name, self.header, self.path)
                    if compiled is None:
                        compiled = compile_grammar(self.path, self.header, pieces=grammar_dir(), reads=reads)
                    _compiles += 1
                    self._compiled = compiled
        return compiled

    @property
    def reader_module(self) -> str | None:
        """The module that may define the family's ``Reader``: ``tooldialect.families.<name>``
        for a built-in family, ``<package>.<name>`` for one from an entry point, None for a
        plain directory (its grammars are data; no Python beside them is run)."""
        if self.source is None:
            return f"{__name__}.{self.name}"
        return f"{self.source.module}.{self.name}" if self.source.module else None

    @property
    def shape(self) -> Shape:
        """How the family writes a call (its grammar's ``// write`` lines), for
        :meth:`render_call` and ``td.export``: the first variant's spelling."""
        shape: Shape = self.writer().shape
        return shape

    @property
    def variants(self) -> tuple[str, ...]:
        """The spellings the family writes (``// variant`` lines), the default first; empty
        when it writes one."""
        return tuple(name for name, _ in self.header.variants)

    def variant_for(self, model_id: str) -> str:
        """The spelling ``model_id`` writes: the first variant (in header order) one of whose
        globs matches it, case-insensitively.  ``PolicyError`` when none does (a family with
        several spellings never guesses) or the family writes one spelling (nothing to pick)."""
        from ..errors import PolicyError

        if not isinstance(model_id, str) or not model_id.strip():
            raise PolicyError("a model id is a non-empty string such as 'deepseek-ai/DeepSeek-V3.1'")
        if not self.header.variants:
            raise PolicyError(f"{self.name} writes one spelling: it has no variant to pick for {model_id!r}")
        key = model_id.strip().lower()
        for name, globs in self.header.variants:
            if any(fnmatch.fnmatchcase(key, g.lower()) for g in globs):
                return name
        listed = "; ".join(f"{name}: {', '.join(globs) or 'no model glob'}" for name, globs in self.header.variants)
        raise PolicyError(f"{model_id!r} matches no variant of {self.name} ({listed}); name the variant")

    def render_call(self, call: Any, tools: Any = None, *, variant: str | None = None) -> str:
        """``call`` (a ``td.ToolCall``, a transcript call or ``{"name", "arguments"[, "id"]}``)
        written as this family's model writes it; parsing the text gives the call back.
        ``tools`` gives the parameter order of P-Format and code calls (without it, the
        arguments' own order); ``variant`` one of :attr:`variants` (default: the first).
        A call the syntax cannot say raises ``PolicyError``."""
        text: str = self.writer(variant).render([call], tools)
        return text

    def render_calls(self, calls: Any, tools: Any = None, *, variant: str | None = None) -> str:
        """Several calls written as one reply of this family (its block and separator)."""
        if isinstance(calls, (str, bytes, Mapping)) or not isinstance(calls, Iterable):
            from ..errors import PolicyError

            raise PolicyError(f"render_calls() takes a list of calls, got {type(calls).__name__}")
        text: str = self.writer(variant).render(list(calls), tools)
        return text

    def writer(self, variant: str | None = None) -> Any:
        """The writer the grammar's ``// write`` lines describe (built once, on first use);
        ``variant``: the writer of that spelling (``PolicyError`` for a name the grammar
        does not declare)."""
        variant = self._own_variant(variant)
        writer = self._writer if variant is None else self._variant_writers.get(variant)
        if writer is None:
            compile_writer = _writer_compiler
            if compile_writer is None:
                raise RuntimeError("no writer compiler installed: import tooldialect (it loads tooldialect.render)")
            grammar = self.grammar
            with _lock:
                writer = self._writer if variant is None else self._variant_writers.get(variant)
                if writer is None:
                    writer = compile_writer(grammar, variant)
                    if variant is None:
                        self._writer = writer
                    else:
                        self._variant_writers[variant] = writer
        return writer

    def _own_variant(self, variant: str | None) -> str | None:
        """``variant`` checked against the grammar's; None for the first (default) one."""
        if variant is None:
            return None
        names = self.variants
        if variant not in names:
            from ..errors import PolicyError

            known = ", ".join(names) if names else "none: it writes one spelling"
            raise PolicyError(f"{self.name} has no variant {variant!r} (variants: {known})")
        return None if variant == names[0] else variant

    def __repr__(self) -> str:
        return f"<Family {self.name}>"


_registry: dict[str, Family] | None = None
_registered: list[Path] = []  # directories given to register_path(), in order
_loaded: list[Source] = []  # the sources the registry was read from, in order
_generation = 0  # bumped whenever the set of families changes (catalogs and readers key on it)
_NAME = re.compile(r"[a-z][a-z0-9_]*")


def generation() -> int:
    """A number that changes whenever the set of families changes."""
    return _generation


def _builtin_source() -> Source:
    directory = grammar_dir()
    return Source("built-in", directory, f"built-in grammars ({directory})", "tooldialect.families")


def _directory(path: str | os.PathLike[str], what: str) -> Path:
    directory = Path(path).expanduser()
    if not directory.is_dir():
        raise GrammarError(f"{what} {str(path)!r} is not a directory of .lark grammars")
    return directory.resolve()


def _entry_point_sources() -> list[Source]:
    from importlib.metadata import entry_points

    found = []
    for ep in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: (e.name, e.value)):
        dist = getattr(ep, "dist", None)
        who = f"entry point {ep.name} = {ep.value}" + (f" (package {dist.name})" if dist is not None else "")
        try:
            module = ep.load()
        except Exception as exc:  # an installed plugin that does not import
            raise GrammarError(f"{who}: cannot be loaded: {exc}") from exc
        paths = list(getattr(module, "__path__", ()))
        if len(paths) != 1 or not isinstance(getattr(module, "__name__", None), str):
            raise GrammarError(
                f"{who}: must name a package (a directory with an __init__.py) that holds the .lark files"
            )
        directory = _directory(paths[0], who + ": package directory")
        found.append(Source("entry point", directory, who, module.__name__))
    return found


def _sources() -> list[Source]:
    out = [_builtin_source()]
    for entry in os.environ.get(PATH_VARIABLE, "").split(os.pathsep):
        if entry.strip():
            directory = _directory(entry, f"{PATH_VARIABLE} entry")
            out.append(Source("environment", directory, f"{PATH_VARIABLE} entry {directory}"))
    for directory in _registered:
        out.append(Source("registered", directory, f"register_path({str(directory)!r})"))
    out.extend(_entry_point_sources())
    return out


def _families_in(source: Source) -> list[Family]:
    found = []
    for path in sorted(source.directory.glob("*.lark")):
        if path.name.startswith("_"):
            continue  # a shared piece, imported by families; never a family itself
        where = f"grammar {path} (from {source.label})"
        if not _NAME.fullmatch(path.stem):
            raise GrammarError(f"{where}: a family name is lowercase letters, digits and _; rename the file")
        header = read_header(path.read_text(encoding="utf-8"), path.stem)
        if header.family != path.stem:
            raise GrammarError(f"{where}: header says family {header.family!r}; it must match the file name")
        found.append(Family(path.stem, path, header, source=None if source.builtin else source))
    return found


def _add(reg: dict[str, Family], families: list[Family]) -> None:
    for fam in families:
        other = reg.get(fam.name)
        if other is not None and other.path.resolve() != fam.path.resolve():
            raise GrammarError(
                f"family {fam.name!r} is defined twice: {other.path} (from {_label(other)}) and "
                f"{fam.path} (from {_label(fam)}); rename one of the files"
            )
        reg.setdefault(fam.name, fam)


def _label(fam: Family) -> str:
    return fam.source.label if fam.source is not None else _builtin_source().label


def _load_registry() -> dict[str, Family]:
    global _registry, _generation
    reg = _registry
    if reg is None:
        with _lock:
            reg = _registry
            if reg is None:
                reg = {}
                found = _sources()
                for source in found:
                    added = _families_in(source)
                    _add(reg, added)
                    _compiles_or_raise(added, source)
                _loaded[:] = found
                _registry = reg
                _generation += 1
    return reg


def _compiles_or_raise(families: list[Family], source: Source) -> None:
    """Compile the grammars a source brings (the built-in ones are checked by the project's
    tests, and compile on first use): one that does not compile raises here, naming the
    source, the file and the line, so that a broken plugin grammar is an error where it is
    registered rather than in every later ``parse`` (decisions.md, "A plugin grammar is
    checked where it is registered")."""
    if source.builtin:
        return
    for fam in families:
        try:
            _ = fam.grammar
        except GrammarError as exc:
            raise GrammarError(f"{source.label}: {exc} (in {fam.path}); {_UNDO[source.kind]}") from exc


#: What a grammar that does not compile leaves undone, by the kind of its source.
_UNDO = {
    "registered": "nothing from the directory is registered",
    "environment": f"fix the grammar or take its directory off {PATH_VARIABLE}; no family is read until then",
    "entry point": "fix the package's grammar or uninstall the package; no family is read until then",
}


def register_path(directory: str | os.PathLike[str]) -> list[str]:
    """Add the families of a directory of ``.lark`` grammars; returns their names.

    The new families are visible at once to :func:`names`, :func:`get`,
    :func:`for_model` and to ``parse``/``ToolStream`` with every family enabled.
    Registering the same directory again changes nothing.  A family name that another
    source already defines raises :class:`~tooldialect.GrammarError` naming both files,
    and nothing is registered; so does a grammar that does not compile (each is compiled
    here), naming its file and line.  Grammars in the directory may ``%import`` the built-in
    shared pieces (``._json``, ``._tagged`` …) and their own ``_`` pieces; no Python
    in the directory is ever run.
    """
    resolved = _directory(directory, "register_path():")
    reg = _load_registry()
    with _lock:
        if resolved in _registered:
            current = (_registry or reg).values()
            return [f.name for f in current if f.source is not None and f.source.directory == resolved]
        source = Source("registered", resolved, f"register_path({str(resolved)!r})")
        added = _families_in(source)
        new = dict(_registry or reg)
        _add(new, added)
        _compiles_or_raise(added, source)
        _registered.append(resolved)
        _loaded.append(source)
        _swap(new)
    return [f.name for f in added]


def _swap(new: dict[str, Family]) -> None:
    """Install a new family table (callers hold the lock): catalogs and readers built for
    the old one are not used again (they key on :func:`generation`)."""
    global _registry, _generation
    _registry = new
    _generation += 1


@contextmanager
def _changing() -> Iterator[dict[str, Family]]:
    """Change the family table: the caller edits a copy, installed when the block ends."""
    reg = _load_registry()
    with _lock:
        new = dict(_registry or reg)
        yield new
        _swap(new)


def reader_module(name: str) -> str | None:
    """The module that may define a family's ``Reader`` (:attr:`Family.reader_module`; for a
    name the registry does not hold, the built-in family's module)."""
    fam = _load_registry().get(name)
    return f"{__name__}.{name}" if fam is None else fam.reader_module


def reload() -> None:
    """Read the sources again: ``TOOLDIALECT_GRAMMAR_PATH`` and the installed entry points
    (after installing a plugin in a running process).  Registered directories stay."""
    global _registry, _generation
    with _lock:
        _registry = None
        _generation += 1


def sources() -> list[Source]:
    """The sources families come from, in order: built in, environment, registered, entry points."""
    _load_registry()
    return list(_loaded)


_ranked: tuple[int, tuple[str, ...]] = (-1, ())  # (generation, names in rank order)


def names() -> list[str]:
    """Family names, ordered by rank then name (the order used to break ties)."""
    global _ranked
    reg = _load_registry()
    gen, ranked = _ranked
    if gen != _generation:
        ranked = tuple(f.name for f in sorted(reg.values(), key=lambda f: (f.header.rank, f.name)))
        _ranked = (_generation, ranked)
    return list(ranked)


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
    """What :func:`for_model` and :func:`from_template` suggest: the families to enable and
    the policy to use.  ``matched``: the model id matched a grammar's globs, or the template's
    calls were read.  ``variants``: for a family that writes several spellings, the one the
    template writes.  ``template``: what reading a chat template found (None for an id)."""

    model_config = ConfigDict(frozen=True)

    model: str
    matched: bool
    families: list[str]
    policy: Policy
    variants: dict[str, str] = {}
    template: TemplateReport | None = None


#: The profile type both :func:`for_model` and :func:`from_template` return.
Profile = ModelProfile


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


def from_template(
    source: str,
    *,
    tools: Any = None,
    model_id: str | None = None,
    variables: Mapping[str, Any] | None = None,
) -> ModelProfile:
    """Families and policy from a model's chat template: probe calls rendered through it
    (sandboxed, bounded) and read back; the smallest set of families that reads every probe
    exactly, and ``start_in_reasoning`` when the generation prompt leaves reasoning open.

    ``tools``: more tools to offer the template beside the probes' own; ``model_id``: the
    fallback (``for_model``) when the template renders no call, and the source of the policy
    fields a template cannot show; ``variables``: template variables such as ``bos_token``
    and ``eos_token`` (a tokenizer's).  A template that renders no call, raises or renders
    calls no family reads never raises: ``profile.template`` says so (docs/families.md,
    "Reading a chat template")."""
    from ._template import from_template as read

    return read(source, tools=tools, model_id=model_id, variables=variables)


def from_template_file(path: str | os.PathLike[str], *, tools: Any = None, model_id: str | None = None) -> ModelProfile:
    """:func:`from_template` on a file: a ``.jinja`` template, a ``tokenizer_config.json``
    (its ``chat_template``; of a list of named templates, ``tool_use`` where present, else
    ``default``; its ``bos_token`` and ``eos_token`` too), or a model directory holding either
    (``chat_template.jinja`` first).  An unreadable path or a file without a template raises
    ``ToolDialectError``."""
    from ._files import read_template_file

    source, variables = read_template_file(path)
    return from_template(source, tools=tools, model_id=model_id, variables=variables)
