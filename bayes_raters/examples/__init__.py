"""Small example files, shipped with the package, in the shapes real exports come in:
``bayes-raters example DIR`` (or :func:`write_examples`) copies them into a folder, and every
command line of the README runs on them as written.

The files are simulated (:func:`make_examples` rebuilds them bit for bit; a test checks the
shipped copies against it):

* ``human_scores.csv``: an essay-scoring export, long: ``essay_id`` (text ids such as
  ``ES-0042``), ``rater_id``, ``score`` (integers 1-6); 400 essays, 150 double-scored, by 6
  raters of differing severity.
* ``machine_scores.csv``: two scoring engines on the same essays with their own column names:
  ``essay_id``, ``engine``, ``pred_score`` (continuous).
* ``scores_wide.csv``: the same data wide, one row per essay: ``essay_id``, ``human_1``,
  ``human_2`` (empty where single-scored), ``engine_a``, ``engine_b``.
* ``answers.csv``: right/wrong answers, long: ``respondent``, ``item``, ``correct``; 250
  respondents x 12 items with 5% unanswered.
* ``comparisons.csv``: pairwise judgements of 8 systems, one row per judgement: ``system_a``,
  ``system_b``, ``result`` (win/tie/loss for system_a), ``annotator``.
* ``comparison_counts.csv``: the same judgements aggregated as R's BradleyTerry2 data come:
  one row per distinct (system_a, system_b, result) with the count ``n``.
* ``essay_facets.csv``: essays on two prompts, each scored 1-6 by two of 6 raters, long:
  ``essay_id``, ``prompt``, ``rater_id``, ``score``; 300 essays; rater ``R06`` is erratic
  (:func:`bayes_raters.facets.simulate_facet_ratings`).
* ``essay_engine.csv``: an engine's scores of the same essays: ``essay_id``, ``system``, ``score``.
* ``arena_votes.csv``: arena votes between 12 chat models, one row per vote: ``model_a``,
  ``model_b``, ``outcome`` (win/tie/loss for model_a), ``length`` (a style difference between the
  two answers), ``category``; 3,000 votes (:func:`bayes_raters.pairwise.simulate_arena`).
* ``story_ratings.csv``, ``llm_judge_scores.csv``, ``story_systems.csv``: stories from 4
  generators (120 each) scored by two LLM judges (``story_id``, ``judge``, ``score``; one judge
  favours ``gen-a`` by half a true-score SD), 15% of the stories rated 1-5 by two of 6 human
  annotators (``story_id``, ``annotator``, ``score``), and each story's generator (``story_id``,
  ``generator``) (:func:`bayes_raters.judges.simulate_judges`).
* ``sentiment_labels.csv``, ``sentiment_gold.csv``, ``sentiment_kinds.csv``: 300 texts labelled
  negative/neutral/positive by three of five annotators (two humans, three LLMs whose errors
  coincide on a third of the texts): ``text_id``, ``annotator``, ``sentiment``; the known sentiment
  of 30 texts (``text_id``, ``sentiment``); and the LLMs' kind (``annotator``, ``kind``), for
  ``--model correlated`` (:func:`bayes_raters.labels.simulate_labels`).
"""

from __future__ import annotations

import shutil
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd

FILES = ("human_scores.csv", "machine_scores.csv", "scores_wide.csv", "answers.csv", "comparisons.csv", "comparison_counts.csv",
         "essay_facets.csv", "essay_engine.csv", "arena_votes.csv", "story_ratings.csv", "llm_judge_scores.csv", "story_systems.csv",
         "sentiment_labels.csv", "sentiment_gold.csv", "sentiment_kinds.csv")
SEED = 2026


def shipped(name: str) -> Path:
    """Path of a shipped example file."""
    return Path(str(resources.files(__name__).joinpath(name)))


