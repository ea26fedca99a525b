"""How a client authenticates to a Kafka cluster: one typed model, rendered for each kind of client.

``ClientSecurity`` is what a scenario (or a connection file) writes: the protocol, the SASL
mechanism and user, and paths to PEM files, with every secret written as a config-provider
reference (``${env:…}``, ``${file:…}``, ``${dir:…}``), never inline. ``resolve`` turns it
into ``ResolvedSecurity``, which holds the values and renders them for librdkafka (the
Python clients: load, observer, checker), for the JVM (MirrorMaker 2, Spark's Kafka source
and sink; PEM stores through ``ssl.*.type=PEM``) and as a properties file for a team's own
command. Values are only ever written to files in a drill's secret folder (0600).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, model_validator

from mirrordrill.primitives.config_refs import RefResolver, check_ref_syntax, has_ref, is_pure_ref

Protocol = Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"]
Mechanism = Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]

_LOGIN_MODULES = {
    "PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
    "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
}


class _ProtocolFacts:
    """What the protocol implies; shared by the model and its resolved values."""

    protocol: str

    @property
    def uses_sasl(self) -> bool:
        return self.protocol.startswith("SASL_")

    @property
    def uses_tls(self) -> bool:
        return self.protocol in ("SSL", "SASL_SSL")


class ClientSecurity(_ProtocolFacts, BaseModel):
    """A client's security settings; secrets are references, paths may be references too."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    protocol: Protocol = "PLAINTEXT"
    sasl_mechanism: Mechanism | None = None
    username: str | None = None
    password: str | None = None
    ca_pem: str | None = None
    cert_pem: str | None = None
    key_pem: str | None = None
    key_password: str | None = None
    verify_hostname: bool = True

    @model_validator(mode="after")
    def _consistent(self) -> ClientSecurity:
        problems = self.problems()
        if problems:
            raise ValueError("; ".join(problems))
        return self

    def problems(self) -> list[str]:
        """Everything wrong with these settings, each with its fix (empty when fine)."""
        out: list[str] = []
        if self.uses_sasl:
            missing = [n for n in ("sasl_mechanism", "username", "password") if getattr(self, n) is None]
            if missing:
                out.append(f"protocol {self.protocol} needs {', '.join(missing)}")
        elif any(getattr(self, n) is not None for n in ("sasl_mechanism", "username", "password")):
            out.append(f"sasl_mechanism/username/password are set but protocol {self.protocol} uses no SASL; "
                       "use SASL_SSL or SASL_PLAINTEXT, or remove them")
        if not self.uses_tls and any(getattr(self, n) for n in ("ca_pem", "cert_pem", "key_pem", "key_password")):
            out.append(f"TLS files are set but protocol {self.protocol} uses no TLS; use SSL or SASL_SSL, or remove them")
        if (self.cert_pem is None) != (self.key_pem is None):
            out.append("cert_pem and key_pem go together (a client certificate needs its private key)")
        for name in ("password", "key_password"):
            value = getattr(self, name)
            if value is not None and not is_pure_ref(value):
                out.append(f"{name} must be a reference, never the secret itself: write "
                           f"${{env:NAME}}, ${{file:PATH:KEY}} or ${{dir:PATH:FILE}}")
        for name in ("username", "password", "ca_pem", "cert_pem", "key_pem", "key_password"):
            value = getattr(self, name)
            if isinstance(value, str):
                out += [f"{name}: {p}" for p in check_ref_syntax(value)]
        return out

    def resolve(self, resolver: RefResolver) -> ResolvedSecurity:
        """The values behind the references (raises ConfigRefError naming the one that failed)."""
        def value(name: str) -> str | None:
            raw = getattr(self, name)
            return resolver.resolve(raw) if isinstance(raw, str) and has_ref(raw) else raw

        return ResolvedSecurity(
            protocol=self.protocol, sasl_mechanism=self.sasl_mechanism, username=value("username"),
            password=value("password"), ca_pem=value("ca_pem"), cert_pem=value("cert_pem"),
            key_pem=value("key_pem"), key_password=value("key_password"), verify_hostname=self.verify_hostname)


