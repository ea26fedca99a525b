"""A table of bad drill files: each is refused (or warned about) by ``mirrordrill validate``, with a
message in plain words at the right line, and nothing is started to find out.

The cases are those of issue 16 ("Silent drops", "Late errors", "Tracebacks", "Accepted nonsense",
"Jargon") and of a reviewer's list of what ``validate`` used to accept.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from harness import cli
from primitives.process import ManagedProcess
from tests.unit.test_scenario_validation import BASE

FAILOVER = "timeline:\n  - {at: 5s, do: unplanned_failover, from: primary, to: dr}\n"
COMMAND = "replication:\n  replicator: command\n  command: my-replicator --from {source_bootstrap}\n"


def _flow_setting(setting: str) -> str:
    return BASE.replace("      topics: [orders]\n", f"      topics: [orders]\n      settings: {{{setting}}}\n", 1)


def _step(step: str) -> str:
    return BASE + f"timeline:\n  - {{{step}}}\n"


@dataclass(frozen=True)
class Bad:
    id: str
    text: str | bytes  # the drill file's content
    phrase: str  # a key phrase of the message
    line_of: str | None = None  # the message names the line holding this text (None: no line to name)
    argv: tuple[str, ...] = ()  # extra arguments after ``validate FILE``
    command: str = "validate"


CASES = [
    # --- silent drops: a repeated key --------------------------------------------------
    Bad("second expectations block", BASE + "expectations:\n  lost: 0\ntimeline: []\nexpectations:\n  duplicates: 0\n",
        "'expectations' is given twice (first on line 20)", "expectations:\n  duplicates"),
    Bad("second timeline", BASE + "timeline: []\ntimeline:\n  - {at: 5s, do: heal, link: [primary, dr]}\n",
        "'timeline' is given twice", "timeline:\n  - {at"),
    Bad("cluster listed twice", BASE.replace("  dr: {brokers: 1}\n", "  dr: {brokers: 1}\n  primary: {brokers: 3}\n"),
        "'clusters.primary' is given twice (first on line 3)", "primary: {brokers: 3}"),
    # --- late errors: found by validate now, not after the clusters start -------------
    Bad("flow setting typo", _flow_setting("tasks.maxx: 2"), "did you mean 'tasks.max'", "settings: {tasks.maxx"),
    Bad("client setting value", _flow_setting("producer.linger.ms: 5x"), "is not a whole number of at least 0",
        "settings: {producer.linger.ms"),
    Bad("client setting choice", _flow_setting("producer.acks: bogus"), "valid: all, -1, 0, 1", "settings: {producer.acks"),
    Bad("flow setting bad value", _flow_setting("tasks.max: many"), "tasks.max", "settings: {tasks.max"),
    Bad("command placeholder typo", BASE.replace("replication:\n", COMMAND.replace("{source_bootstrap}",
                                                                                   "{source_bootstrapp}"), 1),
        "unknown placeholder {source_bootstrapp}", "command: my-replicator"),
    Bad("MM2 exactly-once with uncommitted source reads",
        _flow_setting("consumer.isolation.level: read_uncommitted").replace(
            "replication:\n", "replication:\n  replicator: mirrormaker2\n  mirrormaker2: {exactly_once: true}\n", 1),
        "exactly_once needs MM2's source consumers at read_committed", "settings: {consumer.isolation.level"),
    Bad("command replicator without a command", BASE.replace("replication:\n", "replication:\n  replicator: command\n", 1),
        "replicator 'command' needs replication.command", "replication:"),
    Bad("run --replicator command without a command", BASE, "replicator 'command' needs replication.command",
        "replication:", command="run", argv=("--replicator", "command")),
    Bad("flow topic nobody has", BASE.replace("      topics: [orders]\n", "      topics: [ordrs]\n"),
        "cluster primary has no topic 'ordrs' (did you mean 'orders'?)", "topics: [ordrs]"),
    Bad("sweep --param typo", BASE, "did you mean 'tasks.max'", None, command="sweep", argv=("--param", "tasks.maxx=1,2")),
    Bad("sweep --param bad value", BASE, "is not a whole number of at least 0", None, command="sweep",
        argv=("--param", "linger.ms=5,x")),
    Bad("sweep --param shorthand typo", BASE, "did you mean 'num_streams'", None, command="sweep",
        argv=("--param", "num_stream=1,2")),
    Bad("sweep --param bad value", BASE, "with the --param values applied: load.producers[0].rate: expected a number, "
        "got 'abc'", None, command="sweep", argv=("--param", "rate=5,abc", "--no-ceiling")),
    # --- tracebacks no more ------------------------------------------------------------
    Bad("merge key of a scalar", "base: &b 3\n" + BASE.replace("  primary: {brokers: 1}", "  primary:\n    <<: *b"),
        "'<<' merges a mapping", "<<: *b"),
    Bad("not UTF-8", BASE.encode() + b"# caf\xe9\n", "not a UTF-8 text file"),
    Bad("a folder", "", "this is a folder"),
    # --- accepted nonsense ------------------------------------------------------------
    Bad("infinite duration", BASE.replace("duration: 30s", "duration: .inf"), "not a finite number", "duration: .inf"),
    Bad("infinite rate", BASE.replace("rate: 100", "rate: .inf"), "finite number", "rate: .inf"),
    Bad("duration with units out of order", BASE.replace("duration: 30s", "duration: 30s1m"), "out of order",
        "duration: 30s1m"),
    Bad("how on a planned failover", _step("at: 5s, do: planned_failover, from: primary, to: dr, how: partition"),
        "'how' applies to unplanned_failover only", "how: partition"),
    Bad("drain_timeout on an unplanned failover", _step("at: 5s, do: unplanned_failover, from: primary, to: dr, "
                                                        "drain_timeout: 10s"), "'drain_timeout' applies to planned",
        "drain_timeout"),
    Bad("two links between one pair", BASE.replace("  - between: [primary, dr]\n", "  - between: [primary, dr]\n"
                                                   "    latency_ms: 20\n  - {between: [dr, primary], latency_ms: 80}\n"),
        "the link between dr and primary is listed twice", "latency_ms: 80"),
    Bad("jitter above latency on a link", BASE.replace("  - between: [primary, dr]\n",
                                                       "  - {between: [primary, dr], latency_ms: 10, jitter_ms: 50}\n"),
        "jitter_ms (50) is larger than latency_ms (10)", "jitter_ms: 50"),
    Bad("jitter above latency in set_link", _step("at: 5s, do: set_link, link: [primary, dr], latency_ms: 10, "
                                                  "jitter_ms: 50"), "jitter must be at most latency", "jitter_ms: 50"),
    Bad("separator inside a cluster name", BASE.replace("replication:\n", "replication:\n  separator: _\n", 1)
        .replace("dr", "d_r"), "contains the separator '_'", "separator: _"),
    Bad("the same flow twice", BASE.replace("load:", "    - {source: primary, target: dr}\nload:", 1),
        "flow primary->dr is listed twice", "- {source: primary, target: dr}"),
    Bad("direction on heal", _step("at: 5s, do: heal, link: [primary, dr], direction: primary->dr"),
        "heal ends every fault on the link in both directions", "direction: primary->dr"),
    Bad("direction on reset_connections", _step("at: 5s, do: reset_connections, link: [primary, dr], "
                                                "direction: both"), "remove 'direction'", "direction: both"),
    Bad("add_partitions to fewer", _step("at: 5s, do: add_partitions, cluster: primary, topic: orders, partitions: 2"),
        "already has 3 partitions", "partitions: 2"),
    Bad("add_partitions on another cluster than create_topic",
        BASE + "timeline:\n  - {at: 5s, do: create_topic, cluster: dr, topic: audit}\n"
               "  - {at: 6s, do: add_partitions, cluster: primary, topic: audit, partitions: 6}\n",
        "topic 'audit' is not declared on primary", "topic: audit, partitions"),
    Bad("the same failover twice", BASE + FAILOVER + "  - {at: 9s, do: unplanned_failover, from: primary, to: dr}\n",
        "already failed over from primary to dr", "at: 9s"),
    Bad("auto commit every N records", BASE.replace("topics: [orders]}\n", "topics: [orders], "
                                                    "commit: {mode: auto, every_records: 10}}\n"),
        "every_records needs mode: manual", "every_records"),
    Bad("producer acks 0", BASE.replace("rate: 100}", "rate: 100, settings: {acks: 0}}"), "acks: 0 means",
        "acks: 0"),
    Bad("producer bootstrap.servers", BASE.replace("rate: 100}", "rate: 100, settings: {bootstrap.servers: x:9092}}"),
        "set by mirrordrill itself", "bootstrap.servers"),
    Bad("negative topic weight", BASE.replace("topics: [orders], rate", "topics: {orders: -1}, rate"),
        "must be greater than 0", "orders: -1"),
    Bad("translated failover with the command replicator", BASE.replace("replication:\n", COMMAND, 1) + FAILOVER,
        "translates no offsets", "group: billing"),
    Bad("checkpoint failover with the command replicator",
        BASE.replace("replication:\n", COMMAND, 1).replace("topics: [orders]}\n", "topics: [orders], "
                                                            "failover_strategy: checkpoint}\n") + FAILOVER,
        "a 'checkpoint' failover cannot run", "group: billing"),
    # --- expectations read as limits --------------------------------------------------
    Bad("negative limit", BASE + "expectations:\n  lost: '<= -1'\n", "never holds", "lost: '<= -1'"),
    Bad("fractional count", BASE + "expectations:\n  lost: '<= 0.5'\n", "whole number", "lost: '<= 0.5'"),
    Bad("bare number where more is better", BASE + "expectations:\n  throughput_records_s: 1000\n",
        "write '>= 1000' (at least) or '<= 1000' (at most)", "throughput_records_s"),
    Bad("metric typo", BASE + "expectations:\n  duplicate: 0\n", "did you mean 'duplicates'", "duplicate: 0"),
    Bad("group that never fails over", BASE.replace("  consumers:\n", "  consumers:\n    - {group: audit, cluster: dr, "
                                                    "topics: [audit]}\n")
        .replace("replication:\n", "  - {name: audit, cluster: dr}\nreplication:\n", 1) + FAILOVER
        + "expectations:\n  failover.skipped[audit]: 0\n", "which no failover step leaves", "failover.skipped[audit]"),
    # --- jargon: plain words, with "did you mean" ------------------------------------
    Bad("unknown field", BASE.replace("      topics: [orders]\n", "      topic: [orders]\n"),
        "unknown field 'topic' (did you mean 'topics'?); valid fields here:", "topic: [orders]"),
    Bad("unknown step", _step("at: 5s, do: heall, link: [primary, dr]"),
        "unknown step 'heall' (did you mean 'heal'?); valid steps:", "do: heall"),
    Bad("step without do", _step("at: 5s, link: [primary, dr]"), "this step has no 'do:'", "at: 5s"),
    Bad("unknown replicator", BASE.replace("replication:\n", "replication:\n  replicator: mirrormaker\n", 1),
        "'mirrormaker' is not valid here (did you mean 'mirrormaker2'?)", "replicator: mirrormaker"),
    Bad("missing field", BASE.replace(", rate: 100", ""), "missing required field 'rate'",
        "{cluster: primary, topics: [orders]}"),
    Bad("wrong type", BASE.replace("partitions: 3", "partitions: three"), "expected a whole number, got 'three'",
        "partitions: three"),
    Bad("producer topics neither list nor map", BASE.replace("topics: [orders], rate", "topics: orders, rate"),
        "expected a list, e.g. [a, b] or a mapping (key: value lines), got 'orders'", "topics: orders, rate"),
    Bad("an empty section", BASE + "timeline:\n", "got nothing (an empty value)", "timeline:"),
    Bad("a link with one end", BASE.replace("between: [primary, dr]", "between: [primary]"), "item 2 is missing",
        "between: [primary]"),
    # --- a broker named as a partition's leader ------------------------------------------
    Bad("leader of an undeclared topic", _step("at: 5s, do: kill_broker, cluster: primary, leader_of: {topic: ordrs}"),
        "topic 'ordrs' is not declared on primary", "leader_of: {topic: ordrs}"),
    Bad("broker and leader_of both", _step("at: 5s, do: kill_broker, cluster: primary, broker: 1, "
                                            "leader_of: {topic: orders}"),
        "not both", "broker: 1, leader_of"),
    Bad("resume the leader", _step("at: 5s, do: resume_broker, cluster: primary, leader_of: {topic: orders}"),
        "another broker leads the partition", "do: resume_broker"),
]

# A drill from a local cluster into a team's cluster (issue 40): every write there must be to an owned name.
EXISTING = """\
name: t
owned_prefix: md-t-
clusters:
  md-t-primary: {brokers: 1}
  md-t-dr:
    existing: {bootstrap_servers: "kafka-dr.staging:9093"}
