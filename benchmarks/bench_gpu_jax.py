r"""Does a GPU pay for our IRT likelihoods? JAX on the GPU against JAX on the CPU of the same machine.

    python benchmarks/bench_gpu_jax.py [--out results.json] [--skip-leaderboard]

Self-contained (numpy, jax, numpyro only; no PyMC), so it runs on a machine that has JAX for its
GPU and nothing else of ours. Two workloads, both written as in the package:

1. **Two-dimensional exploratory 2PL, 1,000 x 20 (two factors, correlation 0.3), abilities
   integrated out** on the ball of trapezoid nodes of :mod:`bayes_raters.irt.multidimensional.model`
   (spacing 0.41, radius 6: 665 nodes): per answer pattern
   :math:`\operatorname{logsumexp}_q(y_p\cdot\eta_q - \sum_j \log(1 + e^{\eta_{jq}}) + \log w_q)`,
   :math:`\eta = A z + d`, two matrix products per evaluation. Timed: one log density + gradient
   (what NUTS needs per leapfrog step), 4,000 log densities in one batch (what the
   importance-sampled Laplace draws of :mod:`bayes_raters.laplace` need; on our 2-core VM those
   cost about 45 s of the 88 s 2D fit), and numpyro's NUTS, 2 chains x (1,000 + 1,000).
2. **Leaderboard-shaped joint 2PL** (issue 38's case: 100 systems x 2,000 items, every system
   answers every item, abilities sampled with the items): one log density + gradient, and
   NUTS 2 chains x (500 + 500) on the GPU only (on the CPU the package's own fit had not
   finished in 25 minutes).

Prints one JSON document (and writes it with ``--out``): the devices, each time (median of
repeated calls after a warm-up that includes compilation), and each NUTS run's wall time,
minimum bulk ESS, ESS per second and divergences.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time

import numpy as np

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpyro  # noqa: E402
import numpyro.distributions as dist  # noqa: E402
from jax.scipy.special import logsumexp  # noqa: E402
from numpyro.diagnostics import effective_sample_size  # noqa: E402
from numpyro.infer import MCMC, NUTS  # noqa: E402

jax.config.update("jax_enable_x64", True)


def simulate_factor_answers(n: int, per_factor: int, corr: float, seed: int):
    """Answers (n, 2 * per_factor) of a two-factor 2PL: items load on their own factor (a ~ U(0.8, 2)),
    intercepts N(0, 1), abilities N(0, [[1, corr], [corr, 1]])."""
    rng = np.random.default_rng(seed)
    j = 2 * per_factor
    a = np.zeros((j, 2))
    a[:per_factor, 0], a[per_factor:, 1] = rng.uniform(0.8, 2, per_factor), rng.uniform(0.8, 2, per_factor)
    theta = rng.multivariate_normal([0, 0], [[1, corr], [corr, 1]], n)
    d = rng.normal(0, 1, j)
    return (rng.random((n, j)) < 1 / (1 + np.exp(-(theta @ a.T + d)))).astype(float)


def ball_rule(spacing: float = 0.41, radius: float = 6.0):
    axis = spacing * np.arange(-np.floor(radius / spacing), np.floor(radius / spacing) + 1)
    nodes = np.stack([g.ravel() for g in np.meshgrid(axis, axis, indexing="ij")], axis=1)
    nodes = nodes[(nodes**2).sum(axis=1) <= radius**2 + 1e-9]
    return nodes.T, 2 * np.log(spacing) - 0.5 * (nodes**2).sum(axis=1) - np.log(2 * np.pi)


def mirt_logdensity(answers: np.ndarray, device):
    """``(logp(params), n_params)`` of the exploratory 2D 2PL on unconstrained parameters
    (d, free loadings, log anchor loadings), anchors items 0 and ``J/2``, pooled patterns."""
    patterns, counts = np.unique(answers, axis=0, return_counts=True)
    nodes, log_w = ball_rule()
    j = answers.shape[1]
    anchors = [0, j // 2]
    fixed = np.zeros((j, 2), bool)
    for k, row in enumerate(anchors):
        fixed[row, k:] = True
    free_rows, free_cols = np.nonzero(~fixed)
    put = lambda x: jax.device_put(jnp.asarray(x), device)  # noqa: E731
    y, n, z, lw = put(patterns), put(counts.astype(float)), put(nodes), put(log_w)
    sizes = (j, len(free_rows), 2)

    def logp(params):
        d, free, log_own = params[:j], params[j:j + sizes[1]], params[j + sizes[1]:]
        a = jnp.zeros((j, 2)).at[free_rows, free_cols].set(free).at[np.array(anchors), np.arange(2)].set(jnp.exp(log_own))
        eta = a @ z + d[:, None]
        table = y @ eta - jax.nn.softplus(eta).sum(axis=0)[None, :]
        like = (n * logsumexp(table + lw, axis=1)).sum()
        prior = dist.Normal(0, 2).log_prob(d).sum() + dist.Normal(0, 1).log_prob(free).sum() + dist.Normal(0, 0.5).log_prob(log_own).sum()
        return like + prior

    return logp, sum(sizes)


def leaderboard_logdensity(answers: np.ndarray, device):
    """Joint 2PL (abilities sampled): theta ~ N(0, 1), log a ~ N(0, 0.5), b ~ N(0, 2)."""
    s, j = answers.shape
    y = jax.device_put(jnp.asarray(answers), device)

    def logp(params):
        theta, log_a, b = params[:s], params[s:s + j], params[s + j:]
        eta = jnp.exp(log_a)[None, :] * (theta[:, None] - b[None, :])
        like = (y * eta - jax.nn.softplus(eta)).sum()
        return like + dist.Normal(0, 1).log_prob(theta).sum() + dist.Normal(0, 0.5).log_prob(log_a).sum() + dist.Normal(0, 2).log_prob(b).sum()

    return logp, s + 2 * j


def median_time(fn, *args, repeats: int = 20) -> float:
    jax.block_until_ready(fn(*args))  # compile
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(fn(*args))
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def nuts_run(logp, size: int, device, warmup: int, draws: int, seed: int = 1) -> dict:
    """numpyro NUTS on ``potential_fn = -logp``, 2 chains vectorised on ``device``."""
    kernel = NUTS(potential_fn=lambda x: -logp(x), target_accept_prob=0.9)
    mcmc = MCMC(kernel, num_warmup=warmup, num_samples=draws, num_chains=2, chain_method="vectorized", progress_bar=False)
    init = jax.device_put(jnp.zeros((2, size)) + 0.01 * jax.random.normal(jax.random.PRNGKey(seed), (2, size)), device)
    start = time.perf_counter()
    with jax.default_device(device):
        mcmc.run(jax.random.PRNGKey(seed), init_params=init, extra_fields=("diverging", "num_steps"))
        samples = np.asarray(mcmc.get_samples(group_by_chain=True))
    wall = time.perf_counter() - start
    ess = effective_sample_size(samples)
    extra = mcmc.get_extra_fields()
    return {"wall_s": round(wall, 2), "min_ess_bulk": round(float(np.min(ess)), 1), "ess_per_s": round(float(np.min(ess)) / wall, 2),
            "divergences": int(np.asarray(extra["diverging"]).sum()), "mean_leapfrog_steps": float(np.asarray(extra["num_steps"]).mean())}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out")
    parser.add_argument("--skip-leaderboard", action="store_true")
    parser.add_argument("--nuts-cpu", action="store_true", help="also run the 2D NUTS on the CPU (minutes)")
    args = parser.parse_args()
    devices = {"cpu": jax.devices("cpu")[0]}
    try:
        devices["gpu"] = jax.devices("gpu")[0]
    except RuntimeError:
        pass
    report = {"machine": platform.machine(), "cpus": os.cpu_count(), "jax": jax.__version__, "numpyro": numpyro.__version__,
              "devices": {k: str(v) for k, v in devices.items()}, "mirt_2d": {}, "leaderboard": {}}
    answers = simulate_factor_answers(1000, 10, 0.3, seed=3)
    for name, device in devices.items():
        logp, size = mirt_logdensity(answers, device)
        x = jax.device_put(jnp.zeros(size) + 0.1, device)
        grad = jax.jit(jax.value_and_grad(logp))
        many = jax.jit(lambda xs: jax.lax.map(logp, xs, batch_size=200))  # 200 x patterns x nodes at a time
        batch = jax.device_put(jnp.asarray(np.random.default_rng(0).normal(0.1, 0.05, (4000, size))), device)
        row = {"params": size, "logp_grad_ms": round(1e3 * median_time(grad, x), 3),
               "batch_4000_logp_s": round(median_time(many, batch, repeats=3), 3)}
        if name == "gpu" or args.nuts_cpu:
            row["nuts_2x(1000+1000)"] = nuts_run(logp, size, device, 1000, 1000)
        report["mirt_2d"][name] = row
        print(json.dumps({name: row}), flush=True)
    if not args.skip_leaderboard:
        rng = np.random.default_rng(5)
        theta, a, b = rng.normal(0, 1, 100), rng.lognormal(0, 0.4, 2000), rng.normal(0, 1, 2000)
        board = (rng.random((100, 2000)) < 1 / (1 + np.exp(-a * (theta[:, None] - b)))).astype(float)
        for name, device in devices.items():
            logp, size = leaderboard_logdensity(board, device)
            grad = jax.jit(jax.value_and_grad(logp))
            row = {"params": size, "logp_grad_ms": round(1e3 * median_time(grad, jax.device_put(jnp.zeros(size), device)), 3)}
            if name == "gpu":
                row["nuts_2x(500+500)"] = nuts_run(logp, size, device, 500, 500)
            report["leaderboard"][name] = row
            print(json.dumps({name: row}), flush=True)
    text = json.dumps(report, indent=1)
    print(text)
    if args.out:
        with open(args.out, "w") as handle:
            handle.write(text)


if __name__ == "__main__":
    main()
