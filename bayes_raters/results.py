r"""One result protocol for every model family (true score, IRT, pairwise).

Every fitted result (:class:`~bayes_raters.ctt.TrueScoreResult`,
:class:`~bayes_raters.irt.IRTResult`, :class:`~bayes_raters.pairwise.PairwiseResult`)
derives from :class:`FitResult` and offers the same things under the same names:

``result.idata``
    an ``xarray.DataTree`` with ArviZ's standard groups: ``posterior``, ``sample_stats``,
    ``observed_data`` (what the model conditions on), ``constant_data`` (ids and inputs that
    are not observed), ``log_likelihood`` (pointwise, where LOO makes sense; stored by the IRT
    fit, added by :meth:`FitResult.compute_log_likelihood` for the others, as PyMC adds it on
    request, because it costs a compiled pass over every draw) and, after
    :meth:`FitResult.sample_posterior_predictive`, ``posterior_predictive`` with the same
    variable names and dims as ``observed_data``. ArviZ functions take it as it is:
    ``az.summary(result.idata)``, ``az.plot_rank(result.idata)``, ``az.loo(result.idata)``.
``result.model``
    a short name of the fitted model: ``"2pl"``, ``"grm"`` (IRT), ``"normal"`` / ``"ordinal"``
    (true score), ``"beta_latent_rao-kupper"`` / ``"beta_latent_probit"`` (pairwise),
    ``"many_facet"`` / ``"many_facet_rasch"`` (facets). The PyMC model itself comes from the
    family's builder (and ``PairwiseResult.pymc_model()``).
``result.inference``
    an :class:`~bayes_raters.inference_record.InferenceRecord`: what the inference did (the path
    taken and why, the sampler, the warm start, chains added, the parametrisation kept, Pareto
    :math:`\hat k`, Laplace retries, the quadrature, the draws rule), saved in the file with the
    tree and read back on load.
``result.convergence``
    a :class:`~bayes_raters.sampling.ConvergenceReport` (worst case over every fit behind the
    result): ``max_r_hat``, ``min_ess_bulk``, ``min_ess_tail``, ``divergences``, ``converged``.
``result.summary(ci_prob=0.9)``
    ``az.summary`` of the quantities users read in that family (equal-tailed intervals).
``result.loo()`` / ``result.compare(others)``
    ``az.loo`` over the family's pointwise unit (the ``log_likelihood`` group, computed first
    where the fit did not store it) and ``az.compare`` of this fit with other fits of the same
    data (name -> result), in every family.
``result.save(path)`` / ``Family.load(path)``
    one netCDF file with a checksum (:mod:`bayes_raters.persistence`).
``repr(result)``
    one line: family, size, draws, and whether the chains converged.

The family's own tables (``prmse_table``, ``item_table``, ...) come on top of this.
"""

from __future__ import annotations

import abc
import functools
import math
import warnings
from pathlib import Path
from typing import ClassVar

import arviz as az
import numpy as np
import pandas as pd
import xarray as xr

from bayes_raters.errors import InvalidInputError
from bayes_raters.inference_record import InferenceRecord
from bayes_raters.persistence import load_datatree, save_datatree
from bayes_raters.sampling import ConvergenceReport

PREDICTIVE_DRAWS = 500  # posterior draws kept for a posterior predictive sample by default
#: Posterior SDs in every table: the sample SD over the draws, as ``az.summary`` computes it.
SD_DDOF = 1


def worst_report(reports) -> ConvergenceReport:
    """The worst case of several fits' reports: largest R-hat, smallest ESS, all divergences,
    fewest chains and draws (NaN R-hats of one-chain fits are skipped unless all are NaN)."""
    reports = list(reports)
    r_hats = [r.max_r_hat for r in reports if not math.isnan(r.max_r_hat)]
    return ConvergenceReport(
        max_r_hat=max(r_hats) if r_hats else float("nan"),
        min_ess_bulk=min(r.min_ess_bulk for r in reports),
        min_ess_tail=min(r.min_ess_tail for r in reports),
        divergences=sum(r.divergences for r in reports),
        chains=min(r.chains for r in reports),
        draws=min(r.draws for r in reports),
    )


