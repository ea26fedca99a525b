"""Kafka's topic-name rules, applied before anything starts to every topic a drill makes.

The rules are those of ``org.apache.kafka.common.internals.Topic``: only ``[a-zA-Z0-9._-]``, at
most 249 characters, not ``.`` or ``..``; and two names that differ only by ``.`` against ``_``
collide (Kafka's metric names cannot tell them apart), so a broker refuses to create the second.
A drill makes topics three ways: it declares them (``topics:``), a step creates them
(``create_topic``), and its flows create the remote topics the replication policy names
(``<source><separator><topic>`` by default; ``a.b.topic`` along a chain a -> b -> c).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from mirrordrill.harness.drill.schema import FlowDef, Scenario
from mirrordrill.harness.drill.schema_timeline import CreateTopic, Failover
from mirrordrill.replicator.filters import DEFAULT_TOPICS_EXCLUDE, TopicFilter
from mirrordrill.replicator.policy import policy_from_name

Report = Callable[[tuple, str], None]  # (path in the drill file, message)

MAX_TOPIC_LENGTH = 249
_ILLEGAL = re.compile(r"[^a-zA-Z0-9._-]")
_LEGAL_WORDS = "letters, digits, '.', '_' and '-'"


@dataclass(frozen=True)
class TopicName:
    """One topic a drill makes on one cluster, where the drill file makes it, and what it is called there."""

    cluster: str
    name: str
    path: tuple
    what: str  # "topic 'orders'" or "remote topic 'primary.orders' (flow primary->dr, from 'orders')"
    fix: str


def topic_name_rule(name: str) -> str | None:
    """The rule of Kafka's that ``name`` breaks, in words, or None."""
    if not name:
        return "is empty"
    if name in (".", ".."):
        return "is '.' or '..', which Kafka refuses as a topic name"
    if len(name) > MAX_TOPIC_LENGTH:
        return f"is {len(name)} characters; Kafka allows at most {MAX_TOPIC_LENGTH}"
    illegal = sorted(set(_ILLEGAL.findall(name)))
    if illegal:
        return f"has {', '.join(repr(c) for c in illegal)}; Kafka allows only {_LEGAL_WORDS}"
    return None


def _made_locally(s: Scenario) -> list[TopicName]:
    """The topics the drill file declares or a create_topic step creates."""
    fix = f"rename it with only {_LEGAL_WORDS}, at most {MAX_TOPIC_LENGTH} characters"
    out = [TopicName(t.cluster, t.name, ("topics", i, "name"), f"topic {t.name!r}", fix) for i, t in enumerate(s.topics)]
    out += [TopicName(st.cluster, st.topic, ("timeline", i, "topic"), f"topic {st.topic!r}", fix)
            for i, st in enumerate(s.timeline) if isinstance(st, CreateTopic)]
    return out


def _remote(s: Scenario, local: list[TopicName]) -> list[TopicName]:
    """The remote topics the flows create, following chains as the replicators do (never back
    to a cluster the records came from)."""
    flows = list(enumerate(s.replication.flows))
    out: list[TopicName] = []
    frontier: list[tuple[str, str, tuple[str, ...]]] = [(t.cluster, t.name, (t.cluster,)) for t in local
                                                       if topic_name_rule(t.name) is None]
    # producers that fail over write the same names on the new primary, which flows from there copy
    frontier += [(st.target, name, (st.target,)) for st in s.timeline if isinstance(st, Failover)
                 for p in s.load.producers if p.cluster == st.source for name in p.topics
                 if topic_name_rule(name) is None]
    seen = set()
    while frontier:
        cluster, name, path = frontier.pop()
        for i, f in flows:
            if f.source != cluster or f.target in path or (key := (i, name)) in seen:
                continue
            seen.add(key)
            try:
                if not flow_selects(f, name):
                    continue
            except re.error:
                continue  # a pattern that does not compile is reported with the flow's settings
            remote = remote_topic_name(s, cluster, name)
            out.append(TopicName(f.target, remote, ("replication", "flows", i),
                                 f"remote topic {remote!r} (flow {f.source}->{f.target}, from {name!r})",
                                 "shorten the topic or cluster names, or leave the topic out of this flow's topics"))
            frontier.append((f.target, remote, path + (f.target,)))
    return out


def _collisions(names: list[TopicName], bad: Report) -> None:
    first: dict[tuple[str, str], TopicName] = {}
    for t in names:
        other = first.setdefault((t.cluster, t.name.replace(".", "_")), t)
        if other.name != t.name:
            bad(t.path, f"{t.what} collides on {t.cluster} with {other.what}: Kafka treats '.' and '_' alike in "
                        "topic names, so it refuses to create the second; rename one")


def topic_name_problems(s: Scenario, bad: Report) -> None:
    """Every topic the drill would make that Kafka refuses, and every pair that collides."""
    local = _made_locally(s)
    names = list(local)
    separator = s.replication.separator
    rule = topic_name_rule(f"a{separator}b") if separator else None  # an empty one: preflight says so
    if rule:
        bad(("replication", "separator"), f"separator {separator!r} goes into every remote topic's name, which "
                                          f"then {rule}; use '.' (the default), '_' or '-'")
    else:
        names += _remote(s, local)
    legal = []
    for t in names:
        if rule := topic_name_rule(t.name):
            bad(t.path, f"{t.what} {rule}; {t.fix}")
        else:
            legal.append(t)
    _collisions(legal, bad)


def flow_selects(flow: FlowDef, topic: str) -> bool:
    """Whether ``flow`` copies ``topic``: its ``topics`` patterns, less its excludes (MM2's default
    when it gives none). Raises ``re.error`` for a pattern that does not compile."""
    exclude = flow.topics_exclude if flow.topics_exclude is not None else list(DEFAULT_TOPICS_EXCLUDE)
    return TopicFilter(tuple(flow.topics), tuple(exclude)).should_replicate_topic(topic)


def remote_topic_name(s: Scenario, source: str, topic: str) -> str:
    """The name ``topic`` of cluster ``source`` has on a flow's target, by the drill's replication policy."""
    return policy_from_name(s.replication.policy, s.replication.separator,
                            source_cluster_alias=source).format_remote_topic(source, topic)
