"""Running a shell recipe of the docs as a person types it: bash, in a scratch copy of the checkout."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from tests.doc_recipes import REPO


def scratch_checkout(dest: Path) -> Path:
    """A copy of the checkout's files (tracked and new, not ignored ones: no runs/, no caches), where a
    recipe may write what it writes (``runs/``, ``my-drill.yaml``) without touching the checkout."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                            check=True, capture_output=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        src = REPO / name
        if src.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)
    return dest


def recipe_env(**extra: str) -> dict[str, str]:
    """The test's environment (MIRRORDRILL_HOME: the wrapper finds the session's Python environment),
    without the checkout on PYTHONPATH: the scratch copy's wrapper puts itself there."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return {**env, **extra}


def bash(script: str, cwd: Path, timeout_s: float, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """``script`` in bash, stopping at the first failing line (``-e -o pipefail``), output and errors merged."""
    return subprocess.run(["bash", "-e", "-o", "pipefail", "-c", script], cwd=cwd, env=env or recipe_env(),
                          text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout_s)
