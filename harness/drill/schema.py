"""The drill file model: clusters, links, topics, flows, load, consumers, timeline, expectations.

Pydantic models with ``extra="forbid"``; cross-references (unknown cluster, unknown group,
...) are checked in ``validate.py`` so every error can name the file, line and field.
"""

from __future__ import annotations

import difflib
import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, field_validator, model_validator
from pydantic.fields import FieldInfo

from mirrordrill.harness.drill import bounds as B
from mirrordrill.harness.drill.bounds import at_most, at_most_items, at_most_seconds
from mirrordrill.harness.drill.metrics import METRICS, metric_names
from mirrordrill.harness.drill.plain_errors import did_you_mean
from mirrordrill.harness.drill.replicators import replicator_kinds
from mirrordrill.harness.drill.schema_base import _M, Latency, Partitions, Seconds, Wait, _jitter_within_latency
from mirrordrill.harness.drill.schema_timeline import Step, step_union
from mirrordrill.harness.lab.brokers.secure import LocalClusterSecurity
from mirrordrill.harness.lab.spark.deployment import SparkDeployment, SparkDeploymentError
from mirrordrill.loadgen.payload import PAYLOAD_FIELD, PayloadSpec
from mirrordrill.loadgen.spec import KeySpec, SizeSpec, check_producer_rules
from mirrordrill.primitives.kafka.existing_cluster import OWNED_PREFIX, ExistingClusterDef


class ClusterDef(_M):
    brokers: Annotated[int, at_most(B.MAX_BROKERS, "brokers per cluster (each is a JVM on this machine)")] = Field(1, ge=1)
    heap_mb: Annotated[int, at_most(B.MAX_HEAP_MB, "MB of heap per broker")] = Field(512, ge=128)
    # the brokers' JIT (primitives.jvm_jit): c1 for drill-long brokers, tiered to reach C2's code
    broker_jit: Literal["c1", "tiered"] = "c1"
    broker_properties: dict[str, str | int | bool] = Field(default_factory=dict)
    # SASL_SSL or mutual TLS on the brokers the harness starts (harness/lab/brokers/secure.py).
    security: LocalClusterSecurity | None = None
    existing: ExistingClusterDef | None = None  # a team's own cluster: nothing is started for it

    @model_validator(mode="after")
    def _started_or_existing(self):
        started_only = sorted({"brokers", "heap_mb", "broker_jit", "broker_properties", "security"}
                              & self.model_fields_set)
        if self.existing is not None and started_only:
            raise ValueError(f"{', '.join(started_only)} describe a cluster the harness starts; an existing "
                             "cluster is only reached (its client settings go under existing: bootstrap_servers, "
                             "security, properties): remove them")
        return self


class LinkConditionsDef(_M):
    latency_ms: Latency = Field(0, ge=0)
    jitter_ms: int = Field(0, ge=0)
    bandwidth_kb_s: int | None = Field(None, gt=0)

    @model_validator(mode="after")
    def _jitter(self):
        _jitter_within_latency(self.latency_ms, self.jitter_ms)
        return self


class LinkDef(LinkConditionsDef):
    between: tuple[str, str]


class TopicDef(_M):
    name: str  # Kafka's topic-name rules, with the reason: harness/drill/topic_names.py
    cluster: str
    partitions: Partitions = Field(3, ge=1)
    replication_factor: int | None = Field(None, ge=1)
    config: dict[str, str | int] = Field(default_factory=dict)


class FlowDef(_M):
    source: str
    target: str
    topics: list[str] = Field(default_factory=lambda: [".*"], min_length=1)
    topics_exclude: list[str] | None = None
    placement: Literal["target", "source"] = "target"
    settings: dict[str, str | int | float | bool] = Field(default_factory=dict)


class SparkDef(_M):
    """Where the bundled replicator's Spark runs (pyspark only); see harness/lab/spark/deployment.py."""

    master: str = "local"  # local | local[N] | standalone | spark://HOST:PORT | yarn | k8s://...
    executors: int = Field(2, ge=1, le=64)
    executor_cores: int = Field(2, ge=1, le=64)
    executor_memory: str = "768m"
    driver_jit: Literal["c1", "tiered"] | None = None  # the replicator's mirrordrill.driver.jit

    @field_validator("master", "executor_memory")
    @classmethod
    def _deployable(cls, v, info):
        try:
            SparkDeployment(**{info.field_name: v})
        except SparkDeploymentError as e:
            raise ValueError(str(e)) from None
        return v


