"""The stable client address: clients bootstrapping through it reach whichever cluster it
points at, and re-pointing it moves new clients without a configuration change."""

from __future__ import annotations

from confluent_kafka.admin import AdminClient

from tests.integration.kafka_helpers import new_topic, produce_values, read_values, unique_topic


def cluster_id_seen_through(bootstrap: str) -> str:
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    return admin.describe_cluster(request_timeout=15).result(timeout=20).cluster_id


def test_clients_follow_the_stable_address_when_it_is_re_pointed(wan_env):
    east, west = wan_env.cluster("east"), wan_env.cluster("west")
    address = wan_env.add_stable_address("east", name="test-clients")
    try:
        assert cluster_id_seen_through(address.bootstrap) == cluster_id_seen_through(east.bootstrap)
        topic = unique_topic("stable")
        east.create_topics([new_topic(topic)])
        west.create_topics([new_topic(topic)])
        produce_values(address.bootstrap, topic, [b"to-east"])

        address.point_to(west)
        assert address.points_to == "west" and address.history == ["east", "west"]
        assert cluster_id_seen_through(address.bootstrap) == cluster_id_seen_through(west.bootstrap)
        produce_values(address.bootstrap, topic, [b"to-west"])

        # each record landed on the cluster the address resolved to when it was written
        assert read_values(east.bootstrap, topic) == [b"to-east"]
        assert read_values(west.bootstrap, topic) == [b"to-west"]
    finally:
        wan_env.remove_stable_address("test-clients")
