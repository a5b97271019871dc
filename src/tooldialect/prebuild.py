"""``make tables``: compile every bundled grammar from its source and write the file
``prebuilt.py`` reads (``grammars/parse_tables.json``), so that no process compiles them again.

    python -m tooldialect.prebuild          # rewrite grammars/parse_tables.json

This is the one place the shipped tables are built; ``tests/test_prebuilt.py`` builds them
again and compares.  It imports lark (the compiler), and the registry for what each family's
reader reads, so the build checks each grammar as the registry would compile it.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from . import prebuilt
from .families import reads_of
from .grammar import compile_grammar, read_header, read_terminals
from .pieces import grammar_dir

__all__ = ["build", "main", "write"]


def build(directory: Path) -> dict[str, Any]:
    """Every family and shared piece in ``directory`` compiled from its source, as the file
    holds them."""
    grammars: dict[str, Any] = {}
    pieces: dict[str, Any] = {}
    for path in sorted(directory.glob("*.lark")):
        if path.name.startswith("_"):
            pieces[path.stem] = {"terminals": prebuilt.encode_terminals(read_terminals(path))}
            continue
        header = read_header(path.read_text(encoding="utf-8"), path.stem)
        compiled = compile_grammar(path, header, pieces=directory, reads=reads_of(path.stem))
        grammars[path.stem] = prebuilt.encode_grammar(compiled)
    return {
        "format": prebuilt.FORMAT,
        "sources": prebuilt.sources_digest(directory),
        "grammars": grammars,
        "pieces": pieces,
    }


def write(directory: Path) -> Path:
    """Build the file for ``directory`` and write it there."""
    target = directory / prebuilt.FILE
    target.write_text(prebuilt.dumps(build(directory)), encoding="utf-8")
    prebuilt.forget(directory)
    return target


def main() -> None:
    target = write(grammar_dir())
    sys.stdout.write(f"wrote {target}\n")


if __name__ == "__main__":
    main()
