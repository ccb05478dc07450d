"""The typed records a result is saved with: :class:`PlainRecord`, a frozen dataclass of plain
values that round-trips through JSON, and :class:`FitSpec`, the base of every family's options
record (:class:`~bayes_raters.ctt.TrueScoreSpec`, :class:`~bayes_raters.irt.IRTSpec`, ...) that
holds what the model was fitted with, travels with the result (``result.spec``) and is saved in
its file. The inference record (:class:`~bayes_raters.inference_record.InferenceRecord`) is a
:class:`PlainRecord` too.

:meth:`PlainRecord.to_dict` gives JSON-able values (tuples as lists) and
:meth:`PlainRecord.from_dict` reads them back (lists as tuples where the field is a tuple),
refusing fields it does not know, so a file from another version fails loudly instead of loading
wrong.

>>> from dataclasses import dataclass
>>> @dataclass(frozen=True)
... class Example(FitSpec):
...     model: str = "2pl"
...     prior: tuple[float, float] = (1.0, 1.0)
>>> Example.from_dict(Example(prior=(2.0, 3.0)).to_dict())
Example(model='2pl', prior=(2.0, 3.0))
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from bayes_raters.errors import PersistenceError
from bayes_raters.persistence import plain_value


@dataclass(frozen=True)
class PlainRecord:
    """A frozen dataclass of plain values that round-trips through JSON (subclasses add the fields)."""

    def to_dict(self) -> dict:
        """The options as plain JSON-able values (tuples as lists, numpy scalars as numbers)."""
        return {f.name: _plain(getattr(self, f.name)) for f in dataclasses.fields(self)}

    @classmethod
    def from_dict(cls, values: dict):
        """The spec from :meth:`to_dict`'s output; unknown fields raise
        :class:`~bayes_raters.errors.PersistenceError`."""
        fields = {f.name: f for f in dataclasses.fields(cls)}
        unknown = set(values) - set(fields)
        if unknown:
            raise PersistenceError(f"the saved {cls.__name__} has fields this version does not know: {sorted(unknown)}.")
        return cls(**{name: _tuple_if(fields[name], value) for name, value in values.items()})


@dataclass(frozen=True)
class FitSpec(PlainRecord):
    """A family's model options (subclasses add the fields)."""


def _tuple_if(field: dataclasses.Field, value):
    """A JSON list as a tuple where the field holds a tuple (its annotation names one)."""
    return tuple(value) if isinstance(value, list) and "tuple" in str(field.type) else value


def _plain(value):
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return plain_value(value)
