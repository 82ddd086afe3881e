"""Where a result came from: the versions of the packages that computed it."""

from __future__ import annotations

import platform
from importlib import metadata

__all__ = ["PACKAGES", "__version__", "versions", "versions_text"]

#: The package version (``gpc_compare.__version__``).
__version__ = "0.1.0"

#: The packages whose versions a result records (with Python's).
PACKAGES = (
    "gpc_compare",
    "numpy",
    "scipy",
    "scikit-learn",
    "pymc",
    "arviz",
    "nutpie",
    "matplotlib",
)


def versions(packages: tuple[str, ...] = PACKAGES[:-1]) -> dict[str, str]:
    """Installed versions of ``packages`` (``"not installed"`` if absent) and Python's.

    The default leaves matplotlib out: it draws figures but computes none of a job's
    numbers, and job records written so far list exactly the other packages.
    """
    out = {}
    for name in packages:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "not installed"
    out["python"] = platform.python_version()
    return out


def versions_text(packages: tuple[str, ...] = PACKAGES) -> str:
    """``"gpc_compare 0.1.0, numpy 2.4.6, ..., Python 3.11.7"`` for a study's README."""
    v = versions(packages)
    python = v.pop("python")
    return ", ".join(f"{name} {version}" for name, version in v.items()) + f", Python {python}"
