"""What a drill may do to an existing cluster, checked before anything starts.

A drill touches only what it owns there: topics and consumer groups whose names start with the
drill's ``owned_prefix``, and replication aliases (the cluster names, which prefix remote and
internal topics) that start with it too, so nothing it creates meets a team's own topics,
groups or MirrorMaker 2. What would hurt the team's brokers (kill, pause, wipe) is refused
with the reason; faults on the paths the harness owns (its proxies, its replicator) stay.
"""

from __future__ import annotations

from typing import Callable

from harness.scenario.model import (AddPartitions, BrokerStep, ClusterStep, CreateTopic, Failover, Scenario,
                                    SetTopicConfig)

Report = Callable[[tuple, str], None]  # (path in the drill file, message)

# Replicator settings a drill with existing clusters runs with, and why (the plan prints them).
FORCED_REPLICATOR_SETTINGS = {
    "sync.topic.acls.enabled": ("false", "the drill changes no ACL on a team's cluster"),
    "emit.heartbeats.enabled": ("false", "'heartbeats' is one fixed topic name that the team's own MirrorMaker 2 "
                                         "also writes and reads"),
}


def existing_cluster_problems(s: Scenario, bad: Report) -> None:
    """Every rule of a drill with existing clusters; ``bad`` is told each problem at its place."""
    existing = s.existing_clusters()
    if not existing:
        if s.owned_prefix is not None:
            bad(("owned_prefix",), "owned_prefix applies to drills with existing clusters (clusters.NAME.existing); "
                                   "remove it, or declare an existing cluster")
        return
    p = s.owned_prefix
    if p is None:
        bad(("owned_prefix",), f"the drill uses existing cluster(s) {sorted(existing)}, so it needs owned_prefix: "
                               "every topic, group and replication alias it puts there starts with it (e.g. "
                               f"owned_prefix: md-{s.name.lower()[:20]}-), and cleanup --prefix removes them")
        return
    if s.replication.mirrormaker2.exactly_once:
        bad(("replication", "mirrormaker2", "exactly_once"),
            "MirrorMaker 2's exactly-once mode writes transactions on the target, and plan does not yet list the "
            "TransactionalId permissions that needs on an existing cluster: remove exactly_once for this drill")
    for name in s.clusters:
        # Cluster names are the replication aliases: remote topics are '<alias>.<topic>', checkpoints
        # '<alias>.checkpoints.internal'. An alias the team's MM2 also uses would mix the two.
        if not name.startswith(p):
            bad(("clusters", name), f"cluster {name!r} is also the replication alias written into remote and internal "
                                    f"topic names on existing clusters: name it {p}{name}")
    for i, t in enumerate(s.topics):
        if t.cluster in existing and not t.name.startswith(p):
            bad(("topics", i, "name"), f"topic {t.name!r} would be created on the existing cluster {t.cluster}: "
                                       f"name it {p}{t.name} (owned_prefix)")
    for i, c in enumerate(s.load.consumers):
        if not c.group.startswith(p):
            bad(("load", "consumers", i, "group"), f"consumer group {c.group!r} commits offsets on the clusters it "
                                                   f"runs on or fails over to: name it {p}{c.group} (owned_prefix)")
    for i, f in enumerate(s.replication.flows):
        if f.source in existing:
            for j, pattern in enumerate(f.topics):
                if not pattern.startswith(p):
                    bad(("replication", "flows", i, "topics", j),
                        f"pattern {pattern!r} could replicate the team's own topics on {f.source}: every pattern of a "
                        f"flow out of an existing cluster starts with {p!r} (e.g. {p}orders or {p}.*)")
    _timeline(s, existing, p, bad)


def _timeline(s: Scenario, existing: dict, p: str, bad: Report) -> None:
    for i, step in enumerate(s.timeline):
        at = ("timeline", i)
        if isinstance(step, (BrokerStep, ClusterStep)) and step.cluster in existing:
            bad(at + ("do",), f"{step.do} on {step.cluster} is refused: it is an existing cluster, whose brokers the "
                              "harness does not own; cut the harness's own paths instead (blackhole, partition, "
                              "reset_connections on its links) or kill the replicator")
        elif isinstance(step, Failover) and step.do == "unplanned_failover" and step.how == "kill" \
                and step.source in existing:
            bad(at + ("how",), f"how: kill would SIGKILL the brokers of {step.source}, an existing cluster; use "
                               "how: partition, which cuts the harness's proxies to it")
        elif isinstance(step, (CreateTopic, AddPartitions, SetTopicConfig)) and step.cluster in existing \
                and not step.topic.startswith(p):
            bad(at + ("topic",), f"{step.do} on topic {step.topic!r} of the existing cluster {step.cluster}: the drill "
                                 f"changes only its own topics, named {p}…")
