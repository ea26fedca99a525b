"""Which MirrorMaker 2 node holds which task, and which task copies which partition.

Read from Connect's own internal topics on the target, where every herder of flow ``A->B`` keeps
its state (Kafka's Connect docs, "Distributed mode": the config and status storage topics):

* ``mm2-status.A.internal``: records keyed ``status-task-<connector>-<n>`` whose JSON value holds
  ``state`` and ``worker_id``; the newest record of a key is the task's state. In dedicated mode
  with internal REST (KIP-710) MM2 names each worker ``<host>:<port>/<A->B>`` after the URL it
  advertises, so the port tells the node.
* ``mm2-configs.A.internal``: records keyed ``task-<connector>-<n>`` whose value holds the task's
  ``properties``; ``task.assigned.partitions`` lists the source partitions a MirrorSourceTask copies.

Dedicated mode serves no public REST API (``GET /connectors/<c>/status`` is not there), so the
topics are the one source both the running drill and a finished one can read.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping

from mirrordrill.harness.drill.replicators.setup import ReplicationSetup
from mirrordrill.primitives.kafka.reading import read_topic

SOURCE_CONNECTOR = "MirrorSourceConnector"
ASSIGNED_PARTITIONS = "task.assigned.partitions"  # MirrorSourceTaskConfig's key
_STATUS_KEY = re.compile(r"status-task-(?P<task>.+-\d+)$")
_CONFIG_KEY = re.compile(r"task-(?P<task>.+-\d+)$")


def _latest_json(setup: ReplicationSetup, cluster: str, topic: str, key_pattern: re.Pattern[str]) -> dict[str, dict]:
    """The newest JSON value of each key matching ``key_pattern`` (its ``task`` group); tombstones delete."""
    c = setup.env.cluster(cluster)
    out: dict[str, dict] = {}
    records = read_topic(c.bootstrap, topic, security=c.security_config())
    for m in sorted(records, key=lambda m: (m.partition(), m.offset())):
        key = m.key()
        match = key_pattern.match(key.decode(errors="replace")) if key else None
        if match is None:
            continue
        value = m.value()
        if value is None:
            out.pop(match["task"], None)
            continue
        try:
            out[match["task"]] = json.loads(value)
        except ValueError:
            continue  # not a record this reader knows; Connect's own readers skip it too
    return out


def task_workers(setup: ReplicationSetup, source: str, target: str) -> dict[str, tuple[str, str]]:
    """Each task of flow ``source->target``: (state, worker_id), from the status topic on ``target``."""
    statuses = _latest_json(setup, target, f"mm2-status.{source}.internal", _STATUS_KEY)
    return {task: (str(v.get("state")), str(v.get("worker_id"))) for task, v in statuses.items()}


def source_task_partitions(setup: ReplicationSetup, source: str, target: str) -> dict[str, set[tuple[str, int]]]:
    """Each MirrorSourceTask of flow ``source->target``: the source partitions its configuration assigns."""
    configs = _latest_json(setup, target, f"mm2-configs.{source}.internal", _CONFIG_KEY)
    out: dict[str, set[tuple[str, int]]] = {}
    for task, value in configs.items():
        if not task.startswith(SOURCE_CONNECTOR + "-"):
            continue
        listed = str((value.get("properties") or {}).get(ASSIGNED_PARTITIONS, ""))
        parts = set()
        for item in filter(None, listed.split(",")):
            topic, _, partition = item.rpartition("-")  # TopicPartition.toString(): "<topic>-<n>"
            if partition.isdigit():
                parts.add((topic, int(partition)))
        out[task] = parts
    return out


def worker_port(worker_id: str) -> int | None:
    """The REST port in a dedicated-mode worker id (``127.0.0.1:41234/A->B``), None without one."""
    match = re.search(r":(\d+)(?:/|$)", worker_id)
    return int(match[1]) if match else None


def assignment(setup: ReplicationSetup, flows: list[tuple[str, str]],
               node_of_worker: Callable[[str, str], int | None]) -> dict[str, int | str]:
    """``"<A->B> <task>" -> node index`` for every task RUNNING now; any other state as its name."""
    out: dict[str, int | str] = {}
    for source, target in flows:
        for task, (state, worker) in sorted(task_workers(setup, source, target).items()):
            node = node_of_worker(f"{source}->{target}", worker)
            out[f"{source}->{target} {task}"] = node if state == "RUNNING" and node is not None else state
    return out


def copying_task(setup: ReplicationSetup, flows: list[tuple[str, str]], topic: str,
                 partition: int) -> tuple[str, str, str] | None:
    """(source, target, task) of the MirrorSourceTask assigned ``partition`` of ``topic``, or None."""
    for source, target in flows:
        for task, parts in source_task_partitions(setup, source, target).items():
            if (topic, partition) in parts:
                return source, target, task
    return None


def moved(before: Mapping[str, int | str], after: Mapping[str, int | str]) -> dict[str, list[int | str | None]]:
    """Tasks whose holder differs: task -> [before, after]."""
    return {t: [before.get(t), after.get(t)] for t in sorted(set(before) | set(after)) if before.get(t) != after.get(t)}
