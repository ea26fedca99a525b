"""A run on existing clusters starts on clean names and leaves nothing behind.

Before anything starts, the drill's prefix must name nothing on the team's clusters (names already
there, an interrupted run's or anyone's, would be read as this run's records); after every process stopped, what the
drill created there is deleted, so the clusters hold only what they held before. Only names under the
prefix: MirrorMaker 2's heartbeat connector asks to create ``heartbeats`` at start even with emission
off, and the drill's proxy refuses it, so a ``heartbeats`` topic there is the team's. Both steps talk
to the clusters directly with the team's own settings, not through the drill's proxy.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from mirrordrill.harness.drill.schema import Scenario
from mirrordrill.harness.lab.brokers import owned_names
from mirrordrill.harness.lab.brokers.existing_connect import admin_for


class RunRefused(RuntimeError):
    """An existing cluster cannot be reached, or the prefix already names topics or groups on it;
    the message gives the fix. Nothing was started."""


def refuse_leftovers(s: Scenario, base_dir: Path, drill_file: str) -> None:
    prefix = s.owned_prefix or ""
    found = []
    for name, definition in s.existing_clusters().items():
        try:
            admin = admin_for(definition, base_dir)
            left = owned_names.find(admin, name, prefix)
        except Exception as e:  # noqa: BLE001 - unreachable, refused credentials, a bad reference: all stop here
            raise RunRefused(f"existing cluster {name} ({definition.bootstrap_servers}): {type(e).__name__}: {e}; "
                             f"check it with 'mirrordrill plan {drill_file}'") from None
        if left.topics or left.groups:
            found.append(f"{name}: topic(s) {left.topics} group(s) {left.groups}")
    if found:
        # Who made them is not known here: an interrupted run of this drill, or anyone using the prefix.
        raise RunRefused(f"topics/groups under the drill's prefix {prefix!r} already exist on existing clusters ("
                         + "; ".join(found) + "): an earlier run's, or someone else's; a run would read them as its "
                         f"own. List them with 'mirrordrill cleanup {drill_file} --dry-run'; if they are the drill's, "
                         f"delete them with 'mirrordrill cleanup {drill_file}' (it lists and asks), then run again")


def remove_drill_names(s: Scenario, base_dir: Path, log: Callable[[str], None]) -> list[str]:
    """Delete every topic and group under the prefix on each existing cluster; returns the problems."""
    problems = []
    for name, definition in s.existing_clusters().items():
        try:
            admin = admin_for(definition, base_dir)
            found = owned_names.find(admin, name, s.owned_prefix or "")
            done = owned_names.remove(admin, found)
        except Exception as e:  # noqa: BLE001 - one cluster's failure must not keep the others dirty
            problems.append(f"{name}: cleanup failed ({type(e).__name__}: {e})")
            continue
        log(f"existing cluster {name}: deleted the drill's {len(done.topics)} topic(s) and {len(done.groups)} group(s)")
        problems += [f"{name}: {e}" for e in done.errors]
    return problems
