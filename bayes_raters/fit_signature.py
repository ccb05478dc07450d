"""The one signature every ``fit_<family>`` follows, and the docstring fragment of its sampler block.

A fit is called ``fit_<family>(data, [model], *, <model options>, <column names>, <sampler block>)``:
the data first (a long table; a second table where the family has one), the model's name second
where a family has several, then keyword-only options of the model and of its inference, the
column names in one vocabulary (:data:`COLUMN_KEYWORDS`), and last the sampler block
(:data:`SAMPLER_BLOCK`, in that order, the keywords that apply to the family's inference). Each
sampler keyword has one default across families (:data:`SAMPLER_DEFAULTS`); a family whose
default differs says why, with the measurement, in :func:`sampler_block`'s ``reasons``, which
writes it into the docstring. ``tests/test_fit_signature.py`` checks every public fit against
this contract."""

from __future__ import annotations

import inspect
from typing import Literal

#: The sampler block's keywords, in the order every fit takes them (those that apply).
SAMPLER_BLOCK = ("draws", "tune", "chains", "cores", "random_seed", "nuts_sampler", "target_accept", "progressbar")

#: One default per sampler keyword. ``nuts_sampler=None`` and ``target_accept=None`` mean the
#: family's measured choice, which its docstring states.
SAMPLER_DEFAULTS = {"draws": 1000, "tune": 1000, "chains": 2, "cores": None, "random_seed": None, "nuts_sampler": None,
                    "target_accept": None, "progressbar": None}

#: The names of the columns a fit reads, one vocabulary across families (the two sides of a
#: pairwise comparison or an arena vote are ``item_a`` and ``item_b`` in both).
COLUMN_KEYWORDS = ("response", "rater", "score", "system", "item", "respondent", "prompt", "item_a", "item_b", "outcome",
                   "annotator", "count", "style", "category", "judge", "label")

NutsSampler = Literal["pymc", "nutpie", "numpyro", "blackjax"]
Inference = Literal["auto", "nuts", "laplace"]

_ENTRIES = {
    "draws": ("draws : int", "Posterior draws per chain."),
    "tune": ("tune : int", "Tuning (warm-up) iterations per chain."),
    "chains": ("chains : int", "Number of chains."),
    "cores": ("cores : int, optional", "Chains run in parallel; None, one per usable CPU."),
    "random_seed": ("random_seed : int, numpy.random.Generator or None",
                    "Seed of every draw: the same seed gives the same draws, secondary streams included."),
    "nuts_sampler": ('nuts_sampler : {"pymc", "nutpie", "numpyro", "blackjax"}, optional',
                     "The NUTS implementation; None, the family's measured choice."),
    "target_accept": ("target_accept : float, optional", "NUTS target acceptance rate; None, the family's measured choice."),
    "progressbar": ("progressbar : bool, optional", "None shows the progress bar in a terminal or notebook only."),
}


def sampler_block(reasons: dict[str, str] | None = None):
    """A decorator that writes the numpydoc entries of the fit's sampler keywords (those of
    :data:`SAMPLER_BLOCK` its signature takes, in that order) where its docstring says
    ``{sampler_block}``, each followed by the family's reason where its default differs
    (``reasons``: keyword -> text), and records both on the function (``__sampler_block__``,
    ``__sampler_reasons__``)."""
    reasons = dict(reasons or {})

    def decorate(function):
        parameters = inspect.signature(function).parameters
        keywords = tuple(k for k in SAMPLER_BLOCK if k in parameters)
        unknown = set(reasons) - set(keywords)
        if unknown:
            raise ValueError(f"not sampler keywords of {function.__name__}: {sorted(unknown)}")
        if "{sampler_block}" not in (function.__doc__ or ""):
            raise ValueError(f"{function.__name__}'s docstring has no {{sampler_block}} placeholder")
        lines = []
        for keyword in keywords:
            head, text = _ENTRIES[keyword]
            lines += [head, "    " + text + (" " + reasons[keyword] if keyword in reasons else "")]
        indent = _indent_of(function.__doc__, "{sampler_block}")
        block = "\n".join(indent + line for line in lines).lstrip()
        function.__doc__ = function.__doc__.replace("{sampler_block}", block)
        function.__sampler_block__ = keywords
        function.__sampler_reasons__ = reasons
        return function

    return decorate


def _indent_of(text: str, marker: str) -> str:
    line = next(line for line in text.splitlines() if marker in line)
    return line[: len(line) - len(line.lstrip())]
