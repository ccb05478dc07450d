"""Every public ``fit_*`` keeps the one signature of :mod:`bayes_raters.fit_signature`:
``fit_<family>(data, [model], *, <model options>, <column names>, <sampler block>)``. A fit that
drifts from it (a first argument named otherwise, a column keyword outside the vocabulary, the
sampler block out of order or with a default of its own and no stated reason, a choice typed as a
bare ``str``) fails here."""

from __future__ import annotations

import importlib
import inspect

import pandas as pd
import pytest

from bayes_raters.errors import InvalidInputError
from bayes_raters.fit_signature import COLUMN_KEYWORDS, SAMPLER_BLOCK, SAMPLER_DEFAULTS

FAMILIES = ("bayes_raters.ctt", "bayes_raters.pairwise", "bayes_raters.irt", "bayes_raters.facets", "bayes_raters.leaderboard", "bayes_raters.judges",
            "bayes_raters.labels")
#: Second positional tables, where a family reads more than one.
SECOND_TABLES = {"system_scores", "scalars", "strengths", "judge_scores", "systems"}
#: Keywords that choose among named alternatives: typed with ``Literal``.
CHOICES = {"model", "method", "inference", "link", "observation", "rater_error", "cutpoints", "parametrisation", "nuts_sampler"}
#: Names that drifted before: other words for the data, the answer column, the two sides, the spelling.
DRIFTED = {"ratings", "responses", "answers", "votes", "comparisons", "correct", "model_a", "model_b", "parametrization",
           "centered"}


def public_fits() -> dict[str, object]:
    found = {}
    for package in FAMILIES:
        module = importlib.import_module(package)
        for name in module.__all__:
            if name.startswith("fit_"):
                found[name] = getattr(module, name)
    return found


FITS = public_fits()


def test_every_family_has_its_fit():
    assert set(FITS) == {"fit_true_score", "fit_pairwise", "fit_irt", "fit_polytomous", "fit_facets", "fit_leaderboard", "fit_arena",
                         "fit_judges", "fit_labels"}


@pytest.mark.parametrize("name", sorted(FITS))
def test_data_first_then_the_model_then_keywords_only(name):
    parameters = list(inspect.signature(FITS[name]).parameters.values())
    assert parameters[0].name == "data", f"{name}: the first argument is {parameters[0].name!r}, not 'data'"
    positional = [p.name for p in parameters if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD]
    assert set(positional[1:]) <= SECOND_TABLES | {"model"}, f"{name}: positional {positional}"
    if "model" in positional:
        assert positional[-1] == "model", f"{name}: the model's name comes after the data: {positional}"
    drifted = DRIFTED & {p.name for p in parameters}
    assert not drifted, f"{name} takes {sorted(drifted)}: use the shared vocabulary"


@pytest.mark.parametrize("name", sorted(FITS))
def test_options_then_columns_then_the_sampler_block_in_order(name):
    keywords = [p.name for p in inspect.signature(FITS[name]).parameters.values() if p.kind is inspect.Parameter.KEYWORD_ONLY]
    if keywords[-1] == "nuts_kwargs":  # extra keywords for the NUTS implementation close the block
        keywords = keywords[:-1]
    block = [k for k in keywords if k in SAMPLER_BLOCK]
    assert block == [k for k in SAMPLER_BLOCK if k in block], f"{name}: sampler block out of order: {block}"
    assert keywords[-len(block):] == block, f"{name}: the sampler block must come last: {keywords}"
    assert {"draws", "chains", "random_seed", "progressbar"} <= set(block), f"{name}: {block}"
    rest = keywords[: -len(block)]
    columns = [k for k in rest if k in COLUMN_KEYWORDS]
    assert columns and rest[-len(columns):] == columns, f"{name}: column names must come after the model options: {rest}"
    assert FITS[name].__sampler_block__ == tuple(block), f"{name}: its docstring's sampler block is not its signature's"


@pytest.mark.parametrize("name", sorted(FITS))
def test_one_default_per_sampler_keyword_or_a_stated_reason(name):
    function = FITS[name]
    signature = inspect.signature(function)
    reasons = function.__sampler_reasons__
    for keyword in function.__sampler_block__:
        default = signature.parameters[keyword].default
        if default != SAMPLER_DEFAULTS[keyword]:
            assert keyword in reasons, f"{name}: {keyword}={default!r} differs from {SAMPLER_DEFAULTS[keyword]!r} with no reason"
        if keyword in reasons:
            assert reasons[keyword] in function.__doc__, f"{name}: the reason for {keyword} is not in the docstring"


@pytest.mark.parametrize("name", sorted(FITS))
def test_choices_are_literal_types_and_seeds_take_a_generator(name):
    parameters = inspect.signature(FITS[name]).parameters
    for keyword in CHOICES & set(parameters):
        annotation = str(parameters[keyword].annotation)
        assert any(word in annotation for word in ("Literal", "NutsSampler", "Inference")), f"{name}: {keyword}: {annotation}"
    assert "Generator" in str(parameters["random_seed"].annotation), name


@pytest.mark.parametrize("name", sorted(FITS))
def test_the_docstring_documents_the_sampler_block(name):
    doc = FITS[name].__doc__
    assert "{sampler_block}" not in doc
    for keyword in FITS[name].__sampler_block__:
        assert f"\n    {keyword} : " in doc, f"{name}: {keyword} is not documented"


def test_fit_irt_refuses_what_a_multidimensional_fit_would_ignore():
    answers = pd.DataFrame({"respondent": [1, 1, 2, 2], "item": ["a", "b", "a", "b"], "correct": [1, 0, 0, 1]})
    for extra in ({"dims": 2}, {"dimensions": {"a": "x", "b": "y"}}, {"anchors": ["a", "b"]}):
        with pytest.raises(InvalidInputError, match="hierarchical= is for unidimensional models"):
            FITS["fit_irt"](answers, hierarchical=True, **extra)
