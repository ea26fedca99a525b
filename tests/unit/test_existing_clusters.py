"""Existing clusters in a drill file: secrets only by reference, only the drill's own names, no fault
on a team's brokers; the footprint plan prints; the ACL evaluation; cleanup's prefix rule."""

from __future__ import annotations

import pytest
from confluent_kafka.admin import AclBinding, AclOperation, AclPermissionType, ResourcePatternType, ResourceType

from mirrordrill.harness.drill.validate import ScenarioInvalid, parse_scenario
from mirrordrill.harness.lab.brokers import owned_names
from mirrordrill.harness.lab.brokers.existing_connect import client_config, principal_of
from mirrordrill.harness.tools.existing.commands import refuse_existing
from mirrordrill.harness.tools.existing.footprint import Permission, footprints
from mirrordrill.harness.tools.existing.plan import _allowed, plan, render
from mirrordrill.primitives.kafka.owned_names import owned_topic

DRILL = """\
name: team-drill
owned_prefix: md-t-
clusters:
  md-t-primary:
    existing:
      bootstrap_servers: "kafka-1.staging:9093, kafka-2.staging:9093"
      security: {protocol: SASL_SSL, sasl_mechanism: SCRAM-SHA-512, username: drill,
                 password: "${env:DRILL_PASSWORD}", ca_pem: /etc/team/ca.pem}
      properties: {client.dns.lookup: use_all_dns_ips}
  md-t-dr:
    existing: {bootstrap_servers: "kafka-dr.staging:9093"}
topics: [{name: md-t-orders, cluster: md-t-primary, partitions: 6, replication_factor: 3}]
replication: {flows: [{source: md-t-primary, target: md-t-dr, topics: [md-t-orders]}]}
load:
  producers: [{cluster: md-t-primary, topics: [md-t-orders], rate: 10}]
  consumers: [{group: md-t-billing, cluster: md-t-primary, topics: [md-t-orders]}]
invariants: {rpo_records: 1000, duplicates: 1000}
duration: 20s
timeline:
  - {at: 10s, do: unplanned_failover, from: md-t-primary, to: md-t-dr, how: partition}
"""


def problems(text: str) -> list[str]:
    with pytest.raises(ScenarioInvalid) as err:
        parse_scenario(text, "d.yaml")
    return [f"{p.field}: {p.message}" for p in err.value.problems]


def test_a_drill_on_existing_clusters_validates():
    s = parse_scenario(DRILL, "d.yaml")
    assert sorted(s.existing_clusters()) == ["md-t-dr", "md-t-primary"]
    assert s.clusters["md-t-primary"].existing.bootstrap_servers == "kafka-1.staging:9093,kafka-2.staging:9093"


@pytest.mark.parametrize("inline, field", [
    ('password: "hunter2"', "security"),
    ('password: "${env:DRILL_PASSWORD}", key_password: "pw123"', "security"),
])
def test_an_inline_secret_is_refused_without_echoing_it(inline, field):
    text = DRILL.replace('password: "${env:DRILL_PASSWORD}"', inline)
    [p] = problems(text)
    assert p.startswith(f"clusters.md-t-primary.existing.{field}") and "must be a reference" in p
    assert "hunter2" not in p and "pw123" not in p


def test_a_secret_looking_property_must_be_a_reference_and_security_keys_go_under_security():
    text = DRILL.replace("{client.dns.lookup: use_all_dns_ips}",
                         '{ssl.keystore.password: "s3cret", security.protocol: SSL, client.id: "${env:ID}"}')
    [p] = problems(text)
    assert "ssl.keystore.password looks secret, so it must be a reference" in p and "s3cret" not in p
    assert "security.protocol: set it under security" in p


def test_started_cluster_fields_and_bad_addresses_are_refused_on_an_existing_cluster():
    text = DRILL.replace('existing: {bootstrap_servers: "kafka-dr.staging:9093"}',
                         'brokers: 3\n    existing: {bootstrap_servers: "kafka-dr.staging"}')
    found = "\n".join(problems(text))
    assert "brokers describe a cluster the harness starts" in found or "'kafka-dr.staging' is not HOST:PORT" in found


