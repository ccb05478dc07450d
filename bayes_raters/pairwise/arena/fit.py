r"""``fit_arena``: ratings from millions of pairwise votes with ties, style covariates and categories
(:mod:`bayes_raters.pairwise.arena.model`), by importance-sampled Laplace draws
(:mod:`bayes_raters.pairwise.arena.laplace`), as an
:class:`~bayes_raters.pairwise.arena.result.ArenaResult`."""

from __future__ import annotations

import sys
import time
import warnings

import numpy as np
import pandas as pd
import xarray as xr

from bayes_raters.errors import ConvergenceWarning, InvalidInputError
from bayes_raters.fit_signature import sampler_block
from bayes_raters.inference import laplace_figures, laplace_report, sample_model
from bayes_raters.inference_record import InferenceRecord
from bayes_raters.pairwise.arena.laplace import approximate, importance_draws
from bayes_raters.pairwise.arena.model import RATING_PRIOR_SD, ArenaData, ArenaSpec, build_arena_model, prepare_votes
from bayes_raters.pairwise.arena.posterior import Layout, layout_of
from bayes_raters.pairwise.arena.result import ArenaResult, arena_data_tree
from bayes_raters.results import seeded_rng
from bayes_raters.sampling import derived_rng, resolve_progressbar


@sampler_block()
def fit_arena(
    data: pd.DataFrame,
    *,
    ties: bool | None = None,
    rating_prior_sd: float = RATING_PRIOR_SD,
    item_a: str = "model_a",
    item_b: str = "model_b",
    outcome: str = "outcome",
    style: list[str] | tuple[str, ...] = (),
    category: str | None = None,
    count: str | None = None,
    draws: int = 1000,
    chains: int = 2,
    random_seed: int | np.random.Generator | None = None,
    progressbar: bool | None = None,
) -> ArenaResult:
    r"""Fit the Rao-Kupper arena model (:mod:`bayes_raters.pairwise.arena.model`) to long votes:
    one row per vote with the two models, the outcome for the first (``win``, ``tie`` or ``loss``),
    optional style covariates (``style``: columns of differences between the two answers, first
    minus second) and an optional ``category`` column (one per vote; each category's ratings are
    shrunk to the overall ones).

    The posterior is drawn by importance-sampled Laplace (:mod:`bayes_raters.pairwise.arena.laplace`):
    Newton's method to the mode with the exact Hessian, Gaussian proposals weighed by the exact
    log posterior, Pareto-smoothed and resampled into ``chains`` x ``draws``. The check is part of
    the answer: ``result.convergence`` has R-hat and ESS of the resampled draws, the effective size
    of the weights and Pareto :math:`\hat k`. When :math:`\hat k` fails (a posterior far from Gaussian:
    sparse votes, models that never win or never lose), NUTS samples the same model
    (:func:`~bayes_raters.pairwise.arena.model.build_arena_model`; ``result.inference.path`` is
    ``"nuts_after_laplace"`` and ``reason`` says why); a :class:`ConvergenceWarning` says when the
    draws kept fail their check.
    Votes without style pool to (category, pair, outcome) counts, so the time hardly grows with the
    votes (``models/leaderboards.md`` has the measured times). Same ``random_seed``, same draws.

    Parameters
    ----------
    data : pandas.DataFrame
        One row per vote.
    ties : bool, optional
        Model a tie band; None, when some vote is a tie; False, Bradley-Terry (no tie allowed).
    rating_prior_sd : float
        Prior SD of the ratings on the log-odds scale.
    item_a, item_b, outcome : str
        Column names: the two models (named as the two sides of a pairwise comparison; the
        defaults are the arena exports' ``model_a`` and ``model_b``) and the outcome for ``item_a``.
    style : list of str
        Numeric style columns (differences, first minus second); their effects are estimated and
        the ratings are then style-controlled.
    category : str, optional
        Column of each vote's category: per-category ratings, partially pooled.
    count : str, optional
        Column of how many identical votes each row stands for (aggregated votes).
    {sampler_block}

    Returns
    -------
    ArenaResult
        System, category and style tables, P(rank 1), the drop-k check of the top rank.

    Examples
    --------
    >>> from bayes_raters.pairwise import fit_arena, simulate_arena
    >>> sim = simulate_arena(20, 20_000, random_seed=3)
    >>> result = fit_arena(sim["votes"], random_seed=3, progressbar=False)
    >>> result.convergence.converged, result.system_table().shape[0]
    (True, 20)
    """
    if draws < 100 or chains < 1:
        raise InvalidInputError(f"fit_arena needs draws >= 100 and chains >= 1, got draws={draws}, chains={chains}.")
    if not rating_prior_sd > 0:
        raise InvalidInputError(f"rating_prior_sd must be > 0, got {rating_prior_sd}.")
    started = time.perf_counter()
    show = resolve_progressbar(progressbar)
    progress = (lambda message: print(f"arena: {message} ({time.perf_counter() - started:.1f} s)", file=sys.stderr)) if show else None
    data = prepare_votes(data, item_a=item_a, item_b=item_b, outcome=outcome, style=style, category=category, ties=ties, count=count)
    layout = layout_of(data)
    if progress:
        progress(f"{data.n_votes:,} votes in {data.weight.size:,} rows, {len(data.models)} models, {layout.size} parameters")
    approx = approximate(data, layout, rating_prior_sd)
    if progress:
        progress(f"mode found ({approx.newton_steps} Newton steps)")
    rng = seeded_rng(random_seed)
    names = _free_names(layout)
    raveled, check, batches = importance_draws(approx, data, layout, rating_prior_sd, draws=draws, chains=chains, rng=rng, progress=progress)
    tree = arena_tree(raveled, data, layout)
    report = laplace_report(tree, check, var_names=names)
    retries = int(check.accepted and bool(report.problems))
    if retries:  # Monte Carlo noise of the resampling: more proposals, pooled
        raveled, check, _ = importance_draws(approx, data, layout, rating_prior_sd, draws=draws, chains=chains, rng=rng,
                                             proposals_per_draw=2, previous=batches, progress=progress)
        tree = arena_tree(raveled, data, layout)
        report = laplace_report(tree, check, var_names=names)
    record = InferenceRecord(path="laplace", sampler="bayes_raters.pairwise.arena.laplace", laplace_retries=retries,
                             newton_steps=int(approx.newton_steps), **laplace_figures(check))
    if not check.pareto_k <= check.k_threshold:  # a posterior far from Gaussian (sparse votes): NUTS on the same model
        if progress:
            progress(f"Laplace draws rejected ({'; '.join(report.problems)}); NUTS")
        tree, report, record = _nuts_instead(data, layout, rating_prior_sd, draws, chains, random_seed, progressbar, record, report)
    record.write(tree)
    tree["sample_stats"].attrs["sampling_time"] = time.perf_counter() - started
    result = ArenaResult(idata=tree, spec=ArenaSpec(rating_prior_sd=float(rating_prior_sd)), report=report, data=data, approximation=approx)
    if progress:
        progress("done")
    if record.path == "laplace":
        _warn(report)  # sample_model warns for NUTS itself
    return result


