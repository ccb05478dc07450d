"""Issue 38, point 1, first measurement: the 2PL at leaderboard shape (S systems x J benchmark
items, every system answering nearly every item) with the joint model (abilities sampled with the
items, ``build_irt_model``) under NUTS, beside a joint MAP fit by L-BFGS on the same answers in
the same run (the point estimate leaderboard tools give; seconds).

The answers are simulated from distributions the priors do not assume: skewed abilities
(standardised Gamma(2)), item difficulties from a two-cluster mixture (70% N(-0.5, 0.8), 30%
N(1.5, 0.5)), discriminations LogNormal(0, 0.4) with 3% of items near zero (a = 0.05: items that
rank systems not at all), 5% of answers missing at random.

Printed per fit: wall time (compile and sampling apart), leapfrog steps per draw, divergences,
max R-hat and min bulk ESS over a, b and theta, ESS per second, corr(b) (over the items that
discriminate, true a > 0.2: a flat item's difficulty is not identified) and corr(a) of the
posterior means with the truth, and the 90% interval coverage of b (issue 38's targets: 100 x
2,000 within 60 s; 200 x 10,000 within 5 min with corr(b) >= 0.98 and coverage 85-95%).

Measured (2026-11-28, 2 cores, a slow day: girth's LSAT-7 MML 0.31 s), 100 x 2,000, 2 x (300 + 300):
joint MAP 2.5 s (corr(b) 0.946, corr(a) 0.749); nutpie with its default (diagonal) adaptation 407.7 s,
60.1 leapfrog steps per draw, max R-hat 1.223, min bulk ESS 7, corr(b) 0.960, coverage of b 0.847:
not converged and 7x over the 60 s target; ``--low-rank`` had not finished after 540 s. The joint
NUTS path is not the leaderboard path.

Run: ``.venv/bin/python benchmarks/bench_leaderboard.py [--shape 100 2000] [--tune 500 --draws 500]
[--sampler nutpie] [--low-rank]``.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import optimize, special

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _machine import machine_line  # noqa: E402


def simulate_leaderboard(n_systems: int, n_items: int, random_seed: int = 0, missing: float = 0.05):
    """Long answers ``respondent, item, correct`` and the true ``theta``, ``a``, ``b``."""
    rng = np.random.default_rng(random_seed)
    theta = (rng.gamma(2.0, 1.0, n_systems) - 2.0) / np.sqrt(2.0)
    hard = rng.random(n_items) < 0.3
    b = np.where(hard, rng.normal(1.5, 0.5, n_items), rng.normal(-0.5, 0.8, n_items))
    a = rng.lognormal(0.0, 0.4, n_items)
    a[rng.random(n_items) < 0.03] = 0.05
    p = special.expit(a[None, :] * (theta[:, None] - b[None, :]))
    correct = (rng.random(p.shape) < p).astype(np.int8)
    keep = rng.random(p.shape) >= missing
    s, j = np.nonzero(keep)
    table = pd.DataFrame({"respondent": [f"sys{i:04d}" for i in s], "item": [f"item{k:05d}" for k in j], "correct": correct[s, j]})
    return table, {"theta": theta, "a": a, "b": b}


def joint_map(table: pd.DataFrame) -> tuple[dict, float]:
    """Joint MAP of the 2PL by L-BFGS-B on the dense (system x item) matrix with a mask:
    theta ~ N(0, 1), log a ~ N(0, 1), b ~ N(0, 2^2); the analytic gradient of
    sum y log sigma(eta) + (1 - y) log sigma(-eta), eta = a_j (theta_s - b_j)."""
    systems, s = np.unique(table["respondent"], return_inverse=True)
    items, j = np.unique(table["item"], return_inverse=True)
    y = np.zeros((len(systems), len(items)))
    mask = np.zeros_like(y)
    y[s, j], mask[s, j] = table["correct"].to_numpy(), 1.0
    n_s, n_j = y.shape

    def objective(x):
        theta, log_a, b = x[:n_s], x[n_s:n_s + n_j], x[n_s + n_j:]
        a = np.exp(log_a)
        diff = theta[:, None] - b[None, :]
        eta = a[None, :] * diff
        loglik = mask * (y * -np.logaddexp(0, -eta) + (1 - y) * -np.logaddexp(0, eta))
        resid = mask * (y - special.expit(eta))
        value = loglik.sum() - 0.5 * (theta @ theta) - 0.5 * (log_a @ log_a) - 0.5 * (b @ b) / 4
        grad = np.concatenate([(resid * a[None, :]).sum(1) - theta, (resid * diff).sum(0) * a - log_a, -(resid.sum(0) * a) - b / 4])
        return -value, -grad

    start = time.perf_counter()
    fit = optimize.minimize(objective, np.zeros(n_s + 2 * n_j), jac=True, method="L-BFGS-B", options={"maxiter": 2000})
    seconds = time.perf_counter() - start
    x = fit.x
    return {"theta": pd.Series(x[:n_s], systems), "a": pd.Series(np.exp(x[n_s:n_s + n_j]), items), "b": pd.Series(x[n_s + n_j:], items)}, seconds


def nuts_fit(table: pd.DataFrame, sampler: str, tune: int, draws: int, seed: int, low_rank: bool = False):
    """The joint 2PL of the package (``build_irt_model``) sampled with NUTS; wall times apart."""
    from bayes_raters.irt import build_irt_model
    from bayes_raters.sampling import sample_model

    start = time.perf_counter()
    model = build_irt_model(table, "2pl")
    built = time.perf_counter() - start
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        idata, report = sample_model(model, draws=draws, tune=tune, chains=2, cores=2, random_seed=seed, nuts_sampler=sampler,
                                     nuts_kwargs={"adaptation": "low_rank"} if low_rank else None,
                                     check_var_names=["a", "b", "theta"], what="leaderboard 2PL (joint)")
    return idata, report, built, time.perf_counter() - start - built


def recovery(estimate: pd.Series, truth: np.ndarray, keep: np.ndarray | None = None) -> float:
    """Correlation with the truth (items in name order), over ``keep`` where given."""
    values = estimate.to_numpy()[np.argsort(estimate.index.to_numpy())]
    keep = np.ones(len(truth), bool) if keep is None else keep
    return float(np.corrcoef(values[keep], truth[keep])[0, 1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--shape", type=int, nargs=2, default=(100, 2000), metavar=("SYSTEMS", "ITEMS"))
    parser.add_argument("--sampler", default="nutpie", choices=("nutpie", "pymc", "numpyro"))
    parser.add_argument("--tune", type=int, default=500)
    parser.add_argument("--draws", type=int, default=500)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--no-nuts", action="store_true", help="the MAP anchor only")
    parser.add_argument("--low-rank", action="store_true", help="nutpie's low-rank mass-matrix adaptation (the shared shift/scale directions)")
    args = parser.parse_args()
    print(machine_line())
    table, truth = simulate_leaderboard(*args.shape, random_seed=args.seed)
    print(f"{args.shape[0]} systems x {args.shape[1]} items, {len(table):,} answers")
    point, seconds = joint_map(table)
    sharp = truth["a"] > 0.2
    print(f"joint MAP (L-BFGS-B): {seconds:.1f} s, corr(b) {recovery(point['b'], truth['b'], sharp):.3f}, corr(a) {recovery(point['a'], truth['a']):.3f}")
    if args.no_nuts:
        return
    idata, report, built, sampled = nuts_fit(table, args.sampler, args.tune, args.draws, args.seed, args.low_rank)
    post, stats = idata["posterior"].to_dataset(), idata["sample_stats"].to_dataset()
    steps = float(stats["n_steps"].mean()) if "n_steps" in stats else float("nan")
    mean = {name: post[name].mean(("chain", "draw")).to_series() for name in ("a", "b")}
    lower, upper = (post["b"].quantile(q, ("chain", "draw")).to_series() for q in (0.05, 0.95))
    order = np.argsort(lower.index.to_numpy())
    covered = float(np.mean((lower.to_numpy()[order] <= truth["b"]) & (truth["b"] <= upper.to_numpy()[order])))
    label = f"{args.sampler}, low-rank" if args.low_rank else args.sampler
    print(f"NUTS ({label}, 2 chains x ({args.tune} + {args.draws})): build {built:.1f} s, compile + sample {sampled:.1f} s "
          f"({sampled / seconds:.0f}x the MAP), {steps:.1f} steps per draw, divergences {report.divergences}, max R-hat "
          f"{report.max_r_hat:.3f}, min bulk ESS {report.min_ess_bulk:.0f} ({report.min_ess_bulk / sampled:.2f} per s), "
          f"corr(b) {recovery(mean['b'], truth['b'], sharp):.3f}, corr(a) {recovery(mean['a'], truth['a']):.3f}, 90% coverage of b {covered:.3f}")


if __name__ == "__main__":
    main()
