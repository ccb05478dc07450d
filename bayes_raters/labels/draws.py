r"""The fitted labels model over its posterior draws, in NumPy: each item's class probabilities
(the soft labels) and its log-likelihood, computed per label pattern
(:mod:`bayes_raters.labels.patterns`) and handed to the items.

For draw :math:`s` and pattern :math:`p`,
:math:`\ell_{spk} = \log\pi_{sk} + g_{pk} + \sum_{a,l} n_{pal}\log\theta_{sakl}`; the pattern's
log-likelihood is :math:`\operatorname{logsumexp}_k \ell_{spk}` and its class probabilities
:math:`\operatorname{softmax}_k \ell_{spk}`. The sum over the labels is one sparse
(patterns x annotator-labels) by dense (annotator-labels x classes x draws) product, in blocks of
:data:`BLOCK` draws. For ``"correlated"`` the labels of each annotator kind are summed per reading
and the readings summed out (:func:`bayes_raters.labels.correlated.correlated_by_class`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse
import xarray as xr
from scipy.special import logsumexp, softmax

from bayes_raters.labels.correlated import correlated_by_class, layer_draws
from bayes_raters.labels.patterns import LabelPatterns

#: Posterior draws per block of the NumPy evaluation.
BLOCK = 200


def pattern_matrix(patterns: LabelPatterns, n_annotators: int, n_labels: int) -> scipy.sparse.csr_matrix:
    """(patterns, annotators x labels) label counts, sparse."""
    return scipy.sparse.csr_matrix((patterns.count, (patterns.pattern, patterns.annotator * n_labels + patterns.label)),
                                   shape=(patterns.n_patterns, n_annotators * n_labels))


@dataclass(frozen=True)
class ParameterDraws:
    """Posterior draws, chains stacked: ``log_prevalence`` (draws, classes) and ``log_theta``
    (draws, annotators, classes, labels), the log confusion; for ``"correlated"``
    (:mod:`bayes_raters.labels.correlated`) ``log_theta`` is the reading confusion, ``layer``
    (draws, kinds, classes, readings) the kinds' log reading matrices and ``kind_index`` each
    annotator's kind."""

    log_prevalence: np.ndarray
    log_theta: np.ndarray
    layer: np.ndarray | None = None
    kind_index: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.log_prevalence)

    def __getitem__(self, part) -> ParameterDraws:
        """The draws ``part`` (a slice or an index array)."""
        return ParameterDraws(self.log_prevalence[part], self.log_theta[part], None if self.layer is None else self.layer[part], self.kind_index)

    def by_class(self, matrix, mask: np.ndarray) -> np.ndarray:
        """(draws, patterns, classes) :math:`\\ell_{spk}` of the module docstring."""
        if self.layer is None:
            return pattern_by_class(matrix, self.log_prevalence, self.log_theta, mask)
        return correlated_by_class(matrix, self.log_theta, self.layer, self.kind_index) + self.log_prevalence[:, None, :] + mask[None]


def flat_draws(posterior: xr.Dataset, kinds: tuple[str, ...] = ()) -> ParameterDraws:
    """The :class:`ParameterDraws` of ``posterior``; every model's posterior has ``confusion`` (the
    fit derives it where the model's parameters are others,
    :func:`bayes_raters.labels.fit.with_derived`); ``kinds`` (each annotator's, the spec's) for
    ``"correlated"``."""
    prevalence = posterior["prevalence"].stack(sample=("chain", "draw")).transpose("sample", "true_class").values
    if "kind_reading" in posterior:
        layer, log_theta, kind_index = layer_draws(posterior, kinds)
        return ParameterDraws(np.log(prevalence), log_theta, layer, kind_index)
    confusion = posterior["confusion"].stack(sample=("chain", "draw")).transpose("sample", "annotator", "true_class", "label").values
    return ParameterDraws(np.log(prevalence), np.log(confusion))


def pattern_by_class(matrix, log_prevalence: np.ndarray, log_theta: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """(draws, patterns, classes) :math:`\\ell_{spk}` of the module docstring for a block of draws."""
    n_draws, n_annotators, n_classes, n_labels = log_theta.shape
    columns = log_theta.transpose(1, 3, 2, 0).reshape(n_annotators * n_labels, n_classes * n_draws)
    summed = np.asarray(matrix @ columns).reshape(-1, n_classes, n_draws).transpose(2, 0, 1)
    return summed + log_prevalence[:, None, :] + mask[None]


def blocks(n: int):
    """Slices of :data:`BLOCK` draws covering ``n``."""
    for start in range(0, n, BLOCK):
        yield slice(start, min(start + BLOCK, n))


def class_probabilities(draw: ParameterDraws, patterns: LabelPatterns, matrix=None) -> np.ndarray:
    """(items, classes): each item's class probabilities at one value of the parameters (a
    :class:`ParameterDraws` of one draw); ``matrix``: the :func:`pattern_matrix`, built here when
    not given (a caller looping over draws builds it once)."""
    n_annotators, n_classes, n_labels = draw.log_theta.shape[1:]
    matrix = pattern_matrix(patterns, n_annotators, n_labels) if matrix is None else matrix
    return softmax(draw.by_class(matrix, patterns.gold_mask(n_classes))[0], axis=1)[patterns.item_pattern]


def soft_labels(posterior: xr.Dataset, patterns: LabelPatterns, kinds: tuple[str, ...] = ()) -> np.ndarray:
    """(items, classes): each item's posterior class probabilities, averaged over the draws
    (``kinds``: each annotator's, for ``"correlated"``)."""
    draws = flat_draws(posterior, kinds)
    n_annotators, n_classes, n_labels = draws.log_theta.shape[1:]
    matrix, mask = pattern_matrix(patterns, n_annotators, n_labels), patterns.gold_mask(n_classes)
    total = np.zeros((patterns.n_patterns, n_classes))
    for part in blocks(len(draws)):
        total += softmax(draws[part].by_class(matrix, mask), axis=2).sum(axis=0)
    return (total / len(draws))[patterns.item_pattern]


def item_log_likelihood(posterior: xr.Dataset, patterns: LabelPatterns, kinds: tuple[str, ...] = ()) -> np.ndarray:
    """(chain, draw, items): each item's log-likelihood (its labels, its class summed out) per draw."""
    draws = flat_draws(posterior, kinds)
    n_annotators, n_classes, n_labels = draws.log_theta.shape[1:]
    matrix, mask = pattern_matrix(patterns, n_annotators, n_labels), patterns.gold_mask(n_classes)
    out = np.concatenate([logsumexp(draws[part].by_class(matrix, mask), axis=2) for part in blocks(len(draws))])
    # the class prior alone is not the labels' likelihood: a gold item's log p(gold class) is dropped
    out -= np.concatenate([logsumexp(draws.log_prevalence[part][:, None, :] + mask[None], axis=2) for part in blocks(len(draws))])
    return out[:, patterns.item_pattern].reshape(posterior.sizes["chain"], posterior.sizes["draw"], -1)
