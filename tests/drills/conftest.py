"""Drill files as tests, at the short profile unless ``--profile full``.

Without ``--drills`` the suite runs every shipped drill (scenarios/*.yaml: what CI runs, each
calibrated at the short profile, see each file's header); ``--drills FILE|DIR`` runs that drill
or every drill in DIR.
``--drill-replicator`` runs them against another replicator (e.g. ``mirrormaker2``) than the one
each file names, with that replicator's own expectations from each file; a drill part that
replicator cannot do at all (``CANNOT``) is reported as skipped with the reason, never as passed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CANNOT = {
    "mirrormaker2": {"spark-worker-kill.yaml": "kills a Spark worker: MirrorMaker 2 runs no Spark"},
}


def drill_files(config) -> list[Path]:
    chosen = config.getoption("--drills")
    if chosen:
        root = Path(chosen)
        root = root if root.is_absolute() else Path(config.invocation_params.dir) / root
        return sorted(root.glob("*.yaml")) if root.is_dir() else [root]
    return sorted((REPO / "scenarios").glob("*.yaml"))


def pytest_generate_tests(metafunc):
    if "drill_file" in metafunc.fixturenames:
        cannot = CANNOT.get(metafunc.config.getoption("--drill-replicator") or "", {})
        params = [pytest.param(f, id=f.stem, marks=[pytest.mark.skip(reason=cannot[f.name])] if f.name in cannot else [])
                  for f in drill_files(metafunc.config)]
        metafunc.parametrize("drill_file", params)
