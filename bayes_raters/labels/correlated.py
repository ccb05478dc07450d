r"""Annotators whose errors coincide: Dawid-Skene with a shared reading per annotator kind.

Dawid-Skene takes the labels of an item as independent given its class. Annotators of one kind
(LLMs of one family, prompted alike; raters trained on one guideline) break that: they misread
the same items the same way, and several of them agreeing on a wrong label reads as strong
evidence, giving confidently wrong soft labels. Here each kind :math:`g` with two or more
annotators reads item :math:`i` once, as :math:`r_{ig}`, and its annotators label from that
reading (an annotator left out of ``annotator_kind``, or alone in its kind, errs independently):

.. math:: p(r_{ig} = r \mid z_i = k) = \phi_{gkr}, \qquad
   p(y_{ia} = l \mid r_{ig(a)} = r) = \theta_{arl},

so with :math:`n_{ial}` the counts,

.. math:: \log p(y_i) = \operatorname{logsumexp}_k \Big(\log\pi_k + \sum_g
   \operatorname{logsumexp}_r \big(\log\phi_{gkr} + \sum_{a \in g}\sum_l n_{ial}\log\theta_{arl}\big)\Big),

the class and every reading summed out exactly (a kind without labels on the item adds 0). An
annotator alone in its kind reads the class itself (:math:`\phi_g` the identity): that is
Dawid-Skene. ``kind_reading`` (:math:`\phi`) has rows :math:`\operatorname{Dirichlet}`, total
:data:`KIND_ROW_CONCENTRATION`, expected :data:`KIND_DIAGONAL_SHARE` on the diagonal (shared
misreadings are the exception); ``reading_confusion`` (:math:`\theta`) has the Dawid-Skene
default rows. The posterior's ``confusion`` is each annotator's confusion with its kind's
reading summed out, :math:`\sum_r\phi_{gkr}\theta_{arl}`: what one label says about the class.
Telling shared from independent errors needs items labelled by two or more annotators of a kind.
"""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
from scipy.special import logsumexp

from bayes_raters.errors import InvalidInputError
from bayes_raters.labels.data import kind_layout
from bayes_raters.results import draw_categories

#: The kind reading's rows: total Dirichlet concentration ...
KIND_ROW_CONCENTRATION = 10.0
#: ... and expected share on the diagonal (the kind reads the class right).
KIND_DIAGONAL_SHARE = 0.8


def reading_kinds(annotators, annotator_kind) -> tuple[str, ...]:
    """Each annotator's kind (in the order of ``annotators``) from ``annotator_kind`` (a dict or
    Series annotator -> kind); an annotator it leaves out is alone in a kind of its own,
    ``"alone:<annotator>"`` (it errs independently, as in Dawid-Skene)."""
    mapping = {str(k): str(v) for k, v in dict(annotator_kind).items()}
    unknown = sorted(set(mapping) - set(annotators))
    if unknown:
        raise InvalidInputError(f"annotator_kind names annotators with no labels: {unknown[:10]}; the labels have {list(annotators)[:10]}"
                                f"{' ...' if len(annotators) > 10 else ''}.")
    return tuple(mapping.get(a, f"alone:{a}") for a in annotators)


def shared_kinds(kind_index: np.ndarray) -> np.ndarray:
    """The indices of the kinds with two or more annotators (those that read an item together)."""
    kinds, counts = np.unique(kind_index, return_counts=True)
    return kinds[counts >= 2]


def kind_reading_concentration(n_classes: int) -> np.ndarray:
    """(classes, readings): the default Dirichlet rows of ``kind_reading``."""
    rows = np.full((n_classes, n_classes), KIND_ROW_CONCENTRATION * (1 - KIND_DIAGONAL_SHARE) / (n_classes - 1))
    np.fill_diagonal(rows, KIND_ROW_CONCENTRATION * KIND_DIAGONAL_SHARE)
    return rows


