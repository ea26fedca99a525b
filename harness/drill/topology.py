"""What a scenario means for the environment, the replicator and the checker."""

from __future__ import annotations

from dataclasses import dataclass

from mirrordrill.harness.drill.existing_checks import FORCED_REPLICATOR_SETTINGS
from mirrordrill.harness.drill.replicators.setup import FlowSpec
from mirrordrill.harness.drill.schema import FlowDef, Scenario
from mirrordrill.harness.drill.schema_timeline import CreateTopic, Failover
from mirrordrill.harness.drill.topic_names import flow_selects, remote_topic_name
from mirrordrill.harness.lab.brokers.cluster import ClusterSpec
from mirrordrill.harness.lab.environment import TopologySpec
from mirrordrill.harness.lab.network.wan import LinkConditions
from mirrordrill.replicator.filters import DEFAULT_TOPICS_EXCLUDE


def topology_of(s: Scenario) -> TopologySpec:
    clusters = tuple(ClusterSpec(name, brokers=c.brokers, heap_mb=c.heap_mb, broker_jit=c.broker_jit,
                                 broker_properties={k: str(v).lower() if isinstance(v, bool) else str(v)
                                                    for k, v in c.broker_properties.items()},
                                 security=c.security, existing=c.existing)
                     for name, c in s.clusters.items())
    links = None if s.links is None else tuple(link.between for link in s.links)
    return TopologySpec(clusters=clusters, links=links)


def link_conditions_of(s: Scenario) -> dict[tuple[str, str], LinkConditions]:
    return {link.between: LinkConditions(latency_ms=link.latency_ms, jitter_ms=link.jitter_ms,
                                                bandwidth_kb_s=link.bandwidth_kb_s) for link in s.links or ()}


def flow_specs(s: Scenario) -> list[FlowSpec]:
    # On existing clusters the replicator must not touch a team's ACLs or its 'heartbeats' topic.
    forced = {k: v for k, (v, _why) in FORCED_REPLICATOR_SETTINGS.items()} if s.existing_clusters() else {}
    return [FlowSpec(f.source, f.target, topics=f.topics,
                     topics_exclude=f.topics_exclude if f.topics_exclude is not None else DEFAULT_TOPICS_EXCLUDE,
                     placement=f.placement, settings={**f.settings, **forced}) for f in s.replication.flows]


@dataclass(frozen=True)
class CheckPair:
    """Records produced on ``origin`` that must arrive on ``target`` under these topic names."""

    origin: str
    target: str
    topic_map: dict[str, str]  # remote topic on target -> origin topic
    via: tuple[str, ...] = ()  # clusters in between, for forwarding chains

    @property
    def name(self) -> str:
        return f"{self.origin}->{self.target}" + (f" (via {', '.join(self.via)})" if self.via else "")


def check_pairs(s: Scenario, origin_topics: dict[str, set[str]]) -> list[CheckPair]:
    """Every (origin cluster, target cluster) the flows connect, following chains, as MM2 names topics.

    ``origin_topics``: per cluster, the topics load is produced into there.
    """
    flows: dict[str, list[FlowDef]] = {}
    for f in s.replication.flows:
        flows.setdefault(f.source, []).append(f)
    pairs: dict[tuple[str, str], dict] = {}
    for origin, topics in origin_topics.items():
        # (cluster the records are on, their topic name there, the origin topic, clusters passed)
        frontier: list[tuple[str, str, str, tuple[str, ...]]] = [(origin, t, t, (origin,)) for t in sorted(topics)]
        while frontier:
            cluster, name, origin_topic, path = frontier.pop()
            for f in flows.get(cluster, []):
                if f.target in path:
                    continue  # never sent back to a cluster the records came from
                if not flow_selects(f, name):
                    continue
                remote = remote_topic_name(s, cluster, name)
                entry = pairs.setdefault((origin, f.target), {"map": {}, "via": path[1:]})
                entry["map"][remote] = origin_topic
                frontier.append((f.target, remote, origin_topic, path + (f.target,)))
    return [CheckPair(o, t, e["map"], tuple(e["via"])) for (o, t), e in sorted(pairs.items())]


def origin_topics(s: Scenario) -> dict[str, set[str]]:
    """Per cluster, the topics records originate in: declared, created by a step, or written after a failover."""
    out: dict[str, set[str]] = {c: set() for c in s.clusters}
    for t in s.topics:
        out[t.cluster].add(t.name)
    for st in s.timeline:
        if isinstance(st, CreateTopic):
            out[st.cluster].add(st.topic)
        # producers that fail over write the same topic names on the DR cluster
        if isinstance(st, Failover):
            out[st.target] |= {t for p in s.load.producers if p.cluster == st.source
                               for t in (p.topics if isinstance(p.topics, list) else list(p.topics))}
    return out
