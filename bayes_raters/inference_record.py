"""What the inference of one fit did, as one typed record saved with the result.

Every fit fills one :class:`InferenceRecord` as its inference runs (the pipeline of
:func:`bayes_raters.inference.sample_model`: Laplace draws and their check, warm-started
NUTS, extra chains; then the family's own steps: the parametrisation kept, the quadrature,
the exact conditional ability draws, the draws rule). The record lives in the posterior's
attributes under one key, :data:`RECORD_ATTR`, as JSON, so it travels with the tree: ArviZ
shows it, :meth:`~bayes_raters.results.FitResult.save` writes it into the file and
:meth:`~bayes_raters.results.FitResult.load` reads it back. Code reads it only through
:meth:`InferenceRecord.of` (``result.inference``), never by an attribute's name.

>>> import xarray as xr
>>> tree = xr.DataTree.from_dict({"posterior": xr.Dataset()})
>>> InferenceRecord(path="nuts", sampler="pymc").write(tree)
>>> InferenceRecord.of(tree).updated(parametrisation="centred").parametrisation
'centred'
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from typing import Literal

import xarray as xr

from bayes_raters.errors import PersistenceError
from bayes_raters.fit_spec import PlainRecord

#: The one posterior attribute that holds the record (JSON).
RECORD_ATTR = "bayes_raters_inference"

#: What produced the draws: NUTS; importance-sampled Laplace draws that passed their check; NUTS
#: after Laplace draws were rejected (``reason`` says why); the leaderboard's blocked
#: Metropolis-within-Gibbs sampler.
InferencePath = Literal["nuts", "laplace", "nuts_after_laplace", "metropolis_within_gibbs"]
PATHS = InferencePath.__args__
#: How the marginal fits draw abilities: from their exact conditional posterior given each draw
#: of the item parameters (quadrature, then independence Metropolis-Hastings).
EXACT_CONDITIONAL_THETA = "exact conditional (quadrature + independence MH)"
#: The same for log-concave conditionals (the polytomous models): rejection sampling from an
#: envelope built on the quadrature's nodes (:func:`bayes_raters.quadrature.draw_log_concave`).
EXACT_REJECTION_THETA = "exact conditional (quadrature envelope + rejection)"


@dataclass(frozen=True)
class InferenceRecord(PlainRecord):
    """What one fit's inference did (fields left at their defaults did not apply).

    The path
        ``path`` (:data:`InferencePath`), ``reason`` (why NUTS ran after Laplace draws), ``sampler``
        (``"pymc"``, ``"nutpie"``, ``"numpyro"``, ``"blackjax"`` for NUTS, or the module that drew the
        samples).
    Laplace draws (:mod:`bayes_raters.laplace`)
        ``pareto_k`` and its ``pareto_k_threshold``, ``importance_ess`` (effective size of the
        resampled draws), ``proposals_per_chain``, ``laplace_retries`` (fresh batches drawn after a
        first batch failed R-hat or ESS), ``newton_steps`` (the arena's own mode search).
    NUTS
        ``warm_start`` (how chains started from the Laplace approximation; empty: a cold start),
        ``extra_chains`` added after slow mixing and ``extra_chains_reason``.
    The model's form
        ``parametrisation`` kept (``"centred"``, ``"non-centred"``) and ``divergences_by_form`` over
        the forms tried (:func:`bayes_raters.sampling.fewest_divergences`).
    Marginal fits
        ``method`` (``"marginal"`` or ``"joint"``), ``quadrature`` (the rule), ``quadrature_nodes``,
        ``quadrature_spacing``, ``quadrature_error`` (at the posterior), ``theta_draws`` (how
        abilities were drawn) and ``theta_mh_acceptance`` (the acceptance rate of its MH steps, or
        of its rejection sampler's proposals).
    Draws
        ``draws_rule``: how the number of draws was chosen (leaderboards).
    """

    path: InferencePath = "nuts"
    reason: str = ""
    sampler: str = ""
    pareto_k: float | None = None
    pareto_k_threshold: float | None = None
    importance_ess: float | None = None
    proposals_per_chain: int | None = None
    laplace_retries: int = 0
    newton_steps: int | None = None
    warm_start: str = ""
    extra_chains: int = 0
    extra_chains_reason: str = ""
    parametrisation: str = ""
    divergences_by_form: dict = field(default_factory=dict)
    method: str = ""
    quadrature: str = ""
    quadrature_nodes: int | None = None
    quadrature_spacing: float | None = None
    quadrature_error: float | None = None
    theta_draws: str = ""
    theta_mh_acceptance: float | None = None
    draws_rule: str = ""

    def __post_init__(self):
        if self.path not in PATHS:
            raise PersistenceError(f"an inference record's path must be one of {PATHS}, got {self.path!r}.")

    def updated(self, **changes) -> InferenceRecord:
        """A copy with ``changes`` (field name -> value); an unknown name raises TypeError."""
        return dataclasses.replace(self, **changes)

    def with_exact_abilities(self, acceptance: float, nodes: int, *, how: str = EXACT_CONDITIONAL_THETA, **quadrature) -> InferenceRecord:
        """The record of a marginal fit whose abilities were then drawn from their exact
        conditional (``how``: :data:`EXACT_CONDITIONAL_THETA` or :data:`EXACT_REJECTION_THETA`):
        the mean ``acceptance``, the quadrature's ``nodes`` and its other fields (``quadrature``,
        ``quadrature_spacing``, ``quadrature_error``)."""
        return self.updated(method="marginal", theta_draws=how, theta_mh_acceptance=float(acceptance),
                            quadrature_nodes=int(nodes), **quadrature)

    def write(self, tree: xr.DataTree) -> None:
        """Store the record in ``tree``'s posterior attributes (:data:`RECORD_ATTR`, JSON)."""
        tree["posterior"].attrs[RECORD_ATTR] = json.dumps(self.to_dict())

    @classmethod
    def of(cls, tree: xr.DataTree | xr.Dataset) -> InferenceRecord:
        """The record stored in ``tree`` (a DataTree or its posterior Dataset); a tree without one
        (draws made outside this package) gives the default record."""
        attrs = (tree["posterior"] if isinstance(tree, xr.DataTree) else tree).attrs
        text = attrs.get(RECORD_ATTR)
        return cls() if text is None else cls.from_dict(json.loads(text))