def correlated_parameters(kinds: list[str], kind_index: np.ndarray, confusion_rows: np.ndarray, n_classes: int):
    """Inside a model context with coords ``annotator``, ``true_class``, ``label``: the variables
    ``reading_confusion`` (annotator, reading, label) and ``kind_reading`` (shared_kind,
    true_class, reading), the deterministic marginal ``confusion``; returns the (kinds, classes,
    readings) log reading matrix of every kind (the identity for a kind of one annotator), the
    (annotators, readings, labels) log reading confusion and the kind index as a graph input
    (``confusion_rows``: (classes, labels), the Dirichlet rows of the reading confusion)."""
    shared = shared_kinds(kind_index)
    if len(shared) == 0:
        raise InvalidInputError("model='correlated' needs a kind with two or more annotators in annotator_kind: the annotators of one "
                                "kind share their misreadings; with one annotator per kind it is 'dawid-skene'.")
    model = pm.modelcontext(None)
    model.add_coord("kind", kinds)
    model.add_coord("shared_kind", [kinds[g] for g in shared])
    model.add_coord("reading", model.coords["true_class"])
    n_annotators = len(kind_index)
    theta = pm.Dirichlet("reading_confusion", np.broadcast_to(confusion_rows, (n_annotators, *confusion_rows.shape)),
                         dims=("annotator", "reading", "label"))
    phi = pm.Dirichlet("kind_reading", np.broadcast_to(kind_reading_concentration(n_classes), (len(shared), n_classes, n_classes)),
                       dims=("shared_kind", "true_class", "reading"))
    with np.errstate(divide="ignore"):
        identity = np.broadcast_to(np.log(np.eye(n_classes)), (len(kinds), n_classes, n_classes))
    log_layer = pt.set_subtensor(pt.as_tensor(identity)[shared], pt.log(phi))
    kind_of = pytensor.shared(np.asarray(kind_index, dtype=np.int64), name="labels_kind_index")
    pm.Deterministic("confusion", pt.matmul(pt.exp(log_layer)[kind_of], theta), dims=("annotator", "true_class", "label"))
    return log_layer, pt.log(theta), kind_of


def correlated_log_likelihood(log_layer, log_theta, kind_of, inputs: dict, n_kinds: int, n_classes: int):
    r"""(patterns, classes): :math:`\sum_g\operatorname{logsumexp}_r(\log\phi_{gkr} + s_{pgr})` with
    :math:`s_{pgr} = \sum_{a\in g,l} n_{pal}\log\theta_{arl}`, in PyTensor (``inputs``:
    :func:`~bayes_raters.labels.model.graph_inputs`)."""
    per_triple = inputs["count"][:, None] * log_theta[inputs["annotator"], :, inputs["label"]]
    by_kind = pt.zeros((inputs["weight"].shape[0], n_kinds, n_classes))[inputs["pattern"], kind_of[inputs["annotator"]]].inc(per_triple)
    return pt.logsumexp(log_layer[None] + by_kind[:, :, None, :], axis=-1).sum(axis=1)


def kind_columns(kind_index: np.ndarray, n_labels: int) -> list[np.ndarray]:
    """Per kind, the columns of the (patterns, annotators x labels) pattern matrix of its annotators."""
    columns = np.arange(len(kind_index) * n_labels).reshape(len(kind_index), n_labels)
    return [columns[kind_index == g].ravel() for g in range(int(kind_index.max()) + 1)]


def kind_sums(matrix, log_theta: np.ndarray, kind_index: np.ndarray):
    r"""Per kind ``g``, ``(g, s)`` with ``s`` (draws, patterns, readings) the sum
    :math:`s_{pgr} = \sum_{a\in g,l} n_{pal}\log\theta_{arl}` of :func:`correlated_log_likelihood`
    for a block of draws (``log_theta`` (draws, annotators, readings, labels)), in NumPy."""
    n_draws, _, n_classes, n_labels = log_theta.shape
    for g, columns in enumerate(kind_columns(kind_index, n_labels)):
        members = log_theta[:, kind_index == g].transpose(1, 3, 2, 0).reshape(len(columns), n_classes * n_draws)
        yield g, np.asarray(matrix[:, columns] @ members).reshape(-1, n_classes, n_draws).transpose(2, 0, 1)


