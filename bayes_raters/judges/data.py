"""The three tables of a judges fit, validated and laid out as index arrays
(:class:`JudgesData`): human ratings ``(response, rater, score)`` on any subset of the responses,
judge scores ``(response, judge, score)`` (an automatic metric is a judge), and the map
``(response, system)`` from every response to the evaluated system that produced it.

Bad input gets an :class:`~bayes_raters.errors.InvalidInputError` naming the table, the column
and the rows: a response with no system, a system with no human rating, a judge that scores
nothing or scores every response alike, a score outside a declared range.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd

from bayes_raters.data import check_score_range, quote_rows, validate_long
from bayes_raters.errors import InputWarning, InvalidInputError

HUMAN = "human ratings"
JUDGES = "judge scores"
SYSTEMS = "systems"


@dataclass(frozen=True)
class JudgesData:
    """The validated tables and their layout.

    ``humans`` and ``judges``: canonical long tables (``response``, ``rater`` or ``judge``,
    ``score``); ``systems``: one row per response (``response``, ``system``), in the order of
    :attr:`responses`. The ``*_index`` arrays give each row's position in :attr:`responses`,
    :attr:`raters`, :attr:`judge_names` and :attr:`system_names`. ``center`` and ``scale``: the
    human ratings' mean and SD, the unit the model works in; ``judge_center`` and
    ``judge_scale`` the same per judge."""

    humans: pd.DataFrame
    judges: pd.DataFrame
    systems: pd.DataFrame

    @property
    def responses(self) -> pd.Index:
        """Every response, in the order of the systems table."""
        return pd.Index(self.systems["response"], name="response")

    @property
    def system_names(self) -> pd.Index:
        """The evaluated systems, in order of first appearance."""
        return pd.Index(pd.unique(self.systems["system"]), name="system")

    @property
    def raters(self) -> pd.Index:
        """The human raters, in order of first appearance."""
        return pd.Index(pd.unique(self.humans["rater"]), name="rater")

    @property
    def judge_names(self) -> pd.Index:
        """The judges, in order of first appearance."""
        return pd.Index(pd.unique(self.judges["judge"]), name="judge")

    def _positions(self, values, index: pd.Index) -> np.ndarray:
        return index.get_indexer(values)

    @property
    def response_system(self) -> np.ndarray:
        """System position of every response."""
        return self._positions(self.systems["system"], self.system_names)

    @property
    def human_response(self) -> np.ndarray:
        """Response position of every human rating."""
        return self._positions(self.humans["response"], self.responses)

    @property
    def human_rater(self) -> np.ndarray:
        """Rater position of every human rating."""
        return self._positions(self.humans["rater"], self.raters)

    @property
    def judge_response(self) -> np.ndarray:
        """Response position of every judge score."""
        return self._positions(self.judges["response"], self.responses)

    @property
    def judge_index(self) -> np.ndarray:
        """Judge position of every judge score."""
        return self._positions(self.judges["judge"], self.judge_names)

    @property
    def center(self) -> float:
        """Mean of the human ratings."""
        return float(self.humans["score"].mean())

    @property
    def scale(self) -> float:
        """SD of the human ratings (1 where they do not vary)."""
        sd = float(self.humans["score"].std(ddof=0))
        return sd if sd > 0 else 1.0

    @property
    def judge_center(self) -> np.ndarray:
        """Mean score of every judge."""
        return self.judges.groupby("judge", sort=False)["score"].mean().reindex(self.judge_names).to_numpy()

    @property
    def judge_scale(self) -> np.ndarray:
        """SD of every judge's scores."""
        return self.judges.groupby("judge", sort=False)["score"].std(ddof=0).reindex(self.judge_names).to_numpy()


def _systems_table(systems, response: str, system: str) -> pd.DataFrame:
    if isinstance(systems, pd.Series):
        systems = systems.rename_axis(response).rename(system).reset_index()
    elif isinstance(systems, dict):
        systems = pd.DataFrame({response: list(systems), system: list(systems.values())})
    if not isinstance(systems, pd.DataFrame):
        raise InvalidInputError(f"{SYSTEMS} must be a DataFrame (response, system), a Series or a dict response -> system, "
                                f"got {type(systems).__name__}.")
    for role, column in (("response", response), ("system", system)):
        if column not in systems.columns:
            raise InvalidInputError(f"{SYSTEMS} has no column {column!r} ({role}); it has {list(systems.columns)}. "
                                    f"Rename the column or pass {role}=...")
    out = pd.DataFrame({"response": systems[response].to_numpy(), "system": systems[system].to_numpy()})
    missing = out.isna().any(axis=1).to_numpy()
    if missing.any():
        raise InvalidInputError(f"{SYSTEMS}: {missing.sum()} row(s) with a missing response or system: {quote_rows(out, missing)}.")
    repeated = out["response"].duplicated(keep=False).to_numpy()
    if repeated.any():
        conflicting = out.loc[repeated].groupby("response")["system"].nunique() > 1
        if conflicting.any():
            rows = out["response"].isin(conflicting[conflicting].index)
            raise InvalidInputError(f"{SYSTEMS}: response(s) mapped to more than one system: {quote_rows(out, rows)}.")
        out = out.drop_duplicates("response")
    return out.reset_index(drop=True)


