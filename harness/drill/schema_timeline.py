"""The drill file's timeline: when a step runs, and the built-in step models (one action each).

A registered action adds its own step model (harness/drill/actions/registry.py); the timeline's
type is rebuilt from STEP_TYPES plus those (schema.set_step_types).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeAlias, Union, get_args

from pydantic import BaseModel, ConfigDict, Field, model_validator

from mirrordrill.harness.drill.schema_base import _M, Latency, Partitions, Seconds, Wait, _jitter_within_latency


class WhenDef(_M):
    """A condition: wait (after the previous step) until replication lag is at most ``lag_at_most``."""

    lag_at_most: int = Field(ge=0)
    flow: str | None = None  # "A->B"; default every flow
    timeout: Wait = 120.0


class StepBase(_M):
    """What every step model has; built-in and registered step models subclass it."""

    if TYPE_CHECKING:
        # Each step model declares ``do`` as a Literal of its names (the union's discriminator);
        # declared here for the type checker only, so the fields' order and the schema stay the models' own.
        do: str
    # With both, the step waits for ``at`` and then for ``when``: "at 20 s, once replication
    # keeps up" -- a fault injected before a slow replicator has started measures nothing.
    at: Seconds | None = None  # seconds after the load starts
    when: WhenDef | None = None
    name: str | None = None


class _LinkStep(StepBase):
    link: tuple[str, str]
    direction: str | None = None


class SetLink(_LinkStep):
    do: Literal["set_link"]
    latency_ms: Latency = Field(0, ge=0)
    jitter_ms: int = Field(0, ge=0)
    bandwidth_kb_s: int | None = Field(None, gt=0)
    reset_after_ms: int | None = Field(None, ge=0)
    slice_bytes: int | None = Field(None, gt=0)
    slice_delay_us: int = Field(0, ge=0)

    @model_validator(mode="after")
    def _jitter(self):
        _jitter_within_latency(self.latency_ms, self.jitter_ms)
        return self


class Blackhole(_LinkStep):
    do: Literal["blackhole"]


class Partition(_LinkStep):
    do: Literal["partition"]


class Heal(_LinkStep):
    do: Literal["heal"]


class ResetConnections(_LinkStep):
    do: Literal["reset_connections"]


class LeaderOf(_M):
    """The broker that leads this partition at the moment the step runs."""

    topic: str
    partition: int = Field(0, ge=0)


class BrokerStep(StepBase):
    do: Literal["stop_broker", "kill_broker", "pause_broker", "resume_broker", "restart_broker"]
    cluster: str
    broker: int = Field(1, ge=1)
    leader_of: LeaderOf | None = None

    @model_validator(mode="after")
    def _one_way_to_name_the_broker(self):
        if self.leader_of is not None and "broker" in self.model_fields_set:
            raise ValueError("name the broker by number (broker) or as a partition's leader (leader_of), not both")
        if self.leader_of is not None and self.do == "resume_broker":
            raise ValueError("resume_broker takes the paused broker's number (broker): once it was paused, "
                             "another broker leads the partition")
        return self


class ClusterStep(StepBase):
    do: Literal["stop_cluster", "kill_cluster", "pause_cluster", "resume_cluster", "restart_cluster", "start_cluster"]
    cluster: str


class ReplicatorStep(StepBase):
    do: Literal["kill_replicator", "stop_replicator", "start_replicator", "restart_replicator",
                "pause_replicator", "resume_replicator"]


class CopyingDef(_M):
    """The replicator node whose task copies this source partition at the moment the step runs."""

    topic: str
    partition: int = Field(0, ge=0)


class ReplicatorNodeStep(StepBase):
    """One process of the replicator, where the ``*_replicator`` steps act on all of them."""

    do: Literal["kill_replicator_node", "bounce_replicator_node", "pause_replicator_node"]
    node: int | None = Field(None, ge=0, description=(
        "which node, from 0: MirrorMaker 2 runs mirrormaker2.nodes per target (targets in flow order), "
        "MirrorMaker 1 mirrormaker1.nodes per flow (in flow order), ours one per location (in name order)"))
    copying: CopyingDef | None = Field(None, description="the node that copies this source partition")
    duration: Seconds | None = Field(None, gt=0, description="pause_replicator_node: how long it stays stopped")

    @model_validator(mode="after")
    def _one_node(self):
        if (self.node is None) == (self.copying is None):
            raise ValueError(f"{self.do} needs the node by index (node: 0) or by what it copies "
                             "(copying: {topic: T, partition: P}), one of the two")
        if self.do == "pause_replicator_node" and self.duration is None:
            raise ValueError("pause_replicator_node needs a duration (e.g. duration: 30s): the node is "
                             "resumed (SIGCONT) when it ends")
        if self.do != "pause_replicator_node" and self.duration is not None:
            raise ValueError(f"'duration' applies to pause_replicator_node only; {self.do} does not wait: remove it")
        return self


class SparkWorkerStep(StepBase):
    # A Spark worker's machine dies: the worker and its executors are SIGKILLed; Spark reruns
    # their tasks elsewhere. Needs replication.spark.master: standalone.
    do: Literal["kill_spark_worker"]
    worker: int = Field(0, ge=0)  # which of the standalone cluster's workers (0 or 1)


class CreateTopic(StepBase):
    do: Literal["create_topic"]
    cluster: str
    topic: str
    partitions: Partitions = Field(3, ge=1)
    config: dict[str, str | int] = Field(default_factory=dict)


class AddPartitions(StepBase):
    do: Literal["add_partitions"]
    cluster: str
    topic: str
    partitions: Partitions = Field(ge=2, description="the new total")


class SetTopicConfig(StepBase):
    do: Literal["set_topic_config"]
    cluster: str
    topic: str
    config: dict[str, str | int] = Field(min_length=1)


class RunbookCommandDef(_M):
    """One command of the team's own runbook (a DNS switch, a config push, a check)."""

    # A list runs as is (argv); a string runs through bash -euo pipefail -c, pipes and all (runbook.SHELL).
    command: str | list[Annotated[str, Field(min_length=1)]] = Field(min_length=1)
    timeout: Wait = Field(60.0, gt=0)  # then the command is killed and the step fails
    env: dict[str, str] = Field(default_factory=dict)  # added to the MIRRORDRILL_* context
    name: str | None = None


