"""Same seed, same draws, whatever the compile cache holds (issue 16, point 5).

A suite run failed on 2 divergences (and once on R-hat 1.012) in fits that passed alone. The
cause: with Numba's fast-math flags, a log-density compiled fresh differs in the last digits
from one assembled from PyTensor's on-disk cache, and NUTS turns that into other draws.
``sampling.strict_float`` compiles every fit without fast math.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import warnings

import numpy as np
import pandas as pd
import pymc as pm
import pytensor
import pytest

from bayes_raters.errors import ConvergenceWarning
from bayes_raters.inference import sample_model
from bayes_raters.inference_record import InferenceRecord
from bayes_raters.irt import simulate_responses, validate_responses
from bayes_raters.irt.binary.marginal import build_marginal_from_table

CHILD = """
import sys
import numpy as np
from bayes_raters.irt import simulate_responses, validate_responses
from bayes_raters.irt.binary.marginal import build_marginal_from_table
from bayes_raters.sampling import strict_float

answers, _ = simulate_responses(200, 6, random_seed=1)
model = build_marginal_from_table(validate_responses(answers), "2pl", n_options=None, hierarchical=False)
rng = np.random.default_rng(0)
point = {name: value + rng.normal(0, 0.3, np.shape(value)) for name, value in model.initial_point().items()}
with strict_float():
    np.save(sys.argv[1], model.compile_dlogp()(point))
"""


def _small_model():
    answers, _ = simulate_responses(60, 4, random_seed=8)
    return build_marginal_from_table(validate_responses(answers), "1pl", n_options=None, hierarchical=False)


def _other_work():
    """What a suite does between two fits: another model compiled and sampled (new cache
    entries, another seed), NumPy's global generator moved, a PyMC model context left behind."""
    answers, _ = simulate_responses(80, 5, random_seed=21)
    other = build_marginal_from_table(validate_responses(answers), "2pl", n_options=None, hierarchical=True)
    sample_model(other, draws=30, tune=30, chains=1, random_seed=99, what="other work")
    np.random.seed(12345)
    np.random.normal(size=1000)
    with pm.Model():
        pm.Normal("z")


def test_every_fit_compiles_without_fast_math(monkeypatch):
    """pm.sample runs inside strict_float, for every sampler, and the flag is restored after;
    a seeded fit repeated with other work in between gives the same draws bit for bit."""
    seen = []
    original = pm.sample

    def spy(*args, **kwargs):
        seen.append(pytensor.config.numba__fastmath)
        return original(*args, **kwargs)

    monkeypatch.setattr(pm, "sample", spy)
    before = pytensor.config.numba__fastmath
    with warnings.catch_warnings():  # 50 draws: convergence is not what is tested here
        warnings.simplefilter("ignore", ConvergenceWarning)
        first, _ = sample_model(_small_model(), draws=50, tune=50, random_seed=3, what="test")
        _other_work()
        second, _ = sample_model(_small_model(), draws=50, tune=50, random_seed=3, what="test")
    assert seen == [False, False, False]
    assert pytensor.config.numba__fastmath == before
    np.testing.assert_array_equal(first["posterior"]["b"].values, second["posterior"]["b"].values)


@pytest.mark.slow
def test_gradient_is_the_same_from_a_cold_and_a_warm_compile_cache(tmp_path):
    """The same model's gradient at the same point in two fresh processes sharing a new
    compile directory: the first compiles everything (cold, about a minute), the second loads
    from the cache. With fast math they differed in the last digits (checked by hand); they
    must agree bit for bit."""
    env = {**os.environ, "PYTENSOR_FLAGS": f"base_compiledir={tmp_path / 'cache'}"}
    gradients = []
    for run in ("cold", "warm"):
        out = tmp_path / f"{run}.npy"
        subprocess.run([sys.executable, "-c", CHILD, str(out)], env=env, check=True, timeout=600)
        gradients.append(np.load(out))
    np.testing.assert_array_equal(gradients[0], gradients[1])


