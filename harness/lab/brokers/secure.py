"""Secure local clusters: SASL_SSL (SCRAM or PLAIN) or mutual-TLS listeners on the brokers the harness starts.

Every listener speaks TLS with a certificate from the drill's throwaway CA. Clients of the
drill (load, observer, replicator) use the cluster's protocol on the LOCAL and WAN listeners;
brokers talk to each other and to the controller over an INTERNAL listener with mutual TLS,
and the harness creates SCRAM users through the Admin API on that listener, as a client
holding a certificate. So no user password is needed before the brokers run: none goes to
the storage-format command line. Broker properties hold key material and (for PLAIN) the
user's password, so they are written to the drill's secret folder, never the run folder.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from mirrordrill.primitives.config_refs import ConfigRefError, RefResolver, find_refs, is_pure_ref
from mirrordrill.primitives.kafka.security import ClientSecurity, ResolvedSecurity, jaas_quote
from mirrordrill.primitives.kafka.tls import CertificateAuthority, IssuedCert
from mirrordrill.primitives.properties_syntax import format_property
from mirrordrill.primitives.secret_dir import SecretDir, random_password

INTERNAL_LISTENER = "INTERNAL"


class LocalClusterSecurity(BaseModel):
    """How a harness-started cluster is secured (the ``security`` of a cluster in a drill file)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    protocol: Literal["SASL_SSL", "SSL"] = "SASL_SSL"
    sasl_mechanism: Literal["SCRAM-SHA-512", "SCRAM-SHA-256", "PLAIN"] = "SCRAM-SHA-512"
    username: str = Field("mirrordrill", pattern=r"^[A-Za-z0-9._-]{1,64}$")
    password: str | None = None
    random_password_if_unset: bool = False

    @model_validator(mode="after")
    def _password_by_reference(self) -> LocalClusterSecurity:
        if self.protocol == "SSL":
            if self.password is not None:
                raise ValueError("protocol SSL (mutual TLS) authenticates with certificates: remove password")
            return self
        if self.password is None:
            raise ValueError("protocol SASL_SSL needs password: a reference such as ${env:MIRRORDRILL_SECURE_PASSWORD}")
        if not is_pure_ref(self.password):
            raise ValueError("password must be a reference, never the secret itself: write ${env:NAME}, "
                             "${file:PATH:KEY} or ${dir:PATH:FILE}")
        if self.random_password_if_unset and find_refs(self.password)[0].provider != "env":
            raise ValueError("random_password_if_unset works with an ${env:NAME} password only")
        return self

    def resolve_password(self, resolver: RefResolver) -> str | None:
        """The user's password (a random one when the env variable is unset and that is allowed)."""
        if self.password is None:
            return None
        try:
            return resolver.resolve(self.password)
        except ConfigRefError:
            if not self.random_password_if_unset:
                raise
            return random_password()