class RunbookStep(StepBase, RunbookCommandDef):
    do: Literal["runbook"]


class Failover(StepBase):
    do: Literal["planned_failover", "unplanned_failover"]
    source: str = Field(alias="from")
    target: str = Field(alias="to")
    how: Literal["kill", "partition"] = "kill"  # unplanned: how the primary dies
    drain_timeout: Wait = 120.0
    # Run after the primary is lost (or drained) and before the applications move: inside the RTO.
    runbook: list[RunbookCommandDef] = Field(default_factory=list)
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    @model_validator(mode="after")
    def _fields_of_this_kind(self):
        # Each is read by one kind of failover only; given to the other it would be silently ignored.
        if self.do == "planned_failover" and "how" in self.model_fields_set:
            raise ValueError("'how' applies to unplanned_failover only (how the primary dies); a planned "
                             "failover stops nothing: remove 'how', or make it an unplanned_failover")
        if self.do == "unplanned_failover" and "drain_timeout" in self.model_fields_set:
            raise ValueError("'drain_timeout' applies to planned_failover only; an unplanned failover does "
                             "not wait for replication to drain: remove it")
        return self


class Failback(StepBase):
    """After a failover ``to -> from``: rebuild the old primary ``to`` from the new primary ``from``.

    The replication out of the old primary stops, the old primary is wiped (data and committed
    offsets) and started empty, a replicator copies ``from -> to``, and the drill checks that
    the two converge. With ``switch_back`` the applications then move back to ``to`` the
    planned way, and replication ``to -> from`` starts afresh (re-protect). With
    ``restore_history`` the copy back also restores what ``to`` held before the incident.
    """

    do: Literal["failback"]
    source: str = Field(alias="from")  # the new primary (where applications run now)
    target: str = Field(alias="to")  # the old primary, to be wiped and rebuilt
    switch_back: bool = False
    # Also copy the old primary's pre-incident records ("<old>.<topic>" on the new primary) back under
    # their original names, as Cluster Linking's reverse-and-truncate does (where the replicator can).
    restore_history: bool = False
    timeout: Wait = 180.0  # for the copy back to converge
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class WaitDrain(StepBase):
    do: Literal["wait_drain"]
    flow: str | None = None
    timeout: Wait = 120.0


# The built-in step models, one action each in harness/drill/actions/; more join by register_action.
STEP_TYPES = (SetLink, Blackhole, Partition, Heal, ResetConnections, BrokerStep, ClusterStep, ReplicatorStep,
              ReplicatorNodeStep, SparkWorkerStep, CreateTopic, AddPartitions, SetTopicConfig, Failover, Failback, WaitDrain,
              RunbookStep)


def step_union(step_types: tuple[type[BaseModel], ...]) -> Any:
    """The timeline's step type: one of ``step_types``, chosen by its ``do:`` name."""
    # Union over a tuple built at run time: the X | Y spelling cannot take one, so UP007 does not apply.
    return Annotated[Union[step_types], Field(discriminator="do")]  # noqa: UP007


if TYPE_CHECKING:
    # Built at run time (registered models join it): the type checker sees the base every step
    # model subclasses, and code reading one kind's field narrows with isinstance.
    Step: TypeAlias = StepBase
else:
    Step = step_union(STEP_TYPES)


def do_values(step_type: type[BaseModel]) -> tuple[str, ...]:
    """The ``do:`` names one step model accepts."""
    return get_args(step_type.model_fields["do"].annotation)
