"""What a drill would create or change on each existing cluster, and the permissions that takes.

Computed from the drill file alone (no cluster): ``mirrordrill plan`` prints it, checks it against
the cluster, and ``cleanup`` removes what matches it. Every name starts with the drill's
``owned_prefix``, or holds one of its replication aliases (which start with it), so
``cleanup FILE`` finds all of it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from mirrordrill.harness.drill.existing_checks import FORCED_REPLICATOR_SETTINGS
from mirrordrill.harness.drill.replicators import replicator_class
from mirrordrill.harness.drill.schema import Scenario
from mirrordrill.harness.drill.schema_timeline import AddPartitions, CreateTopic, Failover, SetTopicConfig
from mirrordrill.replicator.policy import HEARTBEATS_TOPIC, policy_from_name


@dataclass(frozen=True)
class TopicChange:
    name: str
    action: str  # create | create (remote copy) | create (internal) | alter config | add partitions
    detail: str = ""


@dataclass(frozen=True)
class Permission:
    """One ACL the drill's principal needs: operations on a resource (a literal name or a prefix)."""

    resource: str  # TOPIC | GROUP | CLUSTER
    pattern: str  # LITERAL | PREFIXED
    name: str
    operations: tuple[str, ...]
    why: str

    def describe(self) -> str:
        target = "cluster" if self.resource == "CLUSTER" else f"{self.resource.lower()} {self.pattern.lower()} {self.name!r}"
        return f"{', '.join(self.operations)} on {target} ({self.why})"


@dataclass
class ClusterFootprint:
    """Everything a drill would touch on one existing cluster."""

    cluster: str
    prefix: str
    topics: list[TopicChange] = field(default_factory=list)
    groups: list[str] = field(default_factory=list)
    permissions: list[Permission] = field(default_factory=list)
    replicator_settings: dict[str, tuple[str, str]] = field(default_factory=dict)
    acls_changed: tuple[str, ...] = ()  # none: ACL sync is off

    @property
    def created_topics(self) -> list[str]:
        return sorted({t.name for t in self.topics if t.action.startswith("create")})

    def owns(self, name: str, aliases: frozenset[str]) -> bool:
        """True for a name the drill would create here (by prefix, or an MM2 internal topic of its aliases)."""
        return name.startswith(self.prefix) or any(re.fullmatch(rf"mm2-[a-z-]+\.{re.escape(a)}\.internal", name)
                                                   for a in aliases)


def footprints(s: Scenario, replicator: str | None = None) -> dict[str, ClusterFootprint]:
    """The footprint on every existing cluster of ``s`` (validated, with an ``owned_prefix``)."""
    kind = replicator or s.replication.replicator
    prefix = s.owned_prefix or ""
    out = {name: ClusterFootprint(name, prefix) for name in s.existing_clusters()}
    for t in s.topics:
        if t.cluster in out:
            out[t.cluster].topics.append(TopicChange(t.name, "create", f"{t.partitions} partition(s), replication "
                                                     f"factor {t.replication_factor or 'broker default'}"
                                                     + (f", config {t.config}" if t.config else "")))
    for step in s.timeline:
        if isinstance(step, CreateTopic) and step.cluster in out:
            out[step.cluster].topics.append(TopicChange(step.topic, "create", f"timeline: {step.partitions} partition(s)"))
        elif isinstance(step, AddPartitions) and step.cluster in out:
            out[step.cluster].topics.append(TopicChange(step.topic, "add partitions", f"to {step.partitions}"))
        elif isinstance(step, SetTopicConfig) and step.cluster in out:
            out[step.cluster].topics.append(TopicChange(step.topic, "alter config", str(step.config)))
    _replication(s, kind, out)
    _groups(s, out)
    for fp in out.values():
        fp.replicator_settings = dict(FORCED_REPLICATOR_SETTINGS)
        fp.permissions = _permissions(fp, kind, s)
    return out


def _declared_on(s: Scenario, cluster: str) -> list[str]:
    return [t.name for t in s.topics if t.cluster == cluster]


def _replication(s: Scenario, kind: str, out: dict[str, ClusterFootprint]) -> None:
    r = s.replication
    adapter = replicator_class(kind)
    for f in r.flows:
        policy = policy_from_name(r.policy, r.separator, source_cluster_alias=f.source)
        if f.target in out:
            for topic in _declared_on(s, f.source):
                if any(re.fullmatch(p, topic) for p in f.topics):
                    out[f.target].topics.append(TopicChange(policy.format_remote_topic(f.source, topic),
                                                            "create (remote copy)", f"replica of {topic} on {f.source}"))
        for made in adapter.made_for_flow(f, policy):  # the replicator's own topics and groups
            fp = out.get(made.cluster)
            if fp is None:
                continue
            if made.what == "group":
                fp.groups.append(made.name)
            elif not (made.if_absent and any(t.name == made.name for t in fp.topics)):
                fp.topics.append(TopicChange(made.name, "create (internal)", made.why))


def _groups(s: Scenario, out: dict[str, ClusterFootprint]) -> None:
    for c in s.load.consumers:
        places = {c.cluster} | {step.target for step in s.timeline
                                if isinstance(step, Failover) and step.source == c.cluster}
        for cluster in places & set(out):
            out[cluster].groups.append(c.group)


def _permissions(fp: ClusterFootprint, kind: str, s: Scenario) -> list[Permission]:
    p = fp.prefix
    # Every existing cluster is written (load or replica) and read (consumers, replicator, the checker).
    topic_ops: tuple[str, ...] = ("CREATE", "DESCRIBE", "DESCRIBE_CONFIGS", "READ", "WRITE", "DELETE")
    if any(t.action == "alter config" for t in fp.topics) or s.replication.flows:
        topic_ops += ("ALTER_CONFIGS",)  # set_topic_config, and the replicator's topic-config sync
    out = [Permission("TOPIC", "PREFIXED", p, topic_ops, "the drill's topics, remote copies and checkpoints; "
                                                         "DELETE for cleanup and failback"),
           Permission("GROUP", "PREFIXED", p, ("READ", "DESCRIBE", "DELETE"),
                      "the drill's consumer groups and their translated offsets; DELETE for cleanup"),
           Permission("CLUSTER", "LITERAL", "kafka-cluster", ("DESCRIBE",),
                      "metadata and the read-only checks of plan (describe cluster, ACLs)")]
    internal = sorted({t.name for t in fp.topics if t.name.startswith("mm2-") or t.name == HEARTBEATS_TOPIC})
    for name in internal:
        out.append(Permission("TOPIC", "LITERAL", name, ("CREATE", "DESCRIBE", "READ", "WRITE", "DELETE"),
                              "MirrorMaker 2 internal topic of the drill's alias" if name != HEARTBEATS_TOPIC else
                              "MirrorMaker 2's heartbeat connector creates it at start; deleted at the end only if "
                              "the drill created it"))
    return out
