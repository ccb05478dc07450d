"""The log-likelihood of every answer pattern at every point of a quadrature grid, shared by the
multidimensional model's two rules (:mod:`bayes_raters.irt.multidimensional.model`, the ball;
:mod:`bayes_raters.irt.multidimensional.factorised`, one axis per ability)."""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt

from bayes_raters.irt.binary.model import asymptote_logs


def pattern_node_loglik(correct, answered, eta, c, *, complete: bool, lib=pt):
    """Log-likelihood (patterns, nodes) of every pattern at every node from the linear
    predictor ``eta`` (items, nodes); ``c`` None for the 2PL (then
    :math:`\\ell = y\\cdot\\eta - m\\cdot\\log(1 + e^\\eta)`)."""
    if c is None:
        softplus = pt.softplus(eta) if lib is pt else np.logaddexp(0.0, eta)
        spread = softplus.sum(axis=0)[None, :] if complete else lib.dot(answered, softplus)
        return lib.dot(correct, eta) - spread
    log_p, log_q = asymptote_logs(eta, c[:, None], None, lib)
    wrong = (log_q.sum(axis=0)[None, :] if complete else lib.dot(answered, log_q)) - lib.dot(correct, log_q)
    return lib.dot(correct, log_p) + wrong
