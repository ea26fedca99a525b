"""Every MirrorMaker 2 key we know, by its properties name, and what we do with it.

How MM2 keys are treated (names, defaults and precedence checked against apache/kafka
``connect/mirror``: MirrorMakerConfig, MirrorSourceConfig, MirrorCheckpointConfig,
MirrorHeartbeatConfig, MirrorConnectorConfig, MirrorClientConfig):

* Honoured: ``clusters``; ``A.bootstrap.servers``; ``A->B.enabled`` (default false, as in
  MM2); every replication setting of the source, checkpoint and heartbeat connectors
  (``FLOW_PROPERTY_KEYS``), at top level as defaults and per flow as ``A->B.<key>``.
* Client settings: ``security.protocol``, ``ssl.*``, ``sasl.*`` at top level or per
  cluster, and ``A.consumer.*``, ``A.producer.*``, ``A.admin.*``, ``A->B.consumer.*`` …,
  passed to the clients unvalidated, with MM2's precedence (see
  ``ReplicatorConfig.client_config``). ``auto.offset.reset`` is the model's
  ``starting_offsets``, because Spark's Kafka source takes it only as ``startingOffsets``.
* Accepted for MM2, ignored by our replicator, kept in ``mm2_only`` and reported as a
  warning: Connect worker settings (``offset.storage.*``, ``config.storage.*``,
  ``status.storage.*``, ``exactly.once.source.support``, REST listeners, …), ACL sync,
  ``errors.*``, and similar connector plumbing. ``to_mm2_properties`` writes them back.
* Accepted only with their default value: ``key|value|header.converter`` (must be
  ByteArrayConverter, or MM2 would not copy raw bytes), ``topic.filter.class``,
  ``group.filter.class``, ``config.property.filter.class``, ``forwarding.admin.class``;
  we cannot run custom Java classes.
* Rejected with an explanation: Connect transforms/predicates, ``name``,
  ``connector.class``, ``*.cluster.alias`` (MM2 sets them), the ``*.blacklist`` /
  ``*.whitelist`` names removed in Kafka 4.0, top-level ``enabled`` /
  ``bootstrap.servers``, and top-level ``consumer.*`` / ``producer.*`` / ``admin.*``,
  which MM2 silently ignores.
* Our own knobs live under ``mirrordrill.`` (``A->B.mirrordrill.mode``, ``mirrordrill.spark.master``,
  ``mirrordrill.spark.jars``, …); MM2 ignores them.
"""

from __future__ import annotations

from collections.abc import Iterable

from mirrordrill.replicator.config.validation import is_client_setting

MIRRORDRILL_PREFIX = "mirrordrill."

FLOW_PROPERTY_KEYS: dict[str, str] = {
    "enabled": "enabled",
    "topics": "topics",
    "topics.exclude": "topics_exclude",
    "groups": "groups",
    "groups.exclude": "groups_exclude",
    "replication.policy.class": "replication_policy_class",
    "replication.policy.separator": "replication_policy_separator",
    "replication.policy.internal.topic.separator.enabled": "replication_policy_internal_topic_separator_enabled",
    "sync.topic.configs.enabled": "sync_topic_configs_enabled",
    "sync.topic.configs.interval.seconds": "sync_topic_configs_interval_seconds",
    "config.properties.exclude": "config_properties_exclude",
    "use.defaults.from": "use_defaults_from",
    "refresh.topics.enabled": "refresh_topics_enabled",
    "refresh.topics.interval.seconds": "refresh_topics_interval_seconds",
    "refresh.groups.enabled": "refresh_groups_enabled",
    "refresh.groups.interval.seconds": "refresh_groups_interval_seconds",
    "emit.checkpoints.enabled": "emit_checkpoints_enabled",
    "emit.checkpoints.interval.seconds": "emit_checkpoints_interval_seconds",
    "sync.group.offsets.enabled": "sync_group_offsets_enabled",
    "sync.group.offsets.interval.seconds": "sync_group_offsets_interval_seconds",
    "emit.heartbeats.enabled": "emit_heartbeats_enabled",
    "emit.heartbeats.interval.seconds": "emit_heartbeats_interval_seconds",
    "heartbeats.replication.enabled": "heartbeats_replication_enabled",
    "emit.offset-syncs.enabled": "emit_offset_syncs_enabled",
    "offset-syncs.topic.location": "offset_syncs_topic_location",
    "offset.lag.max": "offset_lag_max",
    "replication.factor": "replication_factor",
    "checkpoints.topic.replication.factor": "checkpoints_topic_replication_factor",
    "heartbeats.topic.replication.factor": "heartbeats_topic_replication_factor",
    "offset-syncs.topic.replication.factor": "offset_syncs_topic_replication_factor",
    "tasks.max": "tasks_max",
    "consumer.poll.timeout.ms": "consumer_poll_timeout_ms",
    "admin.timeout.ms": "admin_timeout_ms",
    "mirrordrill.mode": "mode",
    "mirrordrill.max.offsets.per.trigger": "max_offsets_per_trigger",
    "mirrordrill.trigger.interval": "trigger_interval",
    "mirrordrill.provenance.header": "provenance_header",
    "mirrordrill.checkpoint.dir": "checkpoint_dir",
    "mirrordrill.restore.history": "restore_history",
    "mirrordrill.transactional": "transactional",
    "mirrordrill.transaction.commit.interval.ms": "transaction_commit_interval_ms",
    "mirrordrill.transactional.id.prefix": "transactional_id_prefix",
    "mirrordrill.trace.records": "trace_records",
}
"""Every per-flow key we honour, by its properties name; top-level keys are flow defaults."""

