"""A drill's secret folder: key material and credential files, outside the run folder, gone at the end.

It lives under ``$MIRRORDRILL_HOME/secrets/<drill>-<random>`` (0700; files 0600), so nothing
that copies, archives or publishes a run folder can take a secret with it. ``remove`` is
called on every exit path by its owner (the ``with`` block); a folder left by a process
killed with SIGKILL is removed by the next ``SecretDir`` made for the same drill name.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
from pathlib import Path

from mirrordrill.primitives.bootstrap import mirrordrill_home
from mirrordrill.primitives.kafka.security import write_private


def random_password(nbytes: int = 24) -> str:
    """A random password (URL-safe characters: no quoting trouble in JAAS or properties)."""
    return secrets.token_urlsafe(nbytes)


class SecretDir:
    """One 0700 folder of 0600 files, deleted by ``remove`` (and by leaving the ``with`` block)."""

    def __init__(self, drill: str, root: Path | None = None):
        self.root = root or mirrordrill_home() / "secrets"
        safe = re.sub(r"[^A-Za-z0-9._-]", "_", drill)[:60] or "drill"
        self.root.mkdir(parents=True, exist_ok=True)
        os.chmod(self.root, 0o700)
        self._sweep_stale(safe)
        self.path = self.root / f"{safe}-{os.getpid()}-{secrets.token_hex(4)}"
        self.path.mkdir(mode=0o700)
        os.chmod(self.path, 0o700)

    def _sweep_stale(self, safe: str) -> None:
        # A previous run of this drill killed with SIGKILL left its folder: its pid is gone.
        for old in self.root.glob(f"{safe}-*-*"):
            pid = old.name[len(safe) + 1:].split("-")[0]
            if pid.isdigit() and not Path(f"/proc/{pid}").exists():
                shutil.rmtree(old, ignore_errors=True)

    def file(self, name: str, text: str) -> Path:
        """Write ``text`` to ``name`` in the folder (0600) and return its path."""
        if "/" in name or name in ("", ".", ".."):
            raise ValueError(f"secret file name {name!r} must be a plain file name")
        path = self.path / name
        write_private(path, text)
        return path

    def remove(self) -> None:
        """Delete the folder and everything in it (idempotent)."""
        shutil.rmtree(self.path, ignore_errors=True)

    def __enter__(self) -> SecretDir:
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()