def _require_known(table: pd.DataFrame, known: pd.Index, what: str, column: str) -> None:
    unknown = ~table["response"].isin(known).to_numpy()
    if unknown.any():
        raise InvalidInputError(f"{what}: {unknown.sum()} row(s) name a response with no system in the {SYSTEMS} table "
                                f"(column {column!r}), e.g. {quote_rows(table, unknown)}. Add the response's system or drop these rows.")


def _check_coverage(humans: pd.DataFrame, judges: pd.DataFrame, systems: pd.DataFrame, column: str) -> None:
    rated = systems.loc[systems["response"].isin(humans["response"]), "system"].unique()
    unrated = [s for s in pd.unique(systems["system"]) if s not in set(rated)]
    if unrated:
        raise InvalidInputError(f"{HUMAN}: system(s) {unrated} have no human rating (column {column!r} of the {SYSTEMS} table). "
                                "Each system's mean is anchored by human ratings of some of its responses: rate a few, "
                                "or drop these systems' responses.")
    unscored = ~systems["response"].isin(judges["response"]).to_numpy()
    if unscored.any():
        raise InvalidInputError(f"{JUDGES}: {unscored.sum()} response(s) have no judge score, e.g. "
                                f"{quote_rows(systems, unscored)}. Every response needs at least one judge score.")
    flat = judges.groupby("judge", sort=False)["score"].std(ddof=0)
    flat = flat[~(flat > 0)]
    if len(flat):
        raise InvalidInputError(f"{JUDGES}: judge(s) {list(flat.index)} give every response the same score: they carry no "
                                "information about the true score. Drop them.")


#: A judge's score SD within a system below this share of its typical within-system SD is flagged.
DEGENERATE_SPREAD = 0.1


def warn_degenerate_judges(judges: pd.DataFrame, systems: pd.DataFrame) -> None:
    """An :class:`~bayes_raters.errors.InputWarning` naming each (judge, system) whose scores
    barely vary within the system (SD below :data:`DEGENERATE_SPREAD` of the judge's median
    within-system SD): one slope and noise per judge cannot describe it, and the fit would read
    the system's true scores as nearly equal (a reference-based metric scoring the reference)."""
    frame = judges.merge(systems, on="response")
    spread = frame.groupby(["judge", "system"], sort=False)["score"].std(ddof=0).unstack("system")
    low = spread.lt(DEGENERATE_SPREAD * spread.median(axis=1), axis=0).stack()
    pairs = [f"{j} on {s}" for (j, s), flagged in low.items() if flagged]
    if pairs:
        warnings.warn(f"{JUDGES}: nearly constant scores within a system: {', '.join(pairs)} (SD under {DEGENERATE_SPREAD:g} of "
                      "the judge's typical within-system SD). The model gives a judge one slope and noise for every system, so "
                      "it would read that system's true scores as nearly equal. Drop these scores (another judge must still score "
                      "those responses) or the system.", InputWarning, stacklevel=3)


def judges_data(data: pd.DataFrame, judge_scores: pd.DataFrame, systems, *, response: str = "response", rater: str = "rater",
                judge: str = "judge", score: str = "score", system: str = "system",
                score_range: tuple[float, float] | None = None, judge_range: tuple[float, float] | None = None) -> JudgesData:
    """Validate the three tables (module docstring) and lay them out; ``score_range`` and
    ``judge_range``: the declared closed scales of the human ratings and the judge scores, whose
    scores outside are refused."""
    humans = validate_long(data, {"response": response, "rater": rater}, score, HUMAN)
    judges = validate_long(judge_scores, {"response": response, "judge": judge}, score, JUDGES)
    check_score_range(humans["score"], score_range, HUMAN)
    check_score_range(judges["score"], judge_range, JUDGES)
    table = _systems_table(systems, response, system)
    _require_known(humans, pd.Index(table["response"]), HUMAN, response)
    _require_known(judges, pd.Index(table["response"]), JUDGES, response)
    _check_coverage(humans, judges, table, system)
    warn_degenerate_judges(judges, table)
    return JudgesData(humans=humans, judges=judges, systems=table)
