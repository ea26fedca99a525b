"""Secure local clusters: SASL_SSL (SCRAM, PLAIN) and mutual TLS, reached locally and through the WAN proxies."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from mirrordrill.harness.lab.brokers.cluster import ClusterSpec, round_trip
from mirrordrill.harness.lab.brokers.secure import LocalClusterSecurity
from mirrordrill.harness.lab.environment import Environment, TopologySpec
from mirrordrill.primitives.config_refs import RefResolver

pytestmark = pytest.mark.integration

SCRAM = LocalClusterSecurity(password="${env:SECURE_TEST_PW}")
PLAIN = LocalClusterSecurity(sasl_mechanism="PLAIN", password="${env:SECURE_TEST_PW}")
MTLS = LocalClusterSecurity(protocol="SSL")


@pytest.fixture(scope="module")
def secure_env(artifacts, session_workdir, lab_backend):
    spec = TopologySpec(clusters=(ClusterSpec("scram", security=SCRAM), ClusterSpec("plain", security=PLAIN),
                                  ClusterSpec("mtls", security=MTLS)),
                        links=(("scram", "plain"), ("scram", "mtls")))
    refs = RefResolver({"SECURE_TEST_PW": "pw-for-the-secure-cluster-test"})
    with Environment(spec, session_workdir / "secure-env", artifacts, refs=refs,
                     backend=lab_backend.make("secure")) as env:
        yield env
    assert not env.secrets.path.exists(), "the secret folder outlived the environment"


@pytest.mark.parametrize("cluster, from_cluster", [("scram", None), ("plain", None), ("mtls", None),
                                                   ("scram", "plain"), ("plain", "scram"), ("mtls", "scram")])
def test_clients_round_trip_locally_and_through_the_wan(secure_env, cluster, from_cluster):
    round_trip(secure_env.cluster(cluster), from_cluster, timeout_s=30, topic=f"rt-{from_cluster or 'local'}")


@pytest.mark.parametrize("cluster", ["scram", "plain", "mtls"])
def test_clients_without_credentials_are_refused(secure_env, cluster):
    c = secure_env.cluster(cluster)
    plaintext = AdminClient({"bootstrap.servers": c.bootstrap, "log_level": 0})
    with pytest.raises(KafkaException):
        plaintext.list_topics(timeout=5)
    conf = c.client_config()
    if "sasl.password" in conf:
        wrong = AdminClient({**conf, "sasl.password": "wrong", "log_level": 0})
    else:  # mutual TLS: TLS that trusts the CA but shows no certificate
        wrong = AdminClient({k: v for k, v in conf.items() if not k.startswith(("ssl.certificate", "ssl.key"))}
                            | {"log_level": 0})
    with pytest.raises(KafkaException):
        wrong.list_topics(timeout=5)


def test_broker_files_with_keys_live_only_in_the_secret_folder(secure_env):
    secret_root = secure_env.secrets.path
    for c in secure_env.clusters.values():
        for b in c.brokers:
            assert b.config_path.parent == secret_root
            assert not (b.workdir / "server.properties").exists()
    leaks = [p for p in secure_env.workdir.rglob("*") if p.is_file()
             and any(s in p.read_text(errors="replace") for s in secure_env.secret_values())]
    assert leaks == []
