"""The package's parallel kernels run on a threading layer that survives a fork (bayes_raters.threads).

Each check runs in a fresh interpreter: Numba binds its layer at the first parallel launch of a
process, and the test process may have launched kernels already."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

#: Launch the leaderboard's parallel pass, fork, launch it again in the child (a hang here is
#: what the layer choice prevents; the timeout turns it into a failure), and print the layer.
_SCRIPT = """
import os, numba, numpy as np
from bayes_raters.leaderboard.kernel import system_pass, system_pass_by_item
rng = np.random.default_rng(0)
answers = rng.integers(0, 2, size=(600, 40)).astype(np.int8)
theta, a, b = rng.normal(size=600), np.ones(40), rng.normal(size=40)
system_pass(answers, theta, a, b)
system_pass_by_item(np.ascontiguousarray(answers.T), theta, a, b)
for _ in range(3):
    pid = os.fork()
    if pid == 0:
        os._exit(0 if np.isfinite(system_pass(answers, theta, a, b)[0]).all() else 3)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, status
print(numba.threading_layer())
"""


def _run(env_layer: str | None) -> str:
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_THREADING_LAYER"}
    if env_layer is not None:
        env["NUMBA_THREADING_LAYER"] = env_layer
    done = subprocess.run([sys.executable, "-c", _SCRIPT], env=env, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip().splitlines()[-1]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork is POSIX only")
def test_the_kernels_use_the_workqueue_layer_and_a_forked_child_runs_them():
    assert _run(None) == "workqueue"


def test_a_layer_the_user_chose_is_kept(monkeypatch):
    import numba

    from bayes_raters.threads import use_fork_safe_layer

    monkeypatch.setattr(numba.config, "THREADING_LAYER", "omp")
    assert use_fork_safe_layer() == "omp"
    monkeypatch.setattr(numba.config, "THREADING_LAYER", "default")
    monkeypatch.setenv("NUMBA_THREADING_LAYER", "tbb")
    assert use_fork_safe_layer() == "default"  # Numba reads the variable itself
    monkeypatch.delenv("NUMBA_THREADING_LAYER")
    assert use_fork_safe_layer() == "workqueue"