def thinned_posterior(posterior: xr.Dataset, n_draws: int | None) -> xr.Dataset:
    """Every k-th draw of each chain, k chosen so that about ``n_draws`` draws remain over all
    chains (all draws if ``n_draws`` is None); the (chain, draw) layout is kept."""
    if n_draws is not None and n_draws < 1:
        raise InvalidInputError(f"n_draws must be a positive number of draws (or None for all), got {n_draws}.")
    total = posterior.sizes["chain"] * posterior.sizes["draw"]
    step = 1 if n_draws is None else max(1, math.ceil(total / n_draws))
    return posterior.isel(draw=slice(None, None, step))


def quiet_loo(idata: xr.DataTree, reff: float | None = None):
    """``az.loo(idata, pointwise=True)`` without ArviZ's warning about high Pareto k: for the
    results that report the share of high-k observations themselves (IRT item tables, the
    multidimensional model's structure check), where the warning would repeat per call."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*shape parameter of Pareto.*")
        return az.loo(idata, pointwise=True, reff=reff)


def check_ci_prob(ci_prob: float) -> None:
    """Refuse an interval probability outside (0, 1) (the keyword is ``ci_prob`` everywhere)."""
    if not 0 < ci_prob < 1:
        raise InvalidInputError(f"ci_prob must lie in (0, 1), got {ci_prob}.")


def interval_table(values: xr.DataArray, ci_prob: float, dims: tuple) -> pd.DataFrame:
    """Posterior mean, SD and equal-tailed ``ci_prob`` interval (``lower``, ``upper``) of a
    ``(chain, draw, *dims)`` array, one row per element of ``dims`` (a MultiIndex for several). The
    SD is the sample SD over the draws (ddof 1), as ``az.summary`` gives it: the one SD convention
    of every table (:data:`SD_DDOF`)."""
    check_ci_prob(ci_prob)
    tail = (1 - ci_prob) / 2
    sample = ("chain", "draw")
    frame = {
        "mean": values.mean(sample), "sd": values.std(sample, ddof=SD_DDOF),
        "lower": values.quantile(tail, sample).drop_vars("quantile"), "upper": values.quantile(1 - tail, sample).drop_vars("quantile"),
    }
    return pd.DataFrame({k: v.transpose(*dims).to_series() for k, v in frame.items()})


def rank_table(values: np.ndarray, index: pd.Index, ci_prob: float) -> pd.DataFrame:
    """Ranks (1 = the highest value) of draws x units ``values``: ``rank_mean``, the equal-tailed
    ``ci_prob`` interval ``rank_lower``/``rank_upper`` (quantiles taken outward, ranks being
    whole numbers) and ``p_rank_1`` (sums to 1 over the units), indexed by ``index``."""
    ranks = (-values).argsort(axis=1).argsort(axis=1) + 1
    tail = (1 - ci_prob) / 2
    return pd.DataFrame({"rank_mean": ranks.mean(0), "rank_lower": np.quantile(ranks, tail, axis=0, method="lower"),
                         "rank_upper": np.quantile(ranks, 1 - tail, axis=0, method="higher"), "p_rank_1": (ranks == 1).mean(0)},
                        index=index)


def draw_categories(p: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One category index per row of the probabilities ``p`` (rows, K), by inverting the CDF:
    the number of the first K - 1 cumulative probabilities below a uniform draw, so the index
    stays below K even where rounding leaves the last cumulative sum just under 1."""
    return (rng.random(len(p))[:, None] > np.cumsum(p, axis=1)[:, :-1]).sum(axis=1)


