"""One replication flow ``source -> target``: MM2's per-flow settings with their defaults, plus ours."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from mirrordrill.primitives.config_errors import InvalidSetting
from mirrordrill.replicator.config.validation import (
    StrictModel,
    check_flow_ends,
    check_mm2_flow_settings,
    check_pattern_list,
    check_separator,
    check_spark_flow_settings,
    trigger_seconds,
)
from mirrordrill.replicator.filters import (
    DEFAULT_CONFIG_PROPERTIES_EXCLUDE,
    DEFAULT_GROUPS,
    DEFAULT_GROUPS_EXCLUDE,
    DEFAULT_TOPICS,
    DEFAULT_TOPICS_EXCLUDE,
    ConfigPropertyFilter,
    GroupFilter,
    TopicFilter,
    TopicSelector,
)
from mirrordrill.replicator.policy import POLICY_NAMES, DefaultReplicationPolicy, policy_from_name
from mirrordrill.replicator.transactions import id_prefix

Feature = Literal[
    "refresh_topics",
    "refresh_groups",
    "sync_topic_configs",
    "emit_checkpoints",
    "sync_group_offsets",
    "emit_heartbeats",
]


def _list_field(default: tuple[str, ...]) -> Any:
    return Field(default_factory=lambda: list(default))


# The trigger when a flow sets none (see FlowConfig.effective_trigger_interval for why).
REALTIME_TRIGGER_DEFAULT = "5 minutes"
MICROBATCH_TRIGGER_DEFAULT = "0 seconds"


class FlowConfig(StrictModel):
    """One replication flow ``source -> target`` with MM2's settings and defaults, plus ours.

    Intervals follow MM2: a negative interval disables the task, zero is invalid. Our knobs:
    ``mode``, ``max_offsets_per_trigger``, ``trigger_interval`` (Spark interval string;
    None means "0 seconds" for microbatch and "10 seconds" for realtime), ``starting_offsets``
    (None: the source consumer's ``auto.offset.reset``, else earliest as in MM2),
    ``checkpoint_dir``, ``provenance_header``, ``restore_history``. ``tasks_max`` is also ``num_streams``.
    """

    source: str
    target: str
    enabled: bool = True
    topics: list[str] = _list_field(DEFAULT_TOPICS)
    topics_exclude: list[str] = _list_field(DEFAULT_TOPICS_EXCLUDE)
    groups: list[str] = _list_field(DEFAULT_GROUPS)
    groups_exclude: list[str] = _list_field(DEFAULT_GROUPS_EXCLUDE)
    replication_policy_class: Literal["default", "identity"] = "default"
    replication_policy_separator: str = "."
    replication_policy_internal_topic_separator_enabled: bool = True
    sync_topic_configs_enabled: bool = True
    sync_topic_configs_interval_seconds: int = 600
    config_properties_exclude: list[str] = _list_field(DEFAULT_CONFIG_PROPERTIES_EXCLUDE)
    use_defaults_from: Literal["source", "target"] = "target"
    refresh_topics_enabled: bool = True
    refresh_topics_interval_seconds: int = 600
    refresh_groups_enabled: bool = True
    refresh_groups_interval_seconds: int = 600
    emit_checkpoints_enabled: bool = True
    emit_checkpoints_interval_seconds: int = 60
    sync_group_offsets_enabled: bool = False
    sync_group_offsets_interval_seconds: int = 60
    emit_heartbeats_enabled: bool = True
    emit_heartbeats_interval_seconds: int = 1
    heartbeats_replication_enabled: bool = True
    emit_offset_syncs_enabled: bool = True
    offset_syncs_topic_location: Literal["source", "target"] = "source"
    offset_lag_max: int = Field(100, ge=0)
    replication_factor: int = 2
    checkpoints_topic_replication_factor: int = 3
    heartbeats_topic_replication_factor: int = 3
    offset_syncs_topic_replication_factor: int = 3
    tasks_max: int = Field(1, ge=1)
    consumer_poll_timeout_ms: int = Field(1000, ge=0)
    admin_timeout_ms: int = Field(60000, ge=0)
    consumer: dict[str, str] = Field(default_factory=dict)
    producer: dict[str, str] = Field(default_factory=dict)
    admin: dict[str, str] = Field(default_factory=dict)
    mm2_only: dict[str, str] = Field(default_factory=dict)
    mode: Literal["microbatch", "realtime"] = "microbatch"
    max_offsets_per_trigger: int | None = Field(None, ge=1)
    trigger_interval: str | None = None
    starting_offsets: Literal["earliest", "latest"] | None = None
    checkpoint_dir: str | None = None
    provenance_header: bool = True
    # A failback's copy back: also write the source's copies of the target's topics back under
    # their original names (``TopicSelector.restore_history``).
    restore_history: bool = False
    # Write through one transactional producer per target partition, fenced by every query
    # start (replicator.transactions): a writer paused and resumed can land nothing after the
    # start read where to resume. Records show to read_committed readers at each commit.
    transactional: bool = False
    transaction_commit_interval_ms: int = Field(100, ge=1)
    # what the flow's transactional ids start with (a drill's prefix on a cluster it does not own)
    transactional_id_prefix: str = ""
    # Trace each record's send to the target and its acknowledgement, beside the flow's metrics
    # (MirrorProducerInterceptor, RecordTrace): where a drill's slowest records waited (run --trace)
    trace_records: bool = False

    @field_validator("replication_policy_class", mode="before")
    @classmethod
    def _policy_name(cls, value: Any) -> Any:
        if isinstance(value, str):
            short = POLICY_NAMES.get(value.strip())
            if short is None:
                raise InvalidSetting(
                    f"unsupported replication policy {value!r}",
                    field="replication_policy_class",
                    valid=", ".join(POLICY_NAMES),
                )
            return short
        return value

    @model_validator(mode="after")
    def _check(self) -> FlowConfig:
        check_flow_ends(self.source, self.target)
        check_separator(self.replication_policy_separator, (self.source, self.target))
        for name in ("topics", "topics_exclude", "groups", "groups_exclude", "config_properties_exclude"):
            check_pattern_list(getattr(self, name), field=name)
        check_mm2_flow_settings(self)
        check_spark_flow_settings(self)
        return self

    # -- derived views --------------------------------------------------------------
    @property
    def name(self) -> str:
        """``source->target``, as MM2 writes it."""
        return f"{self.source}->{self.target}"

    @property
    def num_streams(self) -> int:
        """Parallel Spark streams for this flow; MM2's ``tasks.max``."""
        return self.tasks_max

    @property
    def effective_trigger_interval(self) -> str:
        """The Spark trigger interval, with the mode's default when unset."""
        if self.trigger_interval is not None:
            return self.trigger_interval
        # In real-time mode the interval is Spark's checkpoint interval, not a latency: records
        # flow continuously, but at each batch end the tasks stop, the batch commits and new
        # tasks start, and records arriving meanwhile wait (1-1.3 s on a 2-core machine). With
        # 10 s batches that gap was 6% of the records, hence the p99 (1.1-1.8 s against ~110 ms
        # p50). Resume never replays from Spark's checkpoint (it starts after what reached the
        # target), so a long batch costs nothing on a crash: Spark's own default, 5 minutes.
        return REALTIME_TRIGGER_DEFAULT if self.mode == "realtime" else MICROBATCH_TRIGGER_DEFAULT

    @property
    def trigger_interval_seconds(self) -> float:
        """``effective_trigger_interval`` in seconds."""
        seconds = trigger_seconds(self.effective_trigger_interval)
        assert seconds is not None  # validated
        return seconds

    def schedule_seconds(self, feature: Feature) -> int | None:
        """Interval of a periodic task, or None when MM2 would not run it (flag off or negative)."""
        enabled = getattr(self, f"{feature}_enabled")
        interval = getattr(self, f"{feature}_interval_seconds")
        return interval if enabled and interval > 0 else None

    def replication_policy(self) -> DefaultReplicationPolicy:
        """The naming policy, configured with this flow's source alias as MM2 does."""
        return policy_from_name(
            self.replication_policy_class,
            self.replication_policy_separator,
            internal_topic_separator_enabled=self.replication_policy_internal_topic_separator_enabled,
            source_cluster_alias=self.source,
        )

    @property
    def transactional_ids(self) -> str | None:
        """What the flow's transactional ids start with, when it writes transactionally (``replicator.transactions``)."""
        return id_prefix(self.transactional_id_prefix, self.source, self.target) if self.transactional else None

    def topic_filter(self) -> TopicFilter:
        """``topics`` / ``topics.exclude``."""
        return TopicFilter(tuple(self.topics), tuple(self.topics_exclude))

    def group_filter(self) -> GroupFilter:
        """``groups`` / ``groups.exclude``."""
        return GroupFilter(tuple(self.groups), tuple(self.groups_exclude))

    def config_property_filter(self) -> ConfigPropertyFilter:
        """``config.properties.exclude`` / ``use.defaults.from``."""
        return ConfigPropertyFilter(tuple(self.config_properties_exclude), self.use_defaults_from)

    def topic_selector(self) -> TopicSelector:
        """The complete topic decision for this flow (filter, heartbeats, internal, cycles)."""
        return TopicSelector(
            self.source,
            self.target,
            self.topic_filter(),
            self.replication_policy(),
            self.heartbeats_replication_enabled,
            self.restore_history,
        )
