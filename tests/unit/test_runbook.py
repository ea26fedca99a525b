"""Runbook commands: checked by validate without a cluster; run with the drill's context in the
environment, their output in the run folder, a non-zero exit or a timeout failing the step."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from mirrordrill.harness.drill import runbook
from mirrordrill.harness.drill.actions.registry import action_for
from mirrordrill.harness.drill.context import DrillContext
from mirrordrill.harness.drill.validate import ScenarioInvalid, parse_scenario
from mirrordrill.primitives.process import ProcessSupervisor

BASE = """\
name: rb
clusters: {primary: {}, dr-west: {}}
topics: [{name: orders, cluster: primary}]
replication: {flows: [{source: primary, target: dr-west, topics: [orders]}]}
load:
  producers: [{cluster: primary, topics: [orders], rate: 10}]
duration: 30s
invariants: {rpo_records: 1000, duplicates: 1000}
timeline:
"""


def problems_of(timeline: str) -> list[str]:
    with pytest.raises(ScenarioInvalid) as err:
        parse_scenario(BASE + timeline, "drill.yaml")
    return [str(p) for p in err.value.problems]


def test_a_runbook_step_and_a_failover_runbook_validate():
    s = parse_scenario(BASE + """\
  - {at: 5s, do: runbook, command: "echo switching", timeout: 10s}
  - at: 10s
    do: unplanned_failover
    from: primary
    to: dr-west
    runbook:
      - {command: ["true"], name: dns switch}
      - {command: "test -n \\"$MIRRORDRILL_FAILOVER_TO\\"", env: {TEAM_VAR: x}}
""", "drill.yaml")
    assert s.timeline[0].timeout == 10.0 and s.timeline[1].runbook[0].name == "dns switch"


def test_a_program_not_on_path_is_named_with_the_fix():
    [p] = problems_of("  - {at: 5s, do: runbook, command: [no-such-program-xyz, --flag]}\n")
    assert "drill.yaml:10: timeline[0].command: program 'no-such-program-xyz' is not on PATH" in p


def test_a_missing_script_is_named_relative_to_the_drill_file(tmp_path):
    drill = tmp_path / "d.yaml"
    drill.write_text(BASE + "  - {at: 5s, do: runbook, command: [./switch-dns.sh]}\n")
    from mirrordrill.harness.drill.validate import load_scenario
    with pytest.raises(ScenarioInvalid, match=r"program ./switch-dns.sh does not exist .*switch-dns.sh"):
        load_scenario(drill)
    (tmp_path / "switch-dns.sh").write_text("#!/bin/sh\n")
    with pytest.raises(ScenarioInvalid, match=r"not executable; chmod \+x"):
        load_scenario(drill)
    (tmp_path / "switch-dns.sh").chmod(0o755)
    assert load_scenario(drill).timeline[0].command == ["./switch-dns.sh"]


def test_an_empty_command_and_a_zero_timeout_are_refused():
    found = problems_of("""\
  - {at: 2s, do: runbook, command: []}
  - {at: 4s, do: runbook, command: "true", timeout: 0}
""")
    assert "drill.yaml:10: timeline[0].command: needs at least 1 item(s)" in found
    assert "drill.yaml:11: timeline[1].timeout: must be greater than 0.0, got 0.0" in found
    assert len(found) == 2, found


def test_unbalanced_quotes_and_a_hidden_context_variable_are_refused():
    found = problems_of("""\
  - {at: 1s, do: runbook, command: 'echo "open'}
  - {at: 3s, do: runbook, command: "true", env: {MIRRORDRILL_RUN_DIR: /tmp}}
""")
    text = "\n".join(found)
    assert "drill.yaml:10: timeline[0].command: the shell command" in text and "check its quotes" in text
    assert "drill.yaml:11: timeline[1].env: MIRRORDRILL_RUN_DIR would hide the drill's own context" in text
    assert len(found) == 2, found


def test_a_failover_runbook_problem_names_its_place():
    [p] = problems_of("""\
  - at: 10s
    do: planned_failover
    from: primary
    to: dr-west
    runbook: [{command: [no-such-program-xyz]}]
