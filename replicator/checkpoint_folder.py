"""Spark's checkpoint folder of a flow's running query (``<checkpoint base>/query``).

Every query start begins a fresh checkpoint (the target, not Spark's checkpoint, says where the
copy stopped: ``replicator.resume``), so the folder is emptied at each start. The checkpoint
base comes from the configuration and may point anywhere, so the replicator deletes only a
``query`` folder it created itself and marked with ``MARKER``; any other is refused, untouched.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

MARKER = ".mirrordrill-replicator-query"


class CheckpointFolderRefused(RuntimeError):
    """A query folder the replicator did not make: the message says which and what to do."""


def refusal(folder: Path) -> str | None:
    """Why the replicator may not empty ``folder``, or None (absent, or created and marked by it)."""
    folder = Path(folder)
    if not folder.exists() and not folder.is_symlink():
        return None
    if folder.is_symlink() or not folder.is_dir():
        return f"{folder} is not a folder the replicator made (a link or a file); nothing was deleted"
    if (folder / MARKER).is_file():
        return None
    return (f"{folder} holds a query checkpoint the replicator did not make (no {MARKER} marker), and each query "
            "start deletes that folder; nothing was deleted: move it away, or point checkpoint_dir at a new folder")


def check(folder: Path) -> None:
    """Raise CheckpointFolderRefused when ``folder`` may not be emptied: called before anything starts."""
    reason = refusal(folder)
    if reason is not None:
        raise CheckpointFolderRefused(reason)


def fresh(folder: Path) -> Path:
    """An empty, marked ``folder`` for a new query: the earlier one's deleted only if the replicator made it."""
    folder = Path(folder)
    check(folder)
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    (folder / MARKER).write_text(json.dumps({"made_by": "mirrordrill replicator", "pid": os.getpid(),
                                             "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}) + "\n")
    return folder
