r"""Fitting the polytomous models (:mod:`bayes_raters.irt.polytomous.model`): NUTS over the item
parameters, then every respondent's :math:`\theta` drawn from its exact conditional given each
posterior draw (:func:`bayes_raters.quadrature.draw_conditional`), and the result tables.

The pointwise log-likelihood is each respondent's marginal
:math:`\log \int \prod_j P(x_{ij} \mid \theta) \varphi(\theta)\,d\theta`, so ``az.loo`` leaves a
respondent out, as for binary items under the marginal method.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import xarray as xr

from bayes_raters.chains import chain_array, map_chains
from bayes_raters.errors import InvalidInputError
from bayes_raters.irt.local_dependence import local_dependence
from bayes_raters.irt.plots import plot_test_information
from bayes_raters.irt.polytomous.model import (
    POLYTOMOUS_MODELS,
    CategoryLayout,
    answer_plan,
    answered_logp,
    build_polytomous_model,
    category_logp,
    item_information,
)
from bayes_raters.irt.slopes import rest_correlations, slope_reason, warn_contradicted_slopes
from bayes_raters.persistence import plain_value
from bayes_raters.quadrature import draw_conditional, marginal_loglik
from bayes_raters.results import FitResult, interval_table, thinned_posterior
from bayes_raters.sampling import ConvergenceReport, derived_rng, sample_model


@dataclass(repr=False)
class PolytomousResult(FitResult):
    """A fitted GRM or GPCM: ``idata`` (posterior with ``a``, ``b`` per threshold and ``theta``
    per respondent; sample_stats; log_likelihood per respondent; observed_data ``category`` and
    constant_data ``respondent``/``item`` per rating), the validated ``table`` (with the original
    ``score`` and its ``category``), ``categories`` ({item: scores in category order}) and the
    convergence ``report``."""

    idata: xr.DataTree
    model: str
    table: pd.DataFrame
    categories: dict
    report: ConvergenceReport

    summary_var_names = ("a", "b", "d")
    family = "polytomous IRT"

    @property
    def layout(self) -> CategoryLayout:
        """The items' category counts as a :class:`CategoryLayout`."""
        return CategoryLayout(np.array([len(v) for v in self.categories.values()]))

    def _size(self) -> str:
        return (f"{self.model.upper()}, {self.table['respondent'].nunique()} respondents x "
                f"{len(self.categories)} items, up to {max(len(v) for v in self.categories.values())} categories")

    def _saved_config(self) -> dict:
        return {"model": self.model, "categories": [[plain_value(i), v] for i, v in self.categories.items()],
                "report": self.report.to_dict()}

    @classmethod
    def _from_saved(cls, tree: xr.DataTree, config: dict) -> PolytomousResult:
        categories = {item: [float(v) for v in scores] for item, scores in config["categories"]}
        ratings = tree["constant_data"].to_dataset()
        category = tree["observed_data"]["category"].values
        table = pd.DataFrame({"respondent": ratings["respondent"].values, "item": ratings["item"].values})
        table["score"] = [categories[i][int(c)] for i, c in zip(table["item"], category)]
        table["category"] = category
        return cls(tree, config["model"], table, categories, ConvergenceReport(**config["report"]))

    def item_table(self, ci_prob: float = 0.9, theta_points=(-2.0, 0.0, 2.0)) -> pd.DataFrame:
        """One row per item: number of categories, posterior mean, SD and equal-tailed
        ``ci_prob`` interval of ``a``, the posterior mean of each threshold (``b_1`` ..), worst
        R-hat and bulk ESS of its parameters, the mean observed category, the posterior mean
        item information at ``theta_points`` (``info_at_0``, ...), the item-rest correlation
        (``rest_corr``, ``rest_corr_upper``, ``contradicts_slope``: :mod:`bayes_raters.irt.slopes`),
        ``flagged`` and ``reasons``."""
        frame = interval_table(self.posterior["a"], ci_prob, ("item",)).add_prefix("a_")
        frame.insert(0, "n_categories", [len(self.categories[item]) for item in frame.index])
        thresholds = self.threshold_table(ci_prob)
        wide = thresholds.pivot(index="item", columns="step", values="b_mean").add_prefix("b_")
        frame = frame.join(wide.rename(columns=str))
        checks = self.summary(["a", "b"], ci_prob=ci_prob)[["r_hat", "ess_bulk"]]
        item_of = {f"a[{i}]": i for i in self.categories} | {
            f"b[{t}]": t.rsplit(":", 1)[0] for t in self.posterior["threshold"].values
        }
        per_item = checks.groupby(checks.index.map(item_of)).agg(r_hat=("r_hat", "max"), ess_bulk=("ess_bulk", "min"))
        frame = frame.join(per_item)
        frame["mean_category"] = self.table.groupby("item", sort=False)["category"].mean()
        information = self.information(theta_points).mean(axis=0)  # (items, points)
        for column, point in enumerate(theta_points):
            frame[f"info_at_{point:g}"] = information[:, column]
        frame = frame.join(rest_correlations(self.table, "category"))
        frame["flagged"] = frame["contradicts_slope"]
        frame["reasons"] = [slope_reason(row) or "" for _, row in frame.iterrows()]
        return frame

    def information(self, theta, n_draws: int = 200) -> np.ndarray:
        """Item information (:func:`bayes_raters.irt.polytomous.item_information`) at ``theta``
        for about ``n_draws`` posterior draws: (draws, items, len(theta))."""
        draws = thinned_posterior(self.posterior, n_draws).stack(sample=("chain", "draw"))
        a = draws["a"].transpose("sample", "item").values
        b = draws["b"].transpose("sample", "threshold").values
        theta = np.atleast_1d(np.asarray(theta, float))
        return np.stack([item_information(self.model, a[s], b[s], theta, self.layout) for s in range(len(a))])

    def plot_information(self, ax=None, ci_prob: float = 0.9, n_draws: int = 200):
        """Test information (the sum of :meth:`information` over items) and SE(theta) across
        theta in [-4, 4], posterior median and ``ci_prob`` band (:func:`bayes_raters.irt.plots.plot_test_information`)."""
        grid = np.linspace(-4, 4, 81)
        return plot_test_information(grid, self.information(grid, n_draws).sum(axis=1), ax, ci_prob)

    def plot_category_curves(self, item=None, ax=None, ci_prob: float = 0.9, n_draws: int = 200):
        """P(X = k | theta) of every category of ``item`` (default: the first), posterior
        median and ``ci_prob`` band, each curve labelled with its score. Returns the Axes."""
        import matplotlib.pyplot as plt

        items = list(self.categories)
        item = items[0] if item is None else item
        if item not in self.categories:
            raise InvalidInputError(f"item {item!r} is not in the fit; items are e.g. {items[:5]}.")
        grid = np.linspace(-4, 4, 81)
        draws = thinned_posterior(self.posterior, n_draws).stack(sample=("chain", "draw"))
        a, b = draws["a"].transpose("sample", "item").values, draws["b"].transpose("sample", "threshold").values
        rows = self.layout.cat_item == items.index(item)
        curves = np.exp(np.stack([category_logp(self.model, a[s], b[s], grid, self.layout, lib=np)[rows] for s in range(len(a))]))
        low, mid, high = np.quantile(curves, [(1 - ci_prob) / 2, 0.5, (1 + ci_prob) / 2], axis=0)
        if ax is None:
            _, ax = plt.subplots(figsize=(6, 4))
        for k, score in enumerate(self.categories[item]):
            (line,) = ax.plot(grid, mid[k], label=f"score {score:g}")
            ax.fill_between(grid, low[k], high[k], color=line.get_color(), alpha=0.2)
        ax.set_xlabel("ability theta")
        ax.set_ylabel(f"P(score), median and {ci_prob:.0%} band")
        ax.set_title(f"{item} ({self.model.upper()})")
        ax.legend(fontsize="small")
        return ax

    def local_dependence(self, **kwargs) -> pd.DataFrame:
        """Yen's Q3 of every item pair (residuals from expected category indices) with its
        posterior predictive check and flags (:func:`bayes_raters.irt.local_dependence.local_dependence`)."""
        return local_dependence(self, **kwargs)

    def threshold_table(self, ci_prob: float = 0.9) -> pd.DataFrame:
        """One row per threshold: item, step k (between categories k - 1 and k), posterior mean,
        SD and equal-tailed ``ci_prob`` interval (``b_mean``, ``b_sd``, ``b_lower``, ``b_upper``)."""
        frame = interval_table(self.posterior["b"], ci_prob, ("threshold",)).add_prefix("b_")
        frame.insert(0, "item", [list(self.categories)[j] for j in self.layout.thr_item])
        frame.insert(1, "step", self.layout.thr_step)
        return frame

    def respondent_table(self, ci_prob: float = 0.9) -> pd.DataFrame:
        """One row per respondent: posterior mean, SD and ``ci_prob`` interval of theta, and
        the number of items rated."""
        frame = interval_table(self.posterior["theta"], ci_prob, ("respondent",)).add_prefix("theta_")
        frame["n_items"] = self.table.groupby("respondent", sort=False).size()
        return frame

    def _posterior_predictive(self, draws: xr.Dataset, rng: np.random.Generator) -> xr.Dataset:
        """Replicated categories: each rating drawn from P(X_j = k | theta_i) of its draw."""
        layout, items = self.layout, list(self.categories)
        person = pd.Index(draws["respondent"].values).get_indexer(self.table["respondent"])
        item = pd.Index(items).get_indexer(self.table["item"])
        out = np.empty((draws.sizes["chain"], draws.sizes["draw"], len(self.table)), dtype=np.int16)
        for c in range(draws.sizes["chain"]):
            for d in range(draws.sizes["draw"]):
                one = draws.isel(chain=c, draw=d)
                log_p = category_logp(self.model, one["a"].values, one["b"].values, one["theta"].values, layout, lib=np)
                probs = np.exp(log_p[:, person])  # (category rows, ratings)
                start = layout.cat_start[item]
                cumulative = np.zeros(len(self.table))
                u = rng.random(len(self.table))
                chosen = np.zeros(len(self.table), dtype=np.int16)
                for k in range(int(layout.n_categories.max()) - 1):
                    valid = k < layout.n_categories[item] - 1
                    cumulative = cumulative + np.where(valid, probs[np.minimum(start + k, len(probs) - 1), np.arange(len(self.table))], 0.0)
                    chosen += (valid & (u >= cumulative)).astype(np.int16)
                out[c, d] = chosen
        coords = {"chain": draws["chain"].values, "draw": draws["draw"].values}
        return xr.Dataset({"category": (("chain", "draw", "rating"), out)}, coords=coords)