@dataclass
class BrokerSecurity:
    """A secure cluster's key material and settings, all in the secret folder."""

    cluster: str
    spec: LocalClusterSecurity
    secrets: SecretDir
    ca: CertificateAuthority
    password: str | None = field(default=None, repr=False)
    certs: dict[int, IssuedCert] = field(default_factory=dict)
    admin_cert: IssuedCert | None = None
    client_cert: IssuedCert | None = None

    @classmethod
    def create(cls, cluster: str, spec: LocalClusterSecurity, brokers: int, secrets: SecretDir,
               ca: CertificateAuthority, password: str | None) -> BrokerSecurity:
        sec = cls(cluster, spec, secrets, ca, password)
        sec.certs = {n: ca.issue(f"{cluster}-broker-{n}") for n in range(1, brokers + 1)}
        sec.admin_cert = ca.issue(f"{cluster}-harness-admin")
        if spec.protocol == "SSL":
            sec.client_cert = ca.issue(f"{cluster}-{spec.username}")
        return sec

    @property
    def client_protocol(self) -> str:
        return self.spec.protocol

    @property
    def needs_users(self) -> bool:
        """SCRAM users live in the cluster's metadata: created on the running cluster (and after a wipe)."""
        return self.spec.protocol == "SASL_SSL" and self.spec.sasl_mechanism.startswith("SCRAM")

    def client(self) -> ResolvedSecurity:
        """How the drill's clients (load, observer, replicator) connect on LOCAL and WAN listeners."""
        if self.spec.protocol == "SSL":
            assert self.client_cert is not None
            return ResolvedSecurity(protocol="SSL", ca_pem=str(self.ca.cert_pem),
                                    cert_pem=str(self.client_cert.cert_pem), key_pem=str(self.client_cert.key_pem))
        return ResolvedSecurity(protocol="SASL_SSL", sasl_mechanism=self.spec.sasl_mechanism,
                                username=self.spec.username, password=self.password, ca_pem=str(self.ca.cert_pem))

    def client_by_reference(self, prefix: str) -> ClientSecurity:
        """The client settings with the password as a ``${file:…}`` reference to a 0600 file (for connection files)."""
        if self.spec.protocol == "SSL":
            resolved = self.client()
            return ClientSecurity(protocol="SSL", ca_pem=resolved.ca_pem, cert_pem=resolved.cert_pem,
                                  key_pem=resolved.key_pem)
        creds = self.secrets.file(f"{prefix}{self.cluster}-credentials.properties",
                                  f"password={self.password}\n")
        return ClientSecurity(protocol="SASL_SSL", sasl_mechanism=self.spec.sasl_mechanism, username=self.spec.username,
                              password=f"${{file:{creds}:password}}", ca_pem=str(self.ca.cert_pem))

    def client_file(self, kind: str = "librdkafka") -> Path:
        """The drill clients' settings as a 0600 properties file (``librdkafka`` or ``jvm``) for other processes."""
        client = self.client()
        settings = client.librdkafka() if kind == "librdkafka" else client.jvm()
        text = "".join(format_property(k, v) + "\n" for k, v in settings.items())
        return self.secrets.file(f"{self.cluster}-client-{kind}.properties", text)

    def admin(self) -> ResolvedSecurity:
        """The harness's own identity (a certificate) on the INTERNAL listener: creates the SCRAM users."""
        assert self.admin_cert is not None
        return ResolvedSecurity(protocol="SSL", ca_pem=str(self.ca.cert_pem), cert_pem=str(self.admin_cert.cert_pem),
                                key_pem=str(self.admin_cert.key_pem))

    def broker_properties(self, node_id: int, client_listeners: list[str]) -> dict[str, str]:
        """TLS on every listener, SASL on the client ones, mutual TLS on INTERNAL and CONTROLLER."""
        cert = self.certs[node_id]
        props = {
            "ssl.keystore.type": "PEM",
            "ssl.keystore.certificate.chain": cert.cert_pem.read_text(),
            "ssl.keystore.key": cert.key_pem.read_text(),
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": str(self.ca.cert_pem),
            "ssl.endpoint.identification.algorithm": "https",
            "ssl.client.auth": "required" if self.spec.protocol == "SSL" else "none",
            f"listener.name.{INTERNAL_LISTENER.lower()}.ssl.client.auth": "required",
            "listener.name.controller.ssl.client.auth": "required",
        }
        if self.spec.protocol == "SASL_SSL":
            mech = self.spec.sasl_mechanism
            props["sasl.enabled.mechanisms"] = mech
            for listener in client_listeners:
                prefix = f"listener.name.{listener.lower()}."
                props[prefix + "sasl.enabled.mechanisms"] = mech
                props[prefix + f"{mech.lower()}.sasl.jaas.config"] = self._server_jaas()
        return props

    def _server_jaas(self) -> str:
        if self.spec.sasl_mechanism == "PLAIN":
            # PLAIN has no user store: the broker's JAAS lists the user (this file lives in the secret folder).
            return (f"org.apache.kafka.common.security.plain.PlainLoginModule required "
                    f"user_{self.spec.username}={jaas_quote(str(self.password))};")
        return "org.apache.kafka.common.security.scram.ScramLoginModule required;"

    def secret_values(self) -> list[str]:
        """Every secret of this cluster, for leak checks: the password and the private keys."""
        keys = [c.key_pem for c in (*self.certs.values(), self.admin_cert, self.client_cert) if c is not None]
        return ([self.password] if self.password else []) + [k.read_text() for k in keys if k.exists()]
