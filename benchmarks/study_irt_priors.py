"""Which item priors hold on Rasch-like tests: fixed N(0, 2) difficulties vs the hierarchical
(population location and scale) priors, against marginal maximum likelihood (the GLMM).

Design (the shape of the real test in issue 17: 100 respondents x 30 items): theta ~ N(0, 1),
common discrimination a = 1, difficulties spread evenly over [-spread, spread]. For each
replication, the 1PL common discrimination from: marginal ML (the Rasch GLMM with a normal
person effect; our quadrature likelihood maximised by scipy), and the posterior mean of
``fit_irt(..., "1pl")`` with ``hierarchical=False`` and ``True``. Prints the mean and the
mean absolute gap to the ML value per spread. Run:
``.venv/bin/python benchmarks/study_irt_priors.py [--replications 10]``.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import optimize

sys.path.insert(0, str(Path(__file__).parent))
from _machine import machine_line  # noqa: E402

from bayes_raters.irt import fit_irt, validate_responses  # noqa: E402
from bayes_raters.irt.binary.marginal import answer_patterns, default_rule, node_loglik  # noqa: E402
from bayes_raters.quadrature import marginal_loglik  # noqa: E402


def simulate_rasch(n_respondents: int, n_items: int, spread: float, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    theta = rng.normal(0, 1, n_respondents)
    b = np.linspace(-spread, spread, n_items)
    p = 1 / (1 + np.exp(-(theta[:, None] - b)))
    correct = (rng.random(p.shape) < p).astype(int)
    return pd.DataFrame(
        {
            "respondent": np.repeat(np.arange(n_respondents), n_items),
            "item": np.tile([f"i{j:02d}" for j in range(n_items)], n_respondents),
            "correct": correct.ravel(),
        }
    )


def mml_common_a(table: pd.DataFrame) -> float:
    """Marginal ML of the 1PL (common a, free b, theta ~ N(0, 1) integrated out)."""
    table = validate_responses(table)
    correct, answered, _, counts = answer_patterns(table, pd.unique(table["respondent"]), pd.unique(table["item"]))
    rule = default_rule(answered)
    n_items = correct.shape[1]

    def negative(x):
        a = np.full(n_items, np.exp(x[0]))
        q = node_loglik(correct, answered, a, x[1:], None, None, rule.nodes, logistic=True, complete=True, lib=np)
        return -(counts * marginal_loglik(q, rule.log_weights)).sum()

    fit = optimize.minimize(negative, np.zeros(n_items + 1), method="L-BFGS-B")
    return float(np.exp(fit.x[0]))


def run(spread: float, replications: int) -> dict:
    rows = []
    for rep in range(replications):
        table = simulate_rasch(100, 30, spread, seed=1000 * rep + int(10 * spread))
        row = {"mml": mml_common_a(table)}
        for label, hierarchical in (("fixed", False), ("hierarchical", True)):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                result = fit_irt(table, "1pl", hierarchical=hierarchical, random_seed=rep, nuts_sampler="pymc")
            row[label] = float(result.posterior["a_common"].mean())
        rows.append(row)
    frame = pd.DataFrame(rows)
    return {
        "spread": spread,
        **{f"mean {k}": frame[k].mean() for k in ("mml", "fixed", "hierarchical")},
        "|fixed - mml|": (frame["fixed"] - frame["mml"]).abs().mean(),
        "|hierarchical - mml|": (frame["hierarchical"] - frame["mml"]).abs().mean(),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--replications", type=int, default=10)
    args = parser.parse_args()
    print(machine_line())
    start = time.perf_counter()
    table = pd.DataFrame([run(spread, args.replications) for spread in (1.0, 2.5, 4.0)])
    print(f"1PL common discrimination (true 1.0), 100 x 30, {args.replications} replications per spread:")
    print(table.round(3).to_string(index=False))
    print(f"{time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