# Connect worker keys the adapter sets itself: a drill changing them would split the group, move its
# internal topics or expose the REST listener beyond loopback.
MM2_OWNED_WORKER_KEYS = frozenset({
    "group.id", "bootstrap.servers", "offset.storage.topic", "config.storage.topic", "status.storage.topic",
    "listeners", "admin.listeners", "rest.advertised.host.name", "rest.advertised.listener", "rest.advertised.port",
    "dedicated.mode.enable.internal.rest"})


class MirrorMaker2Def(_M):
    """How MirrorMaker 2 runs when it is the replicator (mirrormaker2 only)."""

    # exactly.once.source.support = enabled: each poll's records and their source offsets are one
    # transaction on the target, so read_committed consumers see no copy twice after MM2 dies
    exactly_once: bool = False
    # dedicated-mode processes per target with the same configuration: one Connect group, whose
    # tasks spread over them (internal REST on 127.0.0.1 only, KIP-710)
    nodes: Annotated[int, at_most(B.MAX_REPLICATOR_NODES, "MirrorMaker 2 processes per target")] = Field(
        1, ge=1, description="MirrorMaker 2 processes per target, forming one Connect group")
    # Connect worker settings for every target's herders (scheduled.rebalance.max.delay.ms,
    # session.timeout.ms, heartbeat.interval.ms...), written as <target>.<key> in mm2.properties
    worker: dict[str, str | int | float | bool] = Field(
        default_factory=dict, description="Connect worker settings of every target's herders (<target>.<key>)")

    @field_validator("worker")
    @classmethod
    def _not_owned(cls, v: dict) -> dict:
        owned = sorted(k for k in v if k in MM2_OWNED_WORKER_KEYS or k.startswith("listeners"))
        if owned:
            raise ValueError(f"{', '.join(owned)}: set by the harness (MirrorMaker 2's group, topics, addresses "
                             "and loopback REST listener); remove them")
        return v


class MirrorMaker1Def(_M):
    """How MirrorMaker 1 runs when it is the replicator (mirrormaker1 only)."""

    # consumer threads per process, sharing the flow's group (--num.streams)
    streams: int = Field(1, ge=1, le=64, description="consumer threads per MirrorMaker 1 process (--num.streams)")
    # processes per flow, each with the same configuration, in the flow's one consumer group
    nodes: Annotated[int, at_most(B.MAX_REPLICATOR_NODES, "MirrorMaker 1 processes per flow")] = Field(
        1, ge=1, description="MirrorMaker 1 processes per flow, in one consumer group")


class ReplicationDef(_M):
    # a kind in the replicator registry (harness.drill.replicators); the JSON Schema lists them when made
    replicator: str = Field("pyspark", json_schema_extra=lambda schema: schema.update(enum=list(replicator_kinds())))
    policy: Literal["default", "identity"] = "default"
    separator: str = "."
    mode: Literal["microbatch", "realtime"] | None = None  # pyspark only
    command: str | None = None  # command replicator template
    shell: bool = False  # command replicator: run the template through /bin/sh -c (placeholders quoted)
    spark: SparkDef = SparkDef()  # pyspark only
    # pyspark only: each replicator process runs as two drivers, the second warmed up and waiting for
    # the node's lease (harness/drill/replicators/pyspark_standby.py); its flows write transactionally.
    # "lease": without the node's lock file, as two drivers on different machines would run
    standby: bool | Literal["lease"] = Field(False, description=(
        "pyspark only: a warmed standby driver beside each replicator process. true: it takes over when the "
        "active's lock file on this machine is freed (a kill) or the active's lease beats stop (a pause); "
        "lease: through the lease alone, as when the two drivers run on different machines"))
    mirrormaker2: MirrorMaker2Def = MirrorMaker2Def()  # mirrormaker2 only
    mirrormaker1: MirrorMaker1Def = MirrorMaker1Def()  # mirrormaker1 only
    flows: list[FlowDef] = Field(min_length=1)

    @field_validator("replicator")
    @classmethod
    def _registered(cls, v: str) -> str:
        kinds = list(replicator_kinds())  # read now: a kind registered after import counts
        if v not in kinds:
            raise ValueError(f"{v!r} is not valid here{did_you_mean(v, kinds)}; valid values: {', '.join(kinds)}")
        return v


