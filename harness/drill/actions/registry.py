"""Which action carries out each ``do:`` of the drill file."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from harness.drill.actions.add_partitions import AddPartitionsAction
from harness.drill.actions.base import Action
from harness.drill.actions.blackhole import BlackholeAction
from harness.drill.actions.broker import BrokerAction
from harness.drill.actions.cluster import ClusterStepAction
from harness.drill.actions.create_topic import CreateTopicAction
from harness.drill.actions.failback import FailbackAction
from harness.drill.actions.failover import FailoverAction
from harness.drill.actions.heal import HealAction
from harness.drill.actions.partition import PartitionAction
from harness.drill.actions.replicator import ReplicatorAction
from harness.drill.actions.reset_connections import ResetConnectionsAction
from harness.drill.actions.runbook import RunbookAction
from harness.drill.actions.set_link import SetLinkAction
from harness.drill.actions.set_topic_config import SetTopicConfigAction
from harness.drill.actions.spark_worker import SparkWorkerAction
from harness.drill.actions.wait_drain import WaitDrainAction

ACTION_TYPES: tuple[type[Action], ...] = (
    SetLinkAction, BlackholeAction, PartitionAction, HealAction, ResetConnectionsAction,
    BrokerAction, ClusterStepAction, ReplicatorAction, SparkWorkerAction,
    CreateTopicAction, AddPartitionsAction, SetTopicConfigAction,
    FailoverAction, FailbackAction, WaitDrainAction, RunbookAction,
)


def _by_do_name(action_types: tuple[type[Action], ...]) -> Mapping[str, Action]:
    out: dict[str, Action] = {}
    for action in (action_type() for action_type in action_types):
        for do in action.handles():
            if do in out:
                raise TypeError(f"do: {do!r} is handled by both {type(out[do]).__name__} and {type(action).__name__}")
            out[do] = action
    return MappingProxyType(out)


ACTIONS: Mapping[str, Action] = _by_do_name(ACTION_TYPES)


def action_for(step) -> Action:
    try:
        return ACTIONS[step.do]
    except KeyError:
        raise ValueError(f"step {step.do!r} has no implementation") from None
