"""Compare fitted IRT models with LOO, and build a scale by dropping flagged items."""

from __future__ import annotations

import warnings

import arviz as az
import pandas as pd

from bayes_raters.errors import InvalidInputError
from bayes_raters.irt.binary.fit import fit_irt
from bayes_raters.irt.binary.result import IRTResult


def compare_irt_models(results: dict[str, IRTResult], **compare_kwargs) -> pd.DataFrame:
    """``az.compare`` (LOO) of fitted models on the same answers, e.g. {"1pl": r1, "2pl": r2},
    or a unidimensional against a multidimensional fit ({"1d": r1, "2d": r2}: both leave out
    respondents). All fits must use the same method: marginal fits are compared over
    respondents, joint fits over answers. Other keywords go to ``az.compare`` (e.g.
    ``round_to="none"`` for unrounded figures; ArviZ rounds ``elpd`` to the precision its
    standard error supports by default).

    Parameters
    ----------
    results : dict of str to IRTResult
        The fits to compare, by name.
    **compare_kwargs
        Keywords for ``arviz.compare``.

    Returns
    -------
    pandas.DataFrame
        ArviZ's comparison table, best model first.

    Examples
    --------
    >>> from bayes_raters.irt import compare_irt_models, fit_irt, simulate_responses
    >>> answers, _ = simulate_responses(300, 10, random_seed=6)
    >>> fits = {m: fit_irt(answers, m, random_seed=6, progressbar=False) for m in ("1pl", "2pl")}
    >>> compare_irt_models(fits).index.tolist()
    ['2pl', '1pl']
    """
    methods = {result.spec.method for result in results.values()}
    if len(methods) > 1:
        raise InvalidInputError(
            "compare fits of one method: marginal fits leave out respondents, joint fits leave out answers; "
            "refit with the same method= for all."
        )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return az.compare({name: result.idata for name, result in results.items()}, **compare_kwargs)


def build_scale(result: IRTResult, **fit_kwargs) -> tuple[IRTResult, pd.DataFrame]:
    """Drop the flagged items, refit the same model, and report the scale before and after:
    items kept and empirical reliability. Returns ``(refitted, report)``.

    Parameters
    ----------
    result : IRTResult
        A fitted binary IRT result.
    **fit_kwargs
        Keywords for the refit (as :func:`fit_irt`), e.g. ``random_seed``.

    Returns
    -------
    tuple of (IRTResult, pandas.DataFrame)
        The refitted result and the before/after report.

    Examples
    --------
    >>> from bayes_raters.irt import build_scale, fit_irt, simulate_responses
    >>> import warnings
    >>> answers, _ = simulate_responses(300, 10, n_zero=1, random_seed=5)
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")  # the planted flat item's SlopeWarning
    ...     result = fit_irt(answers, "2pl", random_seed=5, progressbar=False)
    >>> refit, report = build_scale(result, random_seed=5, progressbar=False)
    >>> report["items"].to_dict()
    {'before': 10, 'after': 9}
    """
    items = result.item_table()
    kept = items.index[~items["flagged"]]
    if len(kept) < 2:
        raise InvalidInputError("fewer than two items remain after dropping the flagged ones.")
    subset = result.table[result.table["item"].isin(kept)]
    fit_kwargs.setdefault("method", result.spec.method)
    refit = fit_irt(subset, result.model, n_options=result.spec.n_options, hierarchical=result.spec.hierarchical, **fit_kwargs)
    report = pd.DataFrame(
        {
            "items": [len(items), len(kept)],
            "reliability": [result.reliability(), refit.reliability()],
        },
        index=pd.Index(["before", "after"], name="scale"),
    )
    return refit, report