topics:
  - {name: orders, cluster: md-t-primary, partitions: 3}
replication:
  flows:
    - source: md-t-primary
      target: md-t-dr
      topics: [orders]
load:
  producers:
    - {cluster: md-t-primary, topics: [orders], rate: 100}
  consumers:
    - {group: md-t-billing, cluster: md-t-primary, topics: [orders]}
duration: 30s
"""
# Both clusters a team's: the flow reads on one and writes on the other.
TWO_EXISTING = (EXISTING.replace("  md-t-primary: {brokers: 1}", "  md-t-primary:\n    existing: {bootstrap_servers: "
                                 "\"kafka-1.staging:9093\"}").replace("orders", "md-t-orders"))

# The team's cluster is the primary; a producer of the local dr's own topic moves there on the switch back.
SWITCH_BACK = """\
name: t
owned_prefix: md-t-
clusters:
  md-t-primary:
    existing: {bootstrap_servers: "kafka-1.staging:9093"}
  md-t-dr: {brokers: 1}
topics:
  - {name: md-t-orders, cluster: md-t-primary, partitions: 3}
  - {name: orders, cluster: md-t-dr, partitions: 3}
replication:
  flows: [{source: md-t-primary, target: md-t-dr, topics: [md-t-orders]}]
load:
  producers:
    - {cluster: md-t-primary, topics: [md-t-orders], rate: 100}
    - {cluster: md-t-dr, topics: [orders], rate: 10}
  consumers:
    - {group: md-t-billing, cluster: md-t-primary, topics: [md-t-orders]}