class ProducerDef(_M):
    cluster: str
    topics: list[str] | dict[str, float] = Field(min_length=1)
    rate: Annotated[float, at_most(B.MAX_RATE, "records/s per producer")] = Field(gt=0, description="records/s")
    record_size: SizeSpec = SizeSpec(fixed=1024)
    keys: KeySpec = KeySpec()
    payload: Annotated[PayloadSpec, PAYLOAD_FIELD] = PayloadSpec()
    users: int = Field(1, ge=1, le=100)
    settings: dict[str, str | int | float | bool] = Field(default_factory=dict)
    name: str | None = None

    @field_validator("topics")
    @classmethod
    def _weights(cls, v):
        bad = [name for name, weight in v.items() if not weight > 0] if isinstance(v, dict) else []
        if bad:
            raise ValueError(f"topic weight(s) of {bad} must be greater than 0; leave a topic out to write nothing to it")
        return v

    @field_validator("settings")
    @classmethod
    def _settings(cls, v):
        check_producer_rules(v)  # the load process's own rule, told before the clusters start
        return v


class CommitDef(_M):
    mode: Literal["auto", "manual"] = "manual"
    interval_ms: int = Field(1000, ge=10)
    every_records: int | None = Field(None, ge=1)

    @model_validator(mode="after")
    def _every_records_is_manual(self):
        if self.mode == "auto" and self.every_records is not None:
            raise ValueError("every_records needs mode: manual (auto-commit commits on a timer, every interval_ms)")
        return self


class ConsumerDef(_M):
    group: str = Field(pattern=r"^[A-Za-z0-9._-]+$")
    cluster: str
    topics: list[str] = Field(min_length=1)
    commit: CommitDef = CommitDef()
    failover_strategy: Literal["translated", "checkpoint", "timestamp", "earliest", "latest"] = "translated"
    timestamp_margin_s: float = Field(10.0, ge=0, description="timestamp strategy: seek this far before the incident")


class BacklogDef(_M):
    """Records written into ``topic`` before the replicator starts (capacity drills)."""

    cluster: str
    topic: str
    records: Annotated[int, at_most(B.MAX_BACKLOG_RECORDS, "records per backlog")] = Field(ge=1)
    record_size: int = Field(1024, ge=64, le=1_000_000)


class LoadDef(_M):
    backlog: list[BacklogDef] = Field(default_factory=list)
    producers: Annotated[list[ProducerDef], at_most_items(B.MAX_PRODUCERS, "producers in one drill")] = \
        Field(default_factory=list)
    consumers: Annotated[list[ConsumerDef], at_most_items(B.MAX_CONSUMERS, "consumer groups in one drill")] = \
        Field(default_factory=list)
    # Locust's distributed mode (loadgen/load_master.py): each producer's load process becomes a master
    # that produces nothing itself and spreads the producer's users over its workers.
    workers: int = Field(0, ge=0, le=16, description=(
        "load worker processes each producer's Locust master starts on this machine (0: the producer runs in "
        "one process, as without this field); each worker keeps its own ledger and sends it to the master"))
    remote_workers: int = Field(0, ge=0, le=256, description=(
        "load workers each producer's master also waits for, started by the team on other machines with "
        "'mirrordrill load-worker --master HOST:PORT'; needs master_port, and a master_bind they reach (or an "
        "SSH tunnel to the default 127.0.0.1)"))
    master_bind: str = Field("127.0.0.1", min_length=1, description=(
        "the address each producer's Locust master listens on for its workers (0.0.0.0: every interface)"))
    master_port: int | None = Field(None, ge=1024, le=65535, description=(
        "the first producer's master listens here, the next producer's on the port after it, and so on "
        "(a failover's restart reuses its producer's port); unset: free ports, fit for local workers only"))
    worker_join_timeout_s: float = Field(60.0, gt=0, le=3600, description=(
        "how long a master waits for all its workers to join before the drill fails with a plain line"))

    @model_validator(mode="after")
    def _workers(self):
        n = self.workers + self.remote_workers
        if self.remote_workers and self.master_port is None:
            raise ValueError("remote_workers need master_port: the workers started elsewhere are told where the "
                             "master listens before the drill starts (and a firewall opened for it)")
        few = [p.name or f"producers[{i}]" for i, p in enumerate(self.producers) if n and p.users < n]
        if few:
            raise ValueError(f"{', '.join(few)}: users must be at least the load's {n} worker(s) (workers + "
                             "remote_workers): Locust spreads a producer's users over its workers")
        return self


# --- expectations -----------------------------------------------------------------------
# The metrics, their units and directions: harness/drill/metrics.py (the catalogue).
_LIMIT = re.compile(r"^\s*(<=|>=|==|<|>)?\s*(-?\d+(?:\.\d+)?)\s*$")


