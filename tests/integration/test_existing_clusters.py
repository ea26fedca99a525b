"""Existing clusters on real Kafka: plan checks read-only what a drill would touch, cleanup removes only
the drill's own names, and run refuses a cluster not allowed on the command line."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)

from mirrordrill.harness.cli.commands import main
from mirrordrill.harness.drill.validate import load_scenario
from mirrordrill.harness.lab.brokers.cluster import ClusterSpec
from mirrordrill.harness.lab.environment import Environment, TopologySpec
from mirrordrill.harness.tools.existing import plan as planning
from mirrordrill.harness.tools.existing.footprint import footprints

pytestmark = pytest.mark.integration

# dr runs Kafka's authorizer; the harness's own connections are ANONYMOUS there, so it is a super user
AUTHORIZER = {"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
              "super.users": "User:ANONYMOUS"}

DRILL = """\
name: team-drill
owned_prefix: md-t-
clusters:
  md-t-primary: {{existing: {{bootstrap_servers: "{primary}"}}}}
  md-t-dr: {{existing: {{bootstrap_servers: "{dr}"}}}}
topics: [{{name: md-t-orders, cluster: md-t-primary, partitions: 2}}]
replication: {{flows: [{{source: md-t-primary, target: md-t-dr, topics: [md-t-orders]}}]}}
load:
  producers: [{{cluster: md-t-primary, topics: [md-t-orders], rate: 10}}]
  consumers: [{{group: md-t-billing, cluster: md-t-primary, topics: [md-t-orders]}}]
invariants: {{rpo_records: 1000, duplicates: 1000}}
timeline:
  - {{at: 10s, do: unplanned_failover, from: md-t-primary, to: md-t-dr, how: partition}}
duration: 20s
"""


@pytest.fixture(scope="module")
def team_clusters(artifacts, session_workdir):
    """Two clusters standing for a team's own: the drill only reaches them by address."""
    spec = TopologySpec(clusters=(ClusterSpec("primary"), ClusterSpec("dr", broker_properties=AUTHORIZER)))
    with Environment(spec, session_workdir / "team-clusters", artifacts) as env:
        yield env


@pytest.fixture
def drill(team_clusters, tmp_path):
    path = tmp_path / "team-drill.yaml"
    path.write_text(DRILL.format(primary=team_clusters.cluster("primary").bootstrap,
                                 dr=team_clusters.cluster("dr").bootstrap))
    return path