""")
    assert "timeline[0].runbook[0].command: program 'no-such-program-xyz'" in p


# --- running ------------------------------------------------------------------------------
class FakeEnv:
    """The part of the environment a runbook command reads: addresses, and the supervisor."""

    def __init__(self):
        self.supervisor = ProcessSupervisor()

    def cluster(self, name: str):
        return SimpleNamespace(bootstrap={"primary": "127.0.0.1:1111", "dr-west": "127.0.0.1:2222"}[name])


def context(tmp_path: Path, timeline: str, drill_dir: Path | None = None) -> DrillContext:
    s = parse_scenario(BASE + timeline, "drill.yaml")
    events = []
    ctx = DrillContext(scenario=s, out_dir=tmp_path, env=FakeEnv(), replicator=None, histories=tmp_path / "h",
                       log=lambda m: None, drill_dir=drill_dir or tmp_path)
    ctx.record = lambda name, kind, start, end, outcome, detail="", **_: events.append((name, outcome, detail))
    ctx.events = events
    return ctx


def test_a_step_sees_the_drill_context_and_its_output_is_saved(tmp_path):
    ctx = context(tmp_path, """\
  - {at: 1s, do: unplanned_failover, from: primary, to: dr-west}
  - {at: 2s, do: runbook, name: check, command: 'env | grep ^MIRRORDRILL_ | sort; echo TEAM=$TEAM; echo oops >&2',
     env: {TEAM: blue}}
""")
    step = ctx.scenario.timeline[1]
    outcome = action_for(step).apply(ctx, step)
    assert outcome.startswith("exit 0 in ") and "runbook/01-check.log" in outcome
    out = (tmp_path / "runbook" / "01-check.log").read_text()
    for line in ("MIRRORDRILL_BOOTSTRAP_DR_WEST=127.0.0.1:2222", "MIRRORDRILL_BOOTSTRAP_PRIMARY=127.0.0.1:1111",
                 "MIRRORDRILL_CLUSTERS=primary,dr-west", "MIRRORDRILL_FAILOVER_FROM=primary",
                 "MIRRORDRILL_FAILOVER_TO=dr-west", "MIRRORDRILL_FAILOVER_FLOW=primary->dr-west",
                 "MIRRORDRILL_FAILOVER_KIND=unplanned_failover", "MIRRORDRILL_TARGET_BOOTSTRAP=127.0.0.1:2222",
                 f"MIRRORDRILL_RUN_DIR={tmp_path}", "MIRRORDRILL_SCENARIO=rb", "MIRRORDRILL_STEP=check",
                 "TEAM=blue", "oops"):
        assert line in out.splitlines(), (line, out)
    assert ctx.events == [("runbook check", "ok", outcome)]
    assert ctx.env.supervisor.processes == []


def test_without_an_earlier_failover_there_is_no_failover_context(tmp_path):
    ctx = context(tmp_path, "  - {at: 2s, do: runbook, name: c, command: 'env | grep ^MIRRORDRILL_FAILOVER || true'}\n")
    action_for(ctx.scenario.timeline[0]).apply(ctx, ctx.scenario.timeline[0])
    assert "MIRRORDRILL_FAILOVER" not in (tmp_path / "runbook" / "01-c.log").read_text().split("=====")[-1].split("\n", 1)[1]


def test_a_non_zero_exit_fails_the_step_naming_the_command_and_its_output(tmp_path):
    ctx = context(tmp_path, "  - {at: 2s, do: runbook, name: push config, command: 'echo no route to host; exit 3'}\n")
    step = ctx.scenario.timeline[0]
    with pytest.raises(runbook.RunbookFailed, match=r"runbook 'push config' failed: exit 3 .*runbook/01-push-config.log"
                                                    r".*last line: no route to host"):
        action_for(step).apply(ctx, step)
    assert ctx.events[0][1] == "failed"


def test_a_command_past_its_timeout_is_killed_with_its_children(tmp_path):
    ctx = context(tmp_path, "  - {at: 2s, do: runbook, name: hang, command: 'sleep 30 & echo $! > child.pid; sleep 30', "
                            "timeout: 1s}\n")
    step = ctx.scenario.timeline[0]
    with pytest.raises(runbook.RunbookFailed, match=r"timed out after 1s and was killed"):
        action_for(step).apply(ctx, step)
    assert ctx.events[0][1] == "timeout"
    child = int((tmp_path / "child.pid").read_text())  # written in the run folder: the command's cwd
    assert dies(child)
    assert ctx.env.supervisor.processes == []


def dies(pid: int) -> bool:
    """True once ``pid`` is gone or a zombie (a SIGKILLed process takes a moment to exit)."""
    for _ in range(50):
        try:
            if Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z":
                return True
        except FileNotFoundError:
            return True
        time.sleep(0.1)
    return False


def test_a_drill_being_stopped_stops_the_command(tmp_path):
    ctx = context(tmp_path, "  - {at: 2s, do: runbook, name: long, command: [sleep, '30'], timeout: 60s}\n")
    threading.Timer(0.5, ctx.stop_requested.set).start()
    began = time.monotonic()
    with pytest.raises(runbook.RunbookFailed, match="the drill is being stopped"):
        action_for(ctx.scenario.timeline[0]).apply(ctx, ctx.scenario.timeline[0])
    assert time.monotonic() - began < 25  # not the command's 30 s: it was stopped


def test_a_failovers_runbook_runs_in_order_and_stops_at_the_first_failure(tmp_path):
    ctx = context(tmp_path, """\
  - at: 1s
    do: planned_failover
    from: primary
    to: dr-west
    runbook:
      - {name: one, command: 'echo "$MIRRORDRILL_FAILOVER_FLOW"'}
      - {name: two, command: 'exit 1'}
      - {name: three, command: 'echo never'}
