"""Step targets that exist when the step runs: partitions, brokers and clusters that are up.

Each step's own check (harness/drill/actions/) knows the drill file's declarations; what a
step finds depends on the steps before it too: a broker an earlier step killed is not there to
pause, a cluster killed and never started again cannot take the applications of a failover.
This walks the timeline in order (validate has already checked that the steps are in time
order) and keeps what each earlier step did to clusters, brokers and partition counts.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from mirrordrill.harness.drill.schema import Scenario
from mirrordrill.harness.drill.schema_timeline import (
    AddPartitions,
    BrokerStep,
    ClusterStep,
    CreateTopic,
    Failback,
    Failover,
    SetTopicConfig,
)
from mirrordrill.harness.drill.steps import describe

Report = Callable[[tuple, str], None]

# The verbs that leave a cluster or broker not serving, and the ones that bring it back.
_DOWN_VERBS = ("kill", "stop")
_REVIVE_VERBS = ("start", "restart")


@dataclass
class _State:
    """What the steps so far did: which cluster / broker is down or paused, and by which step."""

    partitions: dict[tuple[str, str], int]  # (cluster, topic) -> partitions by now
    down: dict[str, str] = field(default_factory=dict)  # cluster -> the step that took it down
    paused: dict[str, str] = field(default_factory=dict)
    brokers_down: dict[tuple[str, int], str] = field(default_factory=dict)
    brokers_paused: dict[tuple[str, int], str] = field(default_factory=dict)

    def revive(self, cluster: str) -> None:
        self.down.pop(cluster, None)
        self.paused.pop(cluster, None)
        for key in [k for k in (*self.brokers_down, *self.brokers_paused) if k[0] == cluster]:
            self.brokers_down.pop(key, None)
            self.brokers_paused.pop(key, None)

    def not_serving(self, cluster: str) -> str | None:
        """Why ``cluster`` is not serving at this point of the timeline (None when it is)."""
        if cluster in self.down:
            return (f"cluster {cluster} is down: {self.down[cluster]} took it down and nothing starts it again "
                    "before this step")
        if cluster in self.paused:
            return (f"cluster {cluster} is paused: {self.paused[cluster]} paused it and nothing resumes it "
                    "before this step")
        return None


def step_target_problems(s: Scenario, bad: Report) -> None:
    """Every step whose partition, broker or cluster is not there when the step runs."""
    state = _State({(t.cluster, t.name): t.partitions for t in s.topics})
    flows = {(f.source, f.target) for f in s.replication.flows}
    for i, step in enumerate(s.timeline):
        label = f"timeline[{i}] ({describe(step)}{f' at {step.at:g}s' if step.at is not None else ''})"
        at = ("timeline", i)
        if isinstance(step, ClusterStep) and step.cluster in s.clusters:
            _cluster_step(step, label, at, state, bad)
        elif isinstance(step, BrokerStep) and step.cluster in s.clusters:
            _broker_step(s, step, label, at, state, bad)
        elif isinstance(step, (CreateTopic, AddPartitions, SetTopicConfig)) and step.cluster in s.clusters:
            if why := state.not_serving(step.cluster):
                bad(at + ("cluster",), f"{why}; {_start_fix(step.cluster)}")
            if isinstance(step, (CreateTopic, AddPartitions)):
                state.partitions[(step.cluster, step.topic)] = step.partitions
        # Without its flow, or its failover, a move is refused by its own check already.
        elif isinstance(step, Failover) and (step.source, step.target) in flows:
            _failover(step, label, at, state, bad)
        elif isinstance(step, Failback) and (step.target, step.source) in _failovers(s.timeline[:i]):
            _failback(step, at, state, bad)


def _failovers(steps: list) -> set[tuple[str, str]]:
    return {(p.source, p.target) for p in steps if isinstance(p, Failover)}


def _start_fix(cluster: str) -> str:
    return f"add a start_cluster (or restart_cluster) step for {cluster} before this one, or remove this step"


def _cluster_step(step: ClusterStep, label: str, at: tuple, state: _State, bad: Report) -> None:
    verb = step.do.removesuffix("_cluster")
    if verb in _REVIVE_VERBS:
        state.revive(step.cluster)
        return
    if step.cluster in state.down:
        bad(at + ("do",), f"cluster {step.cluster} is already down: {state.down[step.cluster]} took it down and no "
                          f"step in between starts it; {_start_fix(step.cluster)}")
        return
    if verb in _DOWN_VERBS:
        state.down[step.cluster] = label
        state.paused.pop(step.cluster, None)
    elif verb == "pause":
        state.paused[step.cluster] = label
    elif verb == "resume":
        state.paused.pop(step.cluster, None)


def _broker_step(s: Scenario, step: BrokerStep, label: str, at: tuple, state: _State, bad: Report) -> None:
    if why := state.not_serving(step.cluster):
        bad(at + ("cluster",), f"{why}, so its brokers are not there for {step.do}; {_start_fix(step.cluster)}")
        return
    if step.leader_of is not None:
        count = state.partitions.get((step.cluster, step.leader_of.topic))
        if count is not None and step.leader_of.partition >= count:
            bad(at + ("leader_of", "partition"),
                f"topic {step.leader_of.topic} has partitions 0..{count - 1} on {step.cluster} by then, so there "
                f"is no partition {step.leader_of.partition}; name one of those, or grow the topic first "
                "(add_partitions)")
        if s.clusters[step.cluster].brokers > 1:
            return  # which broker leads is known only when the step runs
    node = 1 if step.leader_of is not None else step.broker
    if node > s.clusters[step.cluster].brokers:
        return  # the step's own check names the broker count
    _broker_verb(step, (step.cluster, node), label, at, state, bad)


def _broker_verb(step: BrokerStep, key: tuple[str, int], label: str, at: tuple, state: _State, bad: Report) -> None:
    verb = step.do.removesuffix("_broker")
    if verb == "restart":
        state.brokers_down.pop(key, None)
        state.brokers_paused.pop(key, None)
        return
    if key in state.brokers_down:
        bad(at + ("do",), f"broker {key[1]} of {key[0]} is already down: {state.brokers_down[key]} took it down "
                          f"and no step in between brings it back; add a restart_broker (broker: {key[1]}) or "
                          f"start_cluster step before this one, or remove this step")
    elif verb in _DOWN_VERBS:
        state.brokers_down[key] = label
        state.brokers_paused.pop(key, None)
    elif verb == "pause":
        state.brokers_paused[key] = label
    elif verb == "resume":
        state.brokers_paused.pop(key, None)


def _failover(step: Failover, label: str, at: tuple, state: _State, bad: Report) -> None:
    if why := state.not_serving(step.target):
        bad(at + ("to",), f"the applications cannot fail over onto {step.target}: {why}; "
                          f"{_start_fix(step.target)}")
    # A planned failover drains the old primary first; an unplanned one may find it dead already.
    if step.do == "planned_failover" and (why := state.not_serving(step.source)):
        bad(at + ("from",), f"a planned failover stops the producers on {step.source} and waits for replication "
                            f"to drain, but {why}; make it an unplanned_failover, or "
                            f"{_start_fix(step.source)}")
    if step.do == "unplanned_failover" and step.how == "kill":
        state.down[step.source] = label
        state.paused.pop(step.source, None)


def _failback(step: Failback, at: tuple, state: _State, bad: Report) -> None:
    # The old primary (to) is wiped and started by the failback itself; the new one must be serving.
    if why := state.not_serving(step.source):
        bad(at + ("from",), f"failback copies {step.source} back into {step.target}, but {why}; "
                            f"{_start_fix(step.source)}")
    state.revive(step.target)
