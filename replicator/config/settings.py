"""The whole configuration: clusters by alias, the flows between them, process-wide settings."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator

from mirrordrill.primitives.config_errors import ConfigWarning, InvalidSetting
from mirrordrill.replicator.config.flow import FlowConfig
from mirrordrill.replicator.config.validation import (
    ALIAS_PATTERN,
    StrictModel,
    check_bootstrap_servers,
    check_checkpoint_dirs,
    check_client_settings,
    check_flows_against_clusters,
    check_identity_cycles,
    check_keys,
)

ClientRole = Literal[
    "source_consumer", "source_producer", "source_admin", "target_consumer", "target_producer", "target_admin"
]


class ClusterConfig(StrictModel):
    """One Kafka cluster: where to reach it and the client settings for talking to it.

    ``client`` holds settings MM2 gives every client of the cluster (``security.protocol``,
    ``ssl.*``, ``sasl.*``); ``consumer``/``producer``/``admin`` are ``A.consumer.*`` etc.
    ``mm2_only`` holds Connect worker settings used when MM2 runs (``A.offset.storage.*``…).
    """

    bootstrap_servers: list[str] = Field(min_length=1)
    client: dict[str, str] = Field(default_factory=dict)
    consumer: dict[str, str] = Field(default_factory=dict)
    producer: dict[str, str] = Field(default_factory=dict)
    admin: dict[str, str] = Field(default_factory=dict)
    mm2_only: dict[str, str] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _check(self) -> ClusterConfig:
        check_bootstrap_servers(self.bootstrap_servers)
        check_client_settings(self.client, field="client")
        for name in ("consumer", "producer", "admin", "mm2_only"):
            check_keys(getattr(self, name), field=name)
        return self


class ReplicatorConfig(StrictModel):
    """Clusters by alias, the flows between them, and process-wide settings.

    ``client`` holds top-level ``security.protocol``/``ssl.*``/``sasl.*`` (every cluster's
    clients, unless the cluster sets its own). ``spark_master`` and ``jars`` are per
    process, as one Spark session runs all flows; ``jars`` are Spark's Kafka connector
    (with its dependencies) and mirrordrill-replicator-jvm.jar, for a replicator started
    without ``--jars``. ``checkpoint_dir`` is the base of each flow's checkpoint folder.
    ``warnings`` lists accepted-but-ignored settings; it is not part of the configuration's
    value (excluded from dumps; compare configurations with ``model_dump()``).
    """

    clusters: dict[str, ClusterConfig] = Field(min_length=1)
    flows: list[FlowConfig] = Field(default_factory=list)
    client: dict[str, str] = Field(default_factory=dict)
    spark_master: str = "local[*]"
    jars: list[str] = Field(default_factory=list)
    checkpoint_dir: str | None = None
    # Prometheus text on 127.0.0.1 (``replicator.prometheus``): None serves nothing, 0 a free port
    # the system picks (its URL goes into metrics.json), else that port.
    metrics_port: int | None = None
    # The driver JVM's JIT (``replicator.driver_jvm.jit_flags``): c1 compiles with the client
    # compiler only, tiered is the JVM's default (C1, then C2 for hot code). None: by the flows'
    # mode (``replicator.driver_jvm.driver_jit_for``).
    driver_jit: Literal["c1", "tiered"] | None = None
    # A driver with a standby (``replicator.lease``): the lease's group on the first flow's target
    # (None: no lease, the process replicates at once), the lock file that speeds the takeover on
    # one machine, and the lease's session timeout.
    lease_group: str | None = None
    lease_lock_file: str | None = None
    lease_session_timeout_ms: int = Field(3000, ge=1000)
    mm2_only: dict[str, str] = Field(default_factory=dict)
    warnings: list[ConfigWarning] = Field(default_factory=list, exclude=True, repr=False)

    @model_validator(mode="after")
    def _check(self) -> ReplicatorConfig:
        for alias in self.clusters:
            if not ALIAS_PATTERN.fullmatch(alias):
                raise InvalidSetting(
                    f"invalid cluster alias {alias!r}",
                    field="alias",
                    cluster=alias,
                    valid="letters, digits, '.', '_', '-'",
                )
        check_client_settings(self.client, field="client")
        check_keys(self.mm2_only, field="mm2_only")
        if not self.spark_master.strip():
            raise InvalidSetting("spark_master must not be empty", field="spark_master", valid="e.g. local[*]")
        if self.metrics_port is not None and not 0 <= self.metrics_port <= 65535:
            raise InvalidSetting(f"metrics port {self.metrics_port} is not a TCP port", field="metrics_port",
                                 valid="0 (the system picks a free port) to 65535; unset serves no metrics")
        for jar in self.jars:
            if not jar or jar != jar.strip() or "," in jar:
                # Spark takes its jars as one comma-separated list.
                raise InvalidSetting(
                    f"invalid jar path {jar!r}", field="jars", valid="paths without commas, separated by ','"
                )
        check_flows_against_clusters(self)
        check_identity_cycles(self)
        check_checkpoint_dirs(self)
        untransactional = [f.name for f in self.enabled_flows() if not f.transactional]
        if self.lease_group is not None and untransactional:
            raise InvalidSetting(
                f"a driver with a standby needs transactional flows; {', '.join(untransactional)} is not",
                field="mirrordrill.lease.group",
                valid="set mirrordrill.transactional = true (the takeover's fence is what stops a paused driver's writes)")
        return self

    # -- lookups --------------------------------------------------------------------
    def flow(self, source: str, target: str) -> FlowConfig:
        """The flow ``source->target``; KeyError when it is not declared."""
        for flow in self.flows:
            if flow.source == source and flow.target == target:
                return flow
        raise KeyError(f"{source}->{target}")

    def enabled_flows(self) -> list[FlowConfig]:
        """Flows that replicate (``A->B.enabled = true``)."""
        return [flow for flow in self.flows if flow.enabled]

    def flow_checkpoint_dir(self, flow: FlowConfig) -> str | None:
        """The flow's own checkpoint dir, else ``<checkpoint_dir>/<source>__<target>``, else None."""
        if flow.checkpoint_dir is not None:
            return flow.checkpoint_dir
        if self.checkpoint_dir is None:
            return None
        return str(Path(self.checkpoint_dir) / f"{flow.source}__{flow.target}")

    def starting_offsets(self, flow: FlowConfig) -> Literal["earliest", "latest"]:
        """Where the flow starts without a checkpoint: its setting, the consumer's, else earliest."""
        if flow.starting_offsets is not None:
            return flow.starting_offsets
        reset = self.clusters[flow.source].consumer.get("auto.offset.reset", "earliest")
        return "latest" if reset == "latest" else "earliest"

    def client_config(self, flow: FlowConfig, role: ClientRole) -> dict[str, str]:
        """Effective client settings for one client of a flow, layered as MM2 layers them.

        Lowest to highest: the flow's ``consumer``/``producer``/``admin``, then top-level
        ``client``, the cluster's ``client`` and ``bootstrap.servers``, then the cluster's
        ``consumer``/``producer``/``admin`` (in MM2 ``A.consumer.*`` beats ``A->B.consumer.*``).
        Consumers get ``enable.auto.commit=false`` as MM2 forces it.
        """
        side, kind = role.split("_")
        cluster = self.clusters[flow.source if side == "source" else flow.target]
        settings: dict[str, str] = dict(getattr(flow, kind))
        settings.update(self.client)
        settings.update(cluster.client)
        settings["bootstrap.servers"] = ",".join(cluster.bootstrap_servers)
        settings.update(getattr(cluster, kind))
        if kind == "consumer":
            settings["enable.auto.commit"] = "false"
            if side == "source":
                settings["auto.offset.reset"] = self.starting_offsets(flow)
            else:
                settings.setdefault("auto.offset.reset", "earliest")
        return settings