def test_every_name_on_an_existing_cluster_starts_with_the_owned_prefix():
    text = (DRILL.replace("name: md-t-orders, cluster", "name: orders, cluster")
            .replace("topics: [md-t-orders]}]}", "topics: [.*]}]}").replace("topics: [md-t-orders], rate", "topics: [orders], rate")
            .replace("topics: [md-t-orders]}]\ninv", "topics: [orders]}]\ninv")
            .replace("group: md-t-billing", "group: billing"))
    found = problems(text)
    assert "topics[0].name: topic 'orders' would be created on the existing cluster md-t-primary: name it md-t-orders (owned_prefix)" in found
    assert "replication.flows[0].topics[0]: pattern '.*' does not start with the prefix 'md-t-' written literally, so it " \
           "could match the team's own names: write it as md-t- followed by the rest (e.g. md-t-orders or md-t-.*); the " \
           "rest is matched after the prefix (flow md-t-primary->md-t-dr: it reads the topics it matches on the " \
           "existing cluster md-t-primary)" in found
    assert any(p.startswith("load.consumers[0].group: consumer group 'billing'") for p in found)


def test_the_prefix_is_required_and_cluster_names_are_aliases_under_it():
    found = problems(DRILL.replace("owned_prefix: md-t-\n", ""))
    assert found[0].startswith("owned_prefix: the drill uses existing cluster(s)")
    found = problems(DRILL.replace("md-t-dr", "dr"))
    assert "clusters.dr: cluster 'dr' is also the replication alias written into remote and internal topic names " \
           "on existing clusters: name it md-t-dr" in found


@pytest.mark.parametrize("step, field, says", [
    ("{at: 12s, do: kill_broker, cluster: md-t-dr}", "timeline[1].do", "kill_broker on md-t-dr is refused"),
    ("{at: 12s, do: pause_cluster, cluster: md-t-dr}", "timeline[1].do", "pause_cluster on md-t-dr is refused"),
    ("{at: 12s, do: set_topic_config, cluster: md-t-dr, topic: payments, config: {retention.ms: 1}}",
     "timeline[1].topic", "set_topic_config on topic 'payments' of the existing cluster md-t-dr"),
])
def test_faults_on_a_teams_brokers_are_refused_with_the_reason(step, field, says):
    found = problems(DRILL + f"  - {step}\n")
    assert any(p.startswith(f"{field}: {says}") for p in found), found


def test_a_failback_onto_an_existing_cluster_validates():
    # its wipe deletes only the drill's own names there (ExistingKafkaCluster.wipe)
    parse_scenario(DRILL + "  - {at: 12s, do: failback, from: md-t-dr, to: md-t-primary}\n", "d.yaml")


def test_an_unplanned_failover_that_kills_an_existing_primary_is_refused():
    found = problems(DRILL.replace("how: partition", "how: kill"))
    assert found == ["timeline[0].how: how: kill would SIGKILL the brokers of md-t-primary, an existing cluster; use "
                     "how: partition, which cuts the harness's proxies to it"]


def test_mm2_exactly_once_is_refused_on_existing_clusters_and_parsed_elsewhere():
    found = problems(DRILL.replace("replication: {flows:", "replication: {mirrormaker2: {exactly_once: true}, flows:"))
    assert len(found) == 1 and found[0].startswith("replication.mirrormaker2.exactly_once: MirrorMaker 2's "
                                                   "exactly-once mode writes transactions on the target")
    local = """\
name: local-drill
clusters: {a: {}, b: {}}
topics: [{name: orders, cluster: a}]
replication: {replicator: mirrormaker2, mirrormaker2: {exactly_once: true}, flows: [{source: a, target: b}]}
"""
    assert parse_scenario(local, "d.yaml").replication.mirrormaker2.exactly_once is True
    assert "did you mean" in "; ".join(problems(local.replace("exactly_once", "exactly_one")))


def test_the_footprint_lists_every_name_and_permission():
    fps = footprints(parse_scenario(DRILL, "d.yaml"))
    assert fps["md-t-primary"].created_topics == ["md-t-orders"] and fps["md-t-primary"].groups == ["md-t-billing"]
    assert fps["md-t-dr"].created_topics == ["md-t-primary.checkpoints.internal", "md-t-primary.md-t-orders"]
    assert fps["md-t-dr"].groups == ["md-t-billing"]  # it fails over there
    mm2 = footprints(parse_scenario(DRILL, "d.yaml"), "mirrormaker2")
    assert "mm2-offset-syncs.md-t-dr.internal" in mm2["md-t-primary"].created_topics
    assert {"mm2-configs.md-t-primary.internal", "mm2-offsets.md-t-primary.internal"} <= set(mm2["md-t-dr"].created_topics)
    mm1 = footprints(parse_scenario(DRILL, "d.yaml"), "mirrormaker1")  # no checkpoints; a group on the source
    assert mm1["md-t-dr"].created_topics == ["md-t-primary.md-t-orders"]
    assert set(mm1["md-t-primary"].groups) == {"md-t-billing", "md-t-primary.mirrormaker1.md-t-dr"}
    text = render(plan(parse_scenario(DRILL, "d.yaml"), None, check=False))
    assert "ACLs created or changed: none (ACL sync is off)" in text
    assert "emit.heartbeats.enabled=false" in text and "READ, DESCRIBE, DELETE on group prefixed 'md-t-'" in text


