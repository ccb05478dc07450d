"""Reading the user's CSV files and writing the command's result.

Delimiters are detected (``csv.Sniffer`` over the first 64 KiB, among ``,`` ``;`` tab and ``|``) unless
``--sep`` is given, and a detected delimiter other than a comma is named on stderr, so a
semicolon export from a spreadsheet reads as it is and the user sees why. Results go to
stdout (a table, or strict JSON with ``--json``) or to ``--output FILE.csv`` or ``FILE.json``."""

from __future__ import annotations

import argparse
import contextlib
import csv
import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from bayes_raters.errors import InvalidInputError

if TYPE_CHECKING:  # pandas is imported when a file is read, not when the parser is built
    import pandas as pd

DELIMITER_NAMES = {",": "comma", ";": "semicolon", "\t": "tab", "|": "pipe"}
SNIFF_BYTES = 65536


def note(message: str, args: argparse.Namespace) -> None:
    """A line on stderr that is neither a warning nor an error; silenced by ``--quiet``."""
    if not getattr(args, "quiet", False):
        print(f"bayes-raters: note: {message}", file=sys.stderr)


def _given_sep(args: argparse.Namespace) -> str | None:
    if args.sep is None:
        return None
    return "\t" if args.sep in ("\\t", "tab", "\t") else args.sep


def detect_delimiter(path: str, encoding: str) -> str:
    """The delimiter ``csv.Sniffer`` finds in the first 64 KiB; a comma if it finds none."""
    with open(path, newline="", encoding=encoding) as handle:
        sample = handle.read(SNIFF_BYTES)
    try:
        return csv.Sniffer().sniff(sample, delimiters="".join(DELIMITER_NAMES)).delimiter
    except csv.Error:
        return ","


def read_table(path: str, args: argparse.Namespace) -> pd.DataFrame:
    """One CSV file as a DataFrame; every failure becomes an :class:`InvalidInputError` whose
    advice names this command line's flags."""
    import pandas as pd

    try:
        sep = _given_sep(args)
        if sep is None:
            sep = detect_delimiter(path, args.encoding)
            if sep != ",":
                note(f"reading {path} as {DELIMITER_NAMES[sep]}-separated (detected; set --sep to override).", args)
        return pd.read_csv(path, sep=sep, encoding=args.encoding)
    except FileNotFoundError:
        raise InvalidInputError(f"no such file: {path}") from None
    except UnicodeDecodeError as exc:
        raise InvalidInputError(
            f"cannot read {path} as {args.encoding} text ({exc.reason} at byte {exc.start}): give the file's "
            "encoding, e.g. --encoding latin-1 or --encoding cp1252."
        ) from None
    except LookupError:
        raise InvalidInputError(f"unknown encoding {args.encoding!r}: use e.g. --encoding utf-8 or --encoding latin-1.") from None
    except (pd.errors.ParserError, pd.errors.EmptyDataError, IsADirectoryError, ValueError) as exc:
        raise InvalidInputError(f"cannot read {path} as CSV: {str(exc).splitlines()[0]}") from None


@dataclass
class Output:
    """What a command produced: ``text`` for the terminal, ``data`` for JSON (strict: no NaN),
    and the same content as named ``tables`` for CSV files."""

    text: str
    data: object = None
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)


def csv_paths(path: Path, names: list[str]) -> dict[str, Path]:
    """The first table goes to ``path``; each further one beside it as ``STEM-NAME.csv``."""
    return {name: path if k == 0 else path.with_name(f"{path.stem}-{name}{path.suffix}") for k, name in enumerate(names)}


def emit(output: Output, args: argparse.Namespace) -> None:
    """Print the result, or write it to ``--output`` (format from the suffix) and say where."""
    target = getattr(args, "output", None)
    if target is None:
        print(json.dumps(output.data, indent=2, allow_nan=False) if getattr(args, "json", False) else output.text)
        return
    path = Path(target)
    suffix = path.suffix.lower()
    if suffix not in (".csv", ".json"):
        raise InvalidInputError(f"--output {target}: name a .csv or a .json file.")
    if not path.parent.is_dir():
        raise InvalidInputError(f"--output {target}: the folder {path.parent} does not exist.")
    if suffix == ".json":
        path.write_text(json.dumps(output.data, indent=2, allow_nan=False) + "\n", encoding="utf-8")
        note(f"wrote {path}", args)
        return
    for name, file in csv_paths(path, list(output.tables)).items():
        output.tables[name].to_csv(file)
        note(f"wrote the {name} table to {file}", args)


@contextlib.contextmanager
def progress_on_stderr() -> Iterator[None]:
    """During a fit, anything the sampler prints (PyMC's progress bar writes to stdout) goes
    to stderr, so stdout holds the result alone and ``--json | jq`` keeps working."""
    with contextlib.redirect_stdout(sys.stderr):
        yield


def progressbar(args: argparse.Namespace) -> bool | None:
    """``--quiet``: no bar; otherwise the package's rule (a bar when stderr is a terminal)."""
    return False if args.quiet else None
