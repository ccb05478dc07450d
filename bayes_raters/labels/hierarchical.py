r"""The hierarchical Dawid-Skene model: annotators' confusion matrices pooled toward a population
per annotator kind (human, LLM, ...), so that an annotator with few labels borrows strength from
its kind, and each kind's typical confusion matrix is itself a result.

Each row of annotator :math:`a`'s confusion matrix, of kind :math:`g = g(a)`, is a softmax of
log-odds against the correct label:

.. math:: \theta_{ak\cdot} = \operatorname{softmax}(\eta_{ak\cdot}), \quad \eta_{akk} = 0, \quad
   \eta_{akl} = \mu_{gkl} + \tau_g z_{akl} \ (l \ne k), \quad z_{akl} \sim N(0, 1),

with :math:`\mu_{gkl} \sim N(m, 1.5^2)`, :math:`m = \log\big(0.4/(K-1)\,/\,0.6\big)` (the
population's expected row puts 0.6 on the correct label, as the Dawid-Skene default), and
:math:`\tau_g \sim N^+(0, 1)` per kind (non-centred). The kind's typical confusion matrix
``kind_confusion`` is :math:`\operatorname{softmax}(\mu_{gk\cdot})` (the confusion of an
annotator at the population's centre). The classes are identified as in the other models: the
prior mean favours the correct label.
"""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt

from bayes_raters.errors import InvalidInputError
from bayes_raters.labels.data import LabelsData, kind_layout

#: Prior SD of the kinds' mean log-odds of each wrong label against the correct one.
MU_SD = 1.5
#: Prior SD (half-normal) of the annotators' spread around their kind, on the log-odds scale.
TAU_SD = 1.0


def annotator_kinds(data: LabelsData, annotator_kind) -> tuple[list[str], np.ndarray]:
    """``(kinds, index)``: the kind names in order of first appearance and each annotator's kind
    index. ``annotator_kind``: a dict or Series annotator -> kind covering every annotator, or None
    (one kind, ``"all"``)."""
    if annotator_kind is None:
        return ["all"], np.zeros(len(data.annotators), dtype=np.int64)
    mapping = {str(k): str(v) for k, v in dict(annotator_kind).items()}
    missing = [a for a in data.annotators if a not in mapping]
    if missing:
        raise InvalidInputError(f"annotator_kind: annotators without a kind: {missing[:10]}{' ...' if len(missing) > 10 else ''}; "
                                "give every annotator of the labels a kind (e.g. 'human' or 'llm').")
    return kind_layout([mapping[a] for a in data.annotators])


def hierarchical_log_theta(kinds: list[str], kind_index: np.ndarray, n_classes: int, n_labels: int | None = None):
    """Inside a model context with coords ``annotator``, ``true_class``, ``label``: the variables of
    the module docstring (``kind_mu``, ``kind_tau``, ``confusion_z``; deterministics ``confusion``
    and ``kind_confusion``) and the (annotators, classes, labels) log confusion (``n_labels``: the
    classes and the labels that are not classes; None, the classes)."""
    n_labels = n_classes if n_labels is None else n_labels
    model = pm.modelcontext(None)
    model.add_coord("kind", kinds)
    model.add_coord("other_label", list(range(n_labels - 1)))  # the labels other than the row's class, in order
    off = ~np.eye(n_classes, n_labels, dtype=bool)
    centre = np.log(0.4 / (n_labels - 1) / 0.6)
    mu = pm.Normal("kind_mu", centre, MU_SD, dims=("kind", "true_class", "other_label"))
    tau = pm.HalfNormal("kind_tau", TAU_SD, dims="kind")
    z = pm.Normal("confusion_z", 0.0, 1.0, dims=("annotator", "true_class", "other_label"))
    kind_of = pytensor.shared(np.asarray(kind_index, dtype=np.int64), name="labels_kind_index")  # an input: data sets of one design share the code
    eta_off = mu[kind_of] + tau[kind_of][:, None, None] * z
    log_theta = pt.special.log_softmax(_with_zero_diagonal(eta_off, off, len(kind_index)), axis=-1)
    pm.Deterministic("confusion", pt.exp(log_theta), dims=("annotator", "true_class", "label"))
    pm.Deterministic("kind_confusion", pt.special.softmax(_with_zero_diagonal(mu, off, len(kinds)), axis=-1),
                     dims=("kind", "true_class", "label"))
    return log_theta


def _with_zero_diagonal(values, off: np.ndarray, n: int):
    """(n, classes, labels): ``values`` (n, classes, labels - 1) placed off the diagonal (``off``
    True), 0 on it."""
    rows, cols = np.nonzero(off)
    return pt.zeros((n, *off.shape))[:, rows, cols].set(values.reshape((n, -1)))