def binding(resource, name, pattern, op, permission="ALLOW", principal="User:drill"):
    return AclBinding(ResourceType[resource], name, ResourcePatternType[pattern], principal, "*",
                      AclOperation[op], AclPermissionType[permission])


def test_acl_evaluation_prefix_literal_wildcard_and_deny():
    perm = Permission("TOPIC", "PREFIXED", "md-t-", ("READ",), "")
    assert _allowed([binding("TOPIC", "md-", "PREFIXED", "READ")], "User:drill", perm, "READ")
    assert _allowed([binding("TOPIC", "*", "LITERAL", "ALL", principal="User:*")], "User:drill", perm, "READ")
    assert not _allowed([binding("TOPIC", "md-t-orders", "LITERAL", "READ")], "User:drill", perm, "READ")
    assert not _allowed([binding("TOPIC", "md-t-x", "PREFIXED", "READ")], "User:drill", perm, "READ")
    assert not _allowed([binding("TOPIC", "md-", "PREFIXED", "WRITE")], "User:drill", perm, "READ")
    assert not _allowed([binding("TOPIC", "md-", "PREFIXED", "READ", principal="User:other")], "User:drill", perm, "READ")
    assert not _allowed([binding("TOPIC", "md-", "PREFIXED", "ALL"), binding("TOPIC", "*", "LITERAL", "READ", "DENY")],
                        "User:drill", perm, "READ")
    cluster = Permission("CLUSTER", "LITERAL", "kafka-cluster", ("DESCRIBE",), "")
    assert _allowed([binding("BROKER", "kafka-cluster", "LITERAL", "DESCRIBE")], "User:drill", cluster, "DESCRIBE")


def test_client_settings_resolve_references_and_the_principal_is_told(monkeypatch):
    s = parse_scenario(DRILL, "d.yaml")
    primary = s.existing_clusters()["md-t-primary"]
    monkeypatch.setenv("DRILL_PASSWORD", "from-env")
    conf = client_config(primary, None)
    assert conf["sasl.password"] == "from-env" and conf["security.protocol"] == "SASL_SSL"
    assert conf["client.dns.lookup"] == "use_all_dns_ips" and conf["ssl.ca.location"] == "/etc/team/ca.pem"
    assert principal_of(primary) == "User:drill" and principal_of(s.existing_clusters()["md-t-dr"]) == "User:ANONYMOUS"


def test_cleanup_prefix_rule_and_what_it_owns():
    for bad in ("md", "md-t", "MD-T-", "-x-", "md.t-", ""):
        with pytest.raises(owned_names.CleanupRefused):
            owned_names.check_prefix(bad)
    owned_names.check_prefix("md-t-")
    assert owned_topic("md-t-orders", "md-t-") and owned_topic("mm2-offset-syncs.md-t-dr.internal", "md-t-")
    assert not owned_topic("orders", "md-t-") and not owned_topic("mm2-offset-syncs.dr.internal", "md-t-")


def test_run_needs_every_existing_cluster_allowed_by_name():
    s = parse_scenario(DRILL, "d.yaml")
    assert "--allow-cluster md-t-dr --allow-cluster md-t-primary" in refuse_existing(s, None)
    assert "--allow-cluster md-t-dr" in refuse_existing(s, ["md-t-primary"])
    assert refuse_existing(s, ["md-t-primary", "md-t-dr"]) is None


def _replicator_config(s):
    from mirrordrill.harness.drill.preflight import _Planned
    from mirrordrill.harness.drill.replicators.setup import ReplicationSetup
    from mirrordrill.harness.drill.topology import flow_specs, topology_of
    specs = flow_specs(s)
    setup = ReplicationSetup(env=_Planned(topology_of(s)), flows=specs, policy=s.replication.policy,
                             separator=s.replication.separator)
    return setup.replicator_config(specs, None, resolve_addresses=False)


@pytest.mark.parametrize("pattern, anchored", [
    ("md-t-(?:orders|payments)", r"md\-t\-(?:(?:orders|payments))"),
    (r"md\-t\-.*", r"md\-t\-(?:.*)"),  # the prefix written escaped is read as the same prefix
])
def test_the_replicators_receive_the_prefix_literally_then_the_rest(pattern, anchored):
    from mirrordrill.replicator.config.render import to_mm2_properties
    s = parse_scenario(DRILL.replace("topics: [md-t-orders]}]}", f"topics: ['{pattern}']}}]}}"), "d.yaml")
    assert s.replication.flows[0].topics == [anchored]
    config = _replicator_config(s)
    assert f"topics = {anchored}" in to_mm2_properties(config, include_mirrordrill=False).replace("\\\\", "\\")
    selects = config.flows[0].topic_filter().should_replicate_topic
    assert not selects("orders") and not selects("md-tXorders") and not selects("xmd-t-orders")
    assert selects("md-t-orders")


