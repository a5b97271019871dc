"""Run the fuzz harnesses for a while each; write what breaks them to ``fuzz/crashes/``.

    python fuzz/run.py                       # every harness, 60 s each (make fuzz)
    python fuzz/run.py --seconds 300 parse   # one harness, five minutes
    python fuzz/run.py --replay stream fuzz/crashes/stream-…   # run saved inputs again

The seed corpora and the marker dictionaries are generated first (``fuzz/seeds.py``)
into ``fuzz/corpus-out/``, where the fuzzer also keeps the inputs it found interesting.

Engines: ``atheris`` (coverage-guided libFuzzer, when the ``fuzz`` extra is installed)
runs each harness in a child process with the library's bytecode instrumented;
``mutate`` is a pure-Python mutation driver over the same harness functions, for
Pythons where atheris does not install.  ``auto`` (the default) picks atheris when it
imports.
"""

from __future__ import annotations

import argparse
import hashlib
import random
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import harnesses
import seeds

WORK = HERE / "corpus-out"
CRASHES = HERE / "crashes"
#: One input that takes longer than this is a hang.
TIMEOUT = 30
#: libFuzzer's memory cap per child, in MiB (inputs are at most MAX_LEN bytes).
RSS_LIMIT_MB = 3072
MAX_LEN = 65536


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("harness", nargs="*", help=f"harnesses to run (default: all of {', '.join(harnesses.HARNESSES)})")
    ap.add_argument("--seconds", type=float, default=60, help="time per harness (default 60)")
    ap.add_argument("--engine", choices=("auto", "atheris", "mutate"), default="auto")
    ap.add_argument("--seed", type=int, default=None, help="random seed of the mutate engine")
    ap.add_argument("--replay", nargs="+", metavar=("HARNESS", "FILE"), help="run saved inputs through a harness")
    args = ap.parse_args(argv)
    if args.replay:
        return replay(args.replay[0], [Path(p) for p in args.replay[1:]])
    names = args.harness or list(harnesses.HARNESSES)
    unknown = [n for n in names if n not in harnesses.HARNESSES]
    if unknown:
        ap.error(f"unknown harness {unknown[0]!r}; known: {', '.join(harnesses.HARNESSES)}")
    engine = args.engine
    if engine == "auto":
        engine = "atheris" if _has_atheris() else "mutate"
    counts = seeds.write_all(WORK)
    CRASHES.mkdir(exist_ok=True)
    failed = 0
    for name in names:
        print(f"== {name}: {counts[name]} seeds, {args.seconds:g} s, engine {engine}", flush=True)
        if engine == "atheris":
            stats = run_atheris(name, args.seconds)
        else:
            stats = run_mutate(name, args.seconds, args.seed)
        print(f"== {name}: " + ", ".join(f"{k} {v}" for k, v in stats.items()), flush=True)
        failed += int(stats.get("crashes", 0))
    return 1 if failed else 0


def _has_atheris() -> bool:
    try:
        import atheris  # noqa: F401
    except ImportError:
        return False
    return True


# -- atheris -------------------------------------------------------------------------------------

_STAT = re.compile(r"stat::(\w+):\s+(\d+)")
_COV = re.compile(r"#(\d+)\s+\w+\s+cov: (\d+) ft: (\d+)")


def run_atheris(name: str, seconds: float, work: Path = WORK) -> dict[str, object]:
    """One harness under libFuzzer in a child process (seeds and dictionaries in ``work``);
    its summary."""
    cmd = [
        sys.executable,
        str(HERE / "atheris_target.py"),
        name,
        f"-max_total_time={int(seconds)}",
        f"-artifact_prefix={CRASHES}/{name}-",
        f"-dict={work / 'dicts' / 'all.dict'}",
        f"-timeout={TIMEOUT}",
        f"-rss_limit_mb={RSS_LIMIT_MB}",
        f"-max_len={MAX_LEN}",
        "-print_final_stats=1",
        str(work / name),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, errors="replace")
    log = proc.stdout + proc.stderr
    (work / f"{name}.log").write_text(log, encoding="utf-8")
    stats: dict[str, object] = {k: int(v) for k, v in _STAT.findall(log)}
    cov = _COV.findall(log)
    out: dict[str, object] = {
        "executions": stats.get("number_of_executed_units", 0),
        "exec/s": stats.get("average_exec_per_sec", 0),
        "peak MiB": stats.get("peak_rss_mb", 0),
    }
    if cov:
        out["coverage (edges)"] = int(cov[-1][1])
        out["features"] = int(cov[-1][2])
    out["crashes"] = 0 if proc.returncode == 0 else 1
    if proc.returncode != 0:
        print(log[-4000:], file=sys.stderr)
    return out