def test_progressbar_defaults_to_interactive_sessions_and_reaches_the_sampler(monkeypatch):
    """progressbar=None shows PyMC's bar in a terminal or notebook only; an explicit value or
    BAYES_RATERS_PROGRESSBAR wins; every fit function passes it on to pm.sample."""
    from bayes_raters import sampling
    from bayes_raters.ctt import fit_true_score
    from bayes_raters.irt import fit_irt
    from bayes_raters.pairwise import fit_pairwise

    monkeypatch.delenv("BAYES_RATERS_PROGRESSBAR", raising=False)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    assert sampling.resolve_progressbar(None) is True
    monkeypatch.setattr(sys.stderr, "isatty", lambda: False, raising=False)
    monkeypatch.delitem(sys.modules, "ipykernel", raising=False)
    assert sampling.resolve_progressbar(None) is False and sampling.resolve_progressbar(True) is True
    monkeypatch.setenv("BAYES_RATERS_PROGRESSBAR", "1")
    assert sampling.resolve_progressbar(None) is True and sampling.resolve_progressbar(False) is False

    seen = []

    class Stop(Exception):
        pass

    def fake_sample(**kwargs):
        seen.append(kwargs["progressbar"])
        raise Stop

    monkeypatch.setattr(sampling.pm, "sample", fake_sample)
    ratings = pd.DataFrame({"response": [1, 1, 2, 2, 3, 3], "rater": list("ababab"), "score": [1.0, 2, 3, 3, 4, 5]})
    systems = pd.DataFrame({"response": [1, 2, 3], "system": "m", "score": [1.5, 3.0, 4.5]})
    answers = pd.DataFrame({"respondent": np.repeat(np.arange(20), 2), "item": ["x", "y"] * 20, "correct": np.tile([0, 1, 1, 0], 10)})
    comparisons = pd.DataFrame({"item_a": ["p", "q", "r"], "item_b": ["q", "r", "p"], "outcome": ["win", "loss", "tie"]})
    for fit in (
        lambda: fit_true_score(ratings, systems, progressbar=True),
        lambda: fit_irt(answers, "1pl", progressbar=True, inference="nuts"),  # the Laplace draws have no bar
        lambda: fit_pairwise(comparisons, progressbar=True),
    ):
        with pytest.raises(Stop):
            fit()
    assert seen == [True, True, True]


def test_sample_refined_refines_until_the_error_is_small_and_keeps_only_the_last_fits_warnings():
    import warnings

    from bayes_raters.sampling import sample_refined

    errors = {1.0: 5e-3, 0.5: 4e-4, 0.25: 1e-5}
    built = []

    def build(setting):
        setting = 1.0 if setting is None else setting  # None: the model's default
        built.append(setting)
        return f"model@{setting}", setting

    def sample(model):
        warnings.warn(f"warning from {model}", UserWarning, stacklevel=2)
        return f"idata@{model}", "report"

    def error_of(idata, model, setting):
        return errors[setting]

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model, idata, report, setting, error = sample_refined(build, sample, error_of, lambda s: s / 2,
                                                              tolerance=1e-3, refinements=2)
    assert built == [1.0, 0.5] and setting == 0.5 and error == 4e-4 and model == "model@0.5"
    assert [str(w.message) for w in caught] == ["warning from model@0.5"]  # the discarded fit's is held back
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        *_, setting, error = sample_refined(build, sample, error_of, lambda s: s / 2, tolerance=1e-6, refinements=1)
    assert setting == 0.5 and error == 4e-4  # out of refinements: the caller warns


def _normal_model():
    with pm.Model(coords={"k": [0, 1]}) as model:
        pm.Normal("x", 0.0, 1.0, dims="k")
    return model


def test_extra_chains_are_added_and_pooled_when_the_first_chains_mix_too_little():
    with pytest.warns(ConvergenceWarning, match="ESS"):  # 4 x 40 draws still fall short of 400
        idata, report = sample_model(_normal_model(), draws=40, tune=40, chains=2, random_seed=3, extra_chains=2)
    posterior = idata["posterior"]
    assert report.chains == 4 and list(posterior["chain"].values) == [0, 1, 2, 3]
    assert idata["sample_stats"].sizes["chain"] == 4
    record = InferenceRecord.of(idata)
    assert record.extra_chains == 2 and "ESS" in record.extra_chains_reason and record.sampler == "pymc" and record.path == "nuts"
    first, extra = posterior["x"].values[:2], posterior["x"].values[2:]
    assert not np.allclose(first, extra)  # fresh seeds, not the first chains repeated
    with pytest.warns(ConvergenceWarning):
        again, _ = sample_model(_normal_model(), draws=40, tune=40, chains=2, random_seed=3, extra_chains=2)
    np.testing.assert_array_equal(again["posterior"]["x"].values, posterior["x"].values)


def test_no_extra_chains_when_the_first_converge():
    idata, report = sample_model(_normal_model(), draws=1000, tune=500, chains=2, random_seed=3, extra_chains=2)
    assert report.converged and report.chains == 2 and InferenceRecord.of(idata).extra_chains == 0


def test_no_extra_chains_when_the_first_diverge():
    """Divergences mean a biased sampler, which more chains of it would not cure: reported as is."""
    with pm.Model() as funnel:
        v = pm.Normal("v", 0.0, 3.0)
        pm.Normal("x", 0.0, pm.math.exp(v / 2), shape=5)
    with pytest.warns(ConvergenceWarning, match="divergent"):
        idata, report = sample_model(funnel, draws=200, tune=200, chains=2, random_seed=3, target_accept=0.6, extra_chains=2)
    assert report.divergences > 0 and report.chains == 2 and InferenceRecord.of(idata).extra_chains == 0


