"""Issue 38, point 1: the leaderboard 2PL at leaderboard shape (S systems x J benchmark items,
every system answering nearly every item). ``fit_leaderboard`` with its defaults (the blocked
sampler of ``bayes_raters.leaderboard.sampler``) beside a joint MAP fit by L-BFGS on the same
answers in the same run (the point estimate leaderboard tools give); ``--nuts`` adds the joint
model under NUTS (``build_irt_model``), the path that did not scale.

The answers come from ``simulate_leaderboard``: skewed abilities (standardised Gamma(2)), item
difficulties from a two-cluster mixture, discriminations LogNormal(0, 0.4) with 3% of items near
zero (a = 0.05), 5% of answers missing at random: distributions the priors do not assume.

Printed per fit: wall time, draws per chain (the default keeps sampling while the convergence
check fails), max R-hat, min bulk ESS and ESS per second over every parameter, corr(b) (items
with true a > 0.2: a flat item's difficulty is not identified) and corr(a) of the posterior
means with the truth, the 90% interval coverage of b and of the systems' true ranks, and the
share of the flat items flagged. Coverage is given against the truth as simulated and against
the truth on the scale the model fixes (the N(0, 1) abilities pin the systems' mean and SD, so
the truth is put on that scale: theta standardised over these systems, b likewise, a times the
SD); the second is the one a calibrated posterior should meet.

Issue 38's targets: 100 x 2,000 within 60 s; 200 x 10,000 within 5 min with corr(b) >= 0.98
and coverage of b 85-95%. Two ceilings for corr(b) are printed beside them: each item's posterior
mean of b given the true abilities, the simulation's own priors and either the true slope
(``oracle_b``) or not (``oracle_b_slopes_learned``, the one that binds a 2PL fit, which must learn
every slope). Measured figures: ``models/leaderboards.md``.

``--pyirt PYTHON`` adds py-irt's SVI fit (the tool leaderboard IRT work uses; its defaults) on
the same answers in the same run, by a Python 3.11 interpreter that has py-irt
(``benchmarks/pyirt_fit.py`` says how to make one).

Run: ``.venv/bin/python benchmarks/bench_leaderboard.py [--shape 200 10000] [--seed 1] [--nuts] [--pyirt /tmp/pyirt/bin/python]``;
``--seeds 2 3 4`` instead fits each seed with the defaults beside the slopes-learned ceiling.
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import optimize, special

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _machine import machine_line  # noqa: E402


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


def oracle_b(table: pd.DataFrame, truth: dict) -> pd.Series:
    """The best any estimator of the difficulties can do on these answers: each item's posterior
    mean of b given the **true** abilities and slope, under the simulation's own two-cluster
    prior (``simulate.HARD_ITEMS``, ``OTHER_ITEMS``: 0.3 N(1.5, 0.5^2) + 0.7 N(-0.5, 0.8^2)), on a
    grid of 401 points over [-6, 6]. Its corr(b) is the ceiling for corr(b) of a fit that must
    also learn theta and a."""
    from scipy import stats

    from bayes_raters.leaderboard.model import answer_matrix
    from bayes_raters.leaderboard.simulate import HARD_ITEMS, OTHER_ITEMS

    grid = np.linspace(-6, 6, 401)
    prior = np.log(sum(share * stats.norm.pdf(grid, mean, sd) for share, mean, sd in (HARD_ITEMS, OTHER_ITEMS)))
    data = answer_matrix(table)
    y = data.answers_t.astype(float)  # items x systems, -1 not answered
    theta, a = truth["theta"].reindex(data.systems).to_numpy(), truth["a"].reindex(data.items).to_numpy()
    out = np.empty(len(data.items))
    for start in range(0, len(data.items), 50):
        block = slice(start, start + 50)
        eta = a[block, None, None] * (theta[None, :, None] - grid[None, None, :])  # items x systems x grid
        answer = y[block, :, None]
        ll = np.where(answer < 0, 0.0, answer * eta - np.logaddexp(0, eta)).sum(1)
        log_post = ll + prior
        weights = np.exp(log_post - log_post.max(1, keepdims=True))
        out[block] = (weights @ grid) / weights.sum(1)
    return pd.Series(out, data.items)


def oracle_b_slopes_learned(table: pd.DataFrame, truth: dict) -> pd.Series:
    """The ceiling for a 2PL fit, which must learn each item's slope from its own answers: each
    item's posterior mean of b given the **true** abilities and both of the simulation's priors
    (the difficulties' mixture, log a ~ N(0, 0.4^2)), a and b unknown. The joint posterior of
    (log a, b) is evaluated on a grid of 33 x 201 points over [-1.6, 1.6] x [-7, 7], every item at
    once by the sampler's own item pass (``kernel.item_pass``), and log a summed out."""
    from scipy import stats

    from bayes_raters.leaderboard.kernel import item_pass
    from bayes_raters.leaderboard.model import answer_matrix
    from bayes_raters.leaderboard.simulate import HARD_ITEMS, OTHER_ITEMS

    grid_b, grid_log_a = np.linspace(-7, 7, 201), np.linspace(-1.6, 1.6, 33)
    prior_b = np.log(sum(share * stats.norm.pdf(grid_b, mean, sd) for share, mean, sd in (HARD_ITEMS, OTHER_ITEMS)))
    data = answer_matrix(table)
    theta = truth["theta"].reindex(data.systems).to_numpy()
    n_items = len(data.items)
    log_marginal = np.full((len(grid_b), n_items), -np.inf)  # log of the sum over log a, per (b, item)
    for log_a, prior_a in zip(grid_log_a, stats.norm.logpdf(grid_log_a, 0.0, 0.4)):
        a = np.full(n_items, np.exp(log_a))
        ll = np.array([item_pass(data.answers_t, theta, a, np.full(n_items, b))[0] for b in grid_b])
        log_marginal = np.logaddexp(log_marginal, ll + prior_a)
    log_post = log_marginal + prior_b[:, None]
    weights = np.exp(log_post - log_post.max(0))
    return pd.Series((grid_b @ weights) / weights.sum(0), data.items)


def nuts_fit(table: pd.DataFrame, sampler: str, tune: int, draws: int, seed: int, low_rank: bool = False):
    """The joint 2PL of the package (``build_irt_model``) sampled with NUTS; wall times apart."""
    from bayes_raters.inference import sample_model
    from bayes_raters.irt import build_irt_model

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


def pyirt_fit(table: pd.DataFrame, truth: dict, python: str, seconds_map: float) -> None:
    """py-irt's SVI 2PL (``benchmarks/pyirt_fit.py``, py-irt's defaults) run by the Python 3.11
    interpreter ``python`` on the same answers; prints its wall time and recovery (means only)."""
    import json
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        answers, out = Path(folder) / "answers.csv", Path(folder) / "pyirt.json"
        table.to_csv(answers, index=False)
        start = time.perf_counter()
        subprocess.run([python, str(Path(__file__).resolve().parent / "pyirt_fit.py"), str(answers), str(out)], check=True,
                       stdout=subprocess.DEVNULL)
        wall = time.perf_counter() - start
        fit = json.loads(out.read_text())
    b, a = pd.Series(fit["b"], fit["items"]), pd.Series(fit["a"], fit["items"])
    theta = pd.Series(fit["theta"], fit["subjects"]).reindex(truth["theta"].index)
    sharp = (truth["a"] > 0.2).to_numpy()
    print(f"py-irt SVI (2pl, defaults: 2,000 epochs): {fit['seconds']:.1f} s in the fit ({wall:.1f} s with start-up and CSV; "
          f"{fit['seconds'] / seconds_map:.0f}x the MAP), corr(b) {recovery(b, truth['b'].to_numpy(), sharp):.4f}, "
          f"corr(a) {recovery(a, truth['a'].to_numpy()):.4f}, corr(theta) {np.corrcoef(theta, truth['theta'])[0, 1]:.4f}; "
          "means only, no intervals")


def blocked_fit(table: pd.DataFrame, truth: dict, seed: int, seconds_map: float) -> None:
    """``fit_leaderboard`` with its defaults; prints the figures of the module docstring."""
    from bayes_raters.leaderboard import fit_leaderboard

    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = fit_leaderboard(table, random_seed=seed, progressbar=False)
    seconds = time.perf_counter() - start
    report = result.convergence
    items, systems = result.item_table(), result.system_table()
    theta = truth["theta"]
    centre, scale = theta.mean(), theta.std(ddof=0)
    on_scale = {"b": (truth["b"] - centre) / scale, "a": truth["a"] * scale}
    sharp = truth["a"] > 0.2

    def coverage(name, target):
        lower, upper = items[f"{name}_lower"].reindex(target.index), items[f"{name}_upper"].reindex(target.index)
        return float(((lower <= target) & (target <= upper)).mean())

    true_rank = theta.rank(ascending=False).reindex(systems.index)
    rank_cover = float(((systems["rank_lower"] <= true_rank) & (true_rank <= systems["rank_upper"])).mean())
    flat = truth["a"][truth["a"] < 0.1].index
    flagged = float((items.loc[flat, "flag"] != "").mean()) if len(flat) else float("nan")
    false_flags = int((items.loc[truth["a"][truth["a"] > 0.5].index, "flag"].isin(["flat", "backwards"])).sum())
    print(f"fit_leaderboard (defaults: 2 chains, {result.inference.draws_rule}): {seconds:.1f} s "
          f"({seconds / seconds_map:.0f}x the MAP); converged {report.converged}, max R-hat {report.max_r_hat:.4f}, "
          f"min bulk ESS {report.min_ess_bulk:.0f} ({report.min_ess_bulk / seconds:.2f} per s), min tail ESS {report.min_ess_tail:.0f}")
    print(f"  corr(b) {recovery(items['b_mean'], truth['b'].to_numpy(), sharp.to_numpy()):.4f}, "
          f"corr(a) {recovery(items['a_mean'], truth['a'].to_numpy()):.4f}, "
          f"corr(theta) {np.corrcoef(systems['theta_mean'].reindex(theta.index), theta)[0, 1]:.4f}")
    print(f"  90% coverage of b: {coverage('b', truth['b']):.3f} (truth as simulated), {coverage('b', on_scale['b']):.3f} "
          f"(truth on the model's scale); of a: {coverage('a', truth['a']):.3f}, {coverage('a', on_scale['a']):.3f}; "
          f"of the true ranks {rank_cover:.3f}")
    print(f"  flat items (true a = 0.05) flagged: {flagged:.3f} of {len(flat)}; items with true a > 0.5 flagged flat or backwards: {false_flags}")
    print(memory_line(len(systems), len(items)))


def memory_line(n_systems: int, n_items: int) -> str:
    """The answer matrices' size and the peak resident memory of this process (which also ran the MAP
    and the ceilings) and of the largest chain process (the chains run in forked processes)."""
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6  # KiB on Linux -> GB
    chain = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1e6
    return (f"  memory: answer matrices {2 * n_systems * n_items / 1e6:.0f} MB (int8, both layouts); peak RSS of the largest "
            f"chain process {chain:.2f} GB, of this process {own:.2f} GB")


def seed_rows(shape: tuple[int, int], seeds: list[int]) -> None:
    """The default's robustness over seeds: per seed, ``fit_leaderboard`` with its defaults (wall
    time, draws needed, convergence, corr(b), coverage of b on the model's scale) beside the
    ceiling with the slopes learned (``oracle_b_slopes_learned``)."""
    from bayes_raters.leaderboard import fit_leaderboard, simulate_leaderboard

    for seed in seeds:
        table, truth = simulate_leaderboard(*shape, random_seed=seed)
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = fit_leaderboard(table, random_seed=seed, progressbar=False)
        seconds = time.perf_counter() - start
        report, items = result.convergence, result.item_table()
        sharp = (truth["a"] > 0.2).to_numpy()
        theta = truth["theta"]
        on_scale = ((truth["b"] - theta.mean()) / theta.std(ddof=0)).reindex(items.index)
        covered = float(((items["b_lower"] <= on_scale) & (on_scale <= items["b_upper"])).mean())
        ceiling = recovery(oracle_b_slopes_learned(table, truth), truth["b"].to_numpy(), sharp)
        print(f"seed {seed}: fit_leaderboard {seconds:.1f} s, {report.draws} draws per chain, converged {report.converged}, "
              f"max R-hat {report.max_r_hat:.4f}, min bulk ESS {report.min_ess_bulk:.0f}, min tail ESS {report.min_ess_tail:.0f}, "
              f"corr(b) {recovery(items['b_mean'], truth['b'].to_numpy(), sharp):.4f} (ceiling, slopes learned: {ceiling:.4f}), "
              f"coverage of b {covered:.3f}", flush=True)
        print(memory_line(*shape), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--shape", type=int, nargs=2, default=(100, 2000), metavar=("SYSTEMS", "ITEMS"))
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--nuts", action="store_true", help="also the joint model under NUTS (slow: 408 s at 100 x 2,000)")
    parser.add_argument("--sampler", default="nutpie", choices=("nutpie", "pymc", "numpyro"))
    parser.add_argument("--tune", type=int, default=500, help="NUTS warmup (--nuts)")
    parser.add_argument("--draws", type=int, default=500, help="NUTS draws (--nuts)")
    parser.add_argument("--pyirt", metavar="PYTHON", default=None,
                        help="a Python 3.11 interpreter with py-irt: its SVI fit in the same run (benchmarks/pyirt_fit.py)")
    parser.add_argument("--low-rank", action="store_true", help="nutpie's low-rank mass-matrix adaptation (--nuts)")
    parser.add_argument("--seeds", type=int, nargs="+", metavar="SEED",
                        help="instead: fit_leaderboard's defaults and the slopes-learned ceiling on each of these seeds")
    args = parser.parse_args()
    from bayes_raters.leaderboard import simulate_leaderboard

    print(machine_line())
    if args.seeds:
        seed_rows(tuple(args.shape), args.seeds)
        return
    table, truth = simulate_leaderboard(*args.shape, random_seed=args.seed)
    print(f"{args.shape[0]} systems x {args.shape[1]} items, {len(table):,} answers")
    point, seconds = joint_map(table)
    sharp = (truth["a"] > 0.2).to_numpy()
    print(f"joint MAP (L-BFGS-B): {seconds:.1f} s, corr(b) {recovery(point['b'], truth['b'].to_numpy(), sharp):.4f}, "
          f"corr(a) {recovery(point['a'], truth['a'].to_numpy()):.4f}")
    oracle = oracle_b(table, truth)
    print(f"ceiling: corr(b) {recovery(oracle, truth['b'].to_numpy(), sharp):.4f} of each item's posterior mean given the true "
          "abilities and slopes and the simulation's own prior (no fit can know these)")
    start = time.perf_counter()
    learned = oracle_b_slopes_learned(table, truth)
    print(f"ceiling with the slopes learned: corr(b) {recovery(learned, truth['b'].to_numpy(), sharp):.4f} of each item's posterior "
          f"mean given the true abilities and both true priors, a and b unknown ({time.perf_counter() - start:.0f} s)")
    blocked_fit(table, truth, args.seed, seconds)
    if args.pyirt:
        pyirt_fit(table, truth, args.pyirt, seconds)
    if not args.nuts:
        return
    idata, report, built, sampled = nuts_fit(table, args.sampler, args.tune, args.draws, args.seed, args.low_rank)
    post, stats = idata["posterior"].to_dataset(), idata["sample_stats"].to_dataset()
    steps = float(stats["n_steps"].mean()) if "n_steps" in stats else float("nan")
    mean = {name: post[name].mean(("chain", "draw")).to_series() for name in ("a", "b")}
    lower, upper = (post["b"].quantile(q, ("chain", "draw")).to_series() for q in (0.05, 0.95))
    order = np.argsort(lower.index.to_numpy())
    covered = float(np.mean((lower.to_numpy()[order] <= truth["b"].to_numpy()) & (truth["b"].to_numpy() <= upper.to_numpy()[order])))
    label = f"{args.sampler}, low-rank" if args.low_rank else args.sampler
    print(f"NUTS ({label}, 2 chains x ({args.tune} + {args.draws})): build {built:.1f} s, compile + sample {sampled:.1f} s "
          f"({sampled / seconds:.0f}x the MAP), {steps:.1f} steps per draw, divergences {report.divergences}, max R-hat "
          f"{report.max_r_hat:.3f}, min bulk ESS {report.min_ess_bulk:.0f} ({report.min_ess_bulk / sampled:.2f} per s), "
          f"corr(b) {recovery(mean['b'], truth['b'].to_numpy(), sharp):.3f}, corr(a) {recovery(mean['a'], truth['a'].to_numpy()):.3f}, "
          f"90% coverage of b {covered:.3f}")


if __name__ == "__main__":
    main()
