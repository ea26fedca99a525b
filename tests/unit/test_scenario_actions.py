"""The timeline's action registry: every ``do:`` has one action, each in its own module, and
each action does to the environment what the step says (and undoes it where that means something)."""

import inspect
import sys
import typing
from types import SimpleNamespace

import pytest
from pydantic import TypeAdapter

from mirrordrill.harness.drill import steps
from mirrordrill.harness.drill.actions.base import Action, NotUndoable
from mirrordrill.harness.drill.actions.registry import ACTION_TYPES, ACTIONS, action_for
from mirrordrill.harness.drill.schema import Scenario
from mirrordrill.harness.drill.schema_timeline import Step, do_values


def step_models() -> list[type]:
    """The step models of the drill file's timeline, read from its discriminated union."""
    union, _discriminator = typing.get_args(Step)
    return list(typing.get_args(union))


def test_the_registry_has_an_action_for_every_do_of_the_scenario_model():
    every_do = {do for model in step_models() for do in do_values(model)}
    assert len(every_do) > 20
    assert set(ACTIONS) == every_do
    for model in step_models():
        for do in do_values(model):
            assert ACTIONS[do].step_type is model, f"{do}: {type(ACTIONS[do]).__name__} handles another model"


def test_each_action_class_lives_in_its_own_module():
    modules = [cls.__module__ for cls in ACTION_TYPES]
    assert len(set(modules)) == len(modules)
    for cls in ACTION_TYPES:
        defined_here = [c for _, c in inspect.getmembers(sys.modules[cls.__module__], inspect.isclass)
                        if issubclass(c, Action) and c.__module__ == cls.__module__]
        assert defined_here == [cls]


def test_a_step_without_an_action_is_refused_by_name():
    with pytest.raises(ValueError, match="'explode' has no implementation"):
        action_for(SimpleNamespace(do="explode"))


class Recorder:
    """Stands for any object of the environment: records every call made through it."""

    def __init__(self, name: str, calls: list):
        self._name, self._calls = name, calls

    def __getattr__(self, attr):
        def call(*args, **kwargs):
            self._calls.append((f"{self._name}.{attr}", args, kwargs))
            return Recorder(f"{self._name}.{attr}()", self._calls)
        return call

    def __getitem__(self, key):
        return Recorder(f"{self._name}[{key}]", self._calls)


SCENARIO = Scenario.model_validate({
    "name": "t", "clusters": {"primary": {}, "dr": {}},
    "topics": [{"name": "orders", "cluster": "primary", "config": {"retention.ms": 60000}}],
    "replication": {"flows": [{"source": "primary", "target": "dr"}]}})


def context() -> tuple[SimpleNamespace, list]:
    calls: list = []
    return SimpleNamespace(env=Recorder("env", calls), replicator=Recorder("replicator", calls),
                           scenario=SCENARIO), calls


def step(**fields):
    return TypeAdapter(Step).validate_python(fields)


def names(calls: list) -> list[str]:
    return [name for name, _args, _kwargs in calls]


@pytest.mark.parametrize("fields, calls, outcome", [
    ({"do": "blackhole", "link": ["primary", "dr"], "direction": "primary->dr"},
     ["env.link", "env.link().blackhole"], "data held"),
    ({"do": "partition", "link": ["primary", "dr"]}, ["env.link", "env.link().partition"], "proxies down"),
    ({"do": "heal", "link": ["primary", "dr"]}, ["env.link", "env.link().heal"], "clean link"),
    ({"do": "reset_connections", "link": ["primary", "dr"]},
     ["env.link", "env.link().reset_connections"], "connections reset"),
    ({"do": "set_link", "link": ["primary", "dr"], "latency_ms": 50}, ["env.link", "env.link().set"], "conditions set"),
    ({"do": "kill_broker", "cluster": "dr", "broker": 2},
     ["env.cluster", "env.cluster().broker", "env.cluster().broker().kill"], "broker kill"),
    ({"do": "start_cluster", "cluster": "dr"},
     ["env.cluster", "env.cluster().start", "env.cluster().wait_ready"], "cluster start"),
    ({"do": "restart_cluster", "cluster": "dr"}, ["env.cluster", "env.cluster().restart"], "cluster restart"),
    ({"do": "pause_cluster", "cluster": "dr"}, ["env.cluster", "env.cluster().pause"], "cluster pause"),
    ({"do": "restart_replicator"}, ["replicator.restart"], "replicator restart"),
    ({"do": "kill_replicator"}, ["replicator.kill"], "replicator kill"),
    ({"do": "create_topic", "cluster": "dr", "topic": "new"}, ["env.cluster", "env.cluster().create_topics"],
     "created"),
    ({"do": "add_partitions", "cluster": "primary", "topic": "orders", "partitions": 6},
     ["env.cluster", "env.cluster().admin", "env.cluster().admin().create_partitions",
      "env.cluster().admin().create_partitions()[orders].result"], "now 6 partitions"),
])
def test_each_action_does_what_its_step_says(fields, calls, outcome):
    ctx, made = context()
    assert steps.run_step(ctx, step(**fields)) == outcome
    assert names(made) == calls


