from __future__ import annotations

import os
import sys
import zlib
from collections import defaultdict
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

sys.path.insert(0, str(Path(__file__).resolve().parent))

import support

# derandomized: CI and every run of `make test` try the same examples (a run that fails
# fails again); the thorough and fuzz profiles search at random.  The quick tier loads
# "quick", the full tier "default" (pytest_configure below); HYPOTHESIS_PROFILE overrides both.
settings.register_profile(
    "default", max_examples=150, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "quick", max_examples=25, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("thorough", max_examples=2000, deadline=None)
# the contract searches (tests/test_truncation.py, test_differential.py, test_replies.py) run a
# short seeded pass by default and this long random one under HYPOTHESIS_PROFILE=fuzz
settings.register_profile(
    "fuzz", max_examples=5000, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)

#: In the quick tier, one in this many parameters marked ``exhaustive`` runs (at least one per
#: test function); ``@pytest.mark.exhaustive(every=N)`` sets another rate for one function.
EVERY = 8


def pytest_addoption(parser):
    parser.addoption(
        "--tier",
        choices=support.TIERS,
        default="quick",
        help="quick (make test): a sample of every sweep; full (make check): every parameter and example",
    )
    parser.addoption(
        "--update-goldens",
        action="store_true",
        default=False,
        help="rewrite the expected results in tests/corpus/*.txt from what the code does now (review the diff)",
    )


@pytest.fixture
def restore_registry(monkeypatch):
    """The family registry as it was before the test, after it (no plugin leaks out); the
    compiled built-in grammars are kept across tests."""
    from tooldialect import families as registry

    monkeypatch.delenv(registry.PATH_VARIABLE, raising=False)
    registry._load_registry()
    saved = (registry._registry, list(registry._registered), list(registry._loaded))
    yield
    with registry._lock:
        registry._registered[:] = saved[1]
        registry._loaded[:] = saved[2]
        registry._swap(saved[0])


def pytest_configure(config):
    support.set_tier(config.getoption("--tier"))
    default = "default" if config.getoption("--tier") == "full" else "quick"
    settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", default))


def pytest_collection_modifyitems(config, items):
    """The quick tier keeps a fixed sample of each test function's ``exhaustive`` parameters
    (the same on every run and every xdist worker) and at least one of them."""
    support.COLLECTED.update((item.path, item.originalname) for item in items)
    if support.full_tier():
        return
    groups = defaultdict(list)
    for item in items:
        mark = item.get_closest_marker("exhaustive")
        if mark is not None:
            groups[(item.path, item.originalname)].append((item, mark.kwargs.get("every", EVERY)))
    dropped = set()
    for group in groups.values():
        kept = [item for item, every in group if zlib.crc32(item.nodeid.encode()) % every == 0]
        if not kept:
            kept = [group[0][0]]
        dropped.update(id(item) for item, _ in group if item not in kept)
    if dropped:
        config.hook.pytest_deselected(items=[item for item in items if id(item) in dropped])
        items[:] = [item for item in items if id(item) not in dropped]