def seeded_rng(random_seed) -> np.random.Generator:
    """A generator from an int, a Generator (used as it is) or None."""
    return random_seed if isinstance(random_seed, np.random.Generator) else np.random.default_rng(random_seed)


class FitResult(abc.ABC):
    """The shared protocol (module docstring), as an abstract base class. Subclasses are
    dataclasses built by keyword with an ``idata`` field; they set :attr:`summary_var_names` and
    :attr:`family`, provide :attr:`model` (a field or a property), keep one fit's ``report`` or
    override :attr:`convergence`, and implement the abstract :meth:`_size`,
    :meth:`_posterior_predictive`, :meth:`_saved_config` and :meth:`_from_saved`, and
    :meth:`_log_likelihood` unless the fit stores that group (``tests/test_results.py`` checks
    every family against this list)."""

    idata: xr.DataTree
    #: The short name of the fitted model (a dataclass field or a property in each family).
    model: str
    #: Posterior variables that :meth:`summary` reports by default (those present).
    summary_var_names: ClassVar[tuple[str, ...]] = ()
    #: A short name of the model family, for ``repr``.
    family: ClassVar[str] = "model"

    @functools.cached_property
    def posterior(self) -> xr.Dataset:
        """The posterior group as a Dataset (converted once, then cached)."""
        return self.idata["posterior"].to_dataset()

    @property
    def convergence(self) -> ConvergenceReport:
        """Convergence of the fit: the ``report`` of a one-fit result (IRT, pairwise);
        results with several fits override it."""
        return self.report

    @property
    def inference(self) -> InferenceRecord:
        """What the inference did (:class:`~bayes_raters.inference_record.InferenceRecord`), as the
        fit recorded it in :attr:`idata` (and :meth:`save` kept it)."""
        return InferenceRecord.of(self.idata)

    @property
    def scalar_parameters(self) -> list[str]:
        """The posterior variables with one value per draw (no dimension beyond chain and draw):
        ``result.summary(var_names=result.scalar_parameters)`` summarises them."""
        return [n for n, v in self.posterior.data_vars.items() if v.dims == ("chain", "draw")]

    def save(self, path: str | Path) -> Path:
        """Write the whole result (``idata``'s groups and the family's settings, the inputs'
        layout and the convergence report, ``_saved_config``) to one netCDF file with a
        checksum (:func:`bayes_raters.persistence.save_datatree`); read it back with :meth:`load`.
        Written once here for every family.

        Parameters
        ----------
        path : str or pathlib.Path
            The file to write.

        Returns
        -------
        pathlib.Path
            The path written.
        """
        return save_datatree(self.idata, path, self._saved_config())

    @classmethod
    def load(cls, path: str | Path):
        """Read a result written by :meth:`save` (damaged or altered files raise
        :class:`~bayes_raters.errors.PersistenceError`).

        Parameters
        ----------
        path : str or pathlib.Path
            A file written by :meth:`save` of the same result class.

        Returns
        -------
        FitResult
            The result as it was saved.
        """
        tree, config = load_datatree(path)
        return cls._from_saved(tree, config)

    @abc.abstractmethod
    def _saved_config(self) -> dict:
        """The settings :meth:`save` stores beside the tree (JSON-able)."""

    @classmethod
    @abc.abstractmethod
    def _from_saved(cls, tree: xr.DataTree, config: dict):
        """The result from a saved tree (``idata``: every input is in its observed_data and
        constant_data) and its settings (the inverse of :meth:`_saved_config`)."""

    def summary(self, var_names=None, ci_prob: float = 0.9, **kwargs) -> pd.DataFrame:
        """``az.summary`` (equal-tailed ``ci_prob`` intervals) of ``var_names``, by default
        the quantities of :attr:`summary_var_names` that this fit has. Other keywords go to
        ``az.summary``.

        Parameters
        ----------
        var_names : list of str, optional
            Posterior variables to summarise.
        ci_prob : float
            Probability of the equal-tailed intervals.
        **kwargs
            Keywords for ``arviz.summary``.

        Returns
        -------
        pandas.DataFrame
            One row per scalar quantity: mean, SD, interval, MCSE, ESS and R-hat.
        """
        check_ci_prob(ci_prob)
        names = list(var_names) if var_names is not None else [n for n in self.summary_var_names if n in self.posterior]
        if not names:
            raise InvalidInputError("no variables to summarise: var_names is empty (result.scalar_parameters is empty where "
                                    f"every parameter has a dimension); the posterior has {sorted(self.posterior.data_vars)}.")
        unknown = [n for n in names if n not in self.posterior]
        if unknown:
            raise InvalidInputError(f"not in the posterior: {unknown}; it has {sorted(self.posterior.data_vars)}.")
        kwargs.setdefault("ci_kind", "eti")
        return az.summary(self.idata, var_names=names, ci_prob=ci_prob, **kwargs)

    def sample_posterior_predictive(self, n_draws: int | None = PREDICTIVE_DRAWS, random_seed=None) -> xr.DataTree:
        """Replicate the observed data from the model for about ``n_draws`` posterior draws
        (evenly thinned over each chain; None: all), store them as the ``posterior_predictive``
        group of :attr:`idata` (same names and dims as ``observed_data``, plus chain and draw)
        and return :attr:`idata`. Same seed, same replicates. ``az.plot_ppc_dist(result.idata)``
        then compares them with the data.

        Parameters
        ----------
        n_draws : int, optional
            About this many posterior draws; None, all.
        random_seed : int, numpy.random.Generator or None
            Seed of the replicates.

        Returns
        -------
        xarray.DataTree
            :attr:`idata` with its ``posterior_predictive`` group.
        """
        draws = thinned_posterior(self.posterior, n_draws)
        predictive = self._posterior_predictive(draws, seeded_rng(random_seed))
        self.idata["posterior_predictive"] = xr.DataTree(predictive)
        return self.idata

    @abc.abstractmethod
    def _posterior_predictive(self, draws: xr.Dataset, rng: np.random.Generator) -> xr.Dataset:
        """Replicates of ``observed_data`` for the (thinned) posterior ``draws``."""

    def compute_log_likelihood(self) -> xr.DataTree:
        """Add the pointwise ``log_likelihood`` group if the fit did not store it (as
        ``pm.compute_log_likelihood`` does for PyMC's own fits) and return :attr:`idata`; then
        ``az.loo`` reads it. Families that always store it return :attr:`idata` as it is.

        Returns
        -------
        xarray.DataTree
            :attr:`idata` with its ``log_likelihood`` group.
        """
        if "log_likelihood" not in self.idata.children:
            self.idata["log_likelihood"] = xr.DataTree(self._log_likelihood())
        return self.idata

    def _log_likelihood(self) -> xr.Dataset:
        """The pointwise log-likelihood group, for families whose fit does not store it."""
        raise NotImplementedError(f"{type(self).__name__} stores its log_likelihood group at fit time.")

    def pointwise_tree(self) -> xr.DataTree:
        """:attr:`idata` with one pointwise log-likelihood variable (what ``az.loo`` and
        ``az.compare`` read without ``var_name``): the stored group when it has one variable;
        when it has several (the pairwise model's outcomes and slider values), their
        observations side by side as ``observations`` (dim ``observation``, labelled
        ``variable:index``), each observation left out on its own.

        Returns
        -------
        xarray.DataTree
            The tree ``az.loo`` reads.

        Examples
        --------
        >>> from bayes_raters.pairwise import fit_pairwise, latent_values, simulate_judgements
        >>> data = simulate_judgements(latent_values(6, random_seed=3), n_comparisons=60, n_scalars=30, random_seed=3)
        >>> result = fit_pairwise(data["comparisons"], data["scalars"], random_seed=3, progressbar=False)
        >>> tree = result.pointwise_tree()
        >>> sorted(result.idata["log_likelihood"].data_vars), list(tree["log_likelihood"].data_vars)
        (['outcome', 'value'], ['observations'])
        """
        tree = self.compute_log_likelihood()
        group = tree["log_likelihood"].to_dataset()
        if len(group.data_vars) == 1:
            return tree
        shape = (group.sizes["chain"], group.sizes["draw"])
        parts, labels = [], []
        for name in sorted(group.data_vars):
            values = group[name].transpose("chain", "draw", ...).values.reshape(*shape, -1)
            parts.append(values)
            labels += [f"{name}:{i}" for i in range(values.shape[-1])]
        joined = xr.Dataset({"observations": (("chain", "draw", "observation"), np.concatenate(parts, axis=-1))},
                            coords={"chain": group["chain"].values, "draw": group["draw"].values, "observation": labels})
        copy = tree.copy()
        copy["log_likelihood"] = xr.DataTree(joined)
        return copy

    def loo(self):
        """``az.loo`` (pointwise) of the fit over its pointwise log-likelihood
        (:meth:`pointwise_tree`; the group is computed first where the fit did not store it:
        :meth:`compute_log_likelihood`). Families whose tables report the Pareto k themselves
        override it to stay quiet.

        Returns
        -------
        arviz ELPDData
            ArviZ's LOO result (elpd, its SE, p_loo and each unit's Pareto k).
        """
        return az.loo(self.pointwise_tree(), pointwise=True)

    def compare(self, others: dict, name: str = "this", **compare_kwargs) -> pd.DataFrame:
        """``az.compare`` (LOO) of this fit, named ``name``, with ``others`` (name -> result)
        fitted to the same data and leaving out the same units: the log-likelihood groups must
        hold the same variables with the same sizes, or the comparison would be of different
        data. Other keywords go to ``az.compare``.

        Parameters
        ----------
        others : dict of str to FitResult
            The other fits, by name.
        name : str
            The name of this fit in the table.
        **compare_kwargs
            Keywords for ``arviz.compare``.

        Returns
        -------
        pandas.DataFrame
            ArviZ's comparison table, best fit first.

        Examples
        --------
        >>> from bayes_raters.irt import fit_irt, simulate_responses
        >>> answers, _ = simulate_responses(300, 10, random_seed=6)
        >>> two = fit_irt(answers, "2pl", random_seed=6, progressbar=False)
        >>> one = fit_irt(answers, "1pl", random_seed=6, progressbar=False)
        >>> two.compare({"1pl": one}, name="2pl").index.tolist()
        ['2pl', '1pl']
        """
        results = {name: self, **others}
        if len(results) != len(others) + 1:
            raise InvalidInputError(f"the name {name!r} of this fit is also one of the others; pass name=<another>.")
        trees, shapes = {}, {}
        for key, result in results.items():
            trees[key] = result.pointwise_tree()
            group = trees[key]["log_likelihood"].to_dataset()
            shapes[key] = {v: int(np.prod([n for d, n in group[v].sizes.items() if d not in ("chain", "draw")])) for v in group.data_vars}
        if len({tuple(sorted(shape.items())) for shape in shapes.values()}) > 1:
            raise InvalidInputError(f"these fits leave out different data (log-likelihood variables and sizes: {shapes}); "
                                    "compare fits of the same data with the same pointwise unit.")
        return az.compare(trees, **compare_kwargs)

    @abc.abstractmethod
    def _size(self) -> str:
        """The data's size in words, for ``repr``."""

    def __repr__(self) -> str:
        report = self.convergence
        verdict = "converged" if report.converged else "NOT converged: " + "; ".join(report.problems)
        return (
            f"<{type(self).__name__}: {self.family}, {self._size()}; {report.chains} chains x {report.draws} draws; "
            f"{verdict}; groups {sorted(self.idata.children)}>"
        )
