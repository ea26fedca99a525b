"""Secure local clusters' settings, without starting a broker: listeners, JAAS, where files go."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from mirrordrill.harness.lab.brokers.broker import BrokerPorts, BrokerSettings, KafkaBroker
from mirrordrill.harness.lab.brokers.secure import BrokerSecurity, LocalClusterSecurity
from mirrordrill.primitives.config_refs import ConfigRefError, RefResolver
from mirrordrill.primitives.kafka.tls import CertificateAuthority
from mirrordrill.primitives.secret_dir import SecretDir


@pytest.fixture
def secrets(tmp_path):
    with SecretDir("unit", root=tmp_path / "secrets") as s:
        yield s


def secure_broker(tmp_path, secrets, spec: LocalClusterSecurity, password: str | None = "pw\"1") -> KafkaBroker:
    sec = BrokerSecurity.create("primary", spec, 1, secrets, CertificateAuthority(secrets.path), password)
    ports = BrokerPorts(local=1001, controller=1002, wan={"dr": 1003}, wan_advertised={"dr": 1004}, internal=1005)
    settings = BrokerSettings(cluster_name="primary", cluster_id="x", quorum_voters="1@127.0.0.1:1002",
                              java="java", classpath=(), security=sec)
    return KafkaBroker(1, ports, tmp_path / "broker-1", settings)


def test_scram_listeners_and_mutual_tls_between_brokers(tmp_path, secrets):
    broker = secure_broker(tmp_path, secrets, LocalClusterSecurity(password="${env:P}"))
    props = broker.properties()
    assert props["listener.security.protocol.map"] == "LOCAL:SASL_SSL,CONTROLLER:SSL,WAN_DR:SASL_SSL,INTERNAL:SSL"
    assert props["inter.broker.listener.name"] == "INTERNAL"
    assert props["listener.name.internal.ssl.client.auth"] == "required"
    assert props["listener.name.wan_dr.scram-sha-512.sasl.jaas.config"].endswith("ScramLoginModule required;")
    # SCRAM: the broker never holds the password, as written or escaped in a JAAS line. The whole
    # password, quote included: "pw" alone turns up by chance in the base64 of a freshly made
    # certificate (1 run in ~14 failed so)
    held = "".join(props.values())
    assert 'pw"1' not in held and 'pw\\"1' not in held
    broker.write_config()
    assert broker.config_path.parent == secrets.path and not (tmp_path / "broker-1" / "server.properties").exists()
    assert "BEGIN PRIVATE KEY" in broker.config_path.read_text()


def test_plain_lists_the_user_in_the_broker_jaas(tmp_path, secrets):
    broker = secure_broker(tmp_path, secrets, LocalClusterSecurity(sasl_mechanism="PLAIN", username="u",
                                                                   password="${env:P}"))
    jaas = broker.properties()["listener.name.local.plain.sasl.jaas.config"]
    assert jaas == 'org.apache.kafka.common.security.plain.PlainLoginModule required user_u="pw\\"1";'


def test_mutual_tls_needs_certificates_only(tmp_path, secrets):
    broker = secure_broker(tmp_path, secrets, LocalClusterSecurity(protocol="SSL"), password=None)
    props = broker.properties()
    assert props["ssl.client.auth"] == "required" and "sasl.enabled.mechanisms" not in props
    client = broker.settings.security.client().librdkafka()
    assert client["security.protocol"] == "SSL" and client["ssl.certificate.location"].endswith(".cert.pem")


def test_security_settings_are_checked():
    with pytest.raises(ValidationError, match="must be a reference"):
        LocalClusterSecurity(password="hunter2")
    with pytest.raises(ValidationError, match="needs password"):
        LocalClusterSecurity()
    with pytest.raises(ValidationError, match="remove password"):
        LocalClusterSecurity(protocol="SSL", password="${env:P}")
    with pytest.raises(ValidationError, match="env:NAME"):
        LocalClusterSecurity(password="${file:/p:k}", random_password_if_unset=True)


def test_password_from_the_environment_or_random_when_unset():
    spec = LocalClusterSecurity(password="${env:PW}")
    assert spec.resolve_password(RefResolver({"PW": "given"})) == "given"
    with pytest.raises(ConfigRefError, match="PW is not set"):
        spec.resolve_password(RefResolver({}))
    random_spec = LocalClusterSecurity(password="${env:PW}", random_password_if_unset=True)
    first, second = random_spec.resolve_password(RefResolver({})), random_spec.resolve_password(RefResolver({}))
    assert first != second and len(first) >= 24


def test_a_secure_broker_container_mounts_the_secret_folder_its_properties_and_data_live_in(tmp_path, secrets):
    from mirrordrill.harness.lab.compose.lab import BrokerImage, broker_service
    from mirrordrill.harness.lab.compose.spec import Mount
    broker = secure_broker(tmp_path, secrets, LocalClusterSecurity(password="${env:P}"))
    svc = broker_service(broker, BrokerImage("mirrordrill/broker:test", "/usr/bin/java", "/libs/*", "/log4j"))
    secret = str(secrets.path)
    assert svc.mounts == (Mount(str(broker.workdir), str(broker.workdir)), Mount(secret, secret))
    assert str(broker.config_path).startswith(secret + "/") and str(broker.data_dir).startswith(secret + "/")
    assert str(broker.config_path) in svc.command[2]
