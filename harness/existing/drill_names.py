"""A run on existing clusters starts on clean names and leaves nothing behind.

Before anything starts, the drill's prefix must name nothing on the team's clusters (leftovers of
an interrupted run would be read as this run's records); after every process stopped, what the
drill created there is deleted, so the clusters hold only what they held before. Both talk to
the clusters directly with the team's own settings, not through the drill's proxy.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from harness.existing import cleanup
from harness.existing.connect import admin_for
from harness.scenario.model import Scenario


class LeftoversFound(RuntimeError):
    """The prefix already names topics or groups on an existing cluster; the message gives the fix."""


def refuse_leftovers(s: Scenario, base_dir: Path, drill_file: str) -> None:
    prefix = s.owned_prefix or ""
    found = []
    for name, definition in s.existing_clusters().items():
        left = cleanup.find(admin_for(definition, base_dir), name, prefix)
        if left.topics or left.groups:
            found.append(f"{name}: topic(s) {left.topics} group(s) {left.groups}")
    if found:
        raise LeftoversFound(f"the drill's prefix {prefix!r} already names things on existing clusters ("
                             + "; ".join(found) + "), left by an earlier run: remove them with "
                             f"'mirrordrill cleanup {drill_file} --prefix {prefix}', then run again")


def remove_drill_names(s: Scenario, base_dir: Path, log: Callable[[str], None]) -> list[str]:
    """Delete every topic and group under the prefix on each existing cluster; returns the problems."""
    problems = []
    for name, definition in s.existing_clusters().items():
        try:
            admin = admin_for(definition, base_dir)
            done = cleanup.remove(admin, cleanup.find(admin, name, s.owned_prefix or ""))
        except Exception as e:  # noqa: BLE001 - one cluster's failure must not keep the others dirty
            problems.append(f"{name}: cleanup failed ({type(e).__name__}: {e})")
            continue
        log(f"existing cluster {name}: deleted the drill's {len(done.topics)} topic(s) and {len(done.groups)} group(s)")
        problems += [f"{name}: {e}" for e in done.errors]
    return problems
