"""``mirrordrill plan``: what a drill would do to each existing cluster, checked read-only against it.

Nothing here creates, alters or deletes: it describes the cluster, lists topics and groups,
describes ACLs and broker configs, and compares them with the drill's footprint.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path

from confluent_kafka import KafkaException
from confluent_kafka.admin import (
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    ConfigResource,
    ResourcePatternType,
    ResourceType,
)

from mirrordrill.harness.drill.schema import Scenario
from mirrordrill.harness.lab.brokers.existing_connect import ClusterUnreachable, admin_for, principal_of
from mirrordrill.harness.tools.existing.footprint import ClusterFootprint, Permission, footprints

TIMEOUT_S = 15.0


@dataclass(frozen=True)
class Check:
    name: str
    status: str  # ok | failed | unchecked
    detail: str


@dataclass
class ClusterPlan:
    footprint: ClusterFootprint
    bootstrap: str
    checks: list[Check] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return all(c.status != "failed" for c in self.checks)


def plan(s: Scenario, drill_dir: Path | None, replicator: str | None = None, check: bool = True) -> list[ClusterPlan]:
    """The footprint of every existing cluster, with the read-only checks (unless ``check`` is False)."""
    existing = s.existing_clusters()
    aliases = frozenset(s.clusters)
    out = []
    for name, fp in footprints(s, replicator).items():
        p = ClusterPlan(fp, existing[name].bootstrap_servers)
        if check:
            p.checks = _checks(fp, existing[name], drill_dir, aliases, s)
        out.append(p)
    return out


def _checks(fp: ClusterFootprint, cluster, drill_dir: Path | None, aliases: frozenset[str], s: Scenario) -> list[Check]:
    try:
        admin = admin_for(cluster, drill_dir)
        described = admin.describe_cluster(include_authorized_operations=True, request_timeout=TIMEOUT_S).result()
    except ClusterUnreachable as e:
        return [Check("settings", "failed", str(e))]
    except KafkaException as e:
        return [Check("reachable", "failed", f"{cluster.bootstrap_servers}: {e.args[0].str() if e.args else e}; "
                                             "check bootstrap_servers, the network and the security settings")]
    nodes = sorted(described.nodes, key=lambda n: n.id)
    out = [Check("reachable", "ok", f"{len(nodes)} broker(s), advertised as "
                                    + ", ".join(f"{n.id}={n.host}:{n.port}" for n in nodes)
                                    + " (clients reconnect to these: a WAN fault must proxy every one)")]
    out.append(_replication_factor(fp, s, len(nodes)))
    out += _leftovers(admin, fp, aliases)
    configs = _broker_configs(admin, nodes[0].id)
    out.append(_min_insync(configs, nodes[0].id, fp, s))
    out.append(_acls(admin, fp, principal_of(cluster), described.authorized_operations, configs))
    return out


def _broker_configs(admin, broker: int) -> dict[str, str | None] | KafkaException:
    resource = ConfigResource(ResourceType.BROKER, str(broker))
    try:
        entries = admin.describe_configs([resource], request_timeout=TIMEOUT_S)[resource].result()
    except KafkaException as e:
        return e
    return {key: entry.value for key, entry in entries.items()}


def _replication_factor(fp: ClusterFootprint, s: Scenario, brokers: int) -> Check:
    asked = [(t.name, t.replication_factor) for t in s.topics if t.cluster == fp.cluster and t.replication_factor]
    too_high = [f"{n} (rf {rf})" for n, rf in asked if rf > brokers]
    if too_high:
        return Check("replication factor", "failed", f"{', '.join(too_high)} above the {brokers} broker(s)")
    return Check("replication factor", "ok", f"every declared topic fits the {brokers} broker(s)")


def _leftovers(admin, fp: ClusterFootprint, aliases: frozenset[str]) -> list[Check]:
    fix = ("an earlier run's, or someone else's: 'mirrordrill cleanup FILE --dry-run' lists them, "
           "'mirrordrill cleanup FILE' deletes them once asked")
    topics = sorted(t for t in admin.list_topics(timeout=TIMEOUT_S).topics if fp.owns(t, aliases))
    out = [Check("no leftover topics", "failed" if topics else "ok",
                 f"{len(topics)} topic(s) already named like the drill's: {', '.join(topics[:10])}; {fix}"
                 if topics else f"no topic named {fp.prefix}… exists")]
    try:
        listed = admin.list_consumer_groups(request_timeout=TIMEOUT_S).result()
        groups = sorted(g.group_id for g in listed.valid if g.group_id.startswith(fp.prefix))
        if listed.errors:
            out.append(Check("no leftover groups", "unchecked", f"some brokers did not list their groups "
                                                                f"({listed.errors[0]}); run plan again"))
            return out
        out.append(Check("no leftover groups", "failed" if groups else "ok",
                         f"{', '.join(groups)} exist; {fix}" if groups else f"no group named {fp.prefix}… exists"))
    except KafkaException as e:
        out.append(Check("no leftover groups", "unchecked", f"cannot list groups: {e}"))
    return out


def _min_insync(configs, broker: int, fp: ClusterFootprint, s: Scenario) -> Check:
    """Producers ask acks=all: a topic with fewer replicas than min.insync.replicas refuses every write."""
    if isinstance(configs, KafkaException):
        return Check("broker configs", "unchecked", f"cannot describe broker {broker}'s configs "
                                                    f"(needs DESCRIBE_CONFIGS on the cluster): {configs}")
    value = configs.get
    min_isr = int(value("min.insync.replicas") or 1)
    default_rf = int(value("default.replication.factor") or 1)
    low = [t.name for t in s.topics if t.cluster == fp.cluster and (t.replication_factor or default_rf) < min_isr]
    detail = (f"min.insync.replicas {min_isr}, default.replication.factor {default_rf}, "
              f"auto.create.topics.enable {value('auto.create.topics.enable')}")
    if low:
        return Check("broker configs", "failed", f"{detail}: {', '.join(low)} would have fewer replicas than "
                                                 "min.insync.replicas, so acks=all writes fail; raise replication_factor")
    return Check("broker configs", "ok", detail + " (read only: the drill changes no broker config)")


def _acls(admin, fp: ClusterFootprint, principal: str | None, cluster_ops, configs) -> Check:
    """Whether the principal's ACLs allow every permission of the footprint."""
    if isinstance(configs, dict) and not configs.get("authorizer.class.name"):
        return Check("permissions", "ok", "the cluster has no authorizer (authorizer.class.name is empty): every "
                                          "operation is allowed")
    # None matches any name, principal and host, as AclBindingFilter documents; the __init__ it
    # inherits from AclBinding is annotated str for them
    anyone = AclBindingFilter(
        ResourceType.ANY, None, ResourcePatternType.ANY, None, None,  # type: ignore[arg-type]  # None: any, as documented
        AclOperation.ANY, AclPermissionType.ANY)
    try:
        bindings = admin.describe_acls(anyone, request_timeout=TIMEOUT_S).result()
    except KafkaException as e:
        err = e.args[0]
        if "SECURITY_DISABLED" in err.name() or "No Authorizer" in err.str():
            return Check("permissions", "ok", "the cluster has no authorizer: every operation is allowed")
        ops = f"; the principal may {', '.join(sorted(o.name for o in cluster_ops))} on the cluster" if cluster_ops else ""
        return Check("permissions", "unchecked", f"cannot read ACLs ({err.name()}: needs DESCRIBE on the cluster){ops}")
    granted = {o.name for o in cluster_ops or ()}
    if principal and "CLUSTER_ACTION" in granted and not any(
            _allowed(bindings, principal, Permission("CLUSTER", "LITERAL", "kafka-cluster", (), ""), op)
            for op in ("CLUSTER_ACTION", "ALL")):
        # super.users is a sensitive config (not readable); the authorizer granting the broker-only
        # CLUSTER_ACTION with no ACL that says so means this principal is one.
        return Check("permissions", "ok", f"{principal} is a super user (the authorizer grants it CLUSTER_ACTION "
                                          "without an ACL): every operation is allowed")
    if principal is None:
        return Check("permissions", "unchecked", "ACLs are readable, but the principal is not known offline (no SASL "
                                                 "username, or a referenced one); compare them with the list above")
    missing = [f"{op} on {perm.resource.lower()} {perm.name!r}" for perm in fp.permissions
               for op in perm.operations if not _allowed(bindings, principal, perm, op)]
    if missing:
        return Check("permissions", "failed", f"{principal} lacks {'; '.join(missing)}")
    return Check("permissions", "ok", f"{principal}'s ACLs allow every operation listed")


