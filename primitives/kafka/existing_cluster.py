"""An existing cluster in a drill file: a team's own brokers, reached by address and client settings.

Secrets are config-provider references (``${env:…}``, ``${file:PATH:KEY}``, ``${dir:PATH:FILE}``),
never values: the security part is the typed model in ``primitives/kafka/security.py``, and
any other client property whose name looks secret must be a reference too.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from mirrordrill.primitives.config_refs import check_ref_syntax
from mirrordrill.primitives.kafka.security import ClientSecurity
from mirrordrill.primitives.redaction import literal_secret_keys

_HOST_PORT = re.compile(r"^[A-Za-z0-9._-]+:\d{1,5}$|^\[[0-9A-Fa-f:]+\]:\d{1,5}$")
# Set under ``security`` (one typed place), so a property cannot contradict it.
_SECURITY_KEYS = ("security.protocol", "sasl.mechanism", "sasl.jaas.config", "sasl.username", "sasl.password",
                  "ssl.ca.location", "ssl.certificate.location", "ssl.key.location", "ssl.truststore.location",
                  "ssl.keystore.location")
# An owned prefix is literal text at the start of names and of flow patterns: no regex characters.
OWNED_PREFIX = r"^[a-z][a-z0-9_-]{1,38}[-_]$"


class ExistingClusterDef(BaseModel):
    """A cluster the harness does not start: bootstrap servers and client settings."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    bootstrap_servers: str = Field(min_length=1)
    security: ClientSecurity = ClientSecurity()
    properties: dict[str, str | int | bool] = Field(default_factory=dict)

    @field_validator("bootstrap_servers")
    @classmethod
    def _addresses(cls, v: str) -> str:
        bad = [a for a in (p.strip() for p in v.split(",")) if not _HOST_PORT.match(a)]
        if bad:
            raise ValueError(f"bootstrap_servers: {', '.join(map(repr, bad))} is not HOST:PORT; write a "
                             "comma-separated list like 'kafka-1.staging:9093,kafka-2.staging:9093'")
        return ",".join(p.strip() for p in v.split(","))

    @field_validator("properties")
    @classmethod
    def _no_inline_secret(cls, v: dict[str, Any]) -> dict[str, Any]:
        problems = []
        literal = set(literal_secret_keys(v))
        for key, value in v.items():
            if key in _SECURITY_KEYS:
                problems.append(f"{key}: set it under security (protocol, sasl_mechanism, username, password, "
                                "ca_pem, cert_pem, key_pem), not as a property")
            elif key in literal:
                problems.append(f"{key} looks secret, so it must be a reference, never the value: write "
                                "${env:NAME}, ${file:PATH:KEY} or ${dir:PATH:FILE}")
            elif isinstance(value, str):
                problems += [f"{key}: {p}" for p in check_ref_syntax(value)]
        if problems:
            raise ValueError("; ".join(problems))
        return v

    @property
    def brokers_hint(self) -> int:
        """How many bootstrap addresses were given (the cluster may have more brokers)."""
        return len(self.bootstrap_servers.split(","))
