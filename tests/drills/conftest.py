"""Drill files as tests, at the short profile unless ``--profile full``.

Without ``--drills`` the suite runs the drills ``BY_DEFAULT`` names (CI's budget: see README,
"Tests"); ``--drills [DIR]`` runs every drill in DIR (default scenarios/).
``--drill-replicator`` runs them against another replicator (e.g. ``mirrormaker2``) than the one
each file names, with that replicator's own expectations from each file; a drill part that
replicator cannot do at all (``CANNOT``) is reported as skipped with the reason, never as passed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
# What CI runs: the three drills CI ran before, and the planned and unplanned failovers (both
# passed at the short profile, README "Tests"). The other drills
# (failover-strategies: its new per-strategy bounds not yet seen passing; the topologies and
# the crash drill: not yet measured at the short profile) would take the suite past CI's
# budget until they are calibrated; --drills scenarios/ runs them all.
BY_DEFAULT = ("quickstart.yaml", "active-passive-failback.yaml", "leader-kill-rf3.yaml",
              "active-passive-planned-failover.yaml", "active-passive-unplanned-failover.yaml")
CANNOT = {
    "mirrormaker2": {"spark-worker-kill.yaml": "kills a Spark worker: MirrorMaker 2 runs no Spark"},
}


def drill_files(config) -> list[Path]:
    chosen = config.getoption("--drills")
    if chosen:
        root = Path(chosen)
        root = root if root.is_absolute() else Path(config.invocation_params.dir) / root
        return sorted(root.glob("*.yaml")) if root.is_dir() else [root]
    return [REPO / "scenarios" / name for name in BY_DEFAULT]


def pytest_generate_tests(metafunc):
    if "drill_file" in metafunc.fixturenames:
        cannot = CANNOT.get(metafunc.config.getoption("--drill-replicator") or "", {})
        params = [pytest.param(f, id=f.stem, marks=[pytest.mark.skip(reason=cannot[f.name])] if f.name in cannot else [])
                  for f in drill_files(metafunc.config)]
        metafunc.parametrize("drill_file", params)
