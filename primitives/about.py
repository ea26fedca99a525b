"""This mirrordrill's own version, as installed (pip, pipx) or as the checkout's pyproject.toml says."""

from __future__ import annotations

import tomllib
from importlib import metadata
from pathlib import Path

PYPROJECT = Path(__file__).resolve().parent.parent / "pyproject.toml"


def mirrordrill_version() -> str:
    # A checkout's pyproject wins: the environment may have been installed from another clone.
    if PYPROJECT.exists():
        return str(tomllib.loads(PYPROJECT.read_text())["project"]["version"])
    return metadata.version("mirrordrill")
