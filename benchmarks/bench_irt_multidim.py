"""Multidimensional IRT side by side in one run: the exploratory 2D marginal 2PL with PyMC's NUTS
(Numba backend) and with numpyro (JAX backend), beside the unidimensional marginal 2PL on the
same answers.

``--gradient-only`` times one log-density + gradient evaluation of the 2D model on each
PyTensor backend (Numba, C, JAX), the measured reason the card advises numpyro. Otherwise each
row prints wall time, seconds of sampling, min bulk ESS of the sampled item parameters per
second of sampling, max R-hat, divergences, quadrature nodes and the ELPD (LOO over respondents).
Data: ``simulate_factor_answers(N, (n/2, n/2), 0.3)``, 2 chains x (1,000 + 1,000) unless
``--draws/--tune``; one chain at a time (numpyro runs in this process, which never forks).
``--samplers default`` fits the 2D model with ``fit_irt``'s defaults (``inference="auto"``:
importance-sampled Laplace draws, NUTS if they fail) at its default draws; ``--girth`` times girth's
marginal ML of the same exploratory 2D 2PL (``multidimensional_twopl_mml``) in the same run, with
the ratio of each 2D fit's wall time to it (issue 36).
Run: ``.venv/bin/python benchmarks/bench_irt_multidim.py [--respondents 1000] [--items 20]
[--samplers numpyro pymc default] [--girth] [--no-1d] [--gradient-only]``.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import arviz as az
import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from _machine import machine_line  # noqa: E402

from bayes_raters.irt import (  # noqa: E402
    build_mirt_model,
    fit_irt,
    simulate_factor_answers,  # noqa: E402
)
from bayes_raters.irt.binary.model import validate_responses  # noqa: E402


def gradient_times(answers, repeats: int = 20) -> None:
    """Milliseconds per log-density + gradient of the 2D model on each backend."""
    model = build_mirt_model(validate_responses(answers), dims=2)
    point = model.initial_point()
    print(f"2D model: {len(model.coords['pattern'])} patterns x {len(model.coords['node'])} nodes")
    for mode in ("NUMBA", "FAST_RUN", "JAX"):
        gradient = model.compile_dlogp(mode=mode)
        np.asarray(gradient(point))  # compile and warm up
        start = time.perf_counter()
        for _ in range(repeats):
            np.asarray(gradient(point))  # np.asarray waits for JAX's asynchronous result
        print(f"  {mode:9s} {(time.perf_counter() - start) / repeats * 1000:7.2f} ms per gradient")


def fit_row(name: str, answers, **options) -> dict:
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = fit_irt(answers, "2pl", random_seed=1, progressbar=False, **options)
    wall = time.perf_counter() - start
    post = result.posterior
    sampled = [v for v in ("d", "loading_free", "loading_anchor", "b", "log_a") if v in post]
    ess = float(az.ess(post[sampled], method="bulk").to_array().min())
    sampling = float(post.attrs.get("sampling_time", np.nan))
    return {
        "fit": name, "wall_s": wall, "sampling_s": sampling, "min_ess_per_s": ess / sampling,
        "max_r_hat": result.report.max_r_hat, "divergences": result.report.divergences,
        "nodes": result.inference.quadrature_nodes, "elpd": float(az.loo(result.idata).elpd),
    }


def girth_seconds(answers) -> float:
    """Wall time of girth's exploratory 2D 2PL MML (items x respondents, complete answers).
    ``initial_guess=False``: girth 0.8's initial guess calls ``scipy.stats.mvn.mvnun``, which
    SciPy 1.18 no longer has (AttributeError), so girth starts from its default values."""
    import girth

    wide = answers.pivot(index="respondent", columns="item", values="correct").to_numpy().astype(int)
    start = time.perf_counter()
    girth.multidimensional_twopl_mml(wide.T, 2, {"initial_guess": False})
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--respondents", type=int, default=1000)
    parser.add_argument("--items", type=int, default=20)
    parser.add_argument("--samplers", nargs="+", default=["numpyro", "pymc"])
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--tune", type=int, default=1000)
    parser.add_argument("--gradient-only", action="store_true")
    parser.add_argument("--girth", action="store_true", help="time girth's 2D 2PL MML and print ratios")
    parser.add_argument("--no-1d", action="store_true", help="skip the unidimensional fit")
    args = parser.parse_args()
    print(machine_line())
    half = args.items // 2
    answers, _ = simulate_factor_answers(args.respondents, (half, args.items - half), 0.3, random_seed=7)
    print(f"answers: {args.respondents} x {args.items}, two factors correlated 0.3")
    if args.gradient_only:
        gradient_times(answers)
        return
    settings = {"draws": args.draws, "tune": args.tune}
    anchor = girth_seconds(answers) if args.girth else None
    if anchor is not None:
        print(f"girth multidimensional_twopl_mml: {anchor:.1f} s")
    rows = [] if args.no_1d else [fit_row("1D marginal (pymc)", answers, **settings)]
    for sampler in args.samplers:
        if sampler == "default":
            rows.append(fit_row("2D exploratory (defaults)", answers, dims=2))
        else:
            rows.append(fit_row(f"2D exploratory ({sampler})", answers, dims=2, nuts_sampler=sampler, **settings))
    for row in rows:
        if anchor is not None and row["fit"].startswith("2D"):
            row["ratio_to_girth"] = row["wall_s"] / anchor
        print("  ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in row.items()))


if __name__ == "__main__":
    main()
