"""The drill-file format version: which files this mirrordrill reads, and what to do with others.

A file says ``format: 1`` (or nothing, which means 1: every file written before the field existed).
The check runs before the fields are read, so a newer file gets "upgrade mirrordrill" rather than a
list of fields this version does not know.
"""

from __future__ import annotations

from typing import Any

FORMAT = 1  # the format this version reads and `init` writes
READS = (1,)  # every format this version reads; a change to the fields that old files break on adds one


def format_problem(value: Any) -> str | None:
    """Why a file's ``format:`` value cannot be read by this version, or None when it can."""
    if isinstance(value, bool) or not isinstance(value, int):
        return f"{value!r} is not a format version: write 'format: {FORMAT}' (a whole number)"
    if value in READS:
        return None
    if value > max(READS):
        return (f"the file is written for drill-file format {value}, newer than this mirrordrill reads "
                f"({', '.join(map(str, READS))}): upgrade mirrordrill (pipx upgrade mirrordrill, or pip "
                f"install -U mirrordrill), or run it with the version the file was written for")
    return (f"format {value} is older than any this mirrordrill reads ({', '.join(map(str, READS))}): "
            f"see CHANGELOG.md for what changed, update the file, then write 'format: {FORMAT}'")
