#!/usr/bin/env bash
# Build the benchmark venv: tooldialect's runtime deps, the peers' parser modules
# (vLLM and SGLang without torch), openai-harmony and its o200k vocabulary.
# Usage: benchmarks/setup.sh [VENV]   (default $BENCH_VENV, else ${XDG_CACHE_HOME:-~/.cache}/tooldialect-bench/venv)
set -euo pipefail
VENV="${1:-${BENCH_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/tooldialect-bench/venv}}"
HERE="$(cd "$(dirname "$0")" && pwd)"
PY="${PYTHON:-python3}"

if [ ! -x "$VENV/bin/python" ]; then
    "$PY" -m venv "$VENV"
    "$VENV/bin/python" -m pip install -q --upgrade pip
fi
PIP="$VENV/bin/python -m pip"

# tooldialect's own runtime dependencies (the harness imports it from this checkout's src/)
$PIP install -q -r "$HERE/requirements.txt"
# the peers, without their dependency trees (torch, CUDA, ...): only parser modules run
$PIP install -q --no-deps -r "$HERE/requirements-nodeps.txt"

# openai-harmony loads the o200k vocabulary by download; the bpe-openai wheel ships the
# same file (sha256-checked by harmony), so unpack it once next to the venv
VOCAB="$VENV/tiktoken_base/o200k_base.tiktoken"
if [ ! -f "$VOCAB" ]; then
    TMP="$(mktemp -d)"
    $PIP download -q --no-deps -d "$TMP" bpe-openai
    "$VENV/bin/python" - "$TMP" "$VOCAB" <<'PYEOF'
import glob, gzip, hashlib, os, sys, zipfile
tmp, out = sys.argv[1], sys.argv[2]
whl = glob.glob(os.path.join(tmp, "bpe_openai-*.whl"))[0]
data = gzip.decompress(zipfile.ZipFile(whl).read("bpe_openai/data/o200k_base.tiktoken.gz"))
want = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"
if hashlib.sha256(data).hexdigest() != want:
    sys.exit("o200k vocabulary from bpe-openai does not match the hash openai-harmony checks")
os.makedirs(os.path.dirname(out), exist_ok=True)
with open(out, "wb") as f:
    f.write(data)
PYEOF
    rm -rf "$TMP"
fi
touch "$VENV/.bench-ready"
echo "benchmark venv ready: $VENV"
