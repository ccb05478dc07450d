"""The typed records of a fit: :class:`~bayes_raters.inference_record.InferenceRecord` (what the
inference did) and :class:`~bayes_raters.fit_spec.FitSpec` (the options), and the rule that the
library reads a fit's attributes only through them."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import pytest
import xarray as xr

from bayes_raters.errors import PersistenceError
from bayes_raters.fit_spec import FitSpec
from bayes_raters.inference_record import PATHS, RECORD_ATTR, InferenceRecord

PACKAGE = Path(__file__).resolve().parents[1] / "bayes_raters"


def _tree() -> xr.DataTree:
    return xr.DataTree.from_dict({"posterior": xr.Dataset()})


def test_a_record_round_trips_through_the_tree_as_json():
    record = InferenceRecord(path="nuts_after_laplace", reason="the Laplace draws were rejected: Pareto k 0.91 > 0.70",
                             sampler="pymc", pareto_k=0.91, pareto_k_threshold=0.7, warm_start="chains started ...",
                             divergences_by_form={"centred": 3, "non-centred": 0}, parametrisation="non-centred")
    tree = _tree()
    record.write(tree)
    assert json.loads(tree["posterior"].attrs[RECORD_ATTR])["divergences_by_form"] == {"centred": 3, "non-centred": 0}
    assert InferenceRecord.of(tree) == record
    assert InferenceRecord.of(tree["posterior"].to_dataset()) == record  # the posterior Dataset reads the same


def test_a_tree_without_a_record_reads_as_the_default():
    assert InferenceRecord.of(_tree()) == InferenceRecord()


def test_unknown_fields_and_paths_are_refused():
    with pytest.raises(PersistenceError, match="does not know.*'nuts_sampler'"):
        InferenceRecord.from_dict({"path": "nuts", "nuts_sampler": "pymc"})
    with pytest.raises(PersistenceError, match="path must be one of"):
        InferenceRecord(path="vi")
    assert set(PATHS) == {"nuts", "laplace", "nuts_after_laplace", "metropolis_within_gibbs"}
    with pytest.raises(TypeError):
        InferenceRecord().updated(no_such_field=1)


def test_numpy_numbers_become_json_numbers():
    import numpy as np

    record = InferenceRecord(pareto_k=np.float64(0.5), quadrature_nodes=np.int64(55))
    values = record.to_dict()
    assert type(values["pareto_k"]) is float and type(values["quadrature_nodes"]) is int
    json.dumps(values)


@dataclass(frozen=True)
class _Spec(FitSpec):
    model: str = "2pl"
    prior: tuple[float, float] = (1.0, 1.0)
    dimensions: list = ()


def test_a_spec_round_trips_with_its_tuples():
    spec = _Spec(prior=(2.0, 3.0), dimensions=["a", "b"])
    values = json.loads(json.dumps(spec.to_dict()))
    assert values == {"model": "2pl", "prior": [2.0, 3.0], "dimensions": ["a", "b"]}
    assert _Spec.from_dict(values) == spec
    with pytest.raises(PersistenceError, match="does not know"):
        _Spec.from_dict({**values, "link": "probit"})


#: Reading or writing a fit's posterior attributes by name: ``posterior.attrs[...]``,
#: ``["posterior"].attrs.get(...)``, ``.attrs.update(...)`` on a posterior.
POSTERIOR_ATTRS = re.compile(r"""(posterior|\["posterior"\])\.attrs(\[|\.get\(|\.update\((?!idata\["posterior"\]\.attrs\)))""")


def test_the_library_reads_no_posterior_attribute_by_name():
    """What a fit did reaches code only through its InferenceRecord (``result.inference``); the
    one attribute it lives in is written and read in ``inference_record.py``. Copying a tree's
    attributes onto a rebuilt posterior (``posterior.attrs.update(idata["posterior"].attrs)``) is
    allowed: it carries the record along."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "inference_record.py":
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if POSTERIOR_ATTRS.search(line):
                found.append(f"{path.relative_to(PACKAGE)}:{number}: {line.strip()}")
    assert not found, "\n".join(found)


def test_the_scan_would_catch_a_read_by_name():
    assert POSTERIOR_ATTRS.search('mode = result.posterior.attrs["inference"]')
    assert POSTERIOR_ATTRS.search('idata["posterior"].attrs.update(method="joint")')
    assert not POSTERIOR_ATTRS.search('posterior.attrs.update(idata["posterior"].attrs)')
