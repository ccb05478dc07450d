"""PyTensor compile modes for tests that check values, not speed."""

from __future__ import annotations

import pytensor

#: PyTensor's default rewrites with the Python linker: every op runs its own ``perform``, so a
#: density compiles in seconds where the Numba backend took a minute on a cold cache; the
#: Numba-compiled densities are exercised by every fit. The BLAS rewrites are left out: with
#: them the Python linker's ``Gemv`` moved the judges model's block likelihood (matrix-vector
#: products) by 4e-6 relative, where the Numba graph, the Python linker without them and NumPy
#: agree to 1e-15 (``tests/judges/test_model.py``).
PYTHON = pytensor.compile.mode.Mode(linker="py", optimizer="fast_run").excluding("BlasOpt")
