"""The engine's phases: started in order, stopped in reverse on every exit path, the outcome recorded."""

from __future__ import annotations

from pathlib import Path

import pytest

from mirrordrill.harness.drill.engine import Drill
from mirrordrill.harness.drill.phase_state import Outcome, stop_parts
from mirrordrill.harness.drill.validate import load_scenario

QUICKSTART = Path(__file__).resolve().parents[2] / "scenarios" / "quickstart.yaml"


class FakePhase:
    """Records its start and stop in ``events``; its start raises ``fails`` when given."""

    def __init__(self, name: str, events: list[str], fails: BaseException | None = None,
                 stop_fails: BaseException | None = None):
        self.name, self.events, self.fails, self.stop_fails = name, events, fails, stop_fails

    def start(self) -> None:
        self.events.append(f"start {self.name}")
        if self.fails is not None:
            raise self.fails

    def stop(self, outcome: Outcome) -> None:
        def part() -> None:
            self.events.append(f"stop {self.name} ({'drain' if outcome.clean else 'no drain'})")
            if self.stop_fails is not None:
                raise self.stop_fails
        stop_parts([(self.name, part)], outcome, lambda m: self.events.append(f"log: {m}"))


@pytest.fixture
def drill(tmp_path) -> Drill:
    return Drill(load_scenario(QUICKSTART), QUICKSTART, tmp_path, log=lambda m: None)


def test_a_run_that_ends_normally_stops_every_phase_in_reverse_and_drains(drill):
    events: list[str] = []
    outcome = Outcome()
    drill._run_phases([FakePhase(n, events) for n in ("lab", "replication", "load")], outcome)
    assert events == ["start lab", "start replication", "start load",
                      "stop load (drain)", "stop replication (drain)", "stop lab (drain)"]
    assert outcome.clean and drill.status.phase == "stopping"


def test_a_failing_start_stops_itself_and_what_started_before_it_never_what_comes_after(drill, tmp_path):
    events: list[str] = []
    outcome = Outcome()
    drill._run_phases([FakePhase("lab", events), FakePhase("replication", events, fails=RuntimeError("no jar")),
                       FakePhase("load", events)], outcome)
    assert events == ["start lab", "start replication", "stop replication (no drain)", "stop lab (no drain)"]
    assert outcome.error == "RuntimeError: no jar" and "no jar" in (tmp_path / "error.txt").read_text()


def test_ctrl_c_stops_every_phase_even_when_a_stop_fails_or_a_second_ctrl_c_arrives(drill):
    events: list[str] = []
    outcome = Outcome()
    drill._run_phases([FakePhase("lab", events), FakePhase("replication", events, stop_fails=KeyboardInterrupt()),
                       FakePhase("load", events, stop_fails=OSError("gone"), fails=KeyboardInterrupt())], outcome)
    assert [e for e in events if not e.startswith("log")] == [
        "start lab", "start replication", "start load",
        "stop load (no drain)", "stop replication (no drain)", "stop lab (no drain)"]
    assert outcome.interrupted and outcome.error is None
    assert "log: stopping the load: OSError: gone" in events
