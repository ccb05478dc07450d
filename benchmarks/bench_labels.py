"""Issue 66's scale targets: ``fit_labels`` with defaults beside crowd-kit's EM in the same run.

- 1 million labels: 100,000 items x 10 annotators, 3 classes (``simulate_labels``: accuracies
  U(0.6, 0.9), errors uneven over the wrong labels, prevalence 0.5/0.3/0.2): target <= 60 s.
- 10 million labels: 1,000,000 items x 10 annotators: target <= 10 min.

Printed per fit: wall time of ``fit_labels`` (validation, patterns, build, compile, inference,
derived quantities) and of its ``item_table()`` (the soft labels), the inference path and its
Pareto k, convergence, the process's peak resident memory, and the share of items whose most
probable class is the true one beside the majority vote's. crowd-kit (its ``DawidSkene`` EM,
``n_iter=100``) needs ``transformers`` and is not a dependency of the package: pass a Python that
has it (``--crowdkit-python``, e.g. a venv with ``pip install crowd-kit``); it reads the same labels
from a Parquet file and its own fit time is timed inside that process (reading excluded).

Compile: the first fit of a design (annotators, classes) on a machine compiles its code (Numba's
cache then serves every later data set of that design; ``--cold`` says which run this is).

Run from the repository root: ``.venv/bin/python benchmarks/bench_labels.py [--items 100000] [--seeds 0 1 2]
[--crowdkit-python /path/to/python]``.
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _machine import machine_line  # noqa: E402

from bayes_raters.labels import fit_labels, simulate_labels  # noqa: E402

CROWDKIT = """
import sys, time, json
import pandas as pd
from crowdkit.aggregation import DawidSkene
data = pd.read_parquet(sys.argv[1]).rename(columns={"item": "task", "annotator": "worker"})
start = time.perf_counter()
labels = DawidSkene(n_iter=100).fit_predict(data)
seconds = time.perf_counter() - start
truth = pd.read_parquet(sys.argv[2])["class"]
print(json.dumps({"seconds": seconds, "right": float((labels.reindex(truth.index).astype(int) == truth).mean())}))
"""


def peak_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2


def run(n_items: int, seed: int, crowdkit_python: str | None) -> None:
    sim = simulate_labels(n_items=n_items, n_annotators=10, n_classes=3, prevalence=[0.5, 0.3, 0.2], random_seed=seed)
    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = fit_labels(sim["labels"], random_seed=seed, progressbar=False)
    seconds = time.perf_counter() - start
    items = result.item_table()
    table_seconds = time.perf_counter() - start - seconds
    truth = sim["classes"].reindex(items.index).astype(str)
    report, record = result.convergence, result.inference
    print(f"{len(sim['labels']):,} labels, seed {seed}: fit_labels {seconds:.1f} s + item_table {table_seconds:.1f} s; "
          f"path {record.path} (Pareto k {record.pareto_k if record.pareto_k is None else round(record.pareto_k, 3)}); "
          f"R-hat {report.max_r_hat:.4f}, ESS {report.min_ess_bulk:.0f}, converged {report.converged}; peak memory {peak_gb():.2f} GB; "
          f"right {(items['map_class'] == truth).mean():.4f} (majority vote {(items['majority'] == truth).mean():.4f}); "
          f"warnings {[str(w.message)[:60] for w in caught]}", flush=True)
    if crowdkit_python:
        with tempfile.TemporaryDirectory() as folder:
            labels, classes = Path(folder) / "labels.parquet", Path(folder) / "classes.parquet"
            sim["labels"].astype(str).to_parquet(labels)
            sim["classes"].to_frame().to_parquet(classes)
            out = subprocess.run([crowdkit_python, "-c", CROWDKIT, str(labels), str(classes)], capture_output=True, text=True, check=True)
            print(f"    crowd-kit DawidSkene (EM, 100 iterations): {out.stdout.strip()}; ratio ours / crowd-kit "
                  f"{seconds / float(__import__('json').loads(out.stdout)['seconds']):.2f}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, nargs="+", default=[100_000])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--crowdkit-python", default=None)
    args = parser.parse_args()
    print(machine_line())
    for n_items in args.items:
        for seed in args.seeds:
            run(n_items, seed, args.crowdkit_python)


if __name__ == "__main__":
    main()
