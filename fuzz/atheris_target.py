"""One harness under atheris (libFuzzer): ``python fuzz/atheris_target.py NAME [libFuzzer flags] [CORPUS]``.

``fuzz/run.py`` starts it; the library's bytecode is instrumented so that libFuzzer
sees which branches an input reached.
"""

from __future__ import annotations

import sys
from pathlib import Path

import atheris

sys.path.insert(0, str(Path(__file__).resolve().parent))

with atheris.instrument_imports(include=["tooldialect"]):
    import harnesses


def main() -> None:
    name = sys.argv.pop(1)
    atheris.Setup(sys.argv, harnesses.HARNESSES[name])
    atheris.Fuzz()


if __name__ == "__main__":
    main()
