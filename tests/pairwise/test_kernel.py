"""The compiled Bradley-Terry passes (bayes_raters.pairwise.kernel) against the PyTensor graph of
the same likelihood: per-row values, the log density and its gradient, in both parametrisations,
with and without annotators; the JAX samplers get the graph."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pymc as pm
import pytest
from scipy import special

from bayes_raters.errors import InvalidInputError
from bayes_raters.pairwise import fit
from bayes_raters.pairwise.kernel import BradleyTerryRows, bradley_terry_pullback, bradley_terry_rows, pair_segments
from bayes_raters.pairwise.model import build_pairwise_model, prepare_data
from bayes_raters.pairwise.simulate import latent_values, simulate_judgements


@pytest.fixture(scope="module")
def judged():
    """Bradley-Terry comparisons (no tie) by 12 annotators of spread consistency, with repeats of
    the same pair by the same annotator (pooled counts above 1)."""
    truth = latent_values(7, random_seed=4)
    sim = simulate_judgements(truth, n_comparisons=500, n_annotators=12, sigma_consistency=0.4, epsilon=0.0, lam=6.0, random_seed=4)
    comparisons = sim["comparisons"]
    assert not (comparisons["outcome"] == "tie").any()
    return prepare_data(comparisons)


def _has_fused_op(model) -> bool:
    from pytensor.graph.traversal import ancestors

    return any(getattr(v.owner, "op", None).__class__ is BradleyTerryRows for v in ancestors([model.logp()]) if v.owner)


def _logp_and_gradient(model):
    function = model.logp_dlogp_function(ravel_inputs=True)
    function.set_extra_values({})
    return function


@pytest.mark.parametrize("parametrisation", ["values", "differences"])
@pytest.mark.parametrize("annotators", [True, False])
def test_fused_density_and_gradient_equal_the_graph(judged, parametrisation, annotators):
    models = [build_pairwise_model(judged, parametrisation=parametrisation, annotator_effects=annotators, fused=f) for f in (True, False)]
    assert _has_fused_op(models[0]) and not _has_fused_op(models[1])
    fused, graph = (_logp_and_gradient(m) for m in models)
    start = np.concatenate([np.ravel(v) for v in models[0].initial_point().values()])
    rng = np.random.default_rng(0)
    for _ in range(4):
        x = start + rng.standard_normal(start.size)
        (value, gradient), (value_ref, gradient_ref) = fused(x), graph(x)
        assert abs(value - value_ref) <= 1e-10 * abs(value_ref)
        np.testing.assert_allclose(gradient, gradient_ref, rtol=1e-9, atol=1e-9)
        assert np.abs(gradient).max() > 1.0  # a point where the gradient says something


def test_fused_pointwise_loglik_and_predictive_draws(judged):
    models = [build_pairwise_model(judged, parametrisation="values", fused=f) for f in (True, False)]
    point = models[0].initial_point()
    point["lambda_log__"] = np.log(7.0)
    rows = [m.compile_fn(m.logp(vars=[m["outcome"]], sum=False)[0], inputs=m.value_vars)(point) for m in models]
    assert rows[0].shape == (models[0].dim_lengths["pair"].eval(),)
    np.testing.assert_allclose(rows[0], rows[1], rtol=1e-12)
    with models[0]:
        prior = pm.sample_prior_predictive(draws=5, random_seed=1)
    counts = prior["prior_predictive"]["outcome"].values
    assert counts.shape[-2:] == (len(rows[0]), 3)
    np.testing.assert_array_equal(counts.sum(axis=-1), np.broadcast_to(models[0]["pair_total"].get_value(), counts.shape[:-1]))
    assert (counts[..., 1] == 0).all()  # no tie band, no tie


def test_pair_segments_split_runs_of_one_pair():
    a, b = np.array([0, 0, 0, 1, 1, 0, 2]), np.array([1, 1, 2, 2, 2, 1, 3])
    starts, first, second = pair_segments(a, b)
    np.testing.assert_array_equal(starts, [0, 2, 3, 5, 6, 7])
    np.testing.assert_array_equal(first, [0, 0, 1, 0, 2])
    np.testing.assert_array_equal(second, [1, 2, 2, 1, 3])


def test_kernel_on_rows_that_revisit_a_pair_equals_numpy_and_finite_differences():
    """Called directly on rows not sorted by pair (a pair split over two runs): the rows equal the
    closed form and the pullback equals central differences of sum_n g_n l_n."""
    rng = np.random.default_rng(2)
    a, b = np.array([0, 0, 1, 0, 2, 1]), np.array([1, 1, 2, 1, 0, 2])
    who, losses, totals = np.array([0, 1, 1, 2, 0, 2]), np.array([0.0, 2.0, 1.0, 0.0, 3.0, 1.0]), np.array([1.0, 3.0, 1.0, 2.0, 3.0, 4.0])
    coefficient = rng.normal(size=6)
    starts, first, second = pair_segments(a, b)
    u, r, g = rng.normal(size=3) * 3, np.exp(rng.normal(size=3)), rng.normal(size=6)

    def rows(u, r):
        return bradley_terry_rows(u, r, starts, first, second, who, losses, totals, coefficient)

    loglik, slope = rows(u, r)
    x = r[who] * (u[a] - u[b])
    np.testing.assert_allclose(loglik, coefficient - totals * np.logaddexp(0.0, -x) - losses * x, rtol=1e-13)
    np.testing.assert_allclose(slope, totals * special.expit(-x) - losses, rtol=1e-13)
    du, dr = bradley_terry_pullback(g, slope, u, r, starts, first, second, who)
    h = 1e-6
    for vector, analytic in ((u, du), (r, dr)):
        for i in range(vector.size):
            step = np.zeros(vector.size)
            step[i] = h
            plus = rows(u + step, r)[0] if vector is u else rows(u, r + step)[0]
            minus = rows(u - step, r)[0] if vector is u else rows(u, r - step)[0]
            assert analytic[i] == pytest.approx(g @ (plus - minus) / (2 * h), rel=1e-6, abs=1e-8)


@pytest.mark.parametrize("sampler, expected", [("numpyro", False), ("pymc", True), ("nutpie", True)])
def test_fit_gives_the_jax_samplers_the_graph(judged, monkeypatch, sampler, expected):
    seen = {}

    def stop(data, **options):
        seen.update(options)
        raise InvalidInputError("stop here")

    monkeypatch.setattr(fit, "build_pairwise_model", stop)
    comparisons = pd.DataFrame({"item_a": ["x", "y"], "item_b": ["y", "z"], "outcome": ["win", "loss"]})
    with pytest.raises(InvalidInputError, match="stop here"):
        fit.fit_pairwise(comparisons, annotator=None, nuts_sampler=sampler)
    assert seen["fused"] is expected