def jaas_quote(value: str) -> str:
    """A JAAS option value in double quotes (backslash and quote escaped)."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


@dataclass(frozen=True)
class ResolvedSecurity(_ProtocolFacts):
    """Security settings with their secret values; its repr never shows them."""

    protocol: str = "PLAINTEXT"
    sasl_mechanism: str | None = None
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    ca_pem: str | None = None
    cert_pem: str | None = None
    key_pem: str | None = None
    key_password: str | None = field(default=None, repr=False)
    verify_hostname: bool = True

    def secrets(self) -> list[str]:
        """The secret values here (for leak checks and redaction); file contents are not included."""
        return [s for s in (self.password, self.key_password) if s]

    def librdkafka(self) -> dict[str, str]:
        """Settings for confluent-kafka / librdkafka clients (PEM files; librdkafka reads no JKS)."""
        conf: dict[str, str] = {"security.protocol": self.protocol}
        if self.uses_sasl:
            conf |= {"sasl.mechanism": str(self.sasl_mechanism), "sasl.username": str(self.username),
                     "sasl.password": str(self.password)}
        if self.uses_tls:
            conf["ssl.endpoint.identification.algorithm"] = "https" if self.verify_hostname else "none"
            if self.ca_pem:
                conf["ssl.ca.location"] = self.ca_pem
            if self.cert_pem:
                conf |= {"ssl.certificate.location": self.cert_pem, "ssl.key.location": str(self.key_pem)}
            if self.key_password:
                conf["ssl.key.password"] = self.key_password
        return conf

    def jvm(self) -> dict[str, str]:
        """Settings for a Java Kafka client (MM2, Spark's Kafka source/sink), with PEM stores.

        The client certificate and key go inline (``ssl.keystore.certificate.chain``/``.key``):
        a file-based PEM key store would need an encrypted key. The result holds secrets, so
        it is only ever written to the drill's secret folder.
        """
        conf: dict[str, str] = {"security.protocol": self.protocol}
        if self.uses_sasl:
            options = f"username={jaas_quote(str(self.username))} password={jaas_quote(str(self.password))}"
            conf |= {"sasl.mechanism": str(self.sasl_mechanism),
                     "sasl.jaas.config": f"{_LOGIN_MODULES[str(self.sasl_mechanism)]} required {options};"}
        if self.uses_tls:
            conf["ssl.endpoint.identification.algorithm"] = "https" if self.verify_hostname else ""
            if self.ca_pem:
                conf |= {"ssl.truststore.type": "PEM", "ssl.truststore.location": self.ca_pem}
            if self.cert_pem and self.key_pem:
                conf |= {"ssl.keystore.type": "PEM",
                         "ssl.keystore.certificate.chain": Path(self.cert_pem).read_text(),
                         "ssl.keystore.key": Path(self.key_pem).read_text()}
                if self.key_password:
                    conf["ssl.key.password"] = self.key_password
        return conf

    def spark_options(self) -> dict[str, str]:
        """Options of Spark's Kafka source and sink: the JVM settings with the ``kafka.`` prefix."""
        return {f"kafka.{k}": v for k, v in self.jvm().items()}


def write_private(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` readable by its owner only (created 0600; never world-readable, even briefly)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.fchmod(fd, 0o600)
        os.write(fd, text.encode())
    finally:
        os.close(fd)



_JAAS_OPTION = re.compile(r'(\w+)\s*=\s*"((?:\\.|[^"\\])*)"')
_SAME_IN_LIBRDKAFKA = {"bootstrap.servers", "security.protocol", "sasl.mechanism", "sasl.mechanisms",
                       "sasl.username", "sasl.password", "client.id", "ssl.key.password"}


def java_to_librdkafka(conf: Mapping[str, str]) -> dict[str, str]:
    """The connection and security part of Java client settings, as librdkafka settings.

    The bundled replicator's control plane uses librdkafka with the settings written for
    Spark's (Java) clients: SASL credentials come out of ``sasl.jaas.config`` and PEM stores
    become ``ssl.ca.*``/``ssl.certificate.*``/``ssl.key.*``. JKS and PKCS12 stores are refused:
    librdkafka reads PEM only. Other settings are left out (they tune the Java clients).
    """
    out = {k: v for k, v in conf.items() if k in _SAME_IN_LIBRDKAFKA}
    jaas = conf.get("sasl.jaas.config")
    if jaas:
        options = {k: re.sub(r"\\(.)", r"\1", v) for k, v in _JAAS_OPTION.findall(jaas)}
        out.setdefault("sasl.username", options.get("username", ""))
        out.setdefault("sasl.password", options.get("password", ""))
    if "ssl.endpoint.identification.algorithm" in conf:
        out["ssl.endpoint.identification.algorithm"] = conf["ssl.endpoint.identification.algorithm"] or "none"
    for store in ("truststore", "keystore"):
        kind = conf.get(f"ssl.{store}.type", "JKS").upper()
        has_store = any(k.startswith(f"ssl.{store}.") and k != f"ssl.{store}.type" for k in conf)
        if has_store and kind != "PEM":
            raise ValueError(f"ssl.{store}.type {kind}: the replicator's librdkafka clients read PEM only; "
                             f"write ssl.{store}.type=PEM with PEM files (see docs/drill-files.md)")
    if "ssl.truststore.location" in conf:
        out["ssl.ca.location"] = conf["ssl.truststore.location"]
    if "ssl.truststore.certificates" in conf:
        out["ssl.ca.pem"] = conf["ssl.truststore.certificates"]
    if "ssl.keystore.location" in conf:  # one PEM file with the key and the chain
        out |= {"ssl.certificate.location": conf["ssl.keystore.location"], "ssl.key.location": conf["ssl.keystore.location"]}
    if "ssl.keystore.certificate.chain" in conf:
        out |= {"ssl.certificate.pem": conf["ssl.keystore.certificate.chain"], "ssl.key.pem": conf.get("ssl.keystore.key", "")}
    return out
