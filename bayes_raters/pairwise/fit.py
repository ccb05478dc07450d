"""Fit the Bayesian beta-latent model (:mod:`bayes_raters.pairwise.model`) and hand the draws to
:class:`~bayes_raters.pairwise.result.PairwiseResult`."""

from __future__ import annotations

from typing import Literal

import numpy as np
import pandas as pd
import xarray as xr

from bayes_raters.fit_signature import NutsSampler, sampler_block
from bayes_raters.inference import sample_model
from bayes_raters.pairwise.hits import canonical_columns
from bayes_raters.pairwise.model import PairwiseSpec, build_pairwise_model, prepare_data
from bayes_raters.pairwise.result import PairwiseResult, judgement_inputs


def checked_variables(model) -> list[str]:
    """The variables whose R-hat and ESS make the fit's convergence report: every variable that
    is not per annotator (item values, lambda, epsilon, the scales and panel terms). Per-annotator
    consistencies and biases are nuisance latents, as the responses of the true-score model are:
    their own R-hat and bulk ESS are columns of
    :meth:`~bayes_raters.pairwise.result.PairwiseResult.annotator_table`. Judged over hundreds of
    annotators at once, the maximum of their R-hats exceeds 1.01 by chance alone with two chains
    (``models/pairwise_beta_latent.md``, Real data)."""
    return [v.name for v in [*model.free_RVs, *model.deterministics] if "annotator" not in model.named_vars_to_dims.get(v.name, ())]


@sampler_block(reasons={
    "nuts_sampler": 'None is ``"pymc"``.',
    "target_accept": "None is 0.95 when slider biases are estimated and 0.9 otherwise (see above).",
})
def fit_pairwise(
    data: pd.DataFrame | None = None,
    scalars: pd.DataFrame | None = None,
    strengths: pd.DataFrame | None = None,
    *,
    link: Literal["rao-kupper", "probit"] = "rao-kupper",
    prior: tuple[float, float] = (1.0, 1.0),
    ties: bool | None = None,
    annotator_effects: bool | None = None,
    slider_resolution: float = 0.01,
    strength_max: float = 1.0,
    parametrisation: Literal["auto", "values", "differences"] = "auto",
    systems: pd.Series | dict | None = None,
    items=None,
    allow_disconnected: bool = False,
    item_a: str = "item_a",
    item_b: str = "item_b",
    outcome: str = "outcome",
    annotator: str | None = "annotator",
    count: str | None = None,
    draws: int = 1000,
    tune: int = 1000,
    chains: int = 2,
    cores: int | None = None,
    random_seed: int | np.random.Generator | None = None,
    nuts_sampler: NutsSampler | None = None,
    target_accept: float | None = None,
    progressbar: bool | None = None,
) -> PairwiseResult:
    """Fit the beta-latent model (:mod:`bayes_raters.pairwise.model`) to any mix of
    comparisons (``data``: item_a, item_b, outcome in {win, tie, loss} from item_a),
    ``scalars`` (item, value in [0, 1]) and ``strengths`` (item_a, item_b, strength in
    [-strength_max, strength_max], positive = item_a better); each optionally with an
    ``annotator`` column. Aggregated comparisons (one row per distinct judgement with a column
    of how many times it was made, as R's BradleyTerry2 data come) need ``count=`` naming that
    column; a count-like column left unnamed is an error, not silently ignored. Identical
    comparisons are pooled into counts inside the model either way. ``ties``: True models a tie
    band (epsilon), False none (Bradley-Terry; tie-free data such as citation counts), None
    (default) a tie band when some comparison is a tie. ``parametrisation`` (see
    :func:`~bayes_raters.pairwise.model.build_pairwise_model`): by default comparisons alone are
    sampled in the abilities' differences, which the data identify. ``item_a``,
    ``item_b`` and ``outcome`` name the comparison table's columns where they differ from these
    defaults. ``target_accept`` defaults to 0.95 when slider biases are
    estimated (several annotators and slider values: with few sliders per annotator, 0.9 left
    a few divergent transitions in the funnel of the bias SD) and to 0.9 otherwise.
    ``progressbar``: None (default) shows it in a terminal or notebook only. ``cores``: None
    (default, as every family) runs one chain per usable CPU; the draws are the same as with
    ``cores=1``. Warns
    (ConvergenceWarning) if the chains did not converge.

    Parameters
    ----------
    data : pandas.DataFrame, optional
        The pairwise comparisons: item_a, item_b, outcome in {win, tie, loss} from item_a.
    scalars, strengths : pandas.DataFrame, optional
        The slider values and the preference strengths (at least one of the three tables).
    link : {"rao-kupper", "probit"}
        The tie model of the comparisons.
    prior : tuple of float
        Beta prior ``(a0, b0)`` of the latent values.
    ties : bool, optional
        Model a tie band (see above).
    annotator_effects : bool, optional
        Per-annotator consistency and slider bias; None, when there are several annotators.
    slider_resolution : float
        Slider values are read as intervals of this width (values at 0 or 1 included).
    strength_max : float
        Largest absolute preference strength.
    parametrisation : {"auto", "values", "differences"}
        How the model is sampled (see above).
    systems : pandas.Series or dict, optional
        Item -> the system that produced it: items of a system share a level (system rankings).
    items : sequence, optional
        Every item to rank, also those without a judgement.
    allow_disconnected : bool
        Warn instead of raising when the comparison graph falls apart.
    item_a, item_b, outcome : str
        Column names in the comparisons (``data``).
    annotator : str, optional
        Name of the annotator column; None, every judgement from one annotator.
    count : str, optional
        Column of aggregated comparisons' counts.
    {sampler_block}

    Returns
    -------
    PairwiseResult
        The posterior, item (and system) tables, rankings and convergence.

    Examples
    --------
    >>> from bayes_raters.pairwise import fit_pairwise, latent_values, simulate_judgements
    >>> data = simulate_judgements(latent_values(8, random_seed=0), n_comparisons=120, random_seed=0)
    >>> result = fit_pairwise(data["comparisons"], random_seed=0, progressbar=False)
    >>> result.convergence.converged, result.item_table().shape[0]
    (True, 8)
    """
    nuts_sampler = "pymc" if nuts_sampler is None else nuts_sampler
    comparisons = data
    if comparisons is not None:
        comparisons = canonical_columns(comparisons, {"item_a": item_a, "item_b": item_b, "outcome": outcome}, "comparisons")
    judgements = prepare_data(
        comparisons, scalars, strengths, annotator=annotator, systems=systems, strength_max=strength_max,
        items=items, allow_disconnected=allow_disconnected, count=count,
    )
    spec = PairwiseSpec(link=link, prior=tuple(prior), annotator_effects=annotator_effects, slider_resolution=slider_resolution,
                        ties=ties, parametrisation=parametrisation)
    model = build_pairwise_model(judgements, **spec.builder_options(), fused=nuts_sampler in ("pymc", "nutpie"))
    if target_accept is None:
        target_accept = 0.95 if "bias" in model.named_vars else 0.9
    idata, report = sample_model(
        model, draws=draws, tune=tune, chains=chains, cores=cores, random_seed=random_seed,
        nuts_sampler=nuts_sampler, target_accept=target_accept, what="beta-latent pairwise model", progressbar=progressbar,
        check_var_names=checked_variables(model), extra_chains=chains,
    )
    constant = idata["constant_data"].to_dataset() if "constant_data" in idata.children else xr.Dataset()
    idata["constant_data"] = xr.DataTree(constant.merge(judgement_inputs(judgements)))
    return PairwiseResult(idata=idata, spec=spec, data=judgements, report=report)