duration: 30s
timeline:
  - {at: 5s, do: unplanned_failover, from: md-t-primary, to: md-t-dr, how: partition}
  - {at: 15s, do: failback, from: md-t-dr, to: md-t-primary, switch_back: true}
"""


def _existing_flow_topics(patterns: str) -> str:
    return TWO_EXISTING.replace("      topics: [md-t-orders]\n", f"      topics: [{patterns!r}]\n")


CASES += [
    Bad("identity into an existing cluster", EXISTING.replace("  flows:", "  policy: identity\n  flows:"),
        "under the identity policy each topic keeps its name on the existing cluster md-t-dr", "topics: [orders]"),
    Bad("failover onto an existing cluster with unowned topics",
        EXISTING + "timeline:\n  - {at: 5s, do: unplanned_failover, from: md-t-primary, to: md-t-dr}\n",
        "moves producer 1, which would create and write ['orders'] there", "- {at: 5s"),
    Bad("switch back onto an existing cluster with unowned topics", SWITCH_BACK,
        "failback onto the existing cluster md-t-primary moves producer 2, which would create and write ['orders']",
        "- {at: 15s"),
    Bad("failback turns a free pattern round onto an existing cluster",
        EXISTING.replace("orders", "md-t-orders").replace("topics: [md-t-orders]\nload", "topics: ['.*']\nload")
        + "timeline:\n  - {at: 5s, do: unplanned_failover, from: md-t-primary, to: md-t-dr}\n"
          "  - {at: 15s, do: failback, from: md-t-dr, to: md-t-primary}\n",
        "the failback from md-t-dr turns it round", "topics: ['.*']"),
    Bad("offset sync into a second existing cluster's groups",
        TWO_EXISTING.replace("  flows:", "  policy: identity\n  flows:").replace(
            "      topics: [md-t-orders]\n", "      topics: [md-t-orders]\n"
                                            "      settings: {sync.group.offsets.enabled: true}\n"),
        "the default groups pattern '.*' takes every group", "settings: {sync.group"),
    Bad("synced groups outside the prefix", TWO_EXISTING.replace(
        "      topics: [md-t-orders]\n", "      topics: [md-t-orders]\n"
                                        "      settings: {sync.group.offsets.enabled: true, groups: 'md-t-.*, app-.*'}\n"),
        "groups: pattern 'app-.*' does not start with the prefix", "settings: {sync.group"),
    Bad("alternation out of the prefix", _existing_flow_topics("md-t-a|orders"),
        "a '|' outside parentheses makes each alternative a pattern of its own", "topics: ['md-t-a|orders']"),
    Bad("wildcard alternative", _existing_flow_topics("md-t-.*|.*"), "a '|' outside parentheses",
        "topics: ['md-t-.*|.*']"),
    Bad("a pattern that closes the prefix's group", _existing_flow_topics("md-t-a)|(.*"),
        "is not a regex on its own", "topics: ['md-t-a)|(.*']"),
    Bad("a quantifier on the prefix", _existing_flow_topics("md-t-*"), "would repeat its last character",
        "topics: ['md-t-*']"),
    Bad("a typo in a flow's topic on an existing cluster", _existing_flow_topics("md-t-ordrs"),
        "has no topic 'md-t-ordrs' (did you mean 'md-t-orders'?)", "topics: ['md-t-ordrs']"),
    Bad("a pattern that only looks like the prefix", _existing_flow_topics("md.t-.*"),
        "does not start with the prefix 'md-t-' written literally", "topics: ['md.t-.*']"),
]


@pytest.fixture
def nothing_starts(monkeypatch):
    """Fail the test if anything is started: validation runs no process, and leaves no child behind."""
    def refuse(*args, **kwargs):
        raise AssertionError(f"validation started a process: {args or kwargs}")
    monkeypatch.setattr(subprocess, "Popen", refuse)
    monkeypatch.setattr(ManagedProcess, "start", refuse)
    before = _children()
    yield
    assert _children() == before


def _children() -> set[int]:
    """This process's children, from /proc (psutil is not installed)."""
    me, out = os.getpid(), set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == me:
                out.add(int(entry.name))
    return out


