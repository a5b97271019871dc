from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

sys.path.insert(0, str(Path(__file__).resolve().parent))

# derandomized: CI and every run of `make test` try the same examples (a run that fails
# fails again); the thorough and fuzz profiles search at random
settings.register_profile(
    "default", max_examples=150, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("thorough", max_examples=2000, deadline=None)
# the contract searches (tests/test_truncation.py, test_differential.py, test_replies.py) run a
# short seeded pass by default and this long random one under HYPOTHESIS_PROFILE=fuzz
settings.register_profile(
    "fuzz", max_examples=5000, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


def pytest_addoption(parser):
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
