"""This mirrordrill's own version, as installed (a wheel with pip or pipx, or the checkout's editable install)."""

from __future__ import annotations

from importlib import metadata


def mirrordrill_version() -> str:
    # The wrapper makes one environment per pyproject.toml, so an editable install's metadata is current too.
    return metadata.version("mirrordrill")
