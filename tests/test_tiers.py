"""The two tiers run the same test functions: ``make test`` (quick) a sample of each sweep,
``make check`` (full) all of it (tests/support.py, "tiers")."""

from __future__ import annotations

import re

import pytest
from support import COLLECTED, ROOT, full_tier

TESTS = ROOT / "tests"


def _whole_suite(request: pytest.FixtureRequest) -> bool:
    """Whether this run collected the whole suite (not a module or a -k selection)."""
    cfg = request.config
    return cfg.args in ([], ["tests"], [str(TESTS)]) and not cfg.getoption("keyword") and not cfg.getoption("markexpr")


def test_every_test_function_runs_in_this_tier(request):
    """Sampling keeps at least one parameter of every function: no function is left out."""
    selected = {(item.path, item.originalname) for item in request.session.items}
    assert COLLECTED - selected == set()


def test_every_test_module_runs_in_this_tier(request):
    if not _whole_suite(request):
        pytest.skip("only a whole-suite run collects every module")
    ran = {item.path for item in request.session.items}
    modules = set(TESTS.glob("test_*.py"))
    skipped = {TESTS / "test_explain_browser.py"}  # skips as a module where no headless browser is installed
    assert modules - skipped - ran == set()


def test_the_quick_tier_samples_the_exhaustive_parameters(request):
    """In the quick tier a function marked exhaustive keeps a fraction of its parameters;
    in the full tier all of them."""
    golden = [item for item in request.session.items if item.originalname == "test_golden"]
    if not golden:
        pytest.skip("the corpus tests are not in this run")
    modes = {re.search(r"-(\w+)\]$", item.name).group(1) for item in golden}
    assert modes == {"batch", "whole", "chars", "random"}
    per_mode = {m: sum(1 for item in golden if item.name.endswith(f"-{m}]")) for m in modes}
    if full_tier():
        assert len(set(per_mode.values())) == 1  # every case, every mode
    else:
        assert per_mode["batch"] == per_mode["random"] > 4 * per_mode["chars"]