def test_the_footprint_and_checker_read_the_same_anchored_pattern():
    from mirrordrill.harness.drill.topology import check_pairs
    text = DRILL.replace("topics: [md-t-orders]}]}", "topics: ['md-t-(?:orders|x)']}]}")
    s = parse_scenario(text, "d.yaml")
    assert footprints(s)["md-t-dr"].created_topics == ["md-t-primary.checkpoints.internal", "md-t-primary.md-t-orders"]
    [pair] = check_pairs(s, {"md-t-primary": {"md-t-orders"}})
    assert pair.topic_map == {"md-t-primary.md-t-orders": "md-t-orders"}


def test_an_owned_drill_with_identity_naming_and_synced_groups_validates_and_is_anchored():
    text = DRILL.replace("replication: {flows:", "replication: {policy: identity, flows:").replace(
        "topics: [md-t-orders]}]}", "topics: [md-t-orders], settings: {sync.group.offsets.enabled: true, "
                                    "groups: 'md-t-billing, md-t-app-.*'}}]}")
    flow = parse_scenario(text, "d.yaml").replication.flows[0]
    assert flow.settings["groups"] == r"md\-t\-(?:billing), md\-t\-(?:app-.*)"
    groups = _replicator_config(parse_scenario(text, "d.yaml")).flows[0].group_filter().should_replicate_group
    assert groups("md-t-billing") and groups("md-t-app-1") and not groups("billing") and not groups("team-app")


def test_a_failover_onto_an_existing_cluster_with_owned_names_validates():
    # the shipped shape: the moved producers and consumers use the drill's own names there
    parse_scenario(DRILL.replace("how: partition}", "how: partition}\n  - {at: 15s, do: failback, from: md-t-dr, "
                                                    "to: md-t-primary, switch_back: true}"), "d.yaml")


@pytest.mark.parametrize("argv, says", [
    (["FILE", "--bootstrap", "h:9092"], "not both"),
    (["--bootstrap", "h:9092", "--prefix", "md-t-"], "one --cluster NAME"),
    (["--bootstrap", "h:9092", "--cluster", "team"], "--prefix P and one --cluster NAME"),
    (["FILE", "--prefix", "md-u-"], "--prefix 'md-u-' is not the drill's owned_prefix ('md-t-'): name each cluster"),
    (["FILE", "--cluster", "md-t-elsewhere"], "--cluster md-t-elsewhere: not an existing cluster of"),
    (["FILE", "--prefix", "md", "--cluster", "md-t-dr"], "--prefix 'md' is refused"),
    (["LOCAL"], "declares no existing cluster"),
])
def test_cleanup_names_its_scope_before_it_connects(argv, says, tmp_path, capsys, monkeypatch):
    from mirrordrill.harness.cli.commands import main
    monkeypatch.setenv("DRILL_PASSWORD", "not-a-real-one")  # the drill's secret resolves; its scope is what is wrong
    from tests.unit.test_scenario_validation import BASE
    (tmp_path / "d.yaml").write_text(DRILL)
    (tmp_path / "local.yaml").write_text(BASE)
    argv = [str(tmp_path / "d.yaml") if a == "FILE" else str(tmp_path / "local.yaml") if a == "LOCAL" else a
            for a in argv]
    assert main(["cleanup", *argv]) == 2
    assert says in capsys.readouterr().err


def test_plan_refuses_offline_what_could_write_outside_the_prefix(tmp_path, capsys):
    from mirrordrill.harness.cli.commands import main
    path = tmp_path / "d.yaml"
    path.write_text(DRILL.replace("topics: [md-t-orders]}]}", "topics: ['md-t-.*|.*']}]}"))
    assert main(["plan", str(path), "--offline"]) == 2
    err = capsys.readouterr().err
    assert f"{path}:13: replication.flows[0].topics[0]: pattern 'md-t-.*|.*': a '|' outside parentheses" in err


def test_a_rest_that_compiles_alone_but_not_after_the_prefix_is_refused():
    # '(?i)' compiles on its own, but a global flag may not follow the prefix once anchored
    from mirrordrill.primitives.kafka.owned_names import PatternRefused, anchored_pattern
    with pytest.raises(PatternRefused, match="is not a regex on its own"):
        anchored_pattern("md-t-(?i)orders", "md-t-")
    assert anchored_pattern("md-t-orders", "md-t-") == r"md\-t\-(?:orders)"