def _nuts_instead(data: ArenaData, layout: Layout, rating_prior_sd, draws, chains, random_seed, progressbar, record, rejected):
    """NUTS on :func:`~bayes_raters.pairwise.arena.model.build_arena_model` (the same log density)
    after the Laplace draws failed their check, put in the layout of :func:`arena_tree`. Where
    that happens the votes are few (items that never win or never lose, a style column that
    separates outcomes), so the pooled model is small and NUTS is quick; seeded from stream
    ``"arena_nuts"`` of the fit's seed."""
    model = build_arena_model(data, rating_prior_sd)
    sampled, report = sample_model(model, draws=draws, tune=1000, chains=chains, cores=1, random_seed=derived_rng(random_seed, "arena_nuts"),
                                   target_accept=0.9, what="fit_arena (NUTS after rejected Laplace draws)", progressbar=progressbar,
                                   extra_chains=chains)
    posterior = sampled["posterior"].to_dataset()
    n_chains, n_draws = posterior.sizes["chain"], posterior.sizes["draw"]
    raveled = np.zeros((n_chains, n_draws, layout.size))
    raveled[..., : layout.n_models] = posterior["theta"].transpose("chain", "draw", "model").to_numpy()
    if layout.n_categories:
        raveled[..., layout.u] = posterior["u"].transpose("chain", "draw", "category", "model").to_numpy().reshape(n_chains, n_draws, -1)
        raveled[..., layout.rho] = np.log(posterior["tau"].to_numpy())
    if layout.n_style:
        raveled[..., layout.beta] = posterior["beta"].transpose("chain", "draw", "style").to_numpy()
    if layout.ties:
        raveled[..., layout.kappa] = np.log(posterior["epsilon"].to_numpy())
    tree = arena_tree(raveled, data, layout)
    tree["sample_stats"] = sampled["sample_stats"]
    nuts_record = InferenceRecord.of(sampled)
    record = nuts_record.updated(path="nuts_after_laplace", reason=f"the Laplace draws gave {'; '.join(rejected.problems)}",
                                 pareto_k=record.pareto_k, pareto_k_threshold=record.pareto_k_threshold,
                                 importance_ess=record.importance_ess, newton_steps=record.newton_steps)
    return tree, report, record


