"""Judges' paired-comparison designs as they come (``tests/data/pairwise/``, psychotools and
psychotree paircomp data; SoundQuality by default: 783 listening sessions x 28 pairs of 8 sound
processing methods, 21,924 comparisons, no ties) with the annotator model's defaults,
``fit_pairwise(comparisons, annotator="judge")``, beside choix's Bradley-Terry MLE of the pooled
comparisons (no judges) in the same run.

Prints, per design: the log density and gradient per call with the compiled Bradley-Terry passes
(``fused=True``, the default on PyMC's NUTS and nutpie) and with the PyTensor graph
(``fused=False``, what the JAX samplers get), best of three timings of 2,000 calls at one point;
then per seed the fit's wall time (compile included), max R-hat, min bulk ESS, divergences, extra
chains and leapfrog steps, the MLE's wall time and the ratio, and Spearman's rho of the posterior
mean abilities with the MLE.
Run: ``.venv/bin/python benchmarks/bench_pairwise_judges.py [--designs soundquality topmodel2007] [--seeds 1 2 3]``.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parents[1]))
from _machine import machine_line  # noqa: E402

from bayes_raters.pairwise import fit_pairwise  # noqa: E402
from bayes_raters.pairwise.hits import canonical_columns  # noqa: E402
from bayes_raters.pairwise.model import PairwiseSpec, build_pairwise_model, prepare_data  # noqa: E402
from tests.pairwise.test_real_designs import judge_comparisons as paircomp_rows  # noqa: E402

FOLDER = Path(__file__).parents[1] / "tests" / "data" / "pairwise"


def judge_comparisons(name: str) -> pd.DataFrame:
    """Long (judge, item_a, item_b, outcome) rows of a paircomp export, read as the tests read them."""
    return paircomp_rows(FOLDER, name)


def gradient_ms(comparisons: pd.DataFrame, fused: bool) -> float:
    """Best of three timings of 2,000 log-density-and-gradient calls, in ms per call."""
    frame = canonical_columns(comparisons, {"item_a": "item_a", "item_b": "item_b", "outcome": "outcome"}, "comparisons")
    model = build_pairwise_model(prepare_data(frame, annotator="judge"), **PairwiseSpec().builder_options(), fused=fused)
    function = model.logp_dlogp_function(ravel_inputs=True)
    function.set_extra_values({})
    point = np.concatenate([np.ravel(v) for v in model.initial_point().values()])
    point = point + 0.1 * np.random.default_rng(0).standard_normal(point.size)
    function(point)
    best = np.inf
    for _ in range(3):
        start = time.perf_counter()
        for _ in range(2000):
            function(point)
        best = min(best, (time.perf_counter() - start) / 2000 * 1e3)
    return best


def choix_mle(comparisons: pd.DataFrame) -> tuple[pd.Series, float]:
    """choix's Bradley-Terry MLE of the pooled comparisons (a tie counts half a win each way,
    as two half-weighted rows are not possible in choix: ties are dropped) and its wall time."""
    import choix

    start = time.perf_counter()
    decided = comparisons[comparisons["outcome"] != "tie"]
    items = pd.Index(sorted(set(comparisons["item_a"]) | set(comparisons["item_b"])))
    a, b = items.get_indexer(decided["item_a"]), items.get_indexer(decided["item_b"])
    win = (decided["outcome"] == "win").to_numpy()
    pairs = list(zip(np.where(win, a, b), np.where(win, b, a), strict=True))
    params = choix.opt_pairwise(len(items), pairs)
    return pd.Series(params, index=items), time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--designs", nargs="+", default=["soundquality"])
    parser.add_argument("--seeds", nargs="+", type=int, default=[1, 2, 3])
    args = parser.parse_args()
    print(machine_line())
    for name in args.designs:
        comparisons = judge_comparisons(name)
        fused, graph = gradient_ms(comparisons, True), gradient_ms(comparisons, False)
        print(f"{name}: {comparisons['judge'].nunique()} judges, {len(comparisons)} comparisons, "
              f"{int((comparisons['outcome'] == 'tie').sum())} ties; log density + gradient {fused:.3f} ms compiled passes, "
              f"{graph:.3f} ms graph ({graph / fused:.1f}x)")
        mle, mle_seconds = choix_mle(comparisons)
        for seed in args.seeds:
            start = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                result = fit_pairwise(comparisons, annotator="judge", random_seed=seed, progressbar=False)
            seconds = time.perf_counter() - start
            report = result.convergence
            ability = result.item_table()["s_mean"].reindex(mle.index)
            rho = stats.spearmanr(ability, mle).statistic
            steps = float(result.idata["sample_stats"]["n_steps"].mean())
            print(f"  seed {seed}: {seconds:.1f} s (choix MLE {mle_seconds:.3f} s, {seconds / mle_seconds:.0f}x); max R-hat "
                  f"{report.max_r_hat:.4f}, min bulk ESS {report.min_ess_bulk:.0f}, divergences {report.divergences}, "
                  f"extra chains {result.inference.extra_chains}, {steps:.0f} leapfrog steps a draw; Spearman with the MLE {rho:.3f}")


if __name__ == "__main__":
    main()
