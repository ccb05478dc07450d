r"""How well soft labels are calibrated against known classes: the reliability table and the
expected calibration error (top-label), Guo et al. (2017).

Items are binned by the probability of their most probable class, the *confidence*
:math:`c_i = \max_k p_{ik}`, into ``bins`` equal-width bins on :math:`[1/K, 1]`; each bin reports
its items, mean confidence and accuracy (the share whose most probable class is the known one).
With :math:`B_b` the items of bin :math:`b` and :math:`N` all items,

.. math:: \mathrm{ECE} = \sum_b \frac{|B_b|}{N}\,\big|\operatorname{acc}(B_b) - \operatorname{conf}(B_b)\big|.

Against gold the fit did not see: a gold item in the fit has probability 1 on its gold class.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from bayes_raters.errors import InvalidInputError


def reliability_table(probabilities: pd.DataFrame, truth: pd.Series, bins: int = 10) -> pd.DataFrame:
    """One row per confidence bin (``lower``, ``upper``): ``n``, ``confidence`` (mean top
    probability), ``accuracy`` and ``gap`` (accuracy - confidence); ``probabilities`` is items x
    classes (columns the class names), ``truth`` each item's known class (indexed by item; items
    without one are left out)."""
    truth = truth.dropna().astype(str)
    known = probabilities.index.intersection(truth.index)
    if len(known) == 0:
        raise InvalidInputError("no item of the known classes is among the fitted items; pass a Series indexed by item.")
    p = probabilities.loc[known]
    confidence = p.max(axis=1).to_numpy()
    right = (p.idxmax(axis=1).astype(str).to_numpy() == truth.loc[known].to_numpy())
    edges = np.linspace(1 / p.shape[1], 1, bins + 1)
    which = np.clip(np.searchsorted(edges, confidence, side="right") - 1, 0, bins - 1)
    frame = pd.DataFrame({"bin": which, "confidence": confidence, "right": right}).groupby("bin")
    table = pd.DataFrame({"lower": edges[:-1], "upper": edges[1:]}).join(
        pd.DataFrame({"n": frame.size(), "confidence": frame["confidence"].mean(), "accuracy": frame["right"].mean()}))
    table["n"] = table["n"].fillna(0).astype(int)
    table["gap"] = table["accuracy"] - table["confidence"]
    return table.rename_axis("bin")


def expected_calibration_error(table: pd.DataFrame) -> float:
    """The ECE of a :func:`reliability_table` (module docstring)."""
    used = table[table["n"] > 0]
    return float((used["n"] * used["gap"].abs()).sum() / used["n"].sum())
