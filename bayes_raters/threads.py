"""The Numba threading layer of the package's parallel kernels, chosen so that a later fork is safe.

Two kernels run ``numba.prange`` loops (the leaderboard's passes over the answer matrix,
:mod:`bayes_raters.leaderboard.kernel`, and the arena's batched log-likelihood,
:mod:`bayes_raters.pairwise.arena.posterior`). Numba picks the first threading layer it can load,
TBB where the system has ``libtbb``. A process that has launched a TBB kernel and then forks (PyMC
starts its chains with ``fork`` on Linux) runs Numba's fork handler, which shuts TBB's workers
down first; in the test suite that handler spun forever in ``tbb::finalize`` in a worker that
had fitted a leaderboard before a multi-process PyMC fit (numba/numba#5983 describes the same
handler). The built-in ``workqueue`` layer resets itself in a forked child and holds no
workers across a fork. It does not allow two threads to launch parallel kernels at once; the
package launches them from the calling thread only.

:func:`use_fork_safe_layer` asks for ``workqueue`` unless the user chose a layer (the
``NUMBA_THREADING_LAYER`` environment variable, or ``numba.config.THREADING_LAYER`` set to
anything but ``"default"``). Numba binds the layer at the first parallel launch in the process,
so a user's own ``prange`` kernel launched earlier keeps the layer it got.
"""

from __future__ import annotations

import os

import numba

#: The layer asked for when the user has not chosen one.
FORK_SAFE_LAYER = "workqueue"


def use_fork_safe_layer() -> str:
    """Set ``numba.config.THREADING_LAYER`` to :data:`FORK_SAFE_LAYER` unless the user chose a
    layer; return the configured layer name."""
    if "NUMBA_THREADING_LAYER" not in os.environ and numba.config.THREADING_LAYER == "default":
        numba.config.THREADING_LAYER = FORK_SAFE_LAYER
    return numba.config.THREADING_LAYER
