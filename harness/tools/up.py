"""What ``mirrordrill up`` starts: named plain clusters, or the clusters and links of a drill file."""

from __future__ import annotations

from pathlib import Path

from mirrordrill.harness.drill.topology import topology_of
from mirrordrill.harness.drill.validate import ScenarioInvalid, load_scenario
from mirrordrill.harness.lab.brokers.cluster import ClusterSpec
from mirrordrill.harness.lab.environment import TopologySpec
from mirrordrill.primitives.config_refs import RefResolver


def up_topology(file: str | None, clusters: str | None, brokers: int) -> tuple[TopologySpec, RefResolver]:
    """The topology to start and the resolver of its secret references; ValueError with the fix."""
    if file is None:
        names = [n.strip() for n in (clusters or "primary,dr").split(",") if n.strip()]
        return TopologySpec(clusters=tuple(ClusterSpec(n, brokers=brokers) for n in names)), RefResolver()
    if clusters is not None:
        raise ValueError("give a drill file or --clusters, not both (the file names its clusters)")
    path = Path(file)
    try:
        scenario = load_scenario(path)
    except ScenarioInvalid as err:
        raise ValueError(str(err)) from None
    return topology_of(scenario), RefResolver(base_dir=path.resolve().parent)