def _line(text: str, needle: str) -> int:
    """1-based line where ``needle`` first begins."""
    return text[:text.index(needle)].count("\n") + 1


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_bad_drill_file_is_refused_before_anything_starts(case: Bad, tmp_path, capsys, monkeypatch, nothing_starts):
    monkeypatch.chdir(tmp_path)  # a run or sweep that got through would write here, not in the checkout
    path = tmp_path / ("folder.yaml" if case.id == "a folder" else "drill.yaml")
    if case.id == "a folder":
        path.mkdir()
    elif isinstance(case.text, bytes):
        path.write_bytes(case.text)
    else:
        path.write_text(case.text)
    code = cli.main([case.command, str(path), *case.argv])
    err = capsys.readouterr().err
    assert code == cli.EXIT_USAGE, err
    assert case.phrase in err, err
    assert "Traceback" not in err and "pydantic" not in err and "Input should" not in err, err
    if case.line_of is not None:
        assert f"{path}:{_line(case.text, case.line_of)}:" in err, err


WARNINGS = [
    ("mode with mirrormaker2", BASE.replace("replication:\n", "replication:\n  replicator: mirrormaker2\n"
                                                              "  mode: realtime\n", 1), (), "mirrormaker2 ignores it"),
    ("MM2 exactly-once with the pyspark replicator",
     BASE.replace("replication:\n", "replication:\n  mirrormaker2: {exactly_once: true}\n", 1), (),
     "exactly_once applies to MirrorMaker 2 only"),
    ("flow settings with the command replicator", _flow_setting("tasks.max: 2").replace("replication:\n", COMMAND, 1),
     (), "never reach a command replicator"),
]


