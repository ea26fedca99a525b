"""How an existing cluster is put behind the harness's Kafka proxy: the listeners mirror a local
broker's (one local, one per remote data center advertised at its Toxiproxy port), and the
drill's clients trust the drill's CA while the proxy carries the team's trust and key upstream."""

from __future__ import annotations

from mirrordrill.harness.lab.brokers.broker import BrokerPorts
from mirrordrill.harness.lab.brokers.existing import LOCAL, ExistingSecurity, UpstreamNode, proxy_spec
from mirrordrill.primitives.kafka.security import ResolvedSecurity
from mirrordrill.primitives.kafka.tls import CertificateAuthority
from mirrordrill.primitives.secret_dir import SecretDir


def test_every_broker_gets_a_local_listener_and_one_per_remote_advertised_at_the_wan_proxy():
    nodes = [UpstreamNode(4, "kafka-a.team:9093"), UpstreamNode(7, "kafka-b.team:9093")]
    ports = [BrokerPorts(local=100, controller=0, wan={"dr": 101, "edge": 102}, wan_advertised={"dr": 201, "edge": 202}),
             BrokerPorts(local=110, controller=0, wan={"dr": 111, "edge": 112}, wan_advertised={"dr": 211, "edge": 212})]
    spec = proxy_spec("md-t-primary", nodes, ports, (None, None))
    assert spec.upstream == {4: "kafka-a.team:9093", 7: "kafka-b.team:9093"}
    assert sorted((listener.listen_port, listener.node_id, listener.location) for listener in spec.listeners) == [
        (100, 4, LOCAL), (101, 4, "dr"), (102, 4, "edge"), (110, 7, LOCAL), (111, 7, "dr"), (112, 7, "edge")]
    # local clients are told the listener itself; remote ones the Toxiproxy port in front of theirs
    assert spec.advertised == {LOCAL: {4: 100, 7: 110}, "dr": {4: 201, 7: 211}, "edge": {4: 202, 7: 212}}


def test_clients_trust_the_drill_ca_and_keep_sasl_while_the_proxy_gets_the_teams_tls(tmp_path):
    secrets = SecretDir("existing-layout-test", root=tmp_path)
    ca = CertificateAuthority(secrets.path)
    team = ResolvedSecurity(protocol="SASL_SSL", sasl_mechanism="SCRAM-SHA-512", username="drill",
                            password="pw-123", ca_pem="/etc/team/ca.pem", cert_pem="/etc/team/c.pem",
                            key_pem="/etc/team/k.pem", key_password="kp-456")
    sec = ExistingSecurity.create("md-t-dr", team, secrets, ca)
    client = sec.client()
    assert (client.protocol, client.username, client.password) == ("SASL_SSL", "drill", "pw-123")
    assert client.ca_pem == str(ca.cert_pem) and client.cert_pem is None and client.key_pem is None
    upstream, downstream = sec.proxy_tls()
    assert (upstream.ca_pem, upstream.cert_pem, upstream.key_pem) == ("/etc/team/ca.pem", "/etc/team/c.pem", "/etc/team/k.pem")
    assert open(upstream.key_password_file).read() == "kp-456"  # a 0600 file in the secret folder, never the spec
    assert downstream.cert_pem == str(sec.proxy_cert.cert_pem)
    assert {"pw-123", "kp-456", sec.proxy_cert.key_pem.read_text()} <= set(sec.secret_values())
    secrets.remove()


def test_a_plaintext_cluster_needs_no_tls_anywhere(tmp_path):
    sec = ExistingSecurity.create("md-t-dr", ResolvedSecurity(), None, None)
    assert sec.proxy_tls() == (None, None) and sec.client().librdkafka() == {"security.protocol": "PLAINTEXT"}
