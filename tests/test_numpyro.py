"""The marginal models run on PyTensor's JAX backend (``nuts_sampler="numpyro"``): same
posterior as PyMC's NUTS (within 5 MCSE) and the same draws for a seed. The checks
(``tests/numpyro_checks.py``) run in a child interpreter so that JAX's threads never live in
the pytest process, which forks later (PyMC's parallel chains, process pools)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest


@pytest.mark.slow  # 79 s in the suite (2026-11-28): two samplers' posteriors agree, `make validate`
def test_marginal_models_on_numpyro_match_pymc():
    pytest.importorskip("numpyro")  # in the test extra; the package itself does not need JAX
    script = Path(__file__).with_name("numpyro_checks.py")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    assert "numpyro checks passed" in done.stdout
