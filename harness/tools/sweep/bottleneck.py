"""What held a sweep point back: the load, the replicator's CPU, the WAN's bandwidth or the target.

Each verdict is read from figures the point measured and names the figure, so a team can check it
against its own limits: a recommendation that said only "the knee is at 4 streams" would hide
whether more streams, a wider link or a faster target cluster is what buys the next step.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from mirrordrill.harness.tools.sweep.points import Ceiling, SweepPoint
from mirrordrill.primitives.cpu import MACHINE

# A resource used at this share of what it offers is taken as the limit. Below 100% because every
# figure is a mean over the load's seconds: a link or a core that is full in most seconds averages
# a little under full.
SATURATED_SHARE = 0.85


@dataclass(frozen=True)
class Bottleneck:
    """One point's limiting resource (``none`` when the flow kept up) and the figures that say so."""

    kind: str  # load | replicator CPU | machine CPU | WAN bandwidth | target | none | unknown
    evidence: str

    def __str__(self) -> str:
        return f"{self.kind} ({self.evidence})"


def _share(used: float | None, offered: float | None) -> float | None:
    return used / offered if used is not None and offered else None


def find_bottleneck(pt: SweepPoint, ceiling: Ceiling | None) -> Bottleneck:
    """The resource that bounded ``pt``: the load first (then nothing else was tested), else the
    most used of replicator CPU, WAN bandwidth and the target's produce ceiling at or above
    ``SATURATED_SHARE``; ``none`` when the flow kept up and nothing was near full."""
    if pt.load_short:
        return Bottleneck("load", f"the load produced {pt.produced_records_s:,.0f} of the {pt.asked_records_s:,.0f} "
                                  "records/s asked")
    capacity = pt.capacity
    wan_kb_s = (pt.wan_bytes_per_record * capacity / 1000
                if pt.wan_bytes_per_record is not None and capacity is not None else None)
    cpu = _share(pt.replicator_cpu_cores, pt.replicator_cores_available)
    wan = _share(wan_kb_s, pt.wan_bandwidth_kb_s)
    target = _share(capacity, ceiling.produce_records_s if ceiling else None)
    candidates = []
    if cpu is not None:
        candidates.append((cpu, "replicator CPU", f"{pt.replicator_cpu_cores:g} of {pt.replicator_cores_available:g} "
                                                  f"cores busy, {cpu:.0%}"))
    if wan is not None and wan_kb_s is not None:
        # Toxiproxy's bandwidth toxic limits each connection: a flow over several carries more than the rate
        candidates.append((wan, "WAN bandwidth", f"{wan_kb_s:,.0f} KB/s carried, {wan:.0%} of the link's "
                                                 f"{pt.wan_bandwidth_kb_s:,.0f} KB/s per connection"))
    if target is not None and capacity is not None and ceiling is not None:
        candidates.append((target, "target", f"{capacity:,.0f} records/s is {target:.0%} of the "
                                             f"{ceiling.produce_records_s:,.0f}/s ProducerPerformance reached into "
                                             "a target"))
    machine = machine_cpu(pt)
    if machine is not None:
        candidates.append(machine)
    full = [c for c in candidates if c[0] >= SATURATED_SHARE]
    if full:
        _, kind, evidence = max(full, key=lambda c: c[0])
        return Bottleneck(kind, evidence)
    seen = "; ".join(e for _, _, e in candidates) or "no CPU, WAN or target figure measured"
    if pt.lag_bounded:
        return Bottleneck("none", f"the flow kept up with the offered {pt.produced_records_s or 0:,.0f} records/s; "
                                  f"{seen}")
    return Bottleneck("unknown", f"lag grew with nothing measured near full: {seen}")


def machine_cpu(pt: SweepPoint) -> tuple[float, str, str] | None:
    """The machine's cores busy while the point's backlog drained, as a share of all of them, and
    who kept them busy: on one machine the brokers, the network and the checker share the cores
    with the replicator, and a full machine bounds it however little it used itself."""
    cores = pt.backlog_cores
    if not cores or MACHINE not in cores or not pt.machine_cores:
        return None
    busy = cores[MACHINE]
    roles = sorted(((v, role) for role, v in cores.items() if role != MACHINE), reverse=True)
    split = ", ".join(f"{role} {v:.2f}" for v, role in roles)
    return busy / pt.machine_cores, "machine CPU", (f"{busy:.2f} of the machine's {pt.machine_cores} cores busy, "
                                                   f"{busy / pt.machine_cores:.0%}: {split}")


def replicator_cores(drill: dict[str, Any], spark_master: str | None = None) -> float:
    """Cores the point's replicator could keep busy: its Spark executors' cores on a cluster, N of
    ``local[N]``, else the machine's (MirrorMaker 2, ``local``); never more than the machine has."""
    machine = float(os.cpu_count() or 1)
    repl = drill.get("replication") or {}
    if repl.get("replicator", "pyspark") != "pyspark":
        return machine
    spark = repl.get("spark") or {}
    master = str(spark_master or spark.get("master", "local")).strip()
    if master.startswith("local[") and master[6:-1].isdigit():
        return min(machine, float(master[6:-1]))
    if master.startswith("local"):
        return machine
    return min(machine, float(int(spark.get("executors", 2)) * int(spark.get("executor_cores", 2))))


def link_bandwidth_kb_s(drill: dict[str, Any]) -> float | None:
    """The configured bandwidth (KB/s) of the link between the first flow's ends; None when unlimited."""
    flow = drill["replication"]["flows"][0]
    ends = {flow["source"], flow["target"]}
    for link in drill.get("links") or []:
        if set(link.get("between", ())) == ends and link.get("bandwidth_kb_s"):
            return float(link["bandwidth_kb_s"])
    return None
