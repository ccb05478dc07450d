"""Saving and loading results: one netCDF file (h5netcdf) per result, verified on load.

Every result type writes its ``xarray.DataTree`` with two root attributes: the model
configuration as JSON (``bayes_raters_config``) and a SHA-256 checksum of every stored
array (``bayes_raters_checksum``). :func:`load_datatree` recomputes the checksum and refuses
a file whose arrays changed, so a file with a few corrupted bytes never loads as a silently
wrong posterior. Every failure (missing or unwritable path, not netCDF, truncated, corrupted, not
written by this package) raises :class:`~bayes_raters.errors.PersistenceError` naming the
file; h5py, netCDF and xarray exceptions never reach the user.

The checksum is taken over a canonical form of the arrays, so that it survives the netCDF
round trip: every group and variable (coordinates included) in sorted order, its name,
dimensions and shape, numbers as little-endian float64 (integers and booleans too: they are
exact in float64 up to 2**53; an object array holding only numbers, such as integer system
ids beside text ones, counts as numbers, because netCDF stores it as numbers) and text as UTF-8.
NaN is hashed as one fixed bit pattern.
"""

from __future__ import annotations

import gc
import hashlib
import json
import sys
from pathlib import Path

import numpy as np
import xarray as xr

from bayes_raters.errors import PersistenceError


def plain_value(value):
    """A NumPy scalar (an id read from a table) as the Python value JSON can hold."""
    return value.item() if isinstance(value, np.generic) else value

CONFIG_ATTR = "bayes_raters_config"
CHECKSUM_ATTR = "bayes_raters_checksum"


def _array_bytes(values: np.ndarray) -> bytes:
    """Canonical bytes of one array (see the module docstring)."""
    values = np.asarray(values)
    if values.dtype.kind == "O" and values.size and all(_is_number(v) for v in values.ravel()):
        values = values.astype(float)  # netCDF stores an object array of numbers as numbers
    if values.dtype.kind in "biuf":
        numbers = values.astype("<f8")
        numbers[np.isnan(numbers)] = np.nan  # one NaN bit pattern
        return numbers.tobytes()
    return "\x1f".join(str(v) for v in values.ravel()).encode("utf-8")


def _is_number(value) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_))


def tree_checksum(tree: xr.DataTree) -> str:
    """SHA-256 (hex) of every array of every group of ``tree``, in canonical form."""
    digest = hashlib.sha256()
    for group_path in sorted(node.path for node in tree.subtree):
        dataset = tree[group_path].to_dataset()
        for name in sorted(map(str, dataset.variables)):
            variable = dataset.variables[name]
            digest.update(f"{group_path}/{name}{variable.dims}{variable.shape}".encode())
            digest.update(_array_bytes(variable.values))
    return digest.hexdigest()


def save_datatree(idata: xr.DataTree, path: str | Path, config: dict) -> Path:
    """Write ``idata`` to netCDF with ``config`` (JSON) and the checksum in the root
    attributes. Raises :class:`PersistenceError` if the file cannot be written."""
    path = Path(path)
    if not path.parent.is_dir():
        raise PersistenceError(f"cannot save to {path}: the folder {path.parent} does not exist.")
    tree = idata.copy()
    tree.attrs = {**tree.attrs, CONFIG_ATTR: json.dumps(config, sort_keys=True), CHECKSUM_ATTR: tree_checksum(idata)}
    try:
        tree.to_netcdf(path, engine="h5netcdf")
    except (OSError, ValueError, TypeError) as exc:
        raise PersistenceError(f"cannot save to {path}: {type(exc).__name__}: {str(exc).splitlines()[0]}") from None
    return path


def _open(path: Path) -> xr.DataTree:
    """Open and load the whole tree; any failure becomes a :class:`PersistenceError`. A
    damaged file can leave a half-built h5netcdf ``File`` whose finaliser raises when it is
    collected ("Exception ignored in File.close"); that noise is collected here, silenced."""
    failure = None
    hook = sys.unraisablehook
    sys.unraisablehook = lambda unraisable: None
    try:
        tree = xr.open_datatree(path, engine="h5netcdf").load()
        tree.close()
    except Exception as exc:  # h5py, netCDF4 and xarray raise many types for damaged files
        failure = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else 'no message'}"
    finally:
        gc.collect()
        sys.unraisablehook = hook
    if failure is not None:
        raise PersistenceError(
            f"cannot read {path} as a saved bayes_raters result ({failure}); the file is damaged or of another kind."
        )
    return tree


def load_datatree(path: str | Path) -> tuple[xr.DataTree, dict]:
    """Read a tree written by :func:`save_datatree` and verify its checksum; returns
    ``(datatree, config)`` with the two attributes removed."""
    path = Path(path)
    if not path.is_file():
        raise PersistenceError(f"no saved result at {path}.")
    tree = _open(path)
    attrs = dict(tree.attrs)
    if CONFIG_ATTR not in attrs or CHECKSUM_ATTR not in attrs:
        raise PersistenceError(f"{path} was not written by bayes_raters' save() (no {CONFIG_ATTR} / {CHECKSUM_ATTR}).")
    expected = attrs.pop(CHECKSUM_ATTR)
    try:
        config = json.loads(attrs.pop(CONFIG_ATTR))
    except json.JSONDecodeError:
        raise PersistenceError(f"{path}: the stored configuration is damaged (not JSON).") from None
    tree.attrs = attrs
    if tree_checksum(tree) != expected:
        raise PersistenceError(
            f"{path}: the stored arrays do not match their checksum: the file was changed or damaged "
            "after it was saved. Refit, or restore the file from a copy."
        )
    return tree, config


def frame_to_dataset(frame) -> xr.Dataset:
    """A table (``pandas.DataFrame``) as a Dataset along ``row``, for storing inputs in a tree."""
    return xr.Dataset({column: ("row", frame[column].to_numpy()) for column in frame.columns})


def dataset_to_frame(dataset: xr.Dataset):
    """The inverse of :func:`frame_to_dataset`."""
    import pandas as pd

    return pd.DataFrame({name: dataset[name].values for name in dataset.data_vars})


def save_dataset(dataset: xr.Dataset, path: str | Path, config: dict) -> Path:
    """:func:`save_datatree` for a single dataset (the root group)."""
    return save_datatree(xr.DataTree(dataset=dataset), path, config)


def load_dataset(path: str | Path) -> tuple[xr.Dataset, dict]:
    """:func:`load_datatree` for a file written by :func:`save_dataset`."""
    tree, config = load_datatree(path)
    return tree.to_dataset(), config
