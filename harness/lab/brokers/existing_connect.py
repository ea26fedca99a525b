"""Client settings for an existing cluster: its addresses, its security with references resolved."""

from __future__ import annotations

from pathlib import Path

from confluent_kafka.admin import AdminClient

from mirrordrill.primitives.config_refs import ConfigRefError, RefResolver
from mirrordrill.primitives.kafka.existing_cluster import ExistingClusterDef


class ClusterUnreachable(RuntimeError):
    """An existing cluster could not be reached or its settings not resolved; the message says why."""


def client_config(cluster: ExistingClusterDef, base_dir: Path | None,
                  resolver: RefResolver | None = None) -> dict[str, str]:
    """librdkafka settings for the cluster (secrets resolved: keep the result in memory only);
    references are read relative to ``base_dir`` unless a ``resolver`` is given."""
    resolver = resolver or RefResolver(base_dir=base_dir)
    try:
        security = cluster.security.resolve(resolver).librdkafka()
        extra = {k: str(v) for k, v in resolver.resolve_mapping(cluster.properties).items()}
    except ConfigRefError as e:
        raise ClusterUnreachable(str(e)) from None
    return {"bootstrap.servers": cluster.bootstrap_servers, **extra, **security}


def admin_for(cluster: ExistingClusterDef, base_dir: Path | None) -> AdminClient:
    """An Admin client for the cluster; errors surface on its first request."""
    conf: dict[str, str | int | float | bool] = {**client_config(cluster, base_dir), "socket.timeout.ms": "10000"}
    return AdminClient(conf)


def principal_of(cluster: ExistingClusterDef) -> str | None:
    """The principal the cluster's ACLs see: ``User:<name>`` for SASL, ``User:ANONYMOUS`` without
    authentication; None when it cannot be told offline (a client certificate's DN, a referenced name)."""
    sec = cluster.security
    if sec.uses_sasl:
        return f"User:{sec.username}" if sec.username and "${" not in sec.username else None
    return None if sec.cert_pem else "User:ANONYMOUS"
