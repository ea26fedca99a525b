"""``mirrordrill up --connection-file``: how a person, or a second drill, reaches the clusters ``up`` started.

For each cluster: its local listener's bootstrap servers (only those: the WAN proxies belong
to this ``up``, so a drill against these clusters as existing ones must bring its own
proxying) and its client security settings, shaped as an existing cluster of a drill file
(``bootstrap_servers`` and ``security``), with the password as a ``${file:…}`` reference to
a 0600 file. A Java client properties file (secrets by the same reference, through Kafka's
``config.providers``) is written beside it for ``kafka-console-*`` and friends. Credential
files live in the environment's secret folder and go away when ``up`` stops, as the
clusters do.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from mirrordrill.harness.lab.brokers.secure import BrokerSecurity
from mirrordrill.harness.lab.environment import Environment
from mirrordrill.primitives.config_refs import find_refs
from mirrordrill.primitives.kafka.security import ClientSecurity, jaas_quote, write_private
from mirrordrill.primitives.properties_syntax import format_property

HEADER = """\
# Written by `mirrordrill up`; valid while it runs. Each cluster is the local listener only.
# In a drill file, a cluster `existing: {bootstrap_servers: …, security: …}` copied from here
# reaches it; secrets are references to 0600 files that are deleted when `up` stops.
"""


def _java_properties(bootstrap: str, security: ClientSecurity, creds_file: Path | None) -> str:
    """Java client properties; the password stays a ``${file:…}`` reference that Kafka resolves itself."""
    lines = [format_property("bootstrap.servers", bootstrap), format_property("security.protocol", security.protocol)]
    if creds_file is not None:
        lines += [format_property("config.providers", "file"),
                  format_property("config.providers.file.class",
                                  "org.apache.kafka.common.config.provider.FileConfigProvider")]
    if security.uses_sasl and security.password:
        module = ("org.apache.kafka.common.security.plain.PlainLoginModule" if security.sasl_mechanism == "PLAIN"
                  else "org.apache.kafka.common.security.scram.ScramLoginModule")
        lines += [format_property("sasl.mechanism", str(security.sasl_mechanism)),
                  format_property("sasl.jaas.config", f"{module} required username={jaas_quote(str(security.username))} "
                                                      f"password={jaas_quote(security.password)};")]
    if security.uses_tls:
        lines += [format_property("ssl.truststore.type", "PEM"),
                  format_property("ssl.truststore.location", str(security.ca_pem))]
        if security.cert_pem:
            # A file-based PEM key store wants the key and chain in one file.
            lines += [format_property("ssl.keystore.type", "PEM"),
                      format_property("ssl.keystore.location", str(security.key_pem) + ".with-chain.pem")]
    return "\n".join(lines) + "\n"


def connection_document(env: Environment) -> dict[str, Any]:
    """Every started cluster's bootstrap servers and client settings (secrets by reference)."""
    clusters: dict[str, Any] = {}
    for name, cluster in env.clusters.items():
        entry: dict[str, Any] = {"bootstrap_servers": cluster.bootstrap}
        if cluster.security is not None and not isinstance(cluster.security, BrokerSecurity):
            # only a cluster up started has its client settings by reference in up's secret folder
            raise ValueError(f"cluster {name} is an existing cluster: the connection file covers the clusters up starts")
        security = cluster.security.client_by_reference("connection-") if cluster.security else ClientSecurity()
        entry["security"] = security.model_dump(exclude_none=True, exclude_defaults=True) or {"protocol": "PLAINTEXT"}
        if cluster.security is not None and env.secrets is not None:
            creds = Path(str(find_refs(security.password)[0].path)) if security.password else None
            if security.cert_pem and security.key_pem:
                env.secrets.file(Path(security.key_pem).name + ".with-chain.pem",
                                 Path(security.key_pem).read_text() + Path(security.cert_pem).read_text())
            props = env.secrets.file(f"connection-{name}-client.properties",
                                     _java_properties(cluster.bootstrap, security, creds))
            entry["client_properties_file"] = str(props)
        clusters[name] = entry
    return {"clusters": clusters}


def write_connection_file(env: Environment, path: Path) -> Path:
    """Write the connection file (no secret in it: references and paths only), mode 0600."""
    text = HEADER + yaml.safe_dump(connection_document(env), sort_keys=False)
    write_private(path, text)
    return path
