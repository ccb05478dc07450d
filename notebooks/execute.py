"""Execute notebooks. Fast mode (default, used by the tests) sets BAYES_RATERS_FAST=1 so
each notebook shrinks its data and chains; ``--full`` runs them at full size and writes
the outputs back into the files (what is committed).

    python notebooks/execute.py [--full] notebooks/*.ipynb
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import nbformat
from nbclient import NotebookClient


def execute(path: Path, *, full: bool, timeout: int = 1800) -> nbformat.NotebookNode:
    """Run every cell of ``path`` in a fresh kernel whose working directory is the notebook's."""
    notebook = nbformat.read(path, as_version=4)
    settings = {"BAYES_RATERS_FAST": "0" if full else "1", "BAYES_RATERS_PROGRESSBAR": "0"}  # no bars in stored outputs
    previous = {name: os.environ.get(name) for name in settings}
    os.environ.update(settings)
    try:
        client = NotebookClient(
            notebook, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
        )
        client.execute()
    finally:
        for name, value in previous.items():
            if value is None:
                os.environ.pop(name)
            else:
                os.environ[name] = value
    return notebook


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--full", action="store_true", help="full size; write outputs back")
    parser.add_argument("notebooks", nargs="+", type=Path)
    args = parser.parse_args()
    for path in args.notebooks:
        print(f"executing {path} ({'full' if args.full else 'fast'} mode)")
        notebook = execute(path, full=args.full)
        if args.full:
            nbformat.write(notebook, path)


if __name__ == "__main__":
    main()
