"""Drill files as tests: ``pytest --drills [DIR]`` runs every drill in DIR (default scenarios/).

Without ``--drills`` the suite still runs the drills CI guards (``CI_DRILLS``), so a change
that breaks the quickstart or a failover fails the build. ``--drill-replicator`` runs them
against another replicator (e.g. ``mirrormaker2``) than the one each file names.
"""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# the failback drill covers an unplanned failover, a planned one (its switch back), the stable
# address and the failback itself; leader-kill-rf3 a replicated cluster losing a partition's
# leader; the other drills run with --drills
CI_DRILLS = ("quickstart.yaml", "active-passive-failback.yaml", "leader-kill-rf3.yaml")


def drill_files(config) -> list[Path]:
    chosen = config.getoption("--drills")
    if chosen:
        root = Path(chosen)
        root = root if root.is_absolute() else Path(config.invocation_params.dir) / root
        return sorted(root.glob("*.yaml")) if root.is_dir() else [root]
    return [REPO / "scenarios" / name for name in CI_DRILLS if (REPO / "scenarios" / name).exists()]


def pytest_generate_tests(metafunc):
    if "drill_file" in metafunc.fixturenames:
        files = drill_files(metafunc.config)
        metafunc.parametrize("drill_file", files, ids=[f.stem for f in files])
