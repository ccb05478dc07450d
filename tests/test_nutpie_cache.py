"""nutpie's C wrappers kept in PyTensor's on-disk Numba cache (:mod:`bayes_raters.nutpie_cache`):
the same draws as nutpie's own compile, new data without a compile, and a second compile of one
design loaded rather than compiled."""

import numpy as np
import nutpie
import pymc as pm

from bayes_raters.nutpie_cache import compile_nutpie
from bayes_raters.sampling import strict_float


def regression(seed: int, n: int = 60) -> pm.Model:
    """A straight line with its data as shared inputs and one deterministic (the expand wrapper)."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n)
    y = 0.5 + 1.5 * x + rng.standard_t(4, size=n)
    with pm.Model(coords={"coef": ["intercept", "slope"]}) as model:
        x_data = pm.Data("x", x)
        y_data = pm.Data("y", y)
        beta = pm.Normal("beta", 0, 2, dims="coef")
        sigma = pm.HalfNormal("sigma", 2)
        pm.Deterministic("variance", sigma**2)
        pm.Normal("obs", beta[0] + beta[1] * x_data, sigma, observed=y_data, shape=y_data.shape)
    return model


def draws(compiled) -> dict[str, np.ndarray]:
    trace = nutpie.sample(compiled, draws=150, tune=150, chains=2, cores=1, seed=4, progress_bar=False)
    return {name: trace.posterior[name].values for name in ("beta", "sigma", "variance")}


def test_same_draws_as_nutpies_own_compile():
    with strict_float():
        ours, theirs = draws(compile_nutpie(regression(1))), draws(nutpie.compile_pymc_model(regression(1)))
    for name in ours:
        np.testing.assert_array_equal(ours[name], theirs[name], err_msg=name)
    assert np.ptp(ours["beta"]) > 0


def test_new_data_of_another_length_without_a_compile():
    with strict_float():
        swapped = compile_nutpie(regression(1))
        other = regression(2, n=85)
        swapped = swapped.with_data(x=other["x"].get_value(), y=other["y"].get_value())
        ours, fresh = draws(swapped), draws(compile_nutpie(other))
    for name in ours:
        np.testing.assert_array_equal(ours[name], fresh[name], err_msg=name)


def test_a_second_compile_of_one_design_loads_the_wrappers():
    with strict_float():
        compile_nutpie(regression(3))
        again = compile_nutpie(regression(4))
    assert again.compiled_logp_func.cache_hits == 1
    assert again.compiled_expand_func.cache_hits == 1


def test_a_nutpie_without_the_helpers_compiles_its_own_way(monkeypatch):
    from bayes_raters import nutpie_cache

    monkeypatch.setattr(nutpie_cache, "NUTPIE_HELPERS", (*nutpie_cache.NUTPIE_HELPERS, "_a_helper_gone"))
    with strict_float():
        compiled = compile_nutpie(regression(1))
        np.testing.assert_array_equal(draws(compiled)["beta"], draws(nutpie.compile_pymc_model(regression(1)))["beta"])
    assert type(compiled) is not nutpie_cache.cached_model_class()
