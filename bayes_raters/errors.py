"""Errors and warnings raised by bayes_raters.

Every error the package raises on purpose is a :class:`BayesRatersError`, so that
``except BayesRatersError`` catches all of them; the subclasses say what kind of
problem it is. Messages name the offending column, rows or values and what to do.
"""

from __future__ import annotations


class BayesRatersError(Exception):
    """Base class of every error raised by bayes_raters."""


class InvalidInputError(BayesRatersError, ValueError):
    """The input table or array is malformed: missing columns, wrong types, NaN,
    duplicates, values off the declared scale, unmatched ids."""


class InsufficientDataError(BayesRatersError, ValueError):
    """The input is well formed but cannot identify the quantity asked for,
    e.g. no response has two ratings so the rater error variance is unknown."""


class PersistenceError(BayesRatersError, OSError):
    """A result could not be saved or loaded: missing, unwritable, damaged or foreign file."""


class ConvergenceError(BayesRatersError, RuntimeError):
    """Sampling failed in a way that leaves no usable posterior."""


class BayesRatersWarning(UserWarning):
    """Base class of every warning issued by bayes_raters."""


class SmallSampleWarning(BayesRatersWarning):
    """An estimate fell outside its admissible range (e.g. PRMSE outside [0, 1]),
    which signals that the double-scored sample is too small to estimate it."""


class RoundingWarning(BayesRatersWarning):
    """Integer ratings whose disagreement is mostly rounding: the normal model is biased there."""


class QuadratureWarning(BayesRatersWarning):
    """Integrating a latent out by quadrature stayed less accurate than its tolerance."""


class InputWarning(BayesRatersWarning):
    """The input is valid but looks like a mistake: a gross outlier, an id with surrounding
    blanks, a system on another scale. The message names the rows and what to check."""


class ConvergenceWarning(BayesRatersWarning):
    """The chains behind a fitted result did not converge (R-hat, ESS or divergences)."""


class BoundWarning(BayesRatersWarning):
    """The data point below a bound the model imposes on a coefficient (a negative
    within-response correlation where the posterior ICCs are kept >= 0,
    :mod:`bayes_raters.agreement.bound`); the message names the coefficients."""


class SlopeWarning(BayesRatersWarning):
    """The data point to a negative or near-zero slope for items whose model forces it
    positive (:mod:`bayes_raters.irt.slopes`); the message names the items."""
