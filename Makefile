# Two commands: `make demo` runs the main job on a bundled example; `make test` runs the suite.
# Each creates .venv with python3 on first use; nothing else needs installing by hand.
# `make check` is what CI runs: `make lint`, `make dist` (the sdist and wheel, `twine check`),
# then every test with every sweep in full.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test check lint dist compiled check-compiled tables fuzz clean

demo: $(VENV)/.installed
	$(BIN)/tooldialect parse examples/hermes_reply.txt --tools examples/tools.json

# The everyday loop: every test function, a sample of each sweep (tests/support.py, "tiers"),
# on every core. Tests that share a Spark session and a Ray cluster run on one worker.
PYTEST_PARALLEL ?= -n auto --dist loadgroup

test: $(VENV)/.installed-dev
	$(BIN)/python -m pytest -q $(PYTEST_PARALLEL) --tier=quick

# The gate: lint and types, the distributions, then every test with every parameter,
# chunking, cut and example, then the same reading from the compiled build.
check: lint dist
	$(BIN)/python -m pytest -q $(PYTEST_PARALLEL) --tier=full
	$(MAKE) check-compiled

# A platform wheel in dist/ whose hot modules mypyc compiled from the same source (the list:
# [tool.hatch.build.targets.wheel.hooks.mypyc] in pyproject.toml). Built from the sdist in a
# temporary directory, so the checkout never holds a compiled module. COMPILED_CFLAGS is added
# to CFLAGS for the C compiler: with -fno-semantic-interposition the calls from the compiled
# modules into mypyc's runtime, built into the same library, are direct and may be inlined
# (docs/decisions.md, decision 245); `make compiled COMPILED_CFLAGS=` builds without it.
COMPILED_CFLAGS ?= -fno-semantic-interposition

compiled: $(VENV)/.installed-dev
	rm -f dist/tooldialect-*.whl dist/tooldialect-*.tar.gz
	HATCH_BUILD_HOOKS_ENABLE=1 CFLAGS="$(strip $(CFLAGS) $(COMPILED_CFLAGS))" $(BIN)/python -m build -o dist .

# The compiled wheel in a new venv: the golden corpus four ways, the conformance vectors, the
# differential tests, the engine's rooms and the compiled-build checks read as the pure build
# reads (tests/test_compiled.py).
COMPILED_TESTS ?= tests/test_corpus.py tests/conformance tests/test_differential.py tests/test_whole_block.py \
	tests/test_engine_rooms.py tests/test_compiled.py

check-compiled: compiled
	@set -e; tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	$(PYTHON) -m venv "$$tmp/venv"; \
	"$$tmp/venv/bin/python" -m pip install -q dist/tooldialect-*.whl pytest pytest-xdist hypothesis interegular; \
	TOOLDIALECT_EXPECT_COMPILED=1 "$$tmp/venv/bin/python" -m pytest -q -p no:cacheprovider $(PYTEST_PARALLEL) \
	    --tier=full $(COMPILED_TESTS)

# ruff's rules and format (pyproject.toml, [tool.ruff]); mypy --strict on the modules it lists
# ([tool.mypy] files).
lint: $(VENV)/.installed-dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