# Top-level meanings that differ from the per-flow ones.
GLOBAL_PROPERTY_KEYS: dict[str, str] = {
    "mirrordrill.spark.master": "spark_master",
    "mirrordrill.spark.jars": "jars",
    "mirrordrill.checkpoint.dir": "checkpoint_dir",
    "mirrordrill.metrics.port": "metrics_port",
    "mirrordrill.driver.jit": "driver_jit",
    "mirrordrill.lease.group": "lease_group",
    "mirrordrill.lease.lock.file": "lease_lock_file",
    "mirrordrill.lease.session.timeout.ms": "lease_session_timeout_ms",
}
NOT_DEFAULTS = {"enabled", "checkpoint_dir"}  # flow fields that top-level keys cannot default
FLOW_DICTS = ("consumer", "producer", "admin")

# Connect worker settings: MM2 builds one worker per target cluster from them.
WORKER_KEYS = (
    "offset.storage.",
    "config.storage.",
    "status.storage.",
    "offset.flush.",
    "task.",
    "worker.",
    "config.providers",
    "dedicated.mode.enable.internal.rest",
    "listeners",
    "rest.",
    "admin.listeners",
    "inter.worker.",
    "exactly.once.source.support",
    "scheduled.rebalance.max.delay.ms",
    "connect.protocol",
    "group.id",
    "client.id",
    "session.timeout.ms",
    "heartbeat.interval.ms",
    "rebalance.timeout.ms",
    "worker.sync.timeout.ms",
    "metrics.",
    "metric.reporters",
    "auto.include.jmx.reporter",
    "plugin.path",
    "plugin.discovery",
    "access.control.",
    "response.http.headers.config",
    "topic.creation.enable",
    "connector.client.config.override.policy",
    "key.converter.",
    "value.converter.",
    "header.converter.",
)
# Connector settings MM2 honours and our replicator does not implement.
CONNECTOR_MM2_ONLY = (
    "sync.topic.acls.enabled",
    "sync.topic.acls.interval.seconds",
    "config.action.reload",
    "tasks.max.enforce",
    "errors.",
    "exactly.once.support",
    "transaction.boundary",
    "offsets.storage.topic",
    "metric.reporters",
    "key.converter.",
    "value.converter.",
    "header.converter.",
)
# Concrete names behind the prefixes above, only to suggest corrections for typos.
MM2_ONLY_EXAMPLES = (
    *(
        f"{store}.storage.{suffix}"
        for store in ("offset", "config", "status")
        for suffix in ("topic", "replication.factor")
    ),
    "exactly.once.source.support",
    "dedicated.mode.enable.internal.rest",
    "listeners",
    "sync.topic.acls.enabled",
)
BYTE_ARRAY_CONVERTER = "org.apache.kafka.connect.converters.ByteArrayConverter"
DEFAULT_ONLY: dict[str, str] = {
    "key.converter": BYTE_ARRAY_CONVERTER,
    "value.converter": BYTE_ARRAY_CONVERTER,
    "header.converter": BYTE_ARRAY_CONVERTER,
    "topic.filter.class": "org.apache.kafka.connect.mirror.DefaultTopicFilter",
    "group.filter.class": "org.apache.kafka.connect.mirror.DefaultGroupFilter",
    "config.property.filter.class": "org.apache.kafka.connect.mirror.DefaultConfigPropertyFilter",
    "forwarding.admin.class": "org.apache.kafka.clients.admin.ForwardingAdmin",
}
REJECTED: dict[str, str] = {
    "transforms": "Connect transforms change records; the mirrordrill replicator copies them unchanged",
    "predicates": "Connect predicates only serve transforms, which are not supported",
    "name": "MirrorMaker 2 names its connectors itself",
    "connector.class": "MirrorMaker 2 chooses its connector classes itself",
    "source.cluster.alias": "MirrorMaker 2 sets this from the flow; use A->B.<key>",
    "target.cluster.alias": "MirrorMaker 2 sets this from the flow; use A->B.<key>",
    "task.assigned.partitions": "internal to MirrorMaker 2",
    "task.assigned.groups": "internal to MirrorMaker 2",
    "task.index": "internal to MirrorMaker 2",
    "topics.blacklist": "removed in Kafka 4.0; use topics.exclude",
    "topics.whitelist": "removed; use topics",
    "groups.blacklist": "removed in Kafka 4.0; use groups.exclude",
    "groups.whitelist": "removed; use groups",
    "config.properties.blacklist": "removed in Kafka 4.0; use config.properties.exclude",
}


def matches_any(key: str, names: Iterable[str]) -> bool:
    for name in names:
        if name.endswith("."):
            if key.startswith(name):
                return True
        elif key == name or key.startswith(name + "."):
            return True
    return False


def rejected_reason(key: str) -> str | None:
    for name, reason in REJECTED.items():
        if key == name or (name in ("transforms", "predicates") and key.startswith(name + ".")):
            return reason
    return None


def is_cluster_setting(rest: str) -> bool:
    return (
        rest == "bootstrap.servers" or is_client_setting(rest) or rest.startswith(("consumer.", "producer.", "admin."))
    )


def mm2_only_message(key: str) -> str:
    if key.startswith("sync.topic.acls"):
        return "MirrorMaker 2 syncs topic ACLs; the mirrordrill replicator does not, so this is used for MM2 only"
    return "used only when running MirrorMaker 2; the mirrordrill replicator ignores it"


# How the file spells a flow field, for errors about settings it does not contain.
PROPERTY_NAME_OF = {name: prop for prop, name in FLOW_PROPERTY_KEYS.items()}