def answer_row_index(onehot: np.ndarray, layout: CategoryLayout) -> np.ndarray:
    """(patterns, items) category row of each answer of a one-hot pattern matrix, -1 where unanswered."""
    out = np.full((len(onehot), layout.n_items), -1)
    pattern, row = np.nonzero(onehot)
    out[pattern, layout.cat_item[row]] = row
    return out


def conditional_thetas(posterior: xr.Dataset, irt, model: str, random_seed=None, mh_steps: int = 2, cores: int | None = None):
    """theta per (chain, draw, respondent) from its exact conditional, the marginal
    log-likelihood of each respondent, and the mean MH acceptance rate.

    Chains are drawn in parallel threads (``cores``; None: one per CPU, :func:`~bayes_raters.sampling.resolve_cores`),
    each with its own generator spawned from ``random_seed``, so the draws do not depend on
    the thread schedule. NumPy releases the GIL in the array work that dominates here; measured
    (2 cores, 2 x 1,000 draws): bfi neuroticism GRM 14.7 s in one thread, 8.9 s in two; the
    simulated 2,449 x 15 x 5 GRM 37 s -> 19 s."""
    info = irt.polytomous
    layout, rule = info["layout"], info["rule"]
    onehot, index = irt["pattern_onehot"].get_value(), irt["respondent_pattern"].get_value()
    answer_rows = answer_row_index(onehot, layout)[index]
    plan = answer_plan(answer_rows, layout)
    chains = posterior.sizes["chain"]

    def one_chain(c: int, rng: np.random.Generator):
        draws = posterior.isel(chain=c)
        a, b = draws["a"].transpose("draw", "item").values, draws["b"].transpose("draw", "threshold").values
        theta, log_lik, accepted = np.empty((len(a), len(index))), np.empty((len(a), len(index))), []
        for s in range(len(a)):
            table = onehot @ category_logp(model, a[s], b[s], rule.nodes, layout, lib=np)
            log_lik[s] = marginal_loglik(table, rule.log_weights)[index]

            def exact(z, s=s):
                return answered_logp(model, a[s], b[s], z, answer_rows, layout, plan)

            theta[s], rate = draw_conditional(table, exact, rule, rng, unit_index=index, mh_steps=mh_steps)
            accepted.append(rate)
        return theta, log_lik, accepted

    per_chain = map_chains(one_chain, chains, random_seed, cores)
    labels = list(irt.coords["respondent"])

    def as_array(position: int, name: str) -> xr.DataArray:
        return chain_array([result[position] for result in per_chain], posterior, "respondent", labels, name)

    acceptance = float(np.mean([rate for result in per_chain for rate in result[2]]))
    return as_array(0, "theta"), as_array(1, "ratings"), acceptance


