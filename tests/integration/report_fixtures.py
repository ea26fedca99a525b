"""A tiny real drill, run once per test session and shared by the report tests (no tests here).

Report tests need real histories (lag, latency, throughput of a real replicator over a real
WAN fault), not hand-written JSON; one 20-second MirrorMaker 2 drill (~80 s with start-up)
gives them all. The folder doubles as the cache: a second fixture instance reuses it.
"""

from __future__ import annotations

import fcntl
from pathlib import Path

TINY_DRILL = """\
name: tiny-report
description: primary -> dr, 100 records/s for 20 s, with a 5 s blackhole of the WAN.
clusters:
  primary: {brokers: 1}
  dr: {brokers: 1}
links:
  - between: [primary, dr]
    latency_ms: 10
topics:
  - {name: orders, cluster: primary, partitions: 2}
replication:
  replicator: mirrormaker2
  flows:
    - source: primary
      target: dr
      topics: [orders]
load:
  producers:
    - {name: orders, cluster: primary, topics: [orders], rate: 100, record_size: {fixed: 512}}
duration: 20s
drain_timeout: 60s
timeline:
  - at: 6s
    do: blackhole
    link: [primary, dr]
  - at: 11s
    do: heal
    link: [primary, dr]
# the report tests need a run, not a tight bound: MM2 is at-least-once across the blackhole
invariants:
  duplicates: 1000
expectations:
  lost: 0
  corrupted: 0
"""


def tiny_run_dir(base: Path, artifacts) -> Path:
    """The run folder of the tiny drill under ``base`` (run now unless an earlier call did), with
    its Allure results written the way ``mirrordrill run`` writes them."""
    from mirrordrill.harness.cli.commands import run_drill
    from mirrordrill.harness.drill.validate import load_scenario
    base.mkdir(parents=True, exist_ok=True)
    out = base / "tiny-report-run"
    with open(base / ".tiny-report.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (out / "summary.json").exists():
            scenario_file = base / "tiny-report.yaml"
            scenario_file.write_text(TINY_DRILL)
            run_drill(load_scenario(scenario_file), scenario_file, out, artifacts=artifacts)
    return out
