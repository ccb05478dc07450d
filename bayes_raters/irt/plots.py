"""Plots of a fitted IRT model's posterior: item characteristic curves and test information."""

from __future__ import annotations

import numpy as np

from bayes_raters.irt.diagnostics import PARAMETERS, information_curves, item_parameters


def plot_item_curves(posterior, items=None, ax=None, ci_prob: float = 0.9, labels: dict | None = None):
    """Item characteristic curves with posterior ``ci_prob`` bands. Each legend entry names
    the item, its posterior median discrimination a and difficulty b, and ``labels[item]``
    where given (e.g. ``{"i083": "flat item"}``). Returns the Axes."""
    import matplotlib.pyplot as plt

    grid = np.linspace(-4, 4, 81)
    params = item_parameters(posterior)
    chosen = list(posterior["item"].values[:6]) if items is None else list(items)
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 4))
    for item in chosen:
        a, b, c, d = (params[k].sel(item=item).values.reshape(-1, 1) for k in PARAMETERS)
        curves = c + (d - c) / (1 + np.exp(-a * (grid - b)))
        low, mid, high = np.quantile(curves, [(1 - ci_prob) / 2, 0.5, (1 + ci_prob) / 2], axis=0)
        label = f"{item}: a = {np.median(a):.2f}, b = {np.median(b):.2f}"
        if labels and item in labels:
            label = f"{labels[item]} ({label})"
        (line,) = ax.plot(grid, mid, label=label)
        ax.fill_between(grid, low, high, color=line.get_color(), alpha=0.2)
    ax.set_xlabel("ability theta")
    ax.set_ylabel(f"P(correct), median and {ci_prob:.0%} band")
    ax.legend(fontsize="small")
    return ax

def plot_information(posterior, ax=None, ci_prob: float = 0.9):
    """Test information (left axis) and SE(theta) = 1 / sqrt(information) (right axis)
    across the scale, with posterior ``ci_prob`` bands. Returns the left Axes."""
    grid = np.linspace(-4, 4, 81)
    test = information_curves(posterior, grid)["test_information"].stack(sample=("chain", "draw"))
    return plot_test_information(grid, test.transpose("sample", "theta").values, ax, ci_prob)


def plot_test_information(grid: np.ndarray, test_information: np.ndarray, ax=None, ci_prob: float = 0.9):
    """Posterior draws of test information, (draws, len(grid)), as median and ``ci_prob`` band,
    with SE(theta) = 1 / sqrt(information) on the right axis. Returns the left Axes."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(6, 3.5))
    right = ax.twinx()
    lines = []
    for values, label, color, axis in ((test_information, "test information", "tab:blue", ax),
                                       (1 / np.sqrt(test_information), "SE of theta (right axis)", "tab:orange", right)):
        low, mid, high = np.quantile(values, [(1 - ci_prob) / 2, 0.5, (1 + ci_prob) / 2], axis=0)
        lines += axis.plot(grid, mid, color=color, label=label)
        axis.fill_between(grid, low, high, color=color, alpha=0.2)
    ax.set_xlabel("ability theta")
    ax.set_ylabel("test information")
    right.set_ylabel("SE of theta")
    ax.legend(lines, [line.get_label() for line in lines], fontsize="small", loc="upper left")
    return ax