""")
    with pytest.raises(runbook.RunbookFailed, match="runbook 'two' failed: exit 1"):
        runbook.run_failover_runbook(ctx, ctx.scenario.timeline[0])
    assert [e[0] for e in ctx.events] == ["runbook one", "runbook two"]
    assert "primary->dr-west" in (tmp_path / "runbook" / "01-one.log").read_text()


# --- unset variables, the working folder, the context's names -------------------------------
def test_an_unset_variable_fails_the_step_before_the_command_acts_on_it(tmp_path):
    # /bin/sh would expand the misspelled variable to nothing and go on (rm -rf "$DIRR/" is rm -rf /)
    ctx = context(tmp_path, "  - {at: 2s, do: runbook, name: clean, command: 'echo \"$TEAM_DIRR\" > /dev/null; "
                            "touch went-on'}\n")
    with pytest.raises(runbook.RunbookFailed, match=r"runbook 'clean' failed: exit 1 .*TEAM_DIRR: unbound variable"):
        action_for(ctx.scenario.timeline[0]).apply(ctx, ctx.scenario.timeline[0])
    assert not (tmp_path / "went-on").exists()


def test_a_failed_command_in_a_pipe_fails_the_step(tmp_path):
    ctx = context(tmp_path, "  - {at: 2s, do: runbook, name: pipe, command: 'false | cat; touch reached'}\n")
    with pytest.raises(runbook.RunbookFailed, match="runbook 'pipe' failed: exit 1"):
        action_for(ctx.scenario.timeline[0]).apply(ctx, ctx.scenario.timeline[0])
    assert not (tmp_path / "reached").exists()


def test_a_command_runs_in_the_run_folder_with_the_users_environment(tmp_path, monkeypatch):
    drill_dir, run_dir = tmp_path / "drills", tmp_path / "run"
    drill_dir.mkdir()
    run_dir.mkdir()
    monkeypatch.setenv("TEAM_CLOUD_PROFILE", "staging")  # what a DNS tool or a cloud CLI reads
    ctx = context(run_dir, "  - {at: 2s, do: runbook, name: where, command: 'pwd > where.txt; "
                           "echo \"$TEAM_CLOUD_PROFILE\" >> where.txt'}\n", drill_dir=drill_dir)
    action_for(ctx.scenario.timeline[0]).apply(ctx, ctx.scenario.timeline[0])
    assert (run_dir / "where.txt").read_text().splitlines() == [str(run_dir), "staging"]
    assert not (drill_dir / "where.txt").exists()


def test_validate_names_the_closest_context_variable_for_a_misspelled_one():
    [p] = problems_of("""\
  - at: 10s
    do: planned_failover
    from: primary
    to: dr-west
    runbook:
      - {command: 'dns-switch --to "$MIRRORDRILL_TARGET_BOOTSTRAPP"'}
