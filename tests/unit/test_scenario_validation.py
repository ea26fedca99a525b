"""Drill file validation: every error names the file, the line and the field, and what is valid."""

from pathlib import Path

import pytest

from mirrordrill.harness.drill.validate import ScenarioInvalid, load_scenario, parse_scenario

FILE = "drill.yaml"

# Line numbers in the tests below refer to this document (line 1 is "name: t").
BASE = """\
name: t
clusters:
  primary: {brokers: 1}
  dr: {brokers: 1}
links:
  - between: [primary, dr]
topics:
  - {name: orders, cluster: primary, partitions: 3}
replication:
  flows:
    - source: primary
      target: dr
      topics: [orders]
load:
  producers:
    - {cluster: primary, topics: [orders], rate: 100}
  consumers:
    - {group: billing, cluster: primary, topics: [orders]}
duration: 30s
"""


def problems_of(text: str) -> list:
    with pytest.raises(ScenarioInvalid) as err:
        parse_scenario(text, FILE)
    return err.value.problems


def only_problem(text: str):
    found = problems_of(text)
    assert len(found) == 1, [str(p) for p in found]
    p = found[0]
    assert p.file == FILE
    return p


def line_of(text: str, needle: str) -> int:
    """1-based line of the first line containing ``needle``."""
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


def test_base_is_valid():
    s = parse_scenario(BASE, FILE)
    assert s.duration == 30.0 and s.replication.flows[0].target == "dr"


def test_unknown_cluster_in_a_flow():
    text = BASE.replace("      target: dr", "      target: drr")
    p = only_problem(text)
    assert p.line == line_of(text, "target: drr")
    assert p.field == "replication.flows[0].target"
    assert "unknown cluster 'drr'" in p.message and "['primary', 'dr']" in p.message


def test_action_before_start():
    text = BASE + "timeline:\n  - {at: -5s, do: heal, link: [primary, dr]}\n"
    p = only_problem(text)
    assert p.line == line_of(text, "at: -5s")
    assert p.field == "timeline[0].at"
    assert "negative" in p.message and "'90s'" in p.message  # says what would be valid


def test_action_after_end():
    text = BASE + "timeline:\n  - {at: 45s, do: heal, link: [primary, dr]}\n"
    p = only_problem(text)
    assert p.line == line_of(text, "at: 45s")
    assert p.field == "timeline[0].at"
    assert "after the end of the load (30s)" in p.message


def test_steps_out_of_order():
    text = BASE + ("timeline:\n  - {at: 20s, do: blackhole, link: [primary, dr]}\n"
                   "  - {at: 10s, do: heal, link: [primary, dr]}\n")
    p = only_problem(text)
    assert (p.line, p.field) == (line_of(text, "at: 10s"), "timeline[1].at")
    assert "in order" in p.message


def test_expectation_on_an_unknown_metric():
    text = BASE + "expectations:\n  lost: 0\n  loss_rate: 0\n"
    p = only_problem(text)
    assert (p.line, p.field) == (line_of(text, "loss_rate"), "expectations.loss_rate")
    assert "unknown metric 'loss_rate'" in p.message and "duplicates" in p.message


def test_expectation_limit_not_a_number():
    text = BASE + "expectations:\n  lost: few\n"
    p = only_problem(text)
    assert (p.line, p.field) == (line_of(text, "lost: few"), "expectations.lost")
    assert "'<= 100'" in p.message


def test_negative_rate():
    text = BASE.replace("rate: 100", "rate: -5")
    p = only_problem(text)
    assert p.line == line_of(text, "rate: -5")
    assert p.field == "load.producers[0].rate"
    assert "greater than 0" in p.message


def test_unknown_step_do():
    text = BASE + "timeline:\n  - at: 5s\n    do: explode\n    cluster: primary\n"
    p = only_problem(text)
    assert p.line == line_of(text, "at: 5s")
    assert p.field.startswith("timeline[0]")
    assert "explode" in p.message and "blackhole" in p.message  # lists the valid steps


def test_direction_not_of_the_link():
    text = BASE + "timeline:\n  - at: 5s\n    do: blackhole\n    link: [primary, dr]\n    direction: dr->elsewhere\n"
    p = only_problem(text)
    assert (p.line, p.field) == (line_of(text, "direction:"), "timeline[0].direction")
    assert "'primary->dr', 'dr->primary' or 'both'" in p.message


