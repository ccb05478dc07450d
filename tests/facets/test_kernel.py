"""The fused many-facet likelihood (bayes_raters.facets.kernel) against the PyTensor graph of
the same model and against finite differences of itself."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytensor
import pytensor.tensor as pt
import pytest
from pymc.blocking import DictToArrayBijection

import bayes_raters.facets.kernel as kernel
from bayes_raters.data import validate_long
from bayes_raters.facets.model import build_facets_model, facet_layout, facet_rule, system_arrays, validate_facet_ratings
from bayes_raters.facets.simulate import simulate_facet_ratings
from tests.modes import PYTHON


def uneven_design():
    """Ratings where responses have one, two or three prompts and two or three ratings, five
    categories, and two systems, one of which skips a third of the responses."""
    ratings, systems, _ = simulate_facet_ratings(60, 5, 3, 5, random_seed=4)
    extra = ratings.iloc[::3].assign(prompt=lambda d: d["prompt"].map({"p0": "p1", "p1": "p2", "p2": "p0"}))
    ratings = pd.concat([ratings, extra]).drop_duplicates(["response", "prompt", "rater"])
    second = systems.iloc[::3].assign(system="other", score=lambda d: d["score"] * 0.5 + 1.0)
    return ratings, pd.concat([systems, second])


@pytest.mark.parametrize(("with_systems", "consistency"), [(True, True), (False, False)])
def test_value_and_gradient_equal_the_pytensor_graph(with_systems, consistency):
    ratings, systems = uneven_design()
    systems = systems if with_systems else None
    fused = build_facets_model(ratings, systems, consistency=consistency)
    graph = build_facets_model(ratings, systems, consistency=consistency, fused=False)
    assert any(isinstance(node.op, kernel.FacetsMarginal) for node in pytensor.graph.traversal.applys_between([], [fused.logp()]))
    functions = [m.logp_dlogp_function(ravel_inputs=True, mode=PYTHON) for m in (fused, graph)]  # values, not speed: no Numba compile
    for f in functions:
        f.set_extra_values({})
    start = DictToArrayBijection.map(graph.initial_point()).data
    rng = np.random.default_rng(7)
    for scale in (0.3, 1.0, 2.0):  # 2.0: far tails, where terms underflow and are dropped
        x = start + rng.normal(0.0, scale, start.size)
        (value, gradient), (reference, reference_gradient) = (f(x) for f in functions)
        assert value == pytest.approx(reference, rel=1e-12, abs=1e-9)
        np.testing.assert_allclose(gradient, reference_gradient, rtol=1e-9, atol=1e-9)


def kernel_inputs(seed: int):
    ratings, systems = uneven_design()
    table, scores = validate_facet_ratings(ratings)
    layout = facet_layout(table, scores)
    rule = facet_rule(layout)
    values, mask, _ = system_arrays(validate_long(systems, {"response": "response", "system": "system"}, "score", "s"), layout)
    rng = np.random.default_rng(seed)
    n_raters, n_prompts = len(layout.raters), len(layout.prompts)
    params = [np.exp(rng.normal(0, 0.3, n_raters)), rng.normal(0, 0.5, (n_raters, n_prompts)), np.sort(rng.normal(0, 1, 4)),
              rng.normal(3, 0.3, 2), rng.normal(1, 0.2, 2), np.exp(rng.normal(-0.5, 0.2, 2))]
    data = [rule.nodes, rule.log_weights, layout.unit, layout.pair, layout.category, layout.unit_prompts, layout.score_values,
            values, mask]
    return params, data, layout.score_center


def call(params, data, center):
    a, location, thresholds, alpha, beta, tau = params
    return kernel.facets_marginal(a, location, thresholds, *data[:7], data[7], data[8], alpha, beta, tau, center)


def test_gradient_matches_central_differences():
    """Independent of the graph form: each gradient entry against (L(x + h) - L(x - h)) / 2h."""
    params, data, center = kernel_inputs(1)
    out = call(params, data, center)
    analytic = out[1:]
    h = 1e-6
    for which in range(len(params)):
        flat = params[which].ravel()
        for index in range(flat.size):
            up, down = ([p.copy() for p in params] for _ in range(2))
            up[which].ravel()[index] += h
            down[which].ravel()[index] -= h
            numeric = (float(call(up, data, center)[0]) - float(call(down, data, center)[0])) / (2 * h)
            assert numeric == pytest.approx(analytic[which].ravel()[index], rel=1e-5, abs=1e-5), (which, index)


def test_numba_backend_runs_the_kernel_natively_and_its_cache_key_follows_the_source(monkeypatch):
    """No object-mode fallback in the compiled graph (that would warn), the same value as the
    Python ``perform``, and a cache key that changes with the kernel's source (a stale compiled
    graph kept a slower kernel while it was developed)."""
    import warnings

    from pytensor.link.numba.dispatch.basic import numba_funcify_and_cache_key

    params, data, center = kernel_inputs(2)
    inputs = [pt.as_tensor(x) for x in params[:3] + data + params[3:]]
    total = kernel.FacetsMarginal(center)(*inputs)[0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        compiled = pytensor.function([], total, mode="NUMBA")
        value = compiled()
    python = pytensor.function([], total, mode=pytensor.compile.mode.Mode(linker="py", optimizer=None))()
    assert value == pytest.approx(float(call(params, data, center)[0]), rel=1e-13)
    assert python == pytest.approx(value, rel=1e-13)
    node = total.owner
    _, key = numba_funcify_and_cache_key(node.op, node=node)
    monkeypatch.setattr(kernel, "_source_version", lambda: 12345)
    kernel._register_numba()
    _, changed = numba_funcify_and_cache_key(node.op, node=node)
    monkeypatch.undo()
    kernel._register_numba()
    assert key is not None and changed != key


def test_a_second_derivative_is_refused():
    params, data, center = kernel_inputs(3)
    a = pt.dvector("a")
    inputs = [a, *(pt.as_tensor(x) for x in params[1:3] + data + params[3:])]
    gradient = pytensor.grad(kernel.FacetsMarginal(center)(*inputs)[0], a)
    with pytest.raises(NotImplementedError, match="second derivative"):
        pytensor.grad(gradient.sum(), a)


@pytest.mark.filterwarnings("ignore:Skipping Assert")
def test_the_graph_form_compiles_for_jax_samplers():
    """``fused=False`` (what ``fit_facets(nuts_sampler="numpyro")`` builds) runs on the JAX
    backend and gives the fused model's log density (``pt.arange`` of a symbolic length did not)."""
    pytest.importorskip("jax")
    ratings, systems = uneven_design()
    graph = build_facets_model(ratings, systems, fused=False)
    point = graph.initial_point()
    jax_value = graph.compile_logp(mode="JAX")(point)
    assert jax_value == pytest.approx(build_facets_model(ratings, systems).compile_logp()(point), rel=1e-10)


