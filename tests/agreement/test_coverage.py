"""Coverage of the agreement intervals on unbalanced designs (issue 39, point 3; ``make validate``).

40 simulated data sets (200 responses, a pool of 12 raters, 2-5 ratings per response from
overlapping subsets, integer 1-5 scores; ``validation/agreement_coverage.py``), on a process
pool. The card's table comes from the same harness at 100 data sets per design; here the bounds
leave room for 40 data sets' binomial noise (SD of a 90% rate: 4.7 points)."""

from __future__ import annotations

import pytest

from validation.agreement_coverage import coverage_study, coverage_table


@pytest.mark.slow
def test_ninety_percent_intervals_cover_the_population_values():
    rows = coverage_study(40, "normal", workers=2, configs=("normal units",))
    table = coverage_table(rows).loc["normal units"]
    print(f"\n{table.round(3)}")
    assert rows.groupby("seed")["converged"].first().mean() >= 0.9
    posterior = table["posterior"].dropna()
    assert len(posterior) == 6 and posterior.between(0.8, 0.99).all(), posterior
    for name in ("alpha_ordinal", "fleiss_kappa", "ICC1", "ICC3", "ICC1k", "ICC3k"):
        assert 0.8 <= table.loc[name, "bootstrap"] <= 0.99, (name, table.loc[name, "bootstrap"])
