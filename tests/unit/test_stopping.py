"""A drill's stop path: every part stops, whatever another part does on its way down."""

from __future__ import annotations

from mirrordrill.harness.drill.stopping import replicator_parts, stop_in_turn


class _Replicator:
    kind = "pyspark"

    def __init__(self, name: str, stopped: list[str], fails: BaseException | None = None):
        self.name, self.stopped, self.fails = name, stopped, fails

    def stop(self) -> None:
        self.stopped.append(self.name)
        if self.fails is not None:
            raise self.fails


def test_a_replicator_that_fails_to_stop_does_not_keep_the_others_running():
    stopped, logs = [], []
    reps = [_Replicator("re-protect", stopped, RuntimeError("driver did not exit")), _Replicator("copy back", stopped)]
    parts = [*replicator_parts(reps), ("environment", lambda: stopped.append("environment"))]
    assert stop_in_turn(parts, logs.append) is False
    assert stopped == ["re-protect", "copy back", "environment"]
    assert logs == ["stopping the replicator (pyspark, #1): RuntimeError: driver did not exit"]


def test_a_second_ctrl_c_stops_the_rest_and_the_environment_once_more():
    stopped, logs = [], []
    calls = {"environment": 0}

    def environment():
        calls["environment"] += 1
        stopped.append("environment")
        if calls["environment"] == 1:
            raise KeyboardInterrupt

    reps = [_Replicator("flow", stopped, KeyboardInterrupt())]
    parts = [*replicator_parts(reps), ("environment", environment), ("names", lambda: stopped.append("names"))]
    assert stop_in_turn(parts, logs.append) is True
    assert stopped == ["flow", "environment", "environment", "names"]
    assert sum("interrupted again" in line for line in logs) == 2


def test_a_slow_part_is_named_with_its_time_and_a_quick_one_is_not():
    ticks = iter([0.0, 0.3, 10.0, 16.5])  # each part's start and end
    logs: list[str] = []
    parts = [("load clients", lambda: None), ("replicator (pyspark, #1)", lambda: None)]
    assert stop_in_turn(parts, logs.append, clock=lambda: next(ticks)) is False
    assert logs == ["stopped the replicator (pyspark, #1) in 6.5s"]
