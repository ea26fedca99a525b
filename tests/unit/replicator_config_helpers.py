"""What the replicator configuration tests share: a two-cluster head, and loaders that expect errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mirrordrill.primitives.config_errors import ConfigError
from mirrordrill.replicator.config.properties_reader import parse_mm2_properties
from mirrordrill.replicator.config.settings import ReplicatorConfig
from mirrordrill.replicator.config.yaml_reader import parse_yaml
from mirrordrill.replicator.filters import DEFAULT_CONFIG_PROPERTIES_EXCLUDE, DEFAULT_GROUPS_EXCLUDE, DEFAULT_TOPICS_EXCLUDE

EXAMPLES = Path(__file__).resolve().parents[2] / "replicator" / "examples"

HEAD = """\
clusters = A, B
A.bootstrap.servers = a1:9092, a2:9092
B.bootstrap.servers = b1:9092
"""

YAML_HEAD = """\
clusters:
  A:
    bootstrap_servers: [a1:9092, a2:9092]
  B:
    bootstrap_servers: b1:9092
flows:
  - source: A
    target: B
"""


def props(body: str = "", head: str = HEAD) -> ReplicatorConfig:
    return parse_mm2_properties(head + body, "mm2.properties")


def props_error(body: str, head: str = HEAD) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        parse_mm2_properties(head + body, "mm2.properties")
    return info.value


def yaml_error(text: str) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        parse_yaml(text, "replicator.yaml")
    return info.value


def line_of(text: str, needle: str) -> int:
    return next(number for number, line in enumerate(text.splitlines(), 1) if needle in line)


# Every flow field with MirrorMaker 2's default (ours for mirrordrill.* knobs).
MM2_DEFAULTS: dict[str, Any] = {
    "topics": [".*"],
    "topics_exclude": list(DEFAULT_TOPICS_EXCLUDE),
    "groups": [".*"],
    "groups_exclude": list(DEFAULT_GROUPS_EXCLUDE),
    "replication_policy_class": "default",
    "replication_policy_separator": ".",
    "replication_policy_internal_topic_separator_enabled": True,
    "sync_topic_configs_enabled": True,
    "sync_topic_configs_interval_seconds": 600,
    "config_properties_exclude": list(DEFAULT_CONFIG_PROPERTIES_EXCLUDE),
    "use_defaults_from": "target",
    "refresh_topics_enabled": True,
    "refresh_topics_interval_seconds": 600,
    "refresh_groups_enabled": True,
    "refresh_groups_interval_seconds": 600,
    "emit_checkpoints_enabled": True,
    "emit_checkpoints_interval_seconds": 60,
    "sync_group_offsets_enabled": False,
    "sync_group_offsets_interval_seconds": 60,
    "emit_heartbeats_enabled": True,
    "emit_heartbeats_interval_seconds": 1,
    "heartbeats_replication_enabled": True,
    "emit_offset_syncs_enabled": True,
    "offset_syncs_topic_location": "source",
    "offset_lag_max": 100,
    "replication_factor": 2,
    "checkpoints_topic_replication_factor": 3,
    "heartbeats_topic_replication_factor": 3,
    "offset_syncs_topic_replication_factor": 3,
    "tasks_max": 1,
    "consumer_poll_timeout_ms": 1000,
    "admin_timeout_ms": 60000,
    "consumer": {},
    "producer": {},
    "admin": {},
    "mm2_only": {},
    "mode": "microbatch",
    "max_offsets_per_trigger": None,
    "trigger_interval": None,
    "starting_offsets": None,
    "checkpoint_dir": None,
    "provenance_header": True,
    "restore_history": False,
    "transactional": False,
    "transaction_commit_interval_ms": 100,
    "transactional_id_prefix": "",
    "trace_records": False,
}
