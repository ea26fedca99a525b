"""Which action carries out each ``do:`` of the drill file."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from mirrordrill.harness.drill.actions.add_partitions import AddPartitionsAction
from mirrordrill.harness.drill.actions.base import Action, StepFacts
from mirrordrill.harness.drill.actions.blackhole import BlackholeAction
from mirrordrill.harness.drill.actions.broker import BrokerAction
from mirrordrill.harness.drill.actions.cluster import ClusterStepAction
from mirrordrill.harness.drill.actions.create_topic import CreateTopicAction
from mirrordrill.harness.drill.actions.failback import FailbackAction
from mirrordrill.harness.drill.actions.failover import FailoverAction
from mirrordrill.harness.drill.actions.heal import HealAction
from mirrordrill.harness.drill.actions.partition import PartitionAction
from mirrordrill.harness.drill.actions.replicator import ReplicatorAction
from mirrordrill.harness.drill.actions.replicator_node import ReplicatorNodeAction
from mirrordrill.harness.drill.actions.reset_connections import ResetConnectionsAction
from mirrordrill.harness.drill.actions.runbook import RunbookAction
from mirrordrill.harness.drill.actions.set_link import SetLinkAction
from mirrordrill.harness.drill.actions.set_topic_config import SetTopicConfigAction
from mirrordrill.harness.drill.actions.spark_worker import SparkWorkerAction
from mirrordrill.harness.drill.actions.wait_drain import WaitDrainAction
from mirrordrill.harness.drill.schema import set_step_types

ACTION_TYPES: tuple[type[Action], ...] = (
    SetLinkAction, BlackholeAction, PartitionAction, HealAction, ResetConnectionsAction,
    BrokerAction, ClusterStepAction, ReplicatorAction, ReplicatorNodeAction, SparkWorkerAction,
    CreateTopicAction, AddPartitionsAction, SetTopicConfigAction,
    FailoverAction, FailbackAction, WaitDrainAction, RunbookAction,
)


_BUILT_IN = ACTION_TYPES


def _by_do_name(action_types: tuple[type[Action], ...]) -> dict[str, Action]:
    out: dict[str, Action] = {}
    for action in (action_type() for action_type in action_types):
        for do in action.handles():
            if do in out:
                raise TypeError(f"do: {do!r} is handled by both {type(out[do]).__name__} and {type(action).__name__}")
            out[do] = action
    return out


# Every action by the ``do:`` names it handles: the built-in ones, then those registered. Registering
# also makes the drill file accept the action's step model, so a fault is one class and one call.
_registered: list[type[Action]] = []
_actions: dict[str, Action] = _by_do_name(_BUILT_IN)
ACTIONS: Mapping[str, Action] = MappingProxyType(_actions)  # a read-only view that follows registration


def register_action(action_type: type[Action]) -> None:
    """Add a kind of step: ``action_type.step_type`` (a model with a ``do: Literal[...]`` field) joins
    the drill file's timeline and ``action_type`` carries it out. TypeError if a ``do:`` name is taken."""
    _set_registered([*_registered, action_type])


def unregister_action(action_type: type[Action]) -> None:
    """Take a registered kind of step away again (the built-in ones stay)."""
    _set_registered([t for t in _registered if t is not action_type])


def _set_registered(action_types: list[type[Action]]) -> None:
    actions = _by_do_name(_BUILT_IN + tuple(action_types))  # raises before anything changes
    set_step_types(tuple(dict.fromkeys(t.step_type for t in _BUILT_IN + tuple(action_types))))
    _registered[:] = action_types
    _actions.clear()
    _actions.update(actions)


def action_for(step) -> Action:
    try:
        return ACTIONS[step.do]
    except KeyError:
        raise ValueError(f"step {step.do!r} has no implementation") from None


def step_facts(kind: str) -> StepFacts | None:
    """The facts of a timeline entry's kind when it is a step's ``do:`` name; None for the engine's
    own entries (the final drain, a failover's parts)."""
    action = ACTIONS.get(kind)
    return action.facts_of(kind) if action is not None else None