# The sdist and the wheel built from it into dist/ (LICENSE in both), and `twine check` on
# them: what an index would be sent.
dist: $(VENV)/.installed-dev
	rm -rf dist
	$(BIN)/python -m build --outdir dist .
	$(BIN)/twine check --strict dist/*

# The bundled grammars' parse tables, built ahead of time and shipped beside them
# (grammars/parse_tables.json, read instead of compiling): rebuild them after editing a
# grammar; tests/test_prebuilt.py fails while they are stale.
tables: $(VENV)/.installed
	$(BIN)/python -m tooldialect.prebuild

# Every fuzz harness for FUZZ_SECONDS each (atheris when the fuzz extra installs on this
# Python, else the pure-Python mutation driver); findings go to fuzz/crashes/.
FUZZ_SECONDS ?= 60

fuzz: $(VENV)/.installed-fuzz
	$(BIN)/python fuzz/run.py --seconds $(FUZZ_SECONDS)

$(VENV)/.installed-fuzz: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e '.[dev,export,fuzz]' || $(BIN)/python -m pip install -q -e '.[dev,export]'
	touch $@ $(VENV)/.installed $(VENV)/.installed-dev

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e .
	touch $@

$(VENV)/.installed-dev: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e '.[dev,export]'
	touch $@ $(VENV)/.installed

clean:
	rm -rf $(VENV) build dist .pytest_cache .hypothesis fuzz/corpus-out

# Side-by-side benchmark against vLLM's and SGLang's parsers (never part of `make test`).
# BENCH_VENV is built once by benchmarks/setup.sh (peers installed without torch), in the
# user's cache directory unless told otherwise.
# BEFORE (a commit; empty to skip) is exported to a temporary directory from its src/ and
# grammars/; BENCH_COMPILED=1 (the default; empty to skip) builds the compiled wheel (`make
# compiled`) and installs it into one. benchmarks/trees.py then measures tooldialect's own
# cells on those trees and on this checkout's pure build in turn, cell by cell: the
# "(before)", "(alone)" and "(compiled)" rows, which the "vs before" gates and the growth
# lines read, and the tree before once more as a control (a pure cell is slower only if it
# is slower than both). benchmarks/paired.py measures the peer gates' cells of the compiled
# build (the pure one with BENCH_COMPILED=) in turn with the peers, round by round: the rows
# those gates read. BENCH_ARGS go to every run (the last --json wins in all but the last).
# Then benchmarks/plots.py draws BENCH_JSON as SVG into docs/plots/ (docs/benchmarks.md, "Plots").
BENCH_VENV ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/tooldialect-bench/venv
BENCH_JSON ?= benchmarks/results.json
BENCH_ARGS ?= --json $(BENCH_JSON)
BEFORE ?= fdd30f2
BENCH_COMPILED ?= 1

.PHONY: bench
bench: $(BENCH_VENV)/.bench-ready
	@set -e; tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; before=""; compiled=""; \
	if [ -n "$(BENCH_COMPILED)" ]; then \
	    $(MAKE) --no-print-directory compiled; \
	    $(BENCH_VENV)/bin/python -m pip install -q --no-deps --target "$$tmp/compiled" dist/tooldialect-*.whl; \
	    echo "# the compiled build, installed into $$tmp/compiled"; \
	fi; \
	if [ -n "$(BEFORE)" ]; then \
	    git archive -o "$$tmp/before.tar" $(BEFORE) src grammars; \
	    tar -x -C "$$tmp" -f "$$tmp/before.tar"; \
	    echo "# before: $(BEFORE), exported to $$tmp"; \
	fi; \
	if [ -n "$(BEFORE)$(BENCH_COMPILED)" ]; then \
	    $(BENCH_VENV)/bin/python benchmarks/trees.py $(BENCH_ARGS) --out "$$tmp" \
	        $$(if [ -n "$(BEFORE)" ]; then echo --tree before "$$tmp/src" "$$(git rev-parse --short $(BEFORE))" \
	            --tree alone src "$$(git rev-parse --short HEAD)" \
	            --tree control "$$tmp/src" "$$(git rev-parse --short $(BEFORE))"; fi) \
	        $$(if [ -n "$(BENCH_COMPILED)" ]; then echo --tree compiled "$$tmp/compiled" "$$(git rev-parse --short HEAD)"; fi); \
	fi; \
	if [ -n "$(BEFORE)" ]; then before="--before $$tmp/before.json --alone $$tmp/alone.json --control $$tmp/control.json"; fi; \
	if [ -n "$(BENCH_COMPILED)" ]; then compiled="--compiled $$tmp/compiled.json"; fi; \
	$(BENCH_VENV)/bin/python benchmarks/paired.py $(BENCH_ARGS) --json "$$tmp/paired.json" \
	    $$(if [ -n "$$compiled" ]; then echo --src "$$tmp/compiled"; fi); \
	echo "# this checkout"; \
	$(BENCH_VENV)/bin/python benchmarks/run.py $$before $$compiled --paired "$$tmp/paired.json" $(BENCH_ARGS); \
	echo "# the floor: pure, then compiled"; \
	$(BENCH_VENV)/bin/python benchmarks/floor.py; \
	if [ -n "$$compiled" ]; then $(BENCH_VENV)/bin/python benchmarks/floor.py --src "$$tmp/compiled"; fi; \
	if [ -f "$(BENCH_JSON)" ]; then $(BENCH_VENV)/bin/python benchmarks/plots.py $(BENCH_JSON); fi

$(BENCH_VENV)/.bench-ready: benchmarks/setup.sh benchmarks/requirements.txt benchmarks/requirements-nodeps.txt
	PYTHON=$(PYTHON) benchmarks/setup.sh $(BENCH_VENV)

# tests/integrations against vLLM's and SGLang's own classes (never part of `make test`,
# where they skip): INTEGRATIONS_VENV is a venv benchmarks/setup.sh builds (the servers
# without torch), the benchmark one unless told otherwise, with pytest and hypothesis added.
INTEGRATIONS_VENV ?= $(BENCH_VENV)

.PHONY: test-integrations
test-integrations: $(INTEGRATIONS_VENV)/.integrations-ready
	PYTHONPATH=$(CURDIR)/src:$(CURDIR)/tests $(INTEGRATIONS_VENV)/bin/python -m pytest tests/integrations -q

$(INTEGRATIONS_VENV)/.integrations-ready: benchmarks/setup.sh benchmarks/requirements.txt benchmarks/requirements-nodeps.txt
	PYTHON=$(PYTHON) benchmarks/setup.sh $(INTEGRATIONS_VENV)
	$(INTEGRATIONS_VENV)/bin/python -m pip install -q 'pytest>=7.4' 'hypothesis>=6.90' 'tiktoken>=0.7' 'bpe-openai>=0.1'
	touch $@
