"""py-irt's 2PL by stochastic variational inference, as the anchor of ``bench_leaderboard.py --pyirt``.

Run by a Python 3.11 interpreter that has py-irt (it needs Python < 3.12, so it cannot live in the
package's ``.venv``): ``python3.11 -m venv /tmp/pyirt && /tmp/pyirt/bin/pip install torch==2.13.0
py-irt==0.7.1``. The benchmark writes the long answers ``respondent, item, correct`` to a CSV,
calls ``/tmp/pyirt/bin/python benchmarks/pyirt_fit.py answers.csv out.json``, and reads back the
means of the variational posterior (abilities, difficulties, discriminations) and the seconds.

py-irt's defaults only: ``IrtConfig(model_type="2pl")`` (2,000 epochs of full-batch SVI, Adam
with learning rate 0.1, "vague" priors), on the CPU; ``log_every`` is raised only to keep its
progress table off the benchmark's output (it changes no fitting step).
"""

import json
import sys
import time

import pandas as pd
import pyro
from py_irt.config import IrtConfig
from py_irt.dataset import Dataset
from py_irt.training import IrtModelTrainer


def main(answers_csv: str, out_json: str, seed: int = 1) -> None:
    long = pd.read_csv(answers_csv, dtype={"respondent": str, "item": str})
    start = time.perf_counter()
    wide = long.pivot(index="respondent", columns="item", values="correct").reset_index()
    dataset = Dataset.from_pandas(wide, subject_column="respondent", item_columns=[c for c in wide.columns if c != "respondent"])
    built = time.perf_counter() - start
    pyro.set_rng_seed(seed)
    trainer = IrtModelTrainer(config=IrtConfig(model_type="2pl", log_every=10_000), data_path=None, dataset=dataset)
    trainer.train(device="cpu")
    seconds = time.perf_counter() - start
    params = trainer.last_params
    items = [params["item_ids"][i] for i in range(len(params["diff"]))]
    subjects = [params["subject_ids"][i] for i in range(len(params["ability"]))]
    with open(out_json, "w") as handle:
        json.dump({"seconds": seconds, "build_seconds": built, "items": items, "subjects": subjects,
                   "b": params["diff"], "a": params["disc"], "theta": params["ability"]}, handle)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