@pytest.mark.parametrize("text,argv,phrase", [w[1:] for w in WARNINGS], ids=[w[0] for w in WARNINGS])
def test_what_has_no_effect_is_warned_about_and_still_valid(text, argv, phrase, tmp_path, capsys, nothing_starts):
    path = tmp_path / "drill.yaml"
    path.write_text(text)
    assert cli.main(["validate", str(path), *argv]) == cli.EXIT_OK
    out = capsys.readouterr()
    assert "warning:" in out.err and phrase in out.err, out.err
    assert "1 warning(s)" in out.out


def test_a_merge_key_is_read_as_compose_users_write_it(tmp_path, capsys, nothing_starts):
    text = BASE.replace("  primary: {brokers: 1}\n  dr: {brokers: 1}\n",
                        "  primary: &base {brokers: 1, heap_mb: 256}\n  dr:\n    <<: *base\n    brokers: 2\n")
    path = tmp_path / "drill.yaml"
    path.write_text(text)
    assert cli.main(["validate", str(path)]) == cli.EXIT_OK, capsys.readouterr().err
    from harness.scenario.validate import load_scenario
    dr = load_scenario(path).clusters["dr"]
    assert (dr.brokers, dr.heap_mb) == (2, 256)


def test_a_pyspark_file_s_mode_is_no_warning_when_run_against_another_replicator(tmp_path, capsys, nothing_starts):
    # one drill file serves every replicator: its mode is meant for pyspark, not a mistake
    path = tmp_path / "drill.yaml"
    path.write_text(BASE.replace("replication:\n", "replication:\n  mode: realtime\n", 1))
    assert cli.main(["validate", str(path), "--replicator", "mirrormaker2"]) == cli.EXIT_OK
    assert "warning" not in capsys.readouterr().err


def test_run_warns_when_the_file_s_replicator_ignores_its_mode(tmp_path, capsys, monkeypatch, nothing_starts):
    class Started(BaseException):  # not an Exception: cmd_run reports those as a harness failure
        pass

    def run_drill(*args, **kwargs):
        raise Started()  # the checks are over: the drill would start here
    monkeypatch.setattr(cli, "run_drill", run_drill)
    path = tmp_path / "drill.yaml"
    path.write_text(WARNINGS[0][1])
    with pytest.raises(Started):
        cli.main(["run", str(path), "--out", str(tmp_path / "out")])
    assert "warning: replication.mode: mode applies to the pyspark replicator only" in capsys.readouterr().err
