r"""The two passes over a leaderboard's answer matrix that the blocked sampler needs.

With :math:`\eta_{sj} = a_j(\theta_s - b_j)`, answer :math:`y_{sj} \in \{0, 1\}` (``-1``: the
system did not answer the item), the Bernoulli-logit log-likelihood of one answer is
:math:`y\eta - \log(1 + e^\eta)`; with :math:`p = \operatorname{logit}^{-1}(\eta)` and
:math:`w = p(1 - p)`:

* :func:`system_pass` (one row per system): the log-likelihood :math:`\ell_s`, its derivative in
  :math:`\theta_s`, :math:`\sum_j a_j (y - p)`, and the Fisher information
  :math:`\sum_j a_j^2 w`;
  :func:`system_pass_by_item` takes the same sums from the transposed matrix, faster where
  each system answers few items (:func:`abilities_pass` chooses);
* :func:`item_pass` (one row per item of the transposed matrix): :math:`\ell_j`, the gradient in
  :math:`(\log a_j, b_j)`, :math:`(\sum_s (y - p)\eta, -a_j \sum_s (y - p))`, and the Fisher
  information :math:`\sum_s w\,(\eta, -a_j)^\top(\eta, -a_j)` (three distinct entries).

Why hand-written: one fused Numba pass computes all three quantities with one exponential per
answer and one ``log`` per 32 answers (of the product of the :math:`1 + e^{-|\eta|}`), no
temporaries. The answers of one row are taken in blocks of 32 with no branch (a missing answer is
multiplied by a mask of 0), and the exponential is :func:`_exp_nonpositive`, arithmetic only (its
reduction uses ``np.floor``, a double: AVX2 cannot convert doubles to 64-bit integers in vector
registers), so that LLVM vectorises the block over four answers at a time; ``math.exp`` does not
vectorise without Intel's SVML. That is several times faster than ``math.exp`` per answer and
an order of magnitude faster than the same sums in NumPy on the masked dense matrix
(``models/leaderboards.md`` gives the timings). The sampler makes seven passes per sweep where items
outnumber systems (two ability, five item passes) and six otherwise (three of each, no interweaving
step). PyTensor's compiled graph of the joint model evaluates the same sums but couples every
parameter into one gradient, which is what NUTS needed 60 leapfrog steps per draw for
(``benchmarks/bench_leaderboard.py``).
"""

from __future__ import annotations

import math

import numba
import numpy as np

from bayes_raters.threads import use_fork_safe_layer

use_fork_safe_layer()  # before the first prange launch: see bayes_raters.threads

#: Terms multiplied before one logarithm is taken: each factor 1 + e^{-|eta|} lies in [1, 2], so
#: 32 of them stay below 2^32 and the product loses nothing.
_CHUNK = 32
#: The same along an item's answers in :func:`item_pass`: 512 factors stay below 2^512, and the
#: product's relative rounding (below 512 x 2^-53) moves an item's log-likelihood by less than
#: 1e-13 per chunk. Fewer logarithms and horizontal sums: the pass over 4,278 x 102 answers takes
#: about five sixths of its time with chunks of 32 (``models/leaderboards.md``).
_ITEM_CHUNK = 512

#: ln 2 split in two (Cody and Waite): ``k * _LN2_HI`` is exact for the ``k`` used here.
_LN2_HI = 6.93147180369123816490e-01
_LN2_LO = 1.90821492927058770002e-10
_LOG2_E = 1.4426950408889634
#: Below -40, 1 + e^x rounds to 1 in double precision.
_EXP_FLOOR = -40.0


