r"""The fitted labels model over its posterior draws, in NumPy: each item's class probabilities
(the soft labels) and its log-likelihood, computed per label pattern
(:mod:`bayes_raters.labels.patterns`) and handed to the items.

For draw :math:`s` and pattern :math:`p`,
:math:`\ell_{spk} = \log\pi_{sk} + g_{pk} + \sum_{a,l} n_{pal}\log\theta_{sakl}`; the pattern's
log-likelihood is :math:`\operatorname{logsumexp}_k \ell_{spk}` and its class probabilities
:math:`\operatorname{softmax}_k \ell_{spk}`. The sum over the labels is one sparse
(patterns x annotator-labels) by dense (annotator-labels x classes x draws) product, in blocks of
:data:`BLOCK` draws.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse
import xarray as xr
from scipy.special import logsumexp, softmax

from bayes_raters.labels.patterns import LabelPatterns

#: Posterior draws per block of the NumPy evaluation.
BLOCK = 200


def pattern_matrix(patterns: LabelPatterns, n_annotators: int, n_classes: int) -> scipy.sparse.csr_matrix:
    """(patterns, annotators x labels) label counts, sparse."""
    return scipy.sparse.csr_matrix((patterns.count, (patterns.pattern, patterns.annotator * n_classes + patterns.label)),
                                   shape=(patterns.n_patterns, n_annotators * n_classes))


def flat_draws(posterior: xr.Dataset) -> tuple[np.ndarray, np.ndarray]:
    """(draws, classes) log prevalence and (draws, annotators, classes, labels) log confusion,
    chains stacked; every model's posterior has ``confusion`` (the fit derives it where the model's
    parameters are others, :func:`bayes_raters.labels.fit.with_derived`)."""
    prevalence = posterior["prevalence"].stack(sample=("chain", "draw")).transpose("sample", "true_class").values
    confusion = posterior["confusion"].stack(sample=("chain", "draw")).transpose("sample", "annotator", "true_class", "label").values
    return np.log(prevalence), np.log(confusion)


def pattern_by_class(matrix, log_prevalence: np.ndarray, log_theta: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """(draws, patterns, classes) :math:`\\ell_{spk}` of the module docstring for a block of draws."""
    n_draws, n_annotators, n_classes, _ = log_theta.shape
    columns = log_theta.transpose(1, 3, 2, 0).reshape(n_annotators * n_classes, n_classes * n_draws)
    summed = np.asarray(matrix @ columns).reshape(-1, n_classes, n_draws).transpose(2, 0, 1)
    return summed + log_prevalence[:, None, :] + mask[None]


def blocks(n: int):
    """Slices of :data:`BLOCK` draws covering ``n``."""
    for start in range(0, n, BLOCK):
        yield slice(start, min(start + BLOCK, n))


def class_probabilities(log_prevalence: np.ndarray, log_theta: np.ndarray, patterns: LabelPatterns, matrix=None) -> np.ndarray:
    """(items, classes): each item's class probabilities at one value of the parameters
    (``log_prevalence`` (classes,), ``log_theta`` (annotators, classes, labels)); ``matrix``: the
    :func:`pattern_matrix`, built here when not given (a caller looping over draws builds it once)."""
    n_annotators, n_classes = log_theta.shape[:2]
    matrix = pattern_matrix(patterns, n_annotators, n_classes) if matrix is None else matrix
    by_class = pattern_by_class(matrix, log_prevalence[None], log_theta[None], patterns.gold_mask(n_classes))[0]
    return softmax(by_class, axis=1)[patterns.item_pattern]


def soft_labels(posterior: xr.Dataset, patterns: LabelPatterns, n_annotators: int, n_classes: int) -> np.ndarray:
    """(items, classes): each item's posterior class probabilities, averaged over the draws."""
    log_prevalence, log_theta = flat_draws(posterior)
    matrix, mask = pattern_matrix(patterns, n_annotators, n_classes), patterns.gold_mask(n_classes)
    total = np.zeros((patterns.n_patterns, n_classes))
    for part in blocks(len(log_prevalence)):
        total += softmax(pattern_by_class(matrix, log_prevalence[part], log_theta[part], mask), axis=2).sum(axis=0)
    return (total / len(log_prevalence))[patterns.item_pattern]


def item_log_likelihood(posterior: xr.Dataset, patterns: LabelPatterns, n_annotators: int, n_classes: int) -> np.ndarray:
    """(chain, draw, items): each item's log-likelihood (its labels, its class summed out) per draw."""
    log_prevalence, log_theta = flat_draws(posterior)
    matrix, mask = pattern_matrix(patterns, n_annotators, n_classes), patterns.gold_mask(n_classes)
    out = np.concatenate([logsumexp(pattern_by_class(matrix, log_prevalence[part], log_theta[part], mask), axis=2)
                          for part in blocks(len(log_prevalence))])
    # the class prior alone is not the labels' likelihood: a gold item's log p(gold class) is dropped
    out -= np.concatenate([logsumexp(log_prevalence[part][:, None, :] + mask[None], axis=2) for part in blocks(len(log_prevalence))])
    return out[:, patterns.item_pattern].reshape(posterior.sizes["chain"], posterior.sizes["draw"], -1)
