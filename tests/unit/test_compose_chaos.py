"""docker-compose.chaos.yml is the quickstart lab as harness/tools/compose_file.py renders it."""

from __future__ import annotations

import re

import yaml

from mirrordrill.harness.tools.compose_file import CHAOS_FILE, render_chaos


def test_the_checked_in_chaos_file_is_the_rendering():
    assert CHAOS_FILE.read_text() == render_chaos(), (
        "docker-compose.chaos.yml differs from its rendering: run python -m mirrordrill.harness.tools.compose_file")


def test_the_chaos_lab_listens_on_loopback_with_the_two_port_variables():
    text = render_chaos()
    lab = yaml.safe_load(text)
    assert set(lab["services"]) == {"broker-primary-1", "broker-dr-1", "toxiproxy", "spark-master", "spark-worker",
                                    "replicator", "locust"}
    for name, svc in lab["services"].items():
        assert svc["network_mode"] == "host", name
        assert svc["labels"]["mirrordrill.drill"] == "mirrordrill-chaos", name
    primary = lab["configs"]["broker-primary-1-properties"]["content"]
    assert "listeners = LOCAL://127.0.0.1:${PRIMARY_PORT:-19092}," in primary
    assert "listeners = LOCAL://127.0.0.1:${DR_PORT:-29092}," in lab["configs"]["broker-dr-1-properties"]["content"]
    for content in (c["content"] for c in lab["configs"].values()):
        for host in re.findall(r"//([^:,\s]+):", content):
            assert host == "127.0.0.1"
    replicator = lab["configs"]["replicator-properties"]["content"]
    assert "primary->dr.enabled = true" in replicator or "primary->dr.enabled=true" in replicator
    # MM2's defaults, left unwritten: every topic, DefaultReplicationPolicy (primary.<topic>)
    assert "primary->dr.topics " not in replicator and "replication.policy" not in replicator
    assert "mirrordrill.spark.master = spark://127.0.0.1:7077" in replicator
    assert lab["volumes"] and all(v["labels"]["mirrordrill"] == "true" for v in lab["volumes"].values())