def write_examples(folder: str | Path) -> list[Path]:
    """Copy the example files into ``folder`` (created if needed); returns their paths."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    return [Path(shutil.copyfile(shipped(name), folder / name)) for name in FILES]


def _essays(rng: np.random.Generator) -> tuple[pd.DataFrame, pd.DataFrame]:
    """True scores T ~ N(3.5, 0.9); each rater adds a severity offset and N(0, 0.55) error,
    rounded and clipped to 1-6; engine A = 0.35 + 0.9 T + N(0, 0.35), engine B = T + N(0, 0.8)."""
    n, n_double = 400, 150
    essays = np.array([f"ES-{k:04d}" for k in range(1, n + 1)])
    true = rng.normal(3.5, 0.9, n)
    severity = dict(zip([f"R{k:02d}" for k in range(1, 7)], rng.normal(0, 0.25, 6)))
    raters = np.array(list(severity))
    rows = []
    for k in range(n):
        chosen = rng.choice(raters, 2 if k < n_double else 1, replace=False)
        for rater in chosen:
            score = np.clip(np.round(true[k] + severity[rater] + rng.normal(0, 0.55)), 1, 6)
            rows.append((essays[k], rater, int(score)))
    human = pd.DataFrame(rows, columns=["essay_id", "rater_id", "score"])
    machine = pd.DataFrame({
        "essay_id": np.tile(essays, 2),
        "engine": np.repeat(["engine_a", "engine_b"], n),
        "pred_score": np.round(np.concatenate([0.35 + 0.9 * true + rng.normal(0, 0.35, n), true + rng.normal(0, 0.8, n)]), 2),
    })
    return human, machine


def _wide(human: pd.DataFrame, machine: pd.DataFrame) -> pd.DataFrame:
    order = human.groupby("essay_id").cumcount() + 1
    wide = human.assign(slot=order.map(lambda k: f"human_{k}")).pivot(index="essay_id", columns="slot", values="score")
    engines = machine.pivot(index="essay_id", columns="engine", values="pred_score")
    return wide.join(engines).reset_index().astype({"human_1": "Int64", "human_2": "Int64"})


def _comparisons(rng: np.random.Generator) -> pd.DataFrame:
    """8 systems of quality q evenly spaced in [0.2, 0.8]; each judgement between a random pair
    is a win for system_a with probability 1 / (1 + exp(-6 (q_a - q_b))) less a 10% tie rate."""
    systems = [f"sys_{c}" for c in "ABCDEFGH"]
    quality = dict(zip(systems, np.linspace(0.2, 0.8, 8)))
    rows = []
    for k in range(600):
        a, b = rng.choice(systems, 2, replace=False)
        p_win = 1 / (1 + np.exp(-6 * (quality[a] - quality[b])))
        u = rng.random()
        result = "tie" if u < 0.1 else ("win" if rng.random() < p_win else "loss")
        rows.append((a, b, result, f"ann_{k % 5 + 1}"))
    return pd.DataFrame(rows, columns=["system_a", "system_b", "result", "annotator"])


def _facets() -> tuple[pd.DataFrame, pd.DataFrame]:
    """300 essays, 2 prompts, 6 raters (the last erratic), two ratings each, and one engine."""
    from bayes_raters.facets import simulate_facet_ratings

    ratings, engine, _ = simulate_facet_ratings(300, 6, 2, 6, erratic=(5,), random_seed=SEED)
    essay = {f"e{k}": f"EF-{k + 1:04d}" for k in range(300)}
    rater = {f"r{k}": f"R{k + 1:02d}" for k in range(6)}
    ratings = pd.DataFrame({"essay_id": ratings["response"].map(essay), "prompt": ratings["prompt"].map({"p0": "P1", "p1": "P2"}),
                            "rater_id": ratings["rater"].map(rater), "score": ratings["score"]})
    engine = pd.DataFrame({"essay_id": engine["response"].map(essay), "system": "engine_a", "score": engine["score"].round(2)})
    return ratings, engine


def _arena() -> pd.DataFrame:
    """3,000 votes among 12 models with one style column and two categories."""
    from bayes_raters.pairwise import simulate_arena

    votes = simulate_arena(12, 3000, n_style=1, n_categories=2, random_seed=SEED)["votes"]
    names = {f"model_{k:03d}": f"chat-{chr(ord('a') + k)}" for k in range(12)}
    votes[["model_a", "model_b"]] = votes[["model_a", "model_b"]].apply(lambda column: column.map(names))
    votes["category"] = votes["category"].map({"category_0": "coding", "category_1": "writing"})
    return votes.rename(columns={"style_1": "length"}).round({"length": 3})


def _judges() -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """480 stories of 4 generators, two LLM judges on every story, 15% rated by two humans (1-5)."""
    from bayes_raters.judges import simulate_judges

    sim = simulate_judges(4, 120, judge_quality=(0.8, 0.5), judge_bias={(1, 0): 0.5}, human_share=0.15, ratings_per_response=2,
                          n_raters=6, random_seed=SEED)
    story = {f"r{k}": f"ST-{k + 1:04d}" for k in range(480)}
    generator = {f"system{k}": f"gen-{chr(ord('a') + k)}" for k in range(4)}
    humans = sim["human_ratings"]
    ratings = pd.DataFrame({"story_id": humans["response"].map(story), "annotator": humans["rater"].str.replace("rater", "A"),
                            "score": humans["score"].round().clip(1, 5).astype(int)})
    judges = sim["judge_scores"]
    scores = pd.DataFrame({"story_id": judges["response"].map(story), "judge": judges["judge"].map({"judge0": "llm-large", "judge1": "llm-small"}),
                           "score": judges["score"].round(1)})
    systems = pd.DataFrame({"story_id": sim["systems"]["response"].map(story), "generator": sim["systems"]["system"].map(generator)})
    return ratings, scores, systems


def _labels() -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """300 texts, three labels each from five annotators (the last three err together), 30 with
    gold, and the three LLMs' kind."""
    from bayes_raters.labels import simulate_labels

    sim = simulate_labels(300, 5, 3, prevalence=[0.3, 0.3, 0.4], labels_per_item=3, correlated=3, correlation=0.33, random_seed=SEED)
    text = {f"item{k}": f"T-{k + 1:04d}" for k in range(300)}
    names = {f"annotator{k}": name for k, name in enumerate(["human-1", "human-2", "llm-a", "llm-b", "llm-c"])}
    sentiment = np.array(["negative", "neutral", "positive"])
    labels = pd.DataFrame({"text_id": sim["labels"]["item"].map(text), "annotator": sim["labels"]["annotator"].map(names),
                           "sentiment": sentiment[sim["labels"]["label"].to_numpy()]})
    gold = sim["classes"].iloc[:30]
    kinds = pd.DataFrame({"annotator": ["llm-a", "llm-b", "llm-c"], "kind": "llm"})
    return labels, pd.DataFrame({"text_id": gold.index.map(text), "sentiment": sentiment[gold.to_numpy()]}), kinds


def make_examples(folder: str | Path) -> list[Path]:
    """Simulate the example files into ``folder`` (what is shipped was written by this)."""
    from bayes_raters.irt import simulate_responses

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(SEED)
    human, machine = _essays(rng)
    answers, _ = simulate_responses(250, 12, missing=0.05, random_seed=SEED)
    answers = answers.astype({"correct": int})
    comparisons = _comparisons(rng)
    counts = comparisons.groupby(["system_a", "system_b", "result"]).size().rename("n").reset_index()
    tables = {"human_scores.csv": human, "machine_scores.csv": machine, "scores_wide.csv": _wide(human, machine),
              "answers.csv": answers, "comparisons.csv": comparisons, "comparison_counts.csv": counts}
    tables["essay_facets.csv"], tables["essay_engine.csv"] = _facets()
    tables["arena_votes.csv"] = _arena()
    tables["story_ratings.csv"], tables["llm_judge_scores.csv"], tables["story_systems.csv"] = _judges()
    tables["sentiment_labels.csv"], tables["sentiment_gold.csv"], tables["sentiment_kinds.csv"] = _labels()
    for name, table in tables.items():
        table.to_csv(folder / name, index=False)
    return [folder / name for name in FILES]
