"""Where the ``mirrordrill`` package is imported from: what a child Python process needs on its path.

A checkout's ``src/`` (its ``mirrordrill/`` links the top-level folders), or the site-packages
folder of an installed tool. Not the checkout's root: there the folders' bare names would import a
second copy of every module.
"""

from __future__ import annotations

import os
from pathlib import Path

import mirrordrill

IMPORT_ROOT = Path(mirrordrill.__file__).resolve().parent.parent


def child_pythonpath(inherited: str | None) -> str:
    """PYTHONPATH for a child that runs ``python -m mirrordrill.…``: the import root, then ``inherited``."""
    return os.pathsep.join(p for p in (str(IMPORT_ROOT), inherited) if p)
