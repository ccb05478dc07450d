"""Reference values from the Python packages people use for agreement (issue 39).

Run with a Python that has krippendorff 0.9, pingouin 0.7 and statsmodels 0.15 installed (not
the package's .venv: pingouin is not a dependency), from the repository root:
    python tests/data/agreement/python_reference.py
Writes krippendorff_example.csv (Krippendorff's worked example, long) and python_reference.csv.
"""

import krippendorff
import numpy as np
import pandas as pd
import pingouin
from statsmodels.stats.inter_rater import aggregate_raters, fleiss_kappa

OUT = "tests/data/agreement"
nan = np.nan
# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", section C: 4 observers x 12 units.
EXAMPLE = np.array([
    [1, 2, 3, 3, 2, 1, 4, 1, 2, nan, nan, nan],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, nan, 3],
    [nan, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, nan],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, nan],
])
rows = []
example = pd.DataFrame([(u + 1, "ABCD"[o], EXAMPLE[o, u]) for o in range(4) for u in range(12) if not np.isnan(EXAMPLE[o, u])],
                       columns=["response", "rater", "score"])
example.to_csv(f"{OUT}/krippendorff_example.csv", index=False)
for level in ("nominal", "ordinal", "interval", "ratio"):
    rows.append(("krippendorff_example", "alpha", level, krippendorff.alpha(EXAMPLE, level_of_measurement=level)))

for name in ("prmse_data", "prmse_data_sparse_matrix"):
    wide = pd.read_csv(f"tests/data/rsmtool_prmse/{name}.csv")[["h1", "h2", "h3", "h4"]]
    for level in ("nominal", "ordinal", "interval", "ratio"):
        rows.append((name, "alpha", level, krippendorff.alpha(wide.to_numpy(float).T, level_of_measurement=level)))

complete = pd.read_csv(f"{OUT}/../rsmtool_prmse/prmse_data.csv")[["h1", "h2", "h3", "h4"]]
rows.append(("prmse_data", "fleiss_kappa", "nominal", fleiss_kappa(aggregate_raters(complete.to_numpy())[0])))
long = complete.rename_axis("response").reset_index().melt("response", var_name="rater", value_name="score")
icc = pingouin.intraclass_corr(long, targets="response", raters="rater", ratings="score").set_index("Type")
for ours, theirs in zip(["ICC1", "ICC2", "ICC3", "ICC1k", "ICC2k", "ICC3k"], ["ICC(1,1)", "ICC(A,1)", "ICC(C,1)", "ICC(1,k)", "ICC(A,k)", "ICC(C,k)"]):
    rows.append(("prmse_data", ours, "interval", icc.loc[theirs, "ICC"]))
pd.DataFrame(rows, columns=["data", "coefficient", "level", "estimate"]).to_csv(f"{OUT}/python_reference.csv", index=False, float_format="%.15g")