@numba.njit(inline="always", fastmath=True)
def _exp_nonpositive(x: float) -> float:
    r""":math:`e^x` for :math:`x \le 0` (relative error below 1e-14; :math:`x < -40` is taken as
    -40, where :math:`e^{-40} = 4\cdot 10^{-18}` changes none of the sums by more than that).

    :math:`x = k \ln 2 + r` with :math:`k = \operatorname{round}(x / \ln 2) \in [-58, 0]` and
    :math:`|r| \le \ln 2 / 2`; :math:`e^r` by its Taylor polynomial to :math:`r^{11}` (remainder
    below :math:`0.35^{12}/12! < 10^{-14}`), and :math:`2^k` as the product of
    :math:`2^{-32}, 2^{-16}, \dots, 2^{-1}` picked by the binary digits of :math:`-k`. Selects and
    multiplications only, so a loop calling it vectorises (see the module docstring)."""
    x = max(x, _EXP_FLOOR)
    k = np.floor(x * _LOG2_E + 0.5)
    r = (x - k * _LN2_HI) - k * _LN2_LO
    poly = 1.0 / 39916800.0  # Horner, unrolled (a loop over a tuple here stops vectorisation)
    poly = poly * r + 1.0 / 3628800.0
    poly = poly * r + 1.0 / 362880.0
    poly = poly * r + 1.0 / 40320.0
    poly = poly * r + 1.0 / 5040.0
    poly = poly * r + 1.0 / 720.0
    poly = poly * r + 1.0 / 120.0
    poly = poly * r + 1.0 / 24.0
    poly = poly * r + 1.0 / 6.0
    poly = poly * r + 0.5
    poly = poly * r + 1.0
    poly = poly * r + 1.0
    n, scale = -k, 1.0
    scale *= 2.0**-32 if n >= 32.0 else 1.0
    n -= 32.0 if n >= 32.0 else 0.0
    scale *= 2.0**-16 if n >= 16.0 else 1.0
    n -= 16.0 if n >= 16.0 else 0.0
    scale *= 2.0**-8 if n >= 8.0 else 1.0
    n -= 8.0 if n >= 8.0 else 0.0
    scale *= 2.0**-4 if n >= 4.0 else 1.0
    n -= 4.0 if n >= 4.0 else 0.0
    scale *= 0.25 if n >= 2.0 else 1.0
    n -= 2.0 if n >= 2.0 else 0.0
    scale *= 0.5 if n >= 1.0 else 1.0
    return poly * scale


@numba.njit(inline="always", fastmath=True)
def _terms(answer, eta: float) -> tuple[float, float, float, float]:
    """``(m (y eta - max(eta, 0)), 1 + m e^{-|eta|}, m (y - p), m p (1 - p))`` with ``m`` 0 for a
    missing answer (``-1``) and 1 otherwise: the log-likelihood is the first minus the logarithm
    of the second (taken once per :data:`_CHUNK` answers by the callers)."""
    m = 1.0 if answer >= 0 else 0.0
    y = 1.0 if answer > 0 else 0.0
    e = _exp_nonpositive(-abs(eta))
    p = (1.0 if eta >= 0 else e) / (1.0 + e)
    return m * (y * eta - max(eta, 0.0)), 1.0 + m * e, m * (y - p), m * p * (1.0 - p)


@numba.njit(parallel=True, cache=True, fastmath=True)
def system_pass(answers: np.ndarray, theta: np.ndarray, a: np.ndarray, b: np.ndarray):
    """Per system: log-likelihood, d/dtheta and Fisher information of ``answers`` (systems x items,
    int8, -1 missing) at abilities ``theta`` given the items ``a``, ``b``."""
    n_systems, n_items = answers.shape
    loglik = np.zeros(n_systems)
    grad = np.zeros(n_systems)
    info = np.zeros(n_systems)
    for s in numba.prange(n_systems):
        ll = g = h = 0.0
        for start in range(0, n_items, _CHUNK):
            product = 1.0
            for j in range(start, min(start + _CHUNK, n_items)):
                part, one_plus, resid, w = _terms(answers[s, j], a[j] * (theta[s] - b[j]))
                ll += part
                product *= one_plus
                g += a[j] * resid
                h += a[j] * a[j] * w
            ll -= math.log(product)
        loglik[s], grad[s], info[s] = ll, g, h
    return loglik, grad, info


@numba.njit(parallel=True, cache=True, fastmath=True)
def item_pass(answers_t: np.ndarray, theta: np.ndarray, a: np.ndarray, b: np.ndarray):
    """Per item: log-likelihood, gradient in ``(log a, b)`` and the Fisher information's entries
    ``(I_aa, I_ab, I_bb)`` of ``answers_t`` (items x systems, int8, -1 missing) given ``theta``."""
    n_items, n_systems = answers_t.shape
    loglik = np.zeros(n_items)
    grad = np.zeros((n_items, 2))
    info = np.zeros((n_items, 3))
    for j in numba.prange(n_items):
        ll = g_a = g_b = i_aa = i_ab = i_bb = 0.0
        aj, bj = a[j], b[j]
        for start in range(0, n_systems, _ITEM_CHUNK):
            product = 1.0
            for s in range(start, min(start + _ITEM_CHUNK, n_systems)):
                eta = aj * (theta[s] - bj)
                part, one_plus, resid, w = _terms(answers_t[j, s], eta)
                ll += part
                product *= one_plus
                g_a += resid * eta
                g_b += resid
                i_aa += w * eta * eta
                i_ab += w * eta
                i_bb += w
            ll -= math.log(product)
        loglik[j] = ll
        grad[j, 0], grad[j, 1] = g_a, -aj * g_b
        info[j, 0], info[j, 1], info[j, 2] = i_aa, -aj * i_ab, aj * aj * i_bb
    return loglik, grad, info


