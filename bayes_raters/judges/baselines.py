r"""What users compute today, per system and on the human rating scale, beside the model's answer:

- **humans alone**: the mean over the human-rated responses of each response's mean rating, with
  the normal interval :math:`\bar Y \pm z\, s_Y / \sqrt n`;
- **judges alone** (naive): the mean over all the system's responses of the judges' mean score,
  with its normal interval (the judge treated as the truth);
- **PPI** and **PPI++** (Angelopoulos et al. 2023; Angelopoulos, Duchi & Zrnic 2023), stratified
  by system: with the :math:`n` human-rated responses' labels :math:`Y` and predictions
  :math:`\hat Y` (the judges' mean score) and the :math:`N` others' predictions
  :math:`\hat Y^u`,

  .. math:: \hat\theta_\lambda = \overline{\lambda \hat Y^u} + \overline{Y - \lambda \hat Y},
     \qquad \widehat{\mathrm{se}}^2 = \frac{\operatorname{var}(\lambda \hat Y^u)}{N}
     + \frac{\operatorname{var}(Y - \lambda \hat Y)}{n},

  :math:`\lambda = 1` for PPI; for PPI++ the variance-minimising
  :math:`\lambda = \widehat{\operatorname{cov}}(Y, \hat Y) / ((1 + n/N)\,
  \widehat{\operatorname{var}}(\hat Y \cup \hat Y^u))` clipped to :math:`[0, 1]`.

The same numbers as ``ppi_py.ppi_mean_ci`` (MIT; the reference implementation, compared in
``tests/judges/test_baselines.py``: it is a test dependency only, since it pulls ``gdown``,
``statsmodels`` and scikit-learn for a few lines of arithmetic). Each is frequentist and takes the
human ratings as the truth: none separates rater error from the true score or judge bias by
system.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import scipy.stats

from bayes_raters.judges.data import JudgesData


def ppi_mean(labels: np.ndarray, predicted: np.ndarray, unlabeled: np.ndarray, lam: float | None, ci_prob: float) -> tuple:
    """``(estimate, lower, upper, lam)`` of the prediction-powered mean (module docstring);
    ``lam=None`` tunes it (PPI++), ``lam=1`` is PPI, ``lam=0`` the labels alone."""
    n, big_n = len(labels), len(unlabeled)
    if n < 2 or big_n < 1:
        return np.nan, np.nan, np.nan, np.nan
    if lam is None:
        covariance = np.mean((labels - labels.mean()) * (predicted - predicted.mean()))
        spread = np.var(np.concatenate([predicted, unlabeled]), ddof=1)
        lam = float(np.clip(covariance / ((1 + n / big_n) * spread), 0, 1)) if spread > 0 else 0.0
    estimate = np.mean(lam * unlabeled) + np.mean(labels - lam * predicted)
    se = np.sqrt(np.std(lam * unlabeled) ** 2 / big_n + np.std(labels - lam * predicted) ** 2 / n)
    z = scipy.stats.norm.ppf(0.5 + ci_prob / 2)
    return float(estimate), float(estimate - z * se), float(estimate + z * se), float(lam)


def _normal_interval(values: np.ndarray, ci_prob: float) -> tuple:
    if len(values) < 2:
        return float(np.mean(values)) if len(values) else np.nan, np.nan, np.nan
    z = scipy.stats.norm.ppf(0.5 + ci_prob / 2)
    mean, se = float(np.mean(values)), float(np.std(values) / np.sqrt(len(values)))
    return mean, mean - z * se, mean + z * se


def response_means(data: JudgesData) -> pd.DataFrame:
    """Per response: its system, mean human rating (NaN where unrated) and the judges' mean score."""
    frame = data.systems.set_index("response")
    frame["human"] = data.humans.groupby("response")["score"].mean()
    frame["judge"] = data.judges.groupby("response")["score"].mean()
    return frame


def baseline_table(data: JudgesData, ci_prob: float = 0.9) -> pd.DataFrame:
    """One row per (system, method) with ``mean``, ``lower``, ``upper`` (equal-tailed
    ``ci_prob`` normal intervals), ``n_human`` (human-rated responses), ``n_responses`` and
    ``lam`` (PPI's power-tuning weight; NaN for the others), for the methods of the module
    docstring: ``humans``, ``judges_naive``, ``ppi``, ``ppi++``."""
    frame = response_means(data)
    rows = []
    for system, group in frame.groupby("system", sort=False):
        rated = group["human"].notna().to_numpy()
        labels, predicted, unlabeled = group["human"].to_numpy()[rated], group["judge"].to_numpy()[rated], group["judge"].to_numpy()[~rated]
        counts = {"n_human": int(rated.sum()), "n_responses": len(group)}
        rows.append({"system": system, "method": "humans", **dict(zip(("mean", "lower", "upper"), _normal_interval(labels, ci_prob))),
                     "lam": np.nan, **counts})
        rows.append({"system": system, "method": "judges_naive",
                     **dict(zip(("mean", "lower", "upper"), _normal_interval(group["judge"].to_numpy(), ci_prob))), "lam": np.nan, **counts})
        for method, lam in (("ppi", 1.0), ("ppi++", None)):
            estimate, lower, upper, used = ppi_mean(labels, predicted, unlabeled, lam, ci_prob)
            rows.append({"system": system, "method": method, "mean": estimate, "lower": lower, "upper": upper, "lam": used, **counts})
    return pd.DataFrame(rows).set_index(["system", "method"])