# -- the pure-Python mutation driver --------------------------------------------------------------


class Hang(Exception):
    pass


def _alarm(signum, frame):  # pragma: no cover - only on a hang
    raise Hang(f"one input ran longer than {TIMEOUT} s")


def mutate(data: bytes, rng: random.Random, pool: list[bytes], tokens: list[bytes]) -> bytes:
    """One to four random edits: flip, set, insert a marker, delete, duplicate, splice, cut."""
    buf = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        n = len(buf)
        op = rng.randrange(8)
        at = rng.randint(0, n)
        if op == 0 and n:
            i = rng.randrange(n)
            buf[i] ^= 1 << rng.randrange(8)
        elif op == 1 and n:
            buf[rng.randrange(n)] = rng.choice(b"<>|/[]{}\"':,=\\`\n \x00\xef\xbd\x9c")
        elif op == 2 and tokens:
            buf[at:at] = rng.choice(tokens)
        elif op == 3 and n:
            j = min(n, at + rng.randint(1, 64))
            del buf[at:j]
        elif op == 4 and n:
            i = rng.randrange(n)
            piece = buf[i : i + rng.randint(1, 128)]
            buf[at:at] = piece * rng.randint(1, 8)
        elif op == 5 and pool:
            other = rng.choice(pool)
            i = rng.randint(0, len(other))
            buf[at:] = other[i:]
        elif op == 6:
            buf[at:at] = chr(rng.randrange(0x20, 0x3000)).encode("utf-8")
        elif op == 7 and n:
            del buf[at:]
    return bytes(buf[:MAX_LEN])


def _tokens() -> list[bytes]:
    out = []
    for line in seeds.dictionary():
        value = line.split("=", 1)[1][1:-1]
        out.append(re.sub(rb"\\x([0-9a-f]{2})", lambda m: bytes([int(m.group(1), 16)]), value.encode("ascii")))
    return out


def run_mutate(name: str, seconds: float, seed: int | None = None, max_execs: int | None = None) -> dict[str, object]:
    """Mutate the seeds (and the inputs found so far) until the time or count runs out."""
    fn = harnesses.HARNESSES[name]
    pool = seeds.seed_corpus(name)
    tokens = _tokens()
    rng = random.Random(seed)
    deadline = time.monotonic() + seconds
    execs = crashes = 0
    use_alarm = hasattr(signal, "SIGALRM")
    if use_alarm:
        signal.signal(signal.SIGALRM, _alarm)
    try:
        while time.monotonic() < deadline and (max_execs is None or execs < max_execs):
            data = mutate(rng.choice(pool), rng, pool, tokens)
            if use_alarm:
                signal.alarm(TIMEOUT)
            try:
                fn(data)
            except Exception as exc:  # every exception is a finding
                crashes += 1
                path = save_crash(name, data)
                print(f"crash: {type(exc).__name__}: {str(exc)[:200]} -> {path}", file=sys.stderr, flush=True)
            finally:
                if use_alarm:
                    signal.alarm(0)
            execs += 1
            if len(pool) < 4096 and rng.random() < 0.02:
                pool.append(data)  # keep some mutants: later mutations build on them
    finally:
        if use_alarm:
            signal.signal(signal.SIGALRM, signal.SIG_DFL)
    return {"executions": execs, "crashes": crashes}


def save_crash(name: str, data: bytes) -> Path:
    CRASHES.mkdir(exist_ok=True)
    path = CRASHES / f"{name}-{hashlib.sha1(data).hexdigest()}"
    path.write_bytes(data)
    return path


def replay(name: str, files: list[Path]) -> int:
    fn = harnesses.HARNESSES[name]
    bad = 0
    for path in files:
        try:
            fn(path.read_bytes())
        except Exception as exc:
            bad += 1
            print(f"{path}: {type(exc).__name__}: {exc}")
        else:
            print(f"{path}: ok")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
