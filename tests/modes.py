"""PyTensor compile modes for tests that check values, not speed."""

from __future__ import annotations

import pytensor

#: PyTensor's default rewrites with the Python linker: every op runs its own ``perform``, so a
#: density compiles in seconds where the Numba backend took a minute on a cold cache; the
#: Numba-compiled densities are exercised by every fit.
PYTHON = pytensor.compile.mode.Mode(linker="py", optimizer="fast_run")
