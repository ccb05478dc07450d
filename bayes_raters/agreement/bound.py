r"""Agreement coefficients whose data point below the bound the true-score model imposes.

The posterior ICCs are ratios of variances, :math:`\sigma_T^2 / (\sigma_T^2 + \dots)`, so the
model keeps every one of them in :math:`[0, 1]`. The classical estimates are not truncated: the
one-way ICC1 is :math:`(MSB - MSW) / (MSB + (k - 1) MSW)`, negative when the ratings of one
response differ more than ratings of different responses (:math:`MSB < MSW`), that is when the
ratings of a response correlate negatively with each other; Krippendorff's alpha below 0 says the
same (disagreement beyond chance). Independent rating errors around a true score cannot produce
that: it takes a design in which the ratings of a response depend on each other (annotation
slots filled by raters who saw each other's scores or were assigned by how a response was rated,
a quota per rater, a reversed scale). The posterior then piles up at the bound 0 and reads as
"no agreement, precisely", which is the model's constraint speaking, not the data.

A coefficient is flagged (``below_bound``) when the data rule out a non-negative value: the
upper limit of its interval, classical where the closed form exists (a complete design) and
the bootstrap's otherwise, is below 0. At the table's default ``ci_prob`` of 0.9 that is a
one-sided 95% test, as the slope flags of :mod:`bayes_raters.irt.slopes` use, so pure noise
(true agreement 0) is flagged about 1 time in 20.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from bayes_raters.errors import BoundWarning

#: The bound the true-score model keeps every posterior ICC above.
ICC_BOUND = 0.0


def upper_limit(table: pd.DataFrame) -> pd.Series:
    """The upper interval limit of every coefficient: classical where it exists, else bootstrap."""
    return table["classical_upper"].fillna(table["bootstrap_upper"])


def below_bound(table: pd.DataFrame) -> pd.Series:
    """True for every coefficient with a posterior column whose upper interval limit is below
    :data:`ICC_BOUND` (module docstring); False elsewhere."""
    has_posterior = table["posterior_mean"].notna()
    return (has_posterior & (upper_limit(table) < ICC_BOUND)).astype(bool)


def bound_message(table: pd.DataFrame) -> str | None:
    """The sentence the warning and the command line print, or None when nothing is flagged."""
    flagged = table.index[table["below_bound"]]
    if not len(flagged):
        return None
    upper = upper_limit(table)
    shown = ", ".join(
        f"{name} {table.at[name, 'estimate']:.3f} (upper limit {upper[name]:.3f}; posterior "
        f"{table.at[name, 'posterior_mean']:.3f})" for name in flagged
    )
    negative = [name for name in table.index if name not in flagged and np.isfinite(table.at[name, "estimate"])
                and table.at[name, "estimate"] < 0 and not name.startswith("ICC")]
    also = f"; {', '.join(f'{n} {table.at[n, "estimate"]:.3f}' for n in negative)} below 0 too" if negative else ""
    return (
        f"the data point below the bound the true-score model imposes: {shown}{also}. The ratings of a "
        "response correlate negatively with each other, which independent rating errors around a true score "
        "cannot produce; the posterior ICCs sit at their bound 0 because the model forces them there, not "
        "because the data show agreement near 0. Look at how the ratings of a response were collected (raters "
        "who saw each other's scores, slots assigned by the response's rating, a reversed scale) before "
        "reading any of these coefficients."
    )


def warn_below_bound(table: pd.DataFrame) -> None:
    """A :class:`~bayes_raters.errors.BoundWarning` naming every flagged coefficient."""
    message = bound_message(table)
    if message is not None:
        warnings.warn(message, BoundWarning, stacklevel=3)
