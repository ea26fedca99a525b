"""Bounds that depend on more than one field: records against Kafka's size limits, partitions per cluster."""

from __future__ import annotations

from mirrordrill.harness.drill.validate import parse_scenario
from tests.unit.test_scenario_validation import BASE


def test_large_records_validate_once_the_producer_topic_and_brokers_take_them():
    text = (BASE.replace("rate: 100}", "rate: 100, record_size: 2097152, settings: {max.request.size: 4194304}}")
            .replace("{name: orders, cluster: primary, partitions: 3}",
                     "{name: orders, cluster: primary, partitions: 3, config: {max.message.bytes: 4194304}}"))
    assert parse_scenario(text, "d.yaml").load.producers[0].record_size.fixed == 2097152


def test_add_partitions_sets_a_topic_s_total_rather_than_adding_to_it():
    topics = "".join(f"  - {{name: t{i}, cluster: dr, partitions: 1000}}\n" for i in range(9))
    text = (BASE.replace("replication:\n", topics + "  - {name: t9, cluster: dr, partitions: 400}\nreplication:\n", 1)
            + "timeline:\n  - {at: 5s, do: add_partitions, cluster: dr, topic: t9, partitions: 900}\n")
    # 9,000 + 900 on dr (under 10,000); adding the 900 to t9's 400 would count 10,300
    assert parse_scenario(text, "d.yaml").timeline[0].partitions == 900