class Expectation(_M):
    """``metric`` (optionally scoped: ``lost[primary->dr]``, ``failover.skipped[billing]``) against a limit."""

    metric: str
    scope: str | None
    op: str
    limit: float

    @property
    def family(self) -> str:
        """Which summary entries it is judged on: flow, failover or failback (metrics.py)."""
        return METRICS[self.metric].family

    @property
    def name(self) -> str:
        scoped = f"{self.metric}[{self.scope}]" if self.scope else self.metric
        return f"{scoped} {self.op} {self.limit:g}"

    def holds(self, actual: float | None) -> bool:
        if actual is None:
            return False
        return {"<=": actual <= self.limit, ">=": actual >= self.limit, "==": actual == self.limit,
                "<": actual < self.limit, ">": actual > self.limit}[self.op]


def parse_expectation(key: str, value: Any) -> Expectation:
    """One ``metric: limit`` line. A bare number is a ceiling, as pytest and Locust users read it
    (``failover.rto_s: 30`` is ``<= 30``; ``lost: 0`` is ``== 0``, the same for a count), except on
    metrics where more is better, which need the operator written out."""
    m = re.fullmatch(r"([a-z_.0-9]+)(?:\[([^\]]+)\])?", key.strip())
    if not m:
        raise ValueError(f"expectation {key!r}: write a metric name, optionally scoped as metric[flow or group]")
    metric, scope = m.group(1), m.group(2)
    known = metric_names()
    if metric not in known:
        close = difflib.get_close_matches(metric, known, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ValueError(f"expectation on unknown metric {metric!r}{hint}; valid: {', '.join(known)}")
    lm = _LIMIT.match(str(value)) if not isinstance(value, bool) else None
    if not lm:
        raise ValueError(f"expectation {key}: limit {value!r} is not a number or a comparison like '<= 100'")
    op, limit = lm.group(1), float(lm.group(2))
    if op is None:
        if METRICS[metric].higher_is_better:  # a bare number could mean a floor or a ceiling
            raise ValueError(f"expectation {key}: a bare number is ambiguous for {metric}, where more is better; "
                             f"write '>= {value}' (at least) or '<= {value}' (at most)")
        op = "==" if limit == 0 else "<="
    if limit < 0:
        raise ValueError(f"expectation {key}: limit {limit:g} is negative, but {metric} never is, so this "
                         f"{'always' if op in ('>=', '>') else 'never'} holds; write a limit of 0 or more")
    if METRICS[metric].count and limit != int(limit):
        raise ValueError(f"expectation {key}: {metric} counts records, so its limit is a whole number, "
                         f"not {limit:g}")
    return Expectation(metric=metric, scope=scope, op=op, limit=limit)


class StableAddressDef(_M):
    """Clients bootstrap through one stable address (a proxy, as a DNS name would be in
    production) instead of a cluster's own brokers; every failover re-points it."""

    points_to: str  # the cluster it resolves to when the drill starts


# --- built-in invariants ----------------------------------------------------------------
# Checked in every drill whatever its expectations say (harness/drill/invariants.py).
INVARIANTS = ("no_loss", "no_corruption", "no_duplicates", "load_ran", "drained")
InvariantName = Literal["no_loss", "no_corruption", "no_duplicates", "load_ran", "drained"]


class InvariantBounds(_M):
    """What a drill's timeline may cost: the bounds the invariants need when a fault allows a cost."""

    # Records per flow that may be lost when the timeline kills or cuts off a primary (its RPO).
    rpo_records: int | None = Field(None, ge=0)
    # Duplicates per flow when a fault after which at-least-once delivery may repeat is in the timeline.
    duplicates: int | None = Field(None, ge=0)
    # Each producer must acknowledge at least this fraction of rate x its active time (default 0.5).
    load_fraction: float | None = Field(None, gt=0, le=1)
    # Invariants this drill does not hold the replicator to, each with the reason the report prints.
    relax: dict[InvariantName, Annotated[str, Field(min_length=3)]] = Field(default_factory=dict)


class InvariantsDef(InvariantBounds):
    """The ``invariants:`` section; a replicator's own section overrides the common fields for it."""

    pyspark: InvariantBounds | None = None
    mirrormaker2: InvariantBounds | None = None
    mirrormaker1: InvariantBounds | None = None
    command: InvariantBounds | None = None

    def for_replicator(self, replicator: str) -> InvariantBounds:
        own = getattr(self, replicator, None)
        if own is None:
            return InvariantBounds(rpo_records=self.rpo_records, duplicates=self.duplicates,
                                   load_fraction=self.load_fraction, relax=dict(self.relax))
        def pick(name: str) -> Any:
            return getattr(own, name) if name in own.model_fields_set else getattr(self, name)

        return InvariantBounds(rpo_records=pick("rpo_records"), duplicates=pick("duplicates"),
                               load_fraction=pick("load_fraction"), relax={**self.relax, **own.relax})


def split_expectations(expectations: dict[str, Any], replicator: str) -> dict[str, Any]:
    """The ``metric: limit`` lines that apply to ``replicator``: the common ones, with a
    replicator's own section (``expectations: {pyspark: {duplicates: 0}}``) replacing any
    common line on the same metric and scope, and adding the rest."""
    common = {k: v for k, v in expectations.items() if k not in replicator_kinds()}
    own = expectations.get(replicator) or {}
    if not isinstance(own, dict):
        return common
    def key(k: str) -> str:
        return re.sub(r"\s+", "", k)

    out = {k: v for k, v in common.items() if key(k) not in {key(o) for o in own}}
    out.update(own)
    return out


SparkMasterKind = Literal["local", "standalone"]  # standalone: started here or a spark:// URL


class SparkMasterLimits(_M):
    """``spark_masters: {standalone: …}``: the pyspark replicator's limits where its Spark runs so
    (harness/drill/profile.py applies them over the file's, after a profile's)."""

    expectations: dict[str, Any] = Field(default_factory=dict)  # replace the file's lines on the same metric
    invariants: dict[str, Any] = Field(default_factory=dict)  # replace the file's bounds of the same name


class ProfileDef(_M):
    """``profiles: {short: …}``: how the short profile scales this drill, and the figures that differ
    at that scale (harness/drill/profile.py applies them; the full profile ignores this section)."""

    scale: float = Field(0.5, gt=0, le=1, description="durations, timeline 'at's and backlogs x this")
    expectations: dict[str, Any] = Field(default_factory=dict)  # replace the file's lines on the same metric
    invariants: dict[str, Any] = Field(default_factory=dict)  # replace the file's bounds of the same name
    spark_masters: dict[SparkMasterKind, SparkMasterLimits] = Field(default_factory=dict)  # at this profile


_TIMELINE_LIMIT = at_most_items(B.MAX_STEPS, "steps in one timeline")


class Scenario(_M):
    """One drill file."""

    format: Literal[1] = Field(1, description="the drill-file format version (harness/drill/file_format.py)")
    name: str = Field(pattern=r"^[A-Za-z0-9._-]+$")
    description: str = ""
    clusters: Annotated[dict[str, ClusterDef], at_most_items(B.MAX_CLUSTERS, "clusters in one drill")] = Field(min_length=1)
    links: list[LinkDef] | None = None  # None: every pair of clusters, clean
    topics: Annotated[list[TopicDef], at_most_items(B.MAX_TOPICS, "topics in one drill")] = Field(default_factory=list)
    replication: ReplicationDef
    load: LoadDef = LoadDef()
    timeline: Annotated[list[Step], _TIMELINE_LIMIT] = Field(default_factory=list)
    stable_address: StableAddressDef | None = None
    # With existing clusters: every name the drill puts on them starts with this (see existing_checks.py).
    owned_prefix: str | None = Field(None, pattern=OWNED_PREFIX)
    duration: Annotated[Seconds, at_most_seconds(B.MAX_DURATION_S, "of load")] = \
        Field(60.0, gt=0, description="seconds of load")
    drain_timeout: Wait = Field(120.0, ge=0)
    expectations: dict[str, Any] = Field(default_factory=dict)
    invariants: InvariantsDef = InvariantsDef()
    profiles: dict[Literal["short"], ProfileDef] = Field(default_factory=dict)
    spark_masters: dict[SparkMasterKind, SparkMasterLimits] = Field(default_factory=dict)

    def existing_clusters(self) -> dict[str, ExistingClusterDef]:
        """The clusters the harness does not start, by name."""
        return {name: c.existing for name, c in self.clusters.items() if c.existing is not None}

    def parsed_expectations(self, replicator: str | None = None) -> list[Expectation]:
        """The expectations that apply to ``replicator`` (default: the file's own)."""
        lines = split_expectations(self.expectations, replicator or self.replication.replicator)
        return [parse_expectation(k, v) for k, v in lines.items()]


def set_step_types(step_types: tuple[type[BaseModel], ...]) -> None:
    """Make the drill file's timeline accept exactly ``step_types`` (the built-in ones and those
    registered with an action): the discriminated union is rebuilt, so an unknown ``do:`` keeps
    pydantic's error listing the valid names. Called by the action registry only."""
    # list.__class_getitem__ is list[...] spelled for a union built at run time (no static type to name).
    timeline: Any = Annotated[list.__class_getitem__(step_union(step_types)), _TIMELINE_LIMIT]
    Scenario.model_fields["timeline"] = FieldInfo.from_annotated_attribute(timeline, Field(default_factory=list))
    Scenario.model_rebuild(force=True)