def test_failover_without_a_flow():
    text = BASE + "timeline:\n  - at: 5s\n    do: planned_failover\n    from: dr\n    to: primary\n"
    p = only_problem(text)
    assert (p.line, p.field) == (line_of(text, "at: 5s"), "timeline[0]")
    assert "no flow dr->primary" in p.message and "['primary->dr']" in p.message


def test_scoped_expectation_naming_an_unknown_group():
    text = BASE + ("timeline:\n  - {at: 5s, do: unplanned_failover, from: primary, to: dr}\n"
                   "expectations:\n  failover.skipped[payments]: 0\n")
    p = only_problem(text)
    assert (p.line, p.field) == (line_of(text, "failover.skipped[payments]"),
                                 "expectations.failover.skipped[payments]")
    assert "unknown consumer group 'payments'" in p.message and "['billing']" in p.message


def test_failover_metric_without_a_failover():
    text = BASE + "expectations:\n  failover.rto_s: '<= 30'\n"
    p = only_problem(text)
    assert "needs a planned_failover or unplanned_failover step" in p.message


def test_scoped_expectation_naming_an_unknown_flow():
    text = BASE + "expectations:\n  lost[dr->primary]: 0\n"
    p = only_problem(text)
    assert "unknown flow 'dr->primary'" in p.message



def test_every_problem_is_reported_at_once():
    text = BASE.replace("target: dr", "target: nowhere").replace("rate: 100", "rate: 0")
    found = problems_of(text)
    assert {p.field for p in found} >= {"load.producers[0].rate"}
    assert all(p.line is not None for p in found)


def test_yaml_syntax_error_names_the_line():
    p = only_problem(BASE + "expectations:\n  lost: [0\n")
    assert p.field == "(syntax)" and p.line is not None


def test_missing_file():
    with pytest.raises(ScenarioInvalid, match="no such file"):
        load_scenario(Path("/nonexistent/drill.yaml"))


@pytest.mark.parametrize("path", sorted(Path(__file__).parents[2].joinpath("scenarios").rglob("*.yaml")),
                         ids=lambda p: p.name)
def test_shipped_drills_are_valid(path):
    s = load_scenario(path)
    assert s.name == path.stem  # the file name is the drill name: one place to look it up


def test_scoped_expectation_may_name_a_forwarding_chain():
    text = BASE.replace("  dr: {brokers: 1}\n", "  dr: {brokers: 1}\n  far: {brokers: 1}\n") \
        .replace("links:\n  - between: [primary, dr]\n", "links:\n  - between: [primary, dr]\n  - between: [dr, far]\n") \
        .replace("      topics: [orders]\nload:", "      topics: [orders]\n    - {source: dr, target: far}\nload:")
    s = parse_scenario(text + "expectations:\n  lost[primary->far]: 0\n", FILE)
    assert s.parsed_expectations()[0].scope == "primary->far"
    p = only_problem(text + "expectations:\n  lost[far->primary]: 0\n")
    assert "unknown flow 'far->primary'" in p.message and "'primary->far'" in p.message


FAILOVER = "timeline:\n  - {at: 5s, do: unplanned_failover, from: primary, to: dr}\n"


def test_failback_is_valid_after_the_failover_it_undoes():
    s = parse_scenario(BASE + FAILOVER + "  - {at: 10s, do: failback, from: dr, to: primary, switch_back: true}\n"
                       "invariants: {rpo_records: 100, duplicates: 0}\n"
                       "expectations:\n  failback.missing[dr->primary]: 0\n", FILE)
    step = s.timeline[1]
    assert (step.source, step.target, step.switch_back) == ("dr", "primary", True)


def test_failback_without_a_failover():
    text = BASE + "timeline:\n  - {at: 10s, do: failback, from: dr, to: primary}\n"
    p = only_problem(text)
    assert (p.line, p.field) == (line_of(text, "do: failback"), "timeline[0]")
    assert "needs an earlier failover from primary to dr" in p.message


def test_failback_in_the_wrong_direction():
    p = only_problem(BASE + FAILOVER + "  - {at: 10s, do: failback, from: primary, to: dr}\n")
    assert "needs an earlier failover from dr to primary" in p.message


def test_failback_metric_without_a_failback():
    p = only_problem(BASE + FAILOVER + "expectations:\n  failback.converge_s: '<= 60'\n")
    assert "needs a failback step" in p.message


