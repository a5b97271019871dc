"""Where tooldialect's time goes: cProfile of batch ``parse()`` on the 20-call Hermes
response of the benchmark (scenario b), repeated, sorted by own time.

    python benchmarks/profile_hermes.py [REPEATS]
"""

from __future__ import annotations

import cProfile
import pstats
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))
sys.path.insert(0, str(HERE))

from workloads import TOOLS, workload

import tooldialect as td


def main() -> None:
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 50
    text = workload("b", "hermes").text
    tools = td.Toolset.from_openai(TOOLS)
    td.parse(text, tools=tools, families=["hermes"])  # compile the grammar outside the profile
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(repeats):
        td.parse(text, tools=tools, families=["hermes"])
    prof.disable()
    stats = pstats.Stats(prof)
    stats.sort_stats("tottime").print_stats(25)
    stats.sort_stats("cumtime").print_stats(30)


if __name__ == "__main__":
    main()
