"""girth's marginal ML GPCM of bfi's N1-N5 (``tests/data/bfi/ml_gpcm_girth_neuroticism.csv``) and
GRM of the Generic Conspiracist Beliefs scale (``tests/data/conspiracist/ml_grm_girth.csv``).

girth's ``pcm_mml`` (one slope per item: Muraki's generalized partial credit model,
P(X = k) proportional to exp sum_{v<=k} a (theta - b_v), theta ~ N(0, 1)) takes complete rows
only, so the reference is the 2,694 of 2,800 respondents who answered all five items; the test
fits the same rows. ``grm_mml`` (Samejima's graded response model, P(X >= k) = logistic(a (theta -
b_k))) on the 2,356 complete rows of ConspiracistBeliefs2016 (categories 0-4, given to girth as
1-5). Run from the repository root (girth is in the ``test`` extra):

    .venv/bin/python tests/data/ml/girth_reference.py
"""

from __future__ import annotations

from pathlib import Path

import girth
import pandas as pd

DATA = Path(__file__).resolve().parents[1] / "bfi"
BELIEFS = Path(__file__).resolve().parents[1] / "conspiracist"


def main() -> None:
    wide = pd.read_csv(DATA / "bfi_neuroticism.csv").dropna()
    scores = wide.to_numpy().astype(int) - 1  # girth's categories start at 0
    fit = girth.pcm_mml(scores.T)
    rows = [{"item": item, "step": step + 1, "a": fit["Discrimination"][j], "b": fit["Difficulty"][j, step]}
            for j, item in enumerate(wide.columns) for step in range(fit["Difficulty"].shape[1])]
    pd.DataFrame(rows).to_csv(DATA / "ml_gpcm_girth_neuroticism.csv", index=False, float_format="%.6f")
    print(f"{len(wide)} complete rows; a = {fit['Discrimination'].round(3).tolist()}")
    beliefs = pd.read_csv(BELIEFS / "conspiracist_beliefs.csv")
    grm = girth.grm_mml(beliefs.to_numpy().T.astype(int) + 1)
    rows = [{"item": item, "step": step + 1, "a": grm["Discrimination"][j], "b": grm["Difficulty"][j, step]}
            for j, item in enumerate(beliefs.columns) for step in range(grm["Difficulty"].shape[1])]
    pd.DataFrame(rows).to_csv(BELIEFS / "ml_grm_girth.csv", index=False, float_format="%.6f")
    print(f"beliefs GRM: {len(beliefs)} rows; a = {grm['Discrimination'].round(3).tolist()}")


if __name__ == "__main__":
    main()
