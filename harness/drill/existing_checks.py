"""What a drill may do to an existing cluster, checked before anything starts.

A drill touches only what it owns there: topics and consumer groups whose names start with the
drill's ``owned_prefix``, and replication aliases (the cluster names, which prefix remote and
internal topics) that start with it too, so nothing it creates meets a team's own topics,
groups or MirrorMaker 2. What would hurt the team's brokers (kill, pause, wipe) is refused
with the reason; faults on the paths the harness owns (its proxies, its replicator) stay.
"""

from __future__ import annotations

from collections.abc import Callable

from mirrordrill.harness.drill.actions.registry import action_for
from mirrordrill.harness.drill.schema import FlowDef, Scenario
from mirrordrill.harness.drill.schema_timeline import Failback, Failover
from mirrordrill.primitives.kafka.owned_names import PatternRefused, anchored_pattern

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
                               f"owned_prefix: md-{s.name.lower()[:20]}-), and 'mirrordrill cleanup FILE' lists and removes them")
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
    _flows(s, existing, p, bad)
    _moves(s, existing, p, bad)
    _timeline(s, existing, p, bad)


def _timeline(s: Scenario, existing: dict, p: str, bad: Report) -> None:
    """What each step may do to a team's cluster is its action's own rule (``existing_cluster_problems``)."""
    for i, step in enumerate(s.timeline):
        for problem in action_for(step).existing_cluster_problems(step, existing, p):
            bad(("timeline", i) + problem.field, problem.message)


def _owned_reason(s: Scenario, f: FlowDef) -> str | None:
    """Why the flow's topic patterns must name only owned topics (None when they may be any regex).

    A flow reads its patterns' topics on the source and writes their remote names on the target:
    out of an existing cluster the patterns select among the team's topics; into one under the
    identity policy the remote name is the source topic's own name; and a failback turns a flow
    round, so a flow into an existing cluster it fails back from becomes a flow out of it.
    """
    existing = s.existing_clusters()
    if f.source in existing:
        return f"it reads the topics it matches on the existing cluster {f.source}"
    if f.target in existing and s.replication.policy == "identity":
        return (f"under the identity policy each topic keeps its name on the existing cluster {f.target}, so a "
                "topic it matches would be written into the team's topic of that name")
    if f.target in existing and any(isinstance(st, Failback) and st.source == f.target and st.target == f.source
                                    for st in s.timeline):
        return f"the failback from {f.target} turns it round, to read the topics it matches on that existing cluster"
    return None


def _sync_groups(f: FlowDef) -> bool:
    return str(f.settings.get("sync.group.offsets.enabled", "false")).lower() == "true"


def _group_patterns(f: FlowDef) -> list[str]:
    return [g.strip() for g in str(f.settings.get("groups", "")).split(",") if g.strip()]


def _flows(s: Scenario, existing: dict, p: str, bad: Report) -> None:
    for i, f in enumerate(s.replication.flows):
        at = ("replication", "flows", i)
        if (why := _owned_reason(s, f)) is not None:
            for j, pattern in enumerate(f.topics):
                try:
                    anchored_pattern(pattern, p)
                except PatternRefused as e:
                    bad(at + ("topics", j), f"{e} (flow {f.source}->{f.target}: {why})")
        if f.target in existing and _sync_groups(f):
            groups = _group_patterns(f)
            where = at + ("settings", "sync.group.offsets.enabled" if not groups else "groups")
            if not groups:
                bad(where, f"sync.group.offsets.enabled commits the source's groups' offsets under the same group "
                           f"names on the existing cluster {f.target}, and the default groups pattern '.*' takes "
                           f"every group: add settings.groups: '{p}.*' (only the drill's groups)")
            for g in groups:
                try:
                    anchored_pattern(g, p)
                except PatternRefused as e:
                    bad(where, f"groups: {e} (sync.group.offsets.enabled commits offsets under these group names "
                               f"on the existing cluster {f.target})")


def _moves(s: Scenario, existing: dict, p: str, bad: Report) -> None:
    """A failover (or a failback's switch back) onto an existing cluster moves the producers and consumers
    of the cluster they leave: the producers create and write their topics' names there, the consumers
    read those names there (and commit under their groups, owned already)."""
    producers = [(pr.cluster, pr.topics if isinstance(pr.topics, list) else list(pr.topics)) for pr in s.load.producers]
    consumers = [(c.cluster, list(c.topics)) for c in s.load.consumers]
    for i, step in enumerate(s.timeline):
        if isinstance(step, Failover) or (isinstance(step, Failback) and step.switch_back):
            # a failback's from is where the applications run now; its to is where they go back to
            leave, onto = step.source, step.target
        else:
            continue
        for kind, apps in (("producer", producers), ("consumer", consumers)):
            for n, (cluster, topics) in enumerate(apps):
                if cluster != leave:
                    continue
                apps[n] = (onto, topics)
                foreign = [t for t in topics if not t.startswith(p)]
                if onto in existing and foreign:
                    action = "create and write" if kind == "producer" else "read"
                    bad(("timeline", i, "to"), f"{step.do} onto the existing cluster {onto} moves {kind} "
                                               f"{n + 1}, which would {action} {foreign} there under the same "
                                               f"name(s), the team's own; name the topic(s) {p}… (owned_prefix)")


def with_anchored_patterns(s: Scenario) -> Scenario:
    """``s`` with the topic (and synced group) patterns of flows that must stay in owned names replaced by
    their anchored form (``anchored_pattern``), which the replicators, the plan and the checker all read.
    Call it on a drill that passed ``existing_cluster_problems``."""
    p = s.owned_prefix
    if p is None or not s.existing_clusters():
        return s
    existing = s.existing_clusters()
    flows = []
    for f in s.replication.flows:
        update: dict = {}
        if _owned_reason(s, f) is not None:
            update["topics"] = [anchored_pattern(t, p) for t in f.topics]
        if f.target in existing and _sync_groups(f):
            update["settings"] = {**f.settings, "groups": ", ".join(anchored_pattern(g, p) for g in _group_patterns(f))}
        flows.append(f.model_copy(update=update) if update else f)
    return s.model_copy(update={"replication": s.replication.model_copy(update={"flows": flows})})