def test_derived_streams_repeat_for_a_seed_and_accept_a_generator():
    from bayes_raters.sampling import derived_rng

    assert derived_rng(5, 17).random() == np.random.default_rng([5, 17]).random()
    assert derived_rng(5, 17).random() != derived_rng(5, 23).random()
    assert derived_rng(np.random.default_rng(1), 17).random() == derived_rng(np.random.default_rng(1), 17).random()


@pytest.mark.parametrize("family", ["polytomous", "facets"])
def test_fits_that_used_int_seed_accept_a_generator_and_repeat_with_it(family):
    """fit_polytomous and fit_facets called int(random_seed), so a numpy Generator raised. The
    GRM takes the Laplace path (its seed reaches the proposals), the facets model NUTS; both then
    draw theta from a stream derived from the same Generator."""
    from bayes_raters.facets import fit_facets, simulate_facet_ratings
    from bayes_raters.irt import fit_polytomous, simulate_ratings

    if family == "polytomous":
        data = simulate_ratings(80, 4, 3, random_seed=1)[0]
        fit = lambda seed: fit_polytomous(data, "grm", draws=60, tune=60, cores=1, random_seed=seed, inference="laplace")  # noqa: E731
    else:
        data = simulate_facet_ratings(40, 4, 1, 3, random_seed=1)[0]
        fit = lambda seed: fit_facets(data, draws=60, tune=60, cores=1, random_seed=seed, centred=True)  # noqa: E731
    with warnings.catch_warnings():  # 60 draws: convergence is not what is tested here
        warnings.simplefilter("ignore")
        first, second = fit(np.random.default_rng(4)), fit(np.random.default_rng(4))
    np.testing.assert_array_equal(first.idata["posterior"]["theta"].values, second.idata["posterior"]["theta"].values)


def _fake_form(divergences):
    """A stand-in for one form's fit: a report with the form's divergences and a warning naming it."""
    from types import SimpleNamespace

    def sample_form(form):
        warnings.warn(f"form {form}", UserWarning, stacklevel=2)
        return SimpleNamespace(report=SimpleNamespace(divergences=divergences[form]))
    return sample_form


@pytest.mark.parametrize(("divergences", "kept", "tried"), [
    ({"c": 0, "n": 5}, "first", {"first": 0}),                    # no divergence: one fit only
    ({"c": 35, "n": 0}, "second", {"first": 35, "second": 0}),     # the 2PL SBC's small b_sigma
    ({"c": 3, "n": 9}, "first", {"first": 3, "second": 9}),        # neither clean: the fewer
    ({"c": 4, "n": 4}, "first", {"first": 4, "second": 4}),        # a tie keeps the first
])
def test_fewest_divergences_tries_the_next_form_only_after_divergences(divergences, kept, tried):
    """``fewest_divergences``: forms in order until one is clean, the fewest divergences kept,
    and only the kept fit's warnings reach the caller."""
    from bayes_raters.sampling import fewest_divergences

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        name, fit, counts = fewest_divergences(_fake_form(divergences), {"first": "c", "second": "n"})
    assert name == kept and counts == tried
    assert fit.report.divergences == divergences[{"first": "c", "second": "n"}[kept]]
    assert [str(w.message) for w in caught] == [f"form {'c' if kept == 'first' else 'n'}"]


def test_pymc_nuts_skips_the_per_variable_gradient_check_and_keeps_the_draws(monkeypatch):
    """PyMC's sampler gets NUTS on every variable without ``assign_step_methods`` building one
    gradient per variable (it is not called), and the draws equal those of ``pm.sample``'s own
    assignment under the same settings, bit for bit; the patch is gone afterwards."""
    from pymc.sampling import mcmc

    from bayes_raters import inference

    with pm.Model(coords={"g": range(4)}) as model:
        a = pm.Normal("a", 0, 1, dims="g")
        z = pm.ZeroSumNormal("z", dims="g")
        pm.Normal("y", a + z, pm.HalfNormal("s", 1.0), observed=np.arange(4.0), dims="g")
    settings = {"chains": 2, "random_seed": 3, "cores": 1, "nuts_sampler": "pymc", "var_names": None, "progressbar": False,
                "draws": 30, "tune": 30, "target_accept": 0.9}
    original = mcmc.assign_step_methods
    calls = []
    monkeypatch.setattr(mcmc, "assign_step_methods", lambda *a, **k: calls.append(1) or original(*a, **k))
    ours, _, _ = inference._run_nuts(model, **settings)
    assert not calls and mcmc.assign_step_methods is not original  # ours ran; the spy is back in place
    monkeypatch.setattr(inference, "_nuts_for_every_variable", lambda model: contextlib.nullcontext())
    theirs, _, _ = inference._run_nuts(model, **settings)
    assert calls  # PyMC's own assignment ran this time
    for name in ("a", "z", "s"):
        np.testing.assert_array_equal(ours["posterior"][name].values, theirs["posterior"][name].values)
