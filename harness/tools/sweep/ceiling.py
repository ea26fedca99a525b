"""The machine's ceiling: what plain Kafka clients reach on this machine, the most any replicator could."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from mirrordrill.harness.tools.sweep.measure import load_avg
from mirrordrill.harness.tools.sweep.points import Ceiling

_PERF_LINE = re.compile(r"(\d+) records sent, ([\d.]+) records/sec")


def measure_ceiling(workdir: Path, record_size: int, records: int = 200_000, partitions: int = 3,
                    log: Callable[[str], None] = print, timeout_s: float = 300) -> Ceiling:
    """ProducerPerformance into a fresh target cluster, then a plain consumer draining a source.

    Both clusters are started here (the drill's are gone by then) and stopped on every exit
    path; ProducerPerformance runs from the broker jars and dies with the harness.
    """
    from confluent_kafka import Consumer
    from confluent_kafka.admin import NewTopic

    from mirrordrill.harness.lab.brokers.cluster import ClusterSpec
    from mirrordrill.harness.lab.environment import Environment, TopologySpec
    from mirrordrill.primitives.bootstrap import Bootstrap
    from mirrordrill.primitives.process import _die_with_parent
    boot = Bootstrap()
    java, classpath = boot.java(), os.pathsep.join(map(str, boot.jvm_classpath("broker")))
    spec = TopologySpec(clusters=(ClusterSpec("source"), ClusterSpec("target")))
    workdir = Path(workdir).resolve()
    shutil.rmtree(workdir, ignore_errors=True)  # a resumed sweep measures again on fresh clusters
    with Environment(spec, workdir, log=log) as env:  # entering starts it; leaving stops it
        for name in ("source", "target"):
            env.cluster(name).create_topics([NewTopic("ceiling", partitions, 1)])

        def perf(cluster: str) -> float:
            cmd = [java, "-Xmx512m", "-cp", classpath, "org.apache.kafka.tools.ProducerPerformance",
                   "--topic", "ceiling", "--num-records", str(records), "--record-size", str(record_size),
                   "--throughput", "-1", "--producer-props", f"bootstrap.servers={env.cluster(cluster).bootstrap}",
                   "acks=all"]
            # run() kills the tool on any exception (Ctrl-C, SIGTERM, the timeout)
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, cwd=workdir,
                                  preexec_fn=_die_with_parent)
            lines = list(_PERF_LINE.finditer(proc.stdout))
            if proc.returncode != 0 or not lines:
                raise RuntimeError(f"ProducerPerformance failed (exit {proc.returncode}): "
                                   f"{(proc.stdout + proc.stderr)[-1500:]}")
            return float(lines[-1].group(2))

        produce = perf("target")
        log(f"ceiling: ProducerPerformance into the target: {produce:,.0f} records/s of {record_size} B")
        perf("source")  # fill the source for the consumer
        c = Consumer({"bootstrap.servers": env.cluster("source").bootstrap, "group.id": "mirrordrill-ceiling",
                      "auto.offset.reset": "earliest", "enable.auto.commit": False})
        try:
            c.subscribe(["ceiling"])
            n, start, deadline = 0, None, time.monotonic() + timeout_s
            while n < records and time.monotonic() < deadline:
                for m in c.consume(10_000, timeout=1.0):
                    if m.error() is None:
                        start = start or time.monotonic()
                        n += 1
            consume = n / max(1e-3, time.monotonic() - start) if start else 0.0
        finally:
            c.close()
        log(f"ceiling: plain consumer on the source: {consume:,.0f} records/s")
    return Ceiling(round(produce, 1), round(consume, 1), record_size, load_avg())
