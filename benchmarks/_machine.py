"""What every benchmark prints first: the machine and the library versions it ran on."""

from __future__ import annotations

import os
import platform
from importlib.metadata import version


def machine_line() -> str:
    libs = ", ".join(f"{name} {version(name)}" for name in ("numpy", "pandas", "scipy", "pymc", "arviz"))
    return (
        f"machine: {platform.node()} {platform.machine()} {platform.processor() or ''}".rstrip()
        + f"; {os.cpu_count()} cores; Python {platform.python_version()}; {libs}"
    )