def test_restored_history_can_be_expected_only_of_a_failback_that_restores_it():
    step = "  - {at: 10s, do: failback, from: dr, to: primary%s}\n"
    tail = "invariants: {rpo_records: 100, duplicates: 0}\nexpectations:\n  failback.history_records: '>= 500'\n"
    p = only_problem(BASE + FAILOVER + step % "" + tail)
    assert "needs a failback step with restore_history: true" in p.message
    s = parse_scenario(BASE + FAILOVER + step % ", restore_history: true" + tail, FILE)
    assert s.parsed_expectations()[0].op == ">="
    # more restored is better: a bare number could mean either bound, so it is refused
    assert "a bare number is ambiguous" in only_problem(BASE + FAILOVER + step % ", restore_history: true"
                                                + tail.replace("'>= 500'", "500")).message


def test_failback_metric_scoped_to_an_unknown_failback():
    p = only_problem(BASE + FAILOVER + "  - {at: 10s, do: failback, from: dr, to: primary}\n"
                     "expectations:\n  failback.missing[primary->dr]: 0\n")
    assert "unknown failback 'primary->dr'" in p.message


def test_stable_address_must_point_at_a_known_cluster():
    text = BASE + "stable_address: {points_to: primry}\n"
    p = only_problem(text)
    assert (p.line, p.field) == (line_of(text, "stable_address"), "stable_address.points_to")
    assert "unknown cluster 'primry'" in p.message


def test_backlog_on_an_undeclared_topic():
    text = BASE.replace("load:\n", "load:\n  backlog:\n    - {cluster: primary, topic: payments, records: 1000}\n", 1)
    p = only_problem(text)
    assert (p.line, p.field) == (line_of(text, "topic: payments"), "load.backlog[0].topic")
    assert "topic 'payments' is not declared on primary" in p.message


def test_failback_only_in_an_active_passive_pair():
    text = BASE.replace("  dr: {brokers: 1}\n", "  dr: {brokers: 1}\n  far: {brokers: 1}\n") \
        .replace("links:\n  - between: [primary, dr]\n", "links:\n  - between: [primary, dr]\n  - between: [dr, far]\n") \
        .replace("      topics: [orders]\nload:", "      topics: [orders]\n    - {source: dr, target: far}\nload:")
    p = only_problem(text + FAILOVER + "  - {at: 10s, do: failback, from: dr, to: primary}\n")
    assert "failback rebuilds one active/passive pair" in p.message and "['dr->far']" in p.message


def test_a_quoted_number_is_a_duration_in_seconds():
    assert parse_scenario(BASE.replace("duration: 30s", 'duration: "90"'), FILE).duration == 90.0


@pytest.mark.parametrize("written", ["1s1s", "30s1m", ".nan"])
def test_durations_that_are_most_likely_typos(written):
    p = only_problem(BASE.replace("duration: 30s", f"duration: {written}"))
    assert p.field == "duration" and ("out of order" in p.message or "finite" in p.message)


def test_sweep_param_keys_are_checked_before_anything_starts():
    from mirrordrill.harness.tools.sweep.params import SweepError, parse_params
    assert [p.key for p in parse_params(["num_streams=1,2", "tasks.max=2", "consumer.fetch.min.bytes=1"])] == \
        ["num_streams", "tasks.max", "consumer.fetch.min.bytes"]
    with pytest.raises(SweepError, match="did you mean 'tasks.max'"):
        parse_params(["tasks.maxx=1,2"])
    with pytest.raises(SweepError, match="did you mean 'num_streams'"):
        parse_params(["num_stream=1,2"])


def test_run_with_the_command_replicator_and_no_command_is_refused_before_the_adapter():
    from mirrordrill.harness.drill.replicators.command import check_command
    assert "needs a command" in check_command(None)
    assert check_command("rep --from {source_bootstrap} --to {target_bootstrap}") is None
    assert "unknown placeholder {sourc}" in check_command("rep {sourc}")


def test_compose_style_anchors_under_x_keys_merge_and_are_not_drill_fields():
    quickstart = (Path(__file__).resolve().parents[2] / "scenarios" / "quickstart.yaml").read_text()
    text = quickstart.replace("links:\n  - between: [primary, dr]\n    latency_ms: 20\n    jitter_ms: 2\n",
                              "x-wan: &wan\n  latency_ms: 20\n  jitter_ms: 2\n\n"
                              "links:\n  - between: [primary, dr]\n    <<: *wan\n")
    assert "x-wan" in text
    scenario = parse_scenario(text, "drill.yaml")
    (link,) = scenario.links
    assert (link.latency_ms, link.jitter_ms) == (20, 2)