def fit_polytomous(
    responses: pd.DataFrame, model: str = "grm", *, respondent: str = "respondent", item: str = "item", score: str = "score",
    draws: int = 1000, tune: int = 500, chains: int = 2, cores: int | None = None, random_seed=None,
    nuts_sampler: str = "nutpie", target_accept: float = 0.9, progressbar: bool | None = None,
    inference: str = "auto",
) -> PolytomousResult:
    r"""Fit the GRM (``model="grm"``) or GPCM (``"gpcm"``) to long-format ordinal ratings
    ``(respondent, item, score)``, abilities integrated out; see the module docstrings.

    Defaults chosen by measurement (``benchmarks/bench_irt_polytomous.py``, ``models/irt_polytomous.md``):
    nutpie with its chains in parallel (``cores=None``: one per usable CPU, resolved by
    :func:`~bayes_raters.sampling.resolve_cores`; the theta draws afterwards also run one thread
    per chain) and 500 tuning steps, which its mass-matrix adaptation needs far fewer of than
    PyMC's NUTS. Items whose data point
    to a negative or near-zero slope raise a :class:`~bayes_raters.errors.SlopeWarning`.

    ``inference="auto"`` (default) first tries importance-sampled Laplace draws
    (:mod:`bayes_raters.laplace`) and keeps them when they pass every check (Pareto :math:`\hat k`, R-hat, ESS), else samples
    with NUTS; ``"nuts"`` and ``"laplace"`` force one (``draws`` per chain either way; the Laplace
    path resamples them from twice as many proposals). Measured on 2 cores (``benchmarks/bench_irt_polytomous.py``): GRM 2,449 x 15 x 5,
    89 s with NUTS, 34 s this way (bfi neuroticism: 44 s, 17 s); posterior means within 0.07 of
    NUTS's posterior SD (``models/irt_polytomous.md``).

    Parameters
    ----------
    responses : pandas.DataFrame
        Long ordinal ratings, one row per (respondent, item).
    model : {"grm", "gpcm"}
        Graded response or generalised partial credit model.
    respondent, item, score : str
        Column names in ``responses``.
    draws, tune, chains : int
        Posterior draws and tuning iterations per chain, and the number of chains.
    cores : int, optional
        Chains run in parallel; None, one per CPU.
    random_seed : int, numpy.random.Generator or None
        Seed of every draw (the same seed gives the same draws).
    nuts_sampler : str
        ``"nutpie"``, ``"pymc"``, ``"numpyro"`` or ``"blackjax"``.
    target_accept : float
        NUTS target acceptance rate.
    progressbar : bool, optional
        None shows the progress bar in a terminal or notebook only.
    inference : {"auto", "nuts", "laplace"}
        How the item parameters are drawn (see above).

    Returns
    -------
    PolytomousResult
        The posterior, item, category and respondent tables and convergence.

    Examples
    --------
    >>> from bayes_raters.irt import fit_polytomous, simulate_ratings
    >>> ratings, _ = simulate_ratings(300, 5, 4, random_seed=4)
    >>> result = fit_polytomous(ratings, "grm", random_seed=4, progressbar=False)
    >>> result.convergence.converged, result.item_table().shape[0]
    (True, 5)
    """
    if model not in POLYTOMOUS_MODELS:
        raise InvalidInputError(f"model must be one of {POLYTOMOUS_MODELS}, got {model!r}.")
    irt = build_polytomous_model(responses, model, respondent=respondent, item=item, score=score)
    warn_contradicted_slopes(rest_correlations(irt.polytomous["table"], "category"), f"IRT {model.upper()}")
    idata, report = sample_model(
        irt, draws=draws, tune=tune, chains=chains, cores=cores, random_seed=random_seed, nuts_sampler=nuts_sampler,
        target_accept=target_accept, progressbar=progressbar, what=f"IRT {model.upper()} (marginal)",
        var_names=[v for v in ("a", "b", "d", "log_a") if v in irt.named_vars],
        inference=inference,
    )
    posterior = idata["posterior"].to_dataset()
    theta, log_lik, acceptance = conditional_thetas(posterior, irt, model, random_seed=derived_rng(random_seed, "abilities"), cores=cores)
    posterior = posterior.assign(theta=theta)
    posterior.attrs.update(idata["posterior"].attrs, theta_draws="exact conditional (quadrature + independence MH)",
                           theta_mh_acceptance=acceptance, quadrature_nodes=len(irt.polytomous["rule"]), model=model)
    table = irt.polytomous["table"]
    tree = xr.DataTree.from_dict({
        "posterior": posterior, "sample_stats": idata["sample_stats"].to_dataset(),
        "log_likelihood": log_lik.to_dataset(),
        "observed_data": xr.Dataset({"category": ("rating", table["category"].to_numpy())}),
        "constant_data": xr.Dataset({c: ("rating", table[c].to_numpy()) for c in ("respondent", "item")}),
    })
    return PolytomousResult(tree, model, table, irt.polytomous["categories"], report)

