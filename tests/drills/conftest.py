"""Drill files as tests, at the short profile unless ``--profile full``.

Without ``--drills`` the suite runs every shipped drill in scenarios/ but the ones ``NOT_BY_DEFAULT``
names (each with why); ``--drills [DIR]`` runs every drill in DIR (default scenarios/).
``--drill-replicator`` runs them against another replicator (e.g. ``mirrormaker2``) than the one
each file names, with that replicator's own expectations from each file; a drill part that
replicator cannot do at all (``CANNOT``) is reported as skipped with the reason, never as passed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
# Short-profile wall times and the CI budget behind this choice: README, "Tests".
NOT_BY_DEFAULT = {
    # ~6 min alone (a Spark standalone master, two workers, executors registering ~2 min after the
    # driver): more than the rest of the CI budget allows; --drills scenarios/ runs it
    "spark-worker-kill.yaml": "a Spark standalone cluster's start-up alone takes minutes",
    # a capacity measurement for `mirrordrill sweep`, not a fault drill: its checks (nothing lost,
    # corrupted or unexpected, no faults) are the quickstart's without the blackhole
    "sweep-capacity.yaml": "a sweep's point (mirrordrill sweep), not a fault drill",
}
CANNOT = {
    "mirrormaker2": {"spark-worker-kill.yaml": "kills a Spark worker: MirrorMaker 2 runs no Spark"},
}


def drill_files(config) -> list[Path]:
    chosen = config.getoption("--drills")
    if chosen:
        root = Path(chosen)
        root = root if root.is_absolute() else Path(config.invocation_params.dir) / root
        return sorted(root.glob("*.yaml")) if root.is_dir() else [root]
    return [f for f in sorted((REPO / "scenarios").glob("*.yaml")) if f.name not in NOT_BY_DEFAULT]


def pytest_generate_tests(metafunc):
    if "drill_file" in metafunc.fixturenames:
        cannot = CANNOT.get(metafunc.config.getoption("--drill-replicator") or "", {})
        params = [pytest.param(f, id=f.stem, marks=[pytest.mark.skip(reason=cannot[f.name])] if f.name in cannot else [])
                  for f in drill_files(metafunc.config)]
        metafunc.parametrize("drill_file", params)