#: Systems per parallel block of :func:`system_pass_by_item`.
SYSTEM_BLOCK = 256


@numba.njit(parallel=True, cache=True, fastmath=True)
def system_pass_by_item(answers_t: np.ndarray, theta: np.ndarray, a: np.ndarray, b: np.ndarray):
    """:func:`system_pass` from the transposed answers (items x systems): the same sums, taken
    over blocks of :data:`SYSTEM_BLOCK` systems with the inner loop running along a block's
    contiguous answers to one item, so that it vectorises when each system answers few items (a
    row of 102 answers leaves the per-system loop mostly in its remainder; the timings are in
    ``models/leaderboards.md``)."""
    n_items, n_systems = answers_t.shape
    loglik = np.zeros(n_systems)
    grad = np.zeros(n_systems)
    info = np.zeros(n_systems)
    n_blocks = (n_systems + SYSTEM_BLOCK - 1) // SYSTEM_BLOCK
    for block in numba.prange(n_blocks):
        lo = block * SYSTEM_BLOCK
        hi = min(lo + SYSTEM_BLOCK, n_systems)
        n = hi - lo
        th = theta[lo:hi]
        ll, g, h, product = np.zeros(n), np.zeros(n), np.zeros(n), np.ones(n)
        for j in range(n_items):
            aj, bj = a[j], b[j]
            row = answers_t[j, lo:hi]
            for k in range(n):
                part, one_plus, resid, w = _terms(row[k], aj * (th[k] - bj))
                ll[k] += part
                product[k] *= one_plus
                g[k] += aj * resid
                h[k] += aj * aj * w
            if (j + 1) % _CHUNK == 0 or j == n_items - 1:
                for k in range(n):
                    ll[k] -= math.log(product[k])
                    product[k] = 1.0
        loglik[lo:hi], grad[lo:hi], info[lo:hi] = ll, g, h
    return loglik, grad, info


def by_item_layout(n_systems: int) -> bool:
    """Whether :func:`abilities_pass` takes the by-item layout for ``n_systems`` systems: at least two
    blocks of :data:`SYSTEM_BLOCK` systems to share among the cores (with one block the by-item pass
    runs on one core and is the slower one at 100 x 2,000; from 500 systems it is the faster,
    ``models/leaderboards.md`` gives the timings)."""
    return n_systems >= 2 * SYSTEM_BLOCK


def system_sums(layout: np.ndarray, by_item: bool, theta: np.ndarray, a: np.ndarray, b: np.ndarray):
    """:func:`system_pass`'s sums from ``layout``: the transposed answers (items x systems) by
    :func:`system_pass_by_item` where ``by_item``, else the answers (systems x items) by :func:`system_pass`."""
    return system_pass_by_item(layout, theta, a, b) if by_item else system_pass(layout, theta, a, b)


def abilities_pass(answers: np.ndarray, answers_t: np.ndarray, theta: np.ndarray, a: np.ndarray, b: np.ndarray):
    """:func:`system_pass`'s sums by the faster layout for the shape (:func:`by_item_layout`)."""
    by_item = by_item_layout(answers.shape[0])
    return system_sums(answers_t if by_item else answers, by_item, theta, a, b)


class MatrixPasses:
    """The sampler's two passes over a 0/1 answer matrix held in this process: :meth:`abilities`
    (per system) and :meth:`items` (per item). ``answers``: systems x items, int8, -1 missing;
    ``answers_t``: its contiguous transpose (made when not given). The sharded counterpart,
    :class:`~bayes_raters.leaderboard.sharded.DaskPasses`, answers the same calls from a Dask cluster
    and keeps ``answers`` here for the sampler's start. ``label``: where the passes run, for the fit's
    inference record (empty here); ``forkable``: whether a chain holding these passes may run in a
    forked process (a Dask client or a JAX device may not cross a fork)."""

    label = ""
    forkable = True

    def __init__(self, answers: np.ndarray, answers_t: np.ndarray | None = None):
        self.answers = answers
        self.answers_t = np.ascontiguousarray(answers.T) if answers_t is None else answers_t

    @property
    def shape(self) -> tuple[int, int]:
        """(systems, items)."""
        return self.answers_t.shape[::-1]

    def abilities(self, theta: np.ndarray, a: np.ndarray, b: np.ndarray) -> tuple:
        """Per system ``(loglik, d/dtheta, information)``: :func:`abilities_pass`."""
        return abilities_pass(self.answers, self.answers_t, theta, a, b)

    def items(self, theta: np.ndarray, a: np.ndarray, b: np.ndarray) -> tuple:
        """Per item ``(loglik, gradient (items, 2), information (items, 3))``: :func:`item_pass`."""
        return item_pass(self.answers_t, theta, a, b)
