"""Drill files as tests, at the short profile unless ``--profile full``.

Without ``--drills`` the suite runs every shipped drill (scenarios/*.yaml: what CI runs, each
calibrated at the short profile, see each file's header); ``--drills FILE|DIR`` runs that drill
or every drill in DIR.
``--drill-replicator`` runs them against another replicator (e.g. ``mirrormaker2``) than the one
each file names, with that replicator's own expectations from each file; a drill part that
replicator cannot do at all (``CANNOT``) is reported as skipped with the reason, never as passed.

The suite runs the drills two at a time (tests/suite.py): a light drill's lab (a few one-broker
clusters, Spark inside the replicator's process) keeps about half a core busy, and beside another
one its figures stay those it gives alone (the side-by-side record is in
docs/measurements/drills-two-at-a-time.json). A drill whose lab is heavy (``runs_alone``) is
marked ``serial`` and runs with nothing beside it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
CANNOT = {
    "mirrormaker2": {"spark-worker-kill.yaml": "kills a Spark worker: MirrorMaker 2 runs no Spark"},
}


# Six brokers' controlled shutdowns and elections, or a Spark standalone cluster (a master, two workers
# and their executors beside the driver), fill a core by themselves; so do a standby's two drivers,
# whose takeover (JVM work on a pause's expiry, a killed driver restarting beside it) sets the
# drill's stall.
ALONE_FROM_BROKERS = 6


def runs_alone(drill_file: Path) -> bool:
    """Whether this drill's lab is too heavy to share the machine with another drill's."""
    data = yaml.safe_load(drill_file.read_text()) or {}
    clusters = data.get("clusters") or {}
    brokers = sum(c.get("brokers", 1) for c in clusters.values() if isinstance(c, dict) and "existing" not in c)
    replication = data.get("replication") or {}
    spark = (replication.get("spark") or {}).get("master", "local")
    return brokers >= ALONE_FROM_BROKERS or spark == "standalone" or bool(replication.get("standby"))


# Each drill's measured length two at a time: the suite hands the drills out one at a time, longest
# first, so that a long one does not start last and run with nothing beside it.
DURATIONS = REPO / "docs" / "measurements" / "drills-two-at-a-time.json"


def longest_first(files: list[Path]) -> list[Path]:
    """``files`` ordered by their measured duration in pairs (else alone), longest first; a drill with no
    figure yet (a new one) goes first, as if it were the longest."""
    sittings = json.loads(DURATIONS.read_text())["figures"]["sittings"]
    measured: dict = {}
    for sitting in sorted(sittings, key=lambda s: s["label"] == "pairs"):  # pairs last: their figure wins
        measured.update(sitting["drills"])
    return sorted(files, key=lambda f: -measured.get(f.stem, {}).get("duration_s", float("inf")))


def drill_files(config) -> list[Path]:
    chosen = config.getoption("--drills")
    if chosen:
        root = Path(chosen)
        root = root if root.is_absolute() else Path(config.invocation_params.dir) / root
        return sorted(root.glob("*.yaml")) if root.is_dir() else [root]
    return longest_first(sorted((REPO / "scenarios").glob("*.yaml")))


def pytest_generate_tests(metafunc):
    if "drill_file" in metafunc.fixturenames:
        cannot = CANNOT.get(metafunc.config.getoption("--drill-replicator") or "", {})
        params = [pytest.param(f, id=f.stem, marks=marks(f, cannot)) for f in drill_files(metafunc.config)]
        metafunc.parametrize("drill_file", params)


def marks(drill_file: Path, cannot: dict[str, str]) -> list[pytest.MarkDecorator]:
    if drill_file.name in cannot:
        return [pytest.mark.skip(reason=cannot[drill_file.name])]
    return [pytest.mark.serial] if runs_alone(drill_file) else []
