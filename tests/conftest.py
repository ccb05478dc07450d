"""Shared fixtures. Reference data from third parties lives in tests/data (source and licence
in its README), so a clone runs the suite on its own; BAYES_RATERS_DATA overrides it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings

REPO = Path(__file__).resolve().parents[1]

# Bit-for-bit reproducible property tests: hypothesis draws from a fixed seed and replays no
# stored examples (a .hypothesis database from an earlier failure changed the examples run).
settings.register_profile("repro", derandomize=True, database=None, deadline=None, max_examples=60, print_blob=True)
settings.load_profile("repro")


@pytest.fixture(scope="session")
def shared_data() -> Path:
    root = Path(os.environ.get("BAYES_RATERS_DATA", REPO / "tests" / "data"))
    if not root.is_dir():
        pytest.fail(f"reference data not found at {root}; set BAYES_RATERS_DATA to a folder with rsmtool_prmse/")
    return root