def correlated_by_class(matrix, log_theta: np.ndarray, log_layer: np.ndarray, kind_index: np.ndarray) -> np.ndarray:
    """(draws, patterns, classes): the sum over kinds of :func:`correlated_log_likelihood`, in
    NumPy for a block of draws (``log_theta`` (draws, annotators, readings, labels), ``log_layer``
    (draws, kinds, classes, readings))."""
    total = np.zeros((log_theta.shape[0], matrix.shape[0], log_theta.shape[2]))
    for g, summed in kind_sums(matrix, log_theta, kind_index):
        total += logsumexp(log_layer[:, g, None, :, :] + summed[:, :, None, :], axis=-1)
    return total


def layer_draws(posterior, kinds: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """From a ``"correlated"`` posterior: (draws, kinds, classes, readings) log reading matrices
    (the identity for a kind of one annotator), (draws, annotators, readings, labels) log reading
    confusion, chains stacked, and each annotator's kind index (``kinds``: the spec's, one per annotator)."""
    names, kind_index = kind_layout(kinds)
    phi = posterior["kind_reading"].stack(sample=("chain", "draw")).transpose("sample", "shared_kind", "true_class", "reading")
    theta = posterior["reading_confusion"].stack(sample=("chain", "draw")).transpose("sample", "annotator", "reading", "label").values
    n_draws, n_classes = theta.shape[0], theta.shape[2]
    with np.errstate(divide="ignore"):
        layer = np.broadcast_to(np.log(np.eye(n_classes)), (n_draws, len(names), n_classes, n_classes)).copy()
        layer[:, [names.index(str(k)) for k in phi["shared_kind"].values]] = np.log(phi.values)
    return layer, np.log(theta), kind_index


def draw_readings(layer: np.ndarray, classes: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """(items, kinds): each item's reading by each kind given its class, one draw (``layer``: (kinds,
    classes, readings) log reading matrices of one draw; ``classes``: (items,))."""
    probabilities = np.exp(layer[:, classes]).transpose(1, 0, 2)  # (items, kinds, readings)
    return draw_categories(probabilities.reshape(-1, layer.shape[-1]), rng).reshape(probabilities.shape[:2])


def reading_weights(matrix, log_theta: np.ndarray, log_layer: np.ndarray, kind_index: np.ndarray) -> np.ndarray:
    """(patterns, kinds, classes, readings): each kind's reading of each pattern's item given its
    class and the item's labels, :math:`p(r_g = r \\mid z = k, y) \\propto \\phi_{gkr}\\prod_{a\\in g,l}\\theta_{arl}^{n_{al}}`,
    at one value of the parameters (``log_theta`` (annotators, readings, labels), ``log_layer``
    (kinds, classes, readings)); the identity for a kind of one annotator."""
    weights = []
    for g, summed in kind_sums(matrix, log_theta[None], kind_index):
        joint = log_layer[None, g] + summed[0][:, None, :]
        weights.append(np.exp(joint - logsumexp(joint, axis=-1, keepdims=True)))
    return np.stack(weights, axis=1)


def next_label_confusion(matrix, log_theta: np.ndarray, log_layer: np.ndarray, kind_index: np.ndarray) -> np.ndarray:
    """(patterns, annotators, classes, labels): the probability of annotator :math:`a`'s next label
    of the pattern's item given its class and the item's labels so far,
    :math:`\\sum_r p(r_{g(a)} = r \\mid z = k, y)\\,\\theta_{arl}` (:func:`reading_weights`): an
    annotator whose kind already read the item repeats much of that reading."""
    weights = reading_weights(matrix, log_theta, log_layer, kind_index)[:, kind_index]  # (patterns, annotators, classes, readings)
    return np.einsum("pakr,arl->pakl", weights, np.exp(log_theta))