""")
    assert p == ("drill.yaml:15: timeline[0].runbook[0].command: $MIRRORDRILL_TARGET_BOOTSTRAPP is not set for this "
                 "step, and unset variables are errors; did you mean MIRRORDRILL_TARGET_BOOTSTRAP?"), p


def test_validate_refuses_the_failover_variables_before_any_failover():
    found = problems_of("""\
  - {at: 2s, do: runbook, command: 'echo ${MIRRORDRILL_FAILOVER_TO}'}
  - {at: 5s, do: unplanned_failover, from: primary, to: dr-west}
  - {at: 9s, do: runbook, command: ['sh', '-c', 'echo $MIRRORDRILL_FAILOVER_TO ${MIRRORDRILL_BOOTSTRAP_DR_WEST}']}
""")
    assert len(found) == 1, found  # after the failover, the same names are set
    assert found[0].startswith("drill.yaml:10: timeline[0].command: $MIRRORDRILL_FAILOVER_TO is not set for this "
                               "step"), found
    assert found[0].endswith("it is set in a failover's runbook and in the steps after a failover: move the step "
                             "after one"), found


def test_an_unknown_context_variable_with_no_close_name_lists_the_steps_names():
    [p] = problems_of("  - {at: 2s, do: runbook, command: 'echo $MIRRORDRILL_PASSWORD'}\n")
    assert "$MIRRORDRILL_PASSWORD is not set" in p and "this step has MIRRORDRILL_BOOTSTRAP_DR_WEST, " in p, p


@pytest.mark.parametrize("timeline, index, failover", [
    ("  - {at: 2s, do: runbook, command: 'true'}\n", 0, None),
    ("  - {at: 1s, do: planned_failover, from: primary, to: dr-west}\n  - {at: 2s, do: runbook, command: 'true'}\n",
     1, runbook.FailoverContext("planned_failover", "primary", "dr-west")),
])
def test_validate_and_the_running_step_share_one_list_of_names(tmp_path, timeline, index, failover):
    ctx = context(tmp_path, timeline)
    step = ctx.scenario.timeline[index]
    assert runbook.failover_before(ctx.scenario.timeline, step) == failover
    assert set(runbook.context_env(ctx, "s", failover)) == runbook.context_names(ctx.scenario, failover)


def test_a_script_beside_the_drill_file_runs_through_the_drill_folder_variable(tmp_path):
    # commands run in the run folder, so "./switch-dns.sh" would not be found: the drill's folder is given
    drill_dir, run_dir = tmp_path / "drills", tmp_path / "run"
    drill_dir.mkdir(), run_dir.mkdir()
    (drill_dir / "switch-dns.sh").write_text("#!/bin/sh\necho switched > dns.txt\n")
    (drill_dir / "switch-dns.sh").chmod(0o755)
    ctx = context(run_dir, "  - {at: 2s, do: runbook, name: dns, command: '\"$MIRRORDRILL_DRILL_DIR/switch-dns.sh\"'}\n",
                  drill_dir=drill_dir)
    step = ctx.scenario.timeline[0]
    assert action_for(step).apply(ctx, step).startswith("exit 0")
    assert (run_dir / "dns.txt").read_text() == "switched\n"  # in the run folder, not beside the drill