def test_arguments_reach_the_environment():
    ctx, made = context()
    steps.run_step(ctx, step(do="blackhole", link=["primary", "dr"], direction="primary->dr"))
    steps.run_step(ctx, step(do="kill_broker", cluster="dr", broker=2))
    steps.run_step(ctx, step(do="restart_replicator"))
    assert [(args, kwargs) for _, args, kwargs in made] == [
        (("primary", "dr"), {}), (("primary->dr",), {}),
        (("dr",), {}), ((2,), {}), ((), {}),
        ((), {"hard": False})]


@pytest.mark.parametrize("fields, calls, outcome", [
    ({"do": "blackhole", "link": ["primary", "dr"]}, ["env.link", "env.link().heal"], "clean link"),
    ({"do": "partition", "link": ["primary", "dr"]}, ["env.link", "env.link().heal"], "clean link"),
    ({"do": "set_link", "link": ["primary", "dr"], "latency_ms": 50}, ["env.link", "env.link().heal"], "clean link"),
    ({"do": "kill_broker", "cluster": "dr"}, ["env.cluster", "env.cluster().broker", "env.cluster().broker().start"],
     "broker start"),
    ({"do": "pause_cluster", "cluster": "dr"}, ["env.cluster", "env.cluster().resume"], "cluster resume"),
    ({"do": "stop_cluster", "cluster": "dr"}, ["env.cluster", "env.cluster().start", "env.cluster().wait_ready"],
     "cluster start"),
    ({"do": "pause_replicator"}, ["replicator.resume"], "replicator resume"),
    ({"do": "stop_replicator"}, ["replicator.start"], "replicator start"),
])
def test_faults_with_an_inverse_are_undone(fields, calls, outcome):
    ctx, made = context()
    s = step(**fields)
    assert action_for(s).undo(ctx, s) == outcome
    assert names(made) == calls


def test_undoing_a_topic_config_restores_what_the_drill_file_created_the_topic_with():
    ctx, made = context()
    s = step(do="set_topic_config", cluster="primary", topic="orders",
             config={"retention.ms": 1000, "cleanup.policy": "compact"})
    assert action_for(s).undo(ctx, s) == "configs restored"
    name, (resources,), _ = made[-2]
    assert name == "env.cluster().admin().incremental_alter_configs"
    entries = {e.name: (e.value, e.incremental_operation.name) for e in resources[0].incremental_configs}
    assert entries == {"retention.ms": ("60000", "SET"), "cleanup.policy": (None, "DELETE")}


@pytest.mark.parametrize("fields, why", [
    ({"do": "heal", "link": ["primary", "dr"]}, "does not know which fault"),
    ({"do": "reset_connections", "link": ["primary", "dr"]}, "reconnect by themselves"),
    ({"do": "restart_broker", "cluster": "dr"}, "ends where it began"),
    ({"do": "restart_replicator"}, "ends where it began"),
    ({"do": "create_topic", "cluster": "dr", "topic": "new"}, "fault of its own"),
    ({"do": "add_partitions", "cluster": "primary", "topic": "orders", "partitions": 6}, "cannot take partitions"),
    ({"do": "unplanned_failover", "from": "primary", "to": "dr"}, "failback step"),
    ({"do": "failback", "from": "dr", "to": "primary"}, "wiped data"),
    ({"do": "wait_drain"}, "changes nothing"),
])
def test_steps_without_an_inverse_say_why(fields, why):
    ctx, made = context()
    s = step(**fields)
    with pytest.raises(NotUndoable, match=why):
        action_for(s).undo(ctx, s)
    assert made == []
