"""Reading MM2's own topics on a cluster: checkpoints and heartbeats.

Both adapters write (and MM2 itself writes) the same record formats (``replicator.mm2_format``),
so MirrorMaker 2 and the bundled replicator read their checkpoints through these functions.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from confluent_kafka import KafkaException

from mirrordrill.harness.drill.replicators.interface import MadeOnCluster
from mirrordrill.harness.drill.replicators.setup import FlowSpec, ReplicationSetup
from mirrordrill.primitives.kafka.reading import read_topic
from mirrordrill.replicator.mm2_format import Checkpoint, Heartbeat
from mirrordrill.replicator.policy import HEARTBEATS_TOPIC

if TYPE_CHECKING:
    from mirrordrill.harness.drill.schema import FlowDef
    from mirrordrill.replicator.policy import ReplicationPolicy


def read_heartbeats(setup: ReplicationSetup, cluster: str, topic: str = "heartbeats",
                    since_ms: int | None = None) -> list[Heartbeat]:
    """Heartbeats in ``topic`` on ``cluster`` (``heartbeats``, or ``<src>.heartbeats`` upstream ones)."""
    c = setup.env.cluster(cluster)
    records = read_topic(c.bootstrap, topic, since_ms=since_ms, security=c.security_config())
    out = []
    for m in records:
        key, value = m.key(), m.value()
        if key and value:
            out.append(Heartbeat.decode(key, value))
    return out


def read_checkpoints(setup: ReplicationSetup, source: str, target: str, group: str | None = None) -> list[Checkpoint]:
    """Every checkpoint of flow ``source->target`` on the target (of ``group``, or all), in emission order."""
    topic = setup.replication_policy(source).checkpoints_topic(source)
    c = setup.env.cluster(target)
    records = read_topic(c.bootstrap, topic, security=c.security_config())
    out = []
    for m in sorted(records, key=lambda m: (m.partition(), m.offset())):
        key, value, offset = m.key(), m.value(), m.offset()
        if not key or not value:
            continue
        cp = Checkpoint.decode(key, value, -1 if offset is None else offset)
        if group is None or cp.group == group:
            out.append(cp)
    return out


def latest_checkpoints(setup: ReplicationSetup, group: str, source: str,
                       target: str) -> dict[tuple[str, int], Checkpoint]:
    """The group's latest checkpoint per remote partition (as named on the target)."""
    # a group's checkpoints of one partition share a key, so one partition of the topic: the last read is the newest
    return {(cp.topic, cp.partition): cp for cp in read_checkpoints(setup, source, target, group)}


def upstream_heartbeat_age(setup: ReplicationSetup, flow: FlowSpec) -> str | None:
    """How old the newest upstream heartbeat of the flow on its target is (None: none in the last minute)."""
    topic = setup.remote_topic(flow.source, "heartbeats")
    try:
        newest = max((h.timestamp_ms for h in read_heartbeats(setup, flow.target, topic,
                                                              since_ms=int(time.time() * 1000) - 60_000)),
                     default=None)
    except (KafkaException, TimeoutError):
        return None
    if newest is None:
        return None
    return f"{flow.name}: newest upstream heartbeat on {flow.target} is {time.time() * 1000 - newest:.0f} ms old"


def mm2_internal_topics(flow: FlowDef, policy: ReplicationPolicy) -> list[MadeOnCluster]:
    """The topics MirrorMaker 2 makes for a flow besides its copies and checkpoints."""
    syncs_on = flow.target if flow.settings.get("offset-syncs.topic.location") == "target" else flow.source
    # its heartbeat connector creates it at start even with emission off (no record is written)
    return [MadeOnCluster(flow.target, HEARTBEATS_TOPIC, "topic", "MirrorMaker 2's heartbeat connector, if absent; "
                                                                  "never written", if_absent=True),
            *(MadeOnCluster(flow.target, f"mm2-{store}.{flow.source}.internal", "topic",
                            "MirrorMaker 2's Connect worker state") for store in ("configs", "offsets", "status")),
            MadeOnCluster(syncs_on, policy.offset_syncs_topic(flow.target), "topic", "MirrorMaker 2's offset syncs")]