def commit_group(bootstrap: str, group: str, topic: str) -> None:
    """A consumer group with a committed offset (what a drill's application leaves behind)."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        # a topic just created, or a group coordinator just elected, needs a moment on a busy machine
        waits = (KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
                 KafkaError.COORDINATOR_NOT_AVAILABLE, KafkaError.NOT_COORDINATOR)
        for attempt in range(120):
            try:
                c.commit(offsets=[TopicPartition(topic, 0, 0)], asynchronous=False)
                return
            except KafkaException as e:
                if e.args[0].code() not in waits or attempt == 119:
                    raise
                time.sleep(0.5)
    finally:
        c.close()


def topics_of(env, cluster: str) -> set[str]:
    return set(env.cluster(cluster).admin().list_topics(timeout=15).topics)


def test_plan_checks_then_cleanup_removes_only_the_drills_names(team_clusters, drill, capsys):
    env = team_clusters
    primary, dr = env.cluster("primary"), env.cluster("dr")
    # the team's own names, which nothing may touch
    primary.create_topics([NewTopic("orders", 1, 1)])
    commit_group(primary.bootstrap, "team-app", "orders")
    before = {"primary": topics_of(env, "primary"), "dr": topics_of(env, "dr")}

    assert main(["plan", str(drill)]) == 0
    out = capsys.readouterr().out
    assert "existing cluster md-t-primary" in out and "create                 md-t-orders" in out
    assert "create (remote copy)   md-t-primary.md-t-orders" in out
    assert f"advertised as 1={primary.bootstrap}" in out
    assert "[ok       ] permissions: the cluster has no authorizer" in out
    assert "[ok       ] permissions: User:ANONYMOUS is a super user (the authorizer grants it CLUSTER_ACTION" in out
    assert "[failed" not in out

    # an interrupted drill's leftovers: its topics, a group, an MM2 internal topic of its alias
    primary.create_topics([NewTopic("md-t-orders", 2, 1), NewTopic("mm2-offset-syncs.md-t-dr.internal", 1, 1)])
    dr.create_topics([NewTopic("md-t-primary.md-t-orders", 2, 1)])
    commit_group(primary.bootstrap, "md-t-billing", "md-t-orders")
    assert main(["plan", str(drill)]) == 1
    out = capsys.readouterr().out
    assert "[failed   ] no leftover topics: 2 topic(s) already named like the drill's: md-t-orders, " \
           "mm2-offset-syncs.md-t-dr.internal" in out
    assert "[failed   ] no leftover groups: md-t-billing exist" in out

    assert main(["cleanup", str(drill), "--dry-run"]) == 0
    assert f"md-t-primary ({primary.bootstrap}): would delete 2 topic(s)" in capsys.readouterr().out
    assert "md-t-orders" in topics_of(env, "primary")

    assert main(["cleanup", str(drill), "--cluster", "md-t-primary", "--yes"]) == 0
    assert "md-t-primary: deleted 2 topic(s), 1 group(s)" in capsys.readouterr().out
    assert "md-t-primary.md-t-orders" in topics_of(env, "dr")  # --cluster: only the one named
    assert main(["cleanup", str(drill), "--prefix", "md-t-", "--yes"]) == 0  # the drill's own prefix, spelled out
    assert topics_of(env, "primary") == before["primary"] and topics_of(env, "dr") == before["dr"]
    admin = primary.admin()  # held: a future of a client already collected never completes
    (kept,) = admin.list_consumer_group_offsets(
        [ConsumerGroupTopicPartitions("team-app")], request_timeout=15)["team-app"].result().topic_partitions
    assert (kept.topic, kept.offset) == ("orders", 0)  # the team's committed position is untouched
    assert main(["cleanup", str(drill), "--dry-run"]) == 0
    assert "would delete 0 topic(s) [] and 0 group(s) []" in capsys.readouterr().out
    assert main(["plan", str(drill)]) == 0


def test_cleanup_refuses_a_prefix_that_could_match_a_teams_names(drill, capsys):
    assert main(["cleanup", str(drill), "--prefix", "md", "--cluster", "md-t-primary"]) == 2
    assert "--prefix 'md' is refused" in capsys.readouterr().err


def test_cleanup_lists_asks_and_deletes_only_the_drills_prefix(team_clusters, drill, capsys):
    env = team_clusters
    primary = env.cluster("primary")
    # the team's names that look like the drill's, and the drill's own leftovers
    look_alike = ["md-t", "md-torders", "md_t-orders", "xmd-t-orders", "mm2-offset-syncs.dr.internal"]
    primary.create_topics([NewTopic(t, 1, 1) for t in look_alike + ["md-t-left", "md-u-other"]])
    commit_group(primary.bootstrap, "md-tapp", "md-torders")
    commit_group(primary.bootstrap, "md-t-app", "md-t-left")
    teams = topics_of(env, "primary") - {"md-t-left"}

    # not a terminal (pytest's stdin) and no --yes: it lists, deletes nothing and says how
    assert main(["cleanup", str(drill)]) == 2
    out, err = capsys.readouterr()
    assert f"md-t-primary ({primary.bootstrap}): to delete 1 topic(s) ['md-t-left'] and 1 group(s) ['md-t-app']" in out
    assert "nothing deleted: without a terminal to ask on, deleting needs --yes" in err
    assert "md-t-left" in topics_of(env, "primary")
    # a prefix the drill does not declare: only on clusters named one by one
    assert main(["cleanup", str(drill), "--prefix", "md-u-", "--yes"]) == 2
    assert "is not the drill's owned_prefix ('md-t-'): name each cluster" in capsys.readouterr().err
    assert main(["cleanup", "--bootstrap", primary.bootstrap, "--prefix", "md-u-", "--yes"]) == 2
    assert "one --cluster NAME" in capsys.readouterr().err
    assert "md-u-other" in topics_of(env, "primary")

    assert main(["cleanup", str(drill), "--yes"]) == 0
    assert "md-t-primary: deleted 1 topic(s), 1 group(s)" in capsys.readouterr().out
    assert topics_of(env, "primary") == teams  # the look-alikes and the other prefix survive
    admin = primary.admin()  # held: a future of a client already collected never completes
    groups = {g.group_id for g in admin.list_consumer_groups(request_timeout=15).result().valid}
    assert "md-tapp" in groups and "md-t-app" not in groups, groups
    assert main(["cleanup", "--bootstrap", primary.bootstrap, "--prefix", "md-u-", "--cluster", "team", "--yes"]) == 0
    assert "team: deleted 1 topic(s), 0 group(s)" in capsys.readouterr().out
    assert topics_of(env, "primary") == teams - {"md-u-other"}
    for fut in [*admin.delete_topics(look_alike, operation_timeout=30).values(),
                *admin.delete_consumer_groups(["md-tapp"], request_timeout=15).values()]:
        fut.result()


def test_run_refuses_existing_clusters_not_allowed_by_name(drill, capsys):
    assert main(["run", str(drill), "--allow-cluster", "md-t-primary"]) == 2
    err = capsys.readouterr().err
    assert "existing cluster(s) md-t-dr" in err and "--allow-cluster md-t-dr" in err


def test_plan_reads_the_principals_acls_on_the_cluster(team_clusters, drill):
    admin = team_clusters.cluster("dr").admin()
    fp = footprints(load_scenario(drill))["md-t-dr"]
    user = "User:drill"
    topic_acls = [AclBinding(ResourceType.TOPIC, "md-t-", ResourcePatternType.PREFIXED, user, "*",
                             AclOperation.ALL, AclPermissionType.ALLOW),
                  AclBinding(ResourceType.BROKER, "kafka-cluster", ResourcePatternType.LITERAL, user, "*",
                             AclOperation.DESCRIBE, AclPermissionType.ALLOW)]
    group_acl = AclBinding(ResourceType.GROUP, "md-t-", ResourcePatternType.PREFIXED, user, "*",
                           AclOperation.ALL, AclPermissionType.ALLOW)
    try:
        for fut in admin.create_acls(topic_acls).values():
            fut.result()
        check = planning._acls(admin, fp, user, None, AUTHORIZER)
        assert check.status == "failed"
        assert check.detail == "User:drill lacks READ on group 'md-t-'; DESCRIBE on group 'md-t-'; DELETE on group 'md-t-'"
        admin.create_acls([group_acl])[group_acl].result()
        check = planning._acls(admin, fp, user, None, AUTHORIZER)
        assert (check.status, check.detail) == ("ok", "User:drill's ACLs allow every operation listed")
    finally:
        everything_of_drill = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, user, None,
                                               AclOperation.ANY, AclPermissionType.ANY)
        for fut in admin.delete_acls([everything_of_drill]).values():
            fut.result()