FRESH_OR_CACHED = """
import sys, numpy as np
from pymc.blocking import DictToArrayBijection
from bayes_raters.facets.model import build_facets_model
from bayes_raters.facets.simulate import simulate_facet_ratings
from bayes_raters.sampling import strict_float
ratings, systems, _ = simulate_facet_ratings(60, 4, 2, 4, random_seed=4)
model = build_facets_model(ratings, systems)
with strict_float():
    f = model.logp_dlogp_function(ravel_inputs=True)
f.set_extra_values({})
start = DictToArrayBijection.map(model.initial_point()).data
rng = np.random.default_rng(0)
values = [np.concatenate([[v], g]) for v, g in (f(start + rng.normal(0, s, start.size)) for s in (0.0, 0.3, 1.0))]
np.save(sys.argv[1], np.array(values))
"""


def test_a_fresh_compile_and_the_on_disk_cache_give_the_same_bits(tmp_path):
    """Same seed, same draws on a clean machine too: the kernel compiled fresh (empty Numba and
    PyTensor caches) and loaded from the cache it wrote give bit-identical log densities and
    gradients. With Numba's fast-math flags they did not, and NUTS gave other draws for the
    same seed on the first fit after a change (``kernel.FAST``)."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "numba_cache"), "PYTENSOR_FLAGS": f"compiledir={tmp_path / 'compiledir'}"}
    script = tmp_path / "evaluate.py"
    script.write_text(FRESH_OR_CACHED)
    for name in ("fresh", "cached"):
        run = subprocess.run([sys.executable, str(script), str(tmp_path / f"{name}.npy")], env=env, capture_output=True, text=True)
        assert run.returncode == 0, run.stderr[-2000:]
    fresh, cached = np.load(tmp_path / "fresh.npy"), np.load(tmp_path / "cached.npy")
    assert fresh.shape == (3, fresh.shape[1]) and np.isfinite(fresh).all()
    np.testing.assert_array_equal(fresh, cached)