def _allowed(bindings, principal: str, perm: Permission, op: str) -> bool:
    def matches(b) -> bool:
        if b.principal not in (principal, "User:*") or b.host not in ("*",):
            return False
        # confluent-kafka names Kafka's CLUSTER resource type BROKER
        resource = "CLUSTER" if b.restype.name == "BROKER" else b.restype.name
        if resource != perm.resource or b.operation.name not in (op, "ALL"):
            return False
        if b.resource_pattern_type.name == "LITERAL":
            return b.name == "*" or (b.name == perm.name and perm.pattern == "LITERAL") \
                or (perm.resource == "CLUSTER" and b.name == "kafka-cluster")
        return b.resource_pattern_type.name == "PREFIXED" and perm.name.startswith(b.name)
    relevant = [b for b in bindings if matches(b)]
    return any(b.permission_type.name == "ALLOW" for b in relevant) and \
        not any(b.permission_type.name == "DENY" for b in relevant)


def render(plans: list[ClusterPlan]) -> str:
    """The plan as text: per existing cluster, what changes, what permissions, what was checked."""
    lines = []
    for p in plans:
        fp = p.footprint
        lines.append(f"existing cluster {fp.cluster} ({p.bootstrap})")
        lines.append(f"  topics (all named {fp.prefix}… or holding a drill alias):")
        lines += [f"    {t.action:22} {t.name}" + (f"  [{t.detail}]" if t.detail else "") for t in fp.topics] or ["    none"]
        lines.append("  consumer groups (offsets committed, translated offsets written):")
        lines += [f"    {g}" for g in sorted(set(fp.groups))] or ["    none"]
        lines.append("  ACLs created or changed: none (ACL sync is off)")
        lines.append("  broker configs changed: none")
        lines.append("  replicator settings forced:")
        lines += [f"    {k}={v}  ({why})" for k, (v, why) in fp.replicator_settings.items()]
        lines.append("  permissions the drill's principal needs:")
        lines += [f"    {perm.describe()}" for perm in fp.permissions]
        if p.checks:
            lines.append("  checks against the cluster (read-only):")
            lines += [f"    [{c.status:9}] {c.name}: {c.detail}" for c in p.checks]
    return "\n".join(lines)


def as_json(plans: list[ClusterPlan]) -> list[dict]:
    """The plan as data, the same facts as ``render``: what CI reads from ``plan --json``."""
    return [{
        "cluster": p.footprint.cluster, "bootstrap": p.bootstrap, "owned_prefix": p.footprint.prefix,
        "topics": [asdict(t) for t in p.footprint.topics], "groups": sorted(set(p.footprint.groups)),
        "acls_changed": list(p.footprint.acls_changed), "broker_configs_changed": [],
        "replicator_settings": {k: {"value": v, "why": why} for k, (v, why) in p.footprint.replicator_settings.items()},
        "permissions": [asdict(perm) for perm in p.footprint.permissions],
        "checks": [asdict(c) for c in p.checks], "ok": p.passed,
    } for p in plans]
