"""CPU seconds of a Compose project's containers, read from their cgroups (the sweep's meter).

Processes in a container are not found by working folder on the host, so the sweep adds
what the engine's cgroups say: ``cpuacct.usage`` (cgroup v1) or ``cpu.stat`` (v2) of each
running container of the project whose role is one of ``roles``. A container that stopped
keeps its last reading in the meter.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

from mirrordrill.harness.lab.compose.spec import DRILL_LABEL, ROLE_LABEL

CGROUP = Path("/sys/fs/cgroup")


def cgroup_cpu_seconds(container_id: str, root: Path = CGROUP) -> float | None:
    """CPU seconds of one container (full id), whichever cgroup layout and driver the engine uses."""
    v1 = [f"cpuacct/docker/{container_id}/cpuacct.usage", f"cpu,cpuacct/docker/{container_id}/cpuacct.usage",
          f"cpuacct/system.slice/docker-{container_id}.scope/cpuacct.usage"]
    for rel in v1:
        p = root / rel
        if p.exists():
            return int(p.read_text().strip()) / 1e9
    for rel in (f"system.slice/docker-{container_id}.scope/cpu.stat", f"docker/{container_id}/cpu.stat"):
        p = root / rel
        if p.exists():
            for line in p.read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "usage_usec":
                    return int(value) / 1e6
    return None


def container_cpu(engine, project: str, roles: Iterable[str]) -> Callable[[], dict[str, float]]:
    """A ``CpuMeter`` extra: container id -> CPU seconds, for the project's containers of these roles."""
    roles = tuple(roles)

    def read() -> dict[str, float]:
        out: dict[str, float] = {}
        for role in roles:
            proc = engine.run(["ps", "-q", "--no-trunc", "--filter", f"label={DRILL_LABEL}={project}",
                               "--filter", f"label={ROLE_LABEL}={role}"], check=False, timeout=20)
            for cid in proc.stdout.split():
                cpu = cgroup_cpu_seconds(cid)
                if cpu is not None:
                    out[cid] = cpu
        return out
    return read