def _free_names(layout: Layout) -> list[str]:
    return ["theta"] + ["u", "tau"] * bool(layout.n_categories) + ["beta"] * bool(layout.n_style) + ["epsilon"] * layout.ties


def _warn(report) -> None:
    """A ConvergenceWarning naming each failed check, with advice that fits this fit."""
    if not report.problems:
        return
    advice = "keep more draws (draws=)"
    if report.pareto_k is not None and not report.pareto_k <= report.pareto_k_threshold:
        advice = ("the posterior is far from Gaussian (models with few votes, or a style column that separates outcomes): "
                  "check the models with the fewest votes in system_table() and the style columns")
    warnings.warn(f"fit_arena: the importance-sampled Laplace draws failed their check ({'; '.join(report.problems)}). "
                  f"Do not trust this result: {advice}.", ConvergenceWarning, stacklevel=3)


def arena_tree(raveled: np.ndarray, data: ArenaData, layout: Layout) -> xr.DataTree:
    """Posterior (``theta`` by model, ``rating`` = theta centred over models, ``u`` and
    ``category_rating`` by category and model, ``beta`` per unit of each style column, ``epsilon``,
    ``tau``), ``sample_stats`` (``diverging``, all False) and the votes (:func:`arena_data_tree`)."""
    chains, draws, _ = raveled.shape
    m = layout.n_models
    theta = raveled[..., :m]
    posterior = {"theta": (("chain", "draw", "model"), theta),
                 "rating": (("chain", "draw", "model"), theta - theta.mean(axis=-1, keepdims=True))}
    if layout.n_categories:
        u = raveled[..., layout.u].reshape(chains, draws, layout.n_categories, m)
        table = theta[:, :, None, :] + u
        posterior["u"] = (("chain", "draw", "category", "model"), u)
        posterior["category_rating"] = (("chain", "draw", "category", "model"), table - table.mean(axis=-1, keepdims=True))
        posterior["tau"] = (("chain", "draw"), np.exp(raveled[..., layout.rho]))
    if layout.n_style:
        posterior["beta"] = (("chain", "draw", "style"), raveled[..., layout.beta] / data.style_scale)
    if layout.ties:
        posterior["epsilon"] = (("chain", "draw"), np.exp(raveled[..., layout.kappa]))
    coords = {"chain": np.arange(chains), "draw": np.arange(draws), "model": data.models.to_numpy()}
    if layout.n_categories:
        coords["category"] = data.categories.to_numpy()
    if layout.n_style:
        coords["style"] = list(data.style)
    tree = arena_data_tree(data)
    tree["posterior"] = xr.DataTree(xr.Dataset(posterior, coords=coords))
    tree["sample_stats"] = xr.DataTree(xr.Dataset({"diverging": (("chain", "draw"), np.zeros((chains, draws), dtype=bool))},
                                                  coords={"chain": coords["chain"], "draw": coords["draw"]}))
    return tree

