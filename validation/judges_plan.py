"""The human-ratings planner against refits (issue 65, point 3).

Each replication simulates a design in which a large share of responses is human-rated
(:func:`~bayes_raters.judges.simulate_judges`, truth not drawn from the priors), fits a pilot on a
random few of the rated responses, plans the interval widths after ``extra`` more responses
(:func:`~bayes_raters.judges.plan_human_ratings`, random allocation, the simulation's ratings per
response), and refits with that many more of the held-out rated responses: planned over realised
width, per quantity and size.

Run: ``.venv/bin/python -m validation.judges_plan --replications 6`` (the card's table), or the
slow test ``tests/judges/test_plan.py::test_planned_widths_match_refits``.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
import pandas as pd

from bayes_raters.judges import fit_judges, plan_human_ratings, simulate_judges

DESIGN = {"n_systems": 4, "n_responses": 300, "judge_quality": (0.8, 0.5, 0.3), "human_share": 0.6, "ratings_per_response": 2}
PAIRS = [("system0", "system1"), ("system1", "system2")]
SYSTEMS = ["system0", "system3"]


def _fit(sim, responses, seed):
    humans = sim["human_ratings"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fit_judges(humans[humans["response"].isin(responses)], sim["judge_scores"], sim["systems"], random_seed=seed, progressbar=False)


def _widths(result) -> dict:
    systems, differences = result.system_table(), result.difference_table()
    out = {s: systems.loc[s, "upper"] - systems.loc[s, "lower"] for s in SYSTEMS}
    out.update({f"{a} - {b}": differences.loc[(a, b), "upper"] - differences.loc[(a, b), "lower"] for a, b in PAIRS})
    return out


def one_replication(seed: int, pilot: int = 60, extra=(100, 300)) -> list[dict]:
    """Planned and realised widths of one simulated design, one row per (extra, quantity)."""
    sim = simulate_judges(**DESIGN, random_seed=seed)
    order = np.random.default_rng(seed).permutation(sim["human_ratings"]["response"].unique())
    first = _fit(sim, order[:pilot], seed)
    plan = plan_human_ratings(first, extra=(0, *extra), raters=DESIGN["ratings_per_response"], pairs=PAIRS, systems=SYSTEMS)
    rows = []
    for e in extra:
        refit = _fit(sim, order[: pilot + e], seed)
        realised = _widths(refit)
        planned = plan[plan["extra_responses"] == e].set_index("quantity")["expected_width"]
        rows += [{"seed": seed, "extra": e, "quantity": q, "planned": planned[q], "realised": w, "converged": refit.convergence.converged}
                 for q, w in realised.items()]
    return rows


def summary(rows: list[dict]) -> pd.DataFrame:
    """Per extra: mean planned and realised width and their ratio, over quantities and replications."""
    frame = pd.DataFrame(rows).assign(ratio=lambda f: f["planned"] / f["realised"])
    return frame.groupby("extra").agg(planned=("planned", "mean"), realised=("realised", "mean"), ratio_mean=("ratio", "mean"),
                                      ratio_min=("ratio", "min"), ratio_max=("ratio", "max"), converged=("converged", "mean"))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--replications", type=int, default=6)
    args = parser.parse_args()
    start, rows = time.perf_counter(), []
    for seed in range(1, args.replications + 1):
        rows += one_replication(seed)
        print(rows[-4:], flush=True)
    print(summary(rows).round(3))
    print(f"{args.replications} replications in {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
