"""The output folder a command writes into (``--out`` of run, sweep, bench, calibrate, report).

mirrordrill deletes only what it made. A folder it may write into is a new one, an empty one, or
one it made earlier: it marks each folder it takes with ``MARKER`` (a small JSON: which command,
when). Anything else, a checkout, a home folder, a file, is refused before anything starts and
nothing in it is touched. A reused run folder is cleared of the names a run writes, and only of
those, so a second run does not read the first one's histories.
"""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime
from pathlib import Path

MARKER = ".mirrordrill-run"

# Every name a drill run writes at the top of its folder. This module is their one owner: the
# engine, the results, the baseline and reports/ read them from here.
SUMMARY_FILE = "summary.json"  # the results' contract (harness.drill.results)
SCENARIO_COPY = "scenario.yaml"  # the drill file's exact bytes (summary.json's drill_sha256 is their hash)
BASELINE_FILE = "baseline.json"  # run --baseline: the comparison (harness.drill.baseline)
DRILL_LOG_FILE = "drill.log"  # the drill's own log, what the console showed
ERROR_FILE = "error.txt"  # the traceback of a harness error
CHECK_ERROR_FILE = "check-error.txt"  # the traceback of a checker error
ENV_DIR = "env"  # brokers, proxies, Spark: their data and logs
HISTORIES_DIR = "histories"  # what the load produced and consumed, read by the checker
REPLICATOR_DIR = "replicator"  # the replicator's folders and logs
LOAD_DIR = "load"  # the load processes' folders and logs
FAILBACK_DIR = "failback"  # the failback's copy-back and re-protect replicators
SERIES_DIR = "series"  # per-second series for the plots

# What a run clears when its folder is reused: old broker data would not format, old histories
# would be checked as if this run wrote them.
RUN_FOLDERS = (ENV_DIR, HISTORIES_DIR, REPLICATOR_DIR, LOAD_DIR, FAILBACK_DIR, SERIES_DIR)
RUN_FILES = (SUMMARY_FILE, ERROR_FILE, CHECK_ERROR_FILE, BASELINE_FILE, DRILL_LOG_FILE)


class OutFolderRefused(ValueError):
    """The folder is not one mirrordrill may write into; the message says why and what to do."""


def refusal(folder: Path) -> str | None:
    """Why ``folder`` may not be an output folder, or None when it may (new, empty, or marked)."""
    folder = Path(folder)
    if not folder.exists() and not folder.is_symlink():
        return None
    if not folder.is_dir():
        return f"--out {folder}: this is a file, not a folder; give a new folder's path"
    if (folder / MARKER).is_file():
        return None
    if next(folder.iterdir(), None) is None:
        return None
    return (f"--out {folder}: this folder holds files mirrordrill did not make (no {MARKER} marker), and a run "
            "replaces what its folder holds; give a new or empty folder, or one an earlier run made")


def take(folder: Path, made_by: str) -> Path:
    """Create or reuse ``folder`` as an output folder and mark it; raises OutFolderRefused, touching nothing."""
    folder = Path(folder)
    reason = refusal(folder)
    if reason is not None:
        raise OutFolderRefused(reason)
    folder.mkdir(parents=True, exist_ok=True)
    marker = folder / MARKER
    if not marker.is_file():
        created = datetime.now(UTC).isoformat(timespec="seconds")
        marker.write_text(json.dumps({"made_by": made_by, "created": created}) + "\n")
    return folder


def clear_previous_run(folder: Path, files: tuple[str, ...] = RUN_FILES) -> None:
    """Remove an earlier run's ``RUN_FOLDERS`` and ``files`` from a folder this process took (marked)."""
    folder = Path(folder)
    if not (folder / MARKER).is_file():  # only ever reached after take(); a guard, not a path
        raise OutFolderRefused(f"{folder}: not marked as a mirrordrill folder ({MARKER}); nothing deleted")
    for name in RUN_FOLDERS:
        path = folder / name
        if path.is_symlink() or path.is_file():  # a link is removed, never followed
            path.unlink()
        elif path.is_dir():
            shutil.rmtree(path)
    for name in files:
        (folder / name).unlink(missing_ok=True)
