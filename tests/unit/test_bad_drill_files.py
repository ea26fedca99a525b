"""A table of bad drill files: each is refused (or warned about) by ``mirrordrill validate``, with a
message in plain words at the right line, and nothing is started to find out.

The cases are those of issue 16 ("Silent drops", "Late errors", "Tracebacks", "Accepted nonsense",
"Jargon") and of a reviewer's list of what ``validate`` used to accept.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from mirrordrill.harness.cli import commands as cli
from tests.unit.test_scenario_validation import BASE

FAILOVER = "timeline:\n  - {at: 5s, do: unplanned_failover, from: primary, to: dr}\n"
COMMAND = "replication:\n  replicator: command\n  command: sh my-replicator.sh --from {source_bootstrap}\n"
MM1 = "replication:\n  replicator: mirrormaker1\n  policy: identity\n"


def _flow_setting(setting: str) -> str:
    return BASE.replace("      topics: [orders]\n", f"      topics: [orders]\n      settings: {{{setting}}}\n", 1)


def _topic(name: str) -> str:
    """BASE with a second topic on primary."""
    return BASE.replace("replication:\n", f"  - name: {name}\n    cluster: primary\n  - {{name: my_events, "
                                            "cluster: primary}\nreplication:\n", 1)


def _all_topics(text: str) -> str:
    """The flow copies every topic of primary."""
    return text.replace("      target: dr\n      topics: [orders]\n", "      target: dr\n      topics: ['.*']\n", 1)


CHAIN = """\
name: chain
clusters: {primary: {brokers: 1}, dr: {brokers: 1}, c: {brokers: 1}}
topics:
  - {name: NAME, cluster: primary}
replication:
  flows:
    - {source: primary, target: dr}
    - {source: dr, target: c}
load:
  producers:
    - {cluster: primary, topics: [NAME], rate: 10}
"""


def _broker_props(entry: str) -> str:
    return BASE.replace("  primary: {brokers: 1}\n", f"  primary:\n    brokers: 1\n    broker_properties:\n"
                                                       f"      {entry}\n", 1)


def _step(step: str) -> str:
    return BASE + f"timeline:\n  - {{{step}}}\n"


def _command(command: str) -> str:
    """BASE run by the command replicator with ``command`` as its template."""
    return BASE.replace("replication:\n", f"replication:\n  replicator: command\n  command: {command}\n", 1)


def _identity_cycle(replicator: str) -> str:
    """BASE with the identity policy and a flow back from dr to primary (every topic): primary's orders return."""
    return BASE.replace("replication:\n", f"replication:\n  replicator: {replicator}\n  policy: identity\n", 1).replace(
        "      topics: [orders]\n", "      topics: [orders]\n    - {source: dr, target: primary}\n", 1)


def _secured(password: str) -> str:
    """BASE with SASL_SSL on primary, its password read through ``password`` (a reference)."""
    return BASE.replace("  primary: {brokers: 1}\n", "  primary:\n    brokers: 1\n    security:\n"
                        f"      protocol: SASL_SSL\n      password: {password}\n", 1)


# Nine anchors, each nine aliases of the one before: 342 bytes, 490 million values once expanded.
LAUGHS = "x-a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
    f"x-{c}: &{c} [{', '.join([f'*{p}'] * 9)}]\n" for p, c in zip("abcdefgh", "bcdefghi", strict=True))


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
        "unknown placeholder {source_bootstrapp}", "command: sh my-replicator"),
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
    # --- the reader's caps: a file that would take the machine down ------------------
    Bad("billion laughs", BASE + LAUGHS, "a drill file holds at most 10,000"),
    Bad("above one MiB", BASE + "#" * 1024 * 1024 + "\n", "a drill file is at most 1,048,576 bytes (1 MiB)"),
    Bad("nested 3000 deep", BASE + "x-deep: " + "[" * 3000 + "]" * 3000 + "\n", "nested more than 50 levels deep",
        "x-deep: [[["),
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
    # --- what MirrorMaker 1 cannot do ----------------------------------------------------
    Bad("MirrorMaker 1 with remote-topic prefixes", BASE.replace("replication:\n", "replication:\n  replicator: "
                                                                 "mirrormaker1\n", 1),
        "MirrorMaker 1 copies each topic under its own name (it has no remote-topic prefix): set policy: identity",
        "replication:"),
    Bad("translated failover with MirrorMaker 1", BASE.replace("replication:\n", MM1, 1) + FAILOVER,
        "MirrorMaker 1 writes no checkpoints and translates no offsets, so a 'translated' failover cannot run",
        "group: billing"),
    Bad("failback with MirrorMaker 1", BASE.replace("replication:\n", MM1, 1).replace(
        "topics: [orders]}\n", "topics: [orders], failover_strategy: timestamp}\n")
        + FAILOVER + "  - {at: 12s, do: failback, from: dr, to: primary}\n",
        "MirrorMaker 1 cannot fail back", "at: 12s"),
    Bad("a topic created on a MirrorMaker 1 flow's source", BASE.replace("replication:\n", MM1, 1)
        + "timeline:\n  - {at: 5s, do: add_partitions, cluster: primary, topic: orders, partitions: 6}\n",
        "its copy of 'orders' would not follow this add_partitions", "at: 5s"),
    Bad("an identity loop with MirrorMaker 1", _identity_cycle("mirrormaker1"),
        "MirrorMaker 1 would copy topic 'orders' round primary->dr->primary forever", "- {source: dr"),
    # --- Kafka's topic-name rules -------------------------------------------------------
    Bad("a space in a topic name", BASE.replace("name: orders, cluster: primary", "name: 'new orders', cluster: primary"),
        "topic 'new orders' has ' '; Kafka allows only letters, digits, '.', '_' and '-'; rename it", "name: 'new orders'"),
    Bad("a topic named '..'", _topic("'..'"), "topic '..' is '.' or '..', which Kafka refuses", "name: '..'"),
    Bad("a topic name of 250 characters", _topic("t" * 250), "is 250 characters; Kafka allows at most 249",
        "name: ttt"),
    Bad("an empty topic name", _topic("''"), "topic '' is empty", "name: ''"),
    Bad("create_topic with a slash", _step("at: 5s, do: create_topic, cluster: primary, topic: 'a/b'"),
        "topic 'a/b' has '/'", "topic: 'a/b'"),
    Bad("two topics that differ by '.' and '_'", _topic("my.events"), "topic 'my_events' collides on primary "
        "with topic 'my.events': Kafka treats '.' and '_' alike", "name: my_events"),
    Bad("a remote topic that collides with a declared one",
        BASE.replace("replication:\n", "  - {name: primary_orders, cluster: dr}\nreplication:\n", 1),
        "remote topic 'primary.orders' (flow primary->dr, from 'orders') collides on dr with topic 'primary_orders'",
        "- source: primary"),
    Bad("a remote topic of 250 characters", _all_topics(_topic("t" * 242)),
        f"remote topic 'primary.{'t' * 242}' (flow primary->dr, from '{'t' * 242}') is 250 characters", "- source: primary"),
    Bad("a remote topic of a chain of 250 characters", CHAIN.replace("NAME", "t" * 239),
        f"remote topic 'dr.primary.{'t' * 239}' (flow dr->c, from 'primary.{'t' * 239}') is 250 characters",
        "- {source: dr, target: c"),
    Bad("a separator Kafka refuses", BASE.replace("replication:\n", "replication:\n  separator: '/'\n", 1),
        "separator '/' goes into every remote topic's name, which then has '/'", "separator: '/'"),
    # --- upper bounds one machine can run, said with the limit ---------------------------
    Bad("seven brokers", BASE.replace("primary: {brokers: 1}", "primary: {brokers: 7}"),
        "at most 5 brokers per cluster (each is a JVM on this machine); got 7", "primary: {brokers: 7}"),
    Bad("a broker heap of 100 GB", BASE.replace("primary: {brokers: 1}", "primary: {brokers: 1, heap_mb: 100000}"),
        "at most 8,192 MB of heap per broker; got 100,000", "heap_mb: 100000"),
    Bad("nine clusters", BASE.replace("  dr: {brokers: 1}\n", "  dr: {brokers: 1}\n" + "".join(
        f"  c{i}: {{brokers: 1}}\n" for i in range(7))), "at most 8 clusters in one drill; got 9", "clusters:"),
    Bad("5000 partitions", BASE.replace("partitions: 3", "partitions: 5000"), "at most 1,000 partitions per topic; "
        "got 5,000", "partitions: 5000"),
    Bad("create_topic with 2000 partitions", _step("at: 5s, do: create_topic, cluster: primary, topic: audit, "
                                                   "partitions: 2000"), "at most 1,000 partitions per topic", "do: create"),
    Bad("add_partitions to 5000", _step("at: 5s, do: add_partitions, cluster: primary, topic: orders, "
                                        "partitions: 5000"), "at most 1,000 partitions per topic", "do: add_partitions"),
    Bad("11,000 partitions on one cluster", BASE.replace("replication:\n", "".join(
        f"  - {{name: t{i}, cluster: dr, partitions: 1000}}\n" for i in range(11)) + "replication:\n", 1),
        "the topics of dr add up to 11,000 partitions; at most 10,000 per cluster", "name: t10"),
    Bad("a million records/s", BASE.replace("rate: 100", "rate: 1000000"),
        "at most 100,000 records/s per producer; got 1,000,000", "rate: 1000000"),
    Bad("a backlog of 20 million", BASE.replace("load:\n", "load:\n  backlog:\n    - {cluster: primary, topic: orders, "
                                                "records: 20000000}\n", 1),
        "at most 10,000,000 records per backlog; got 20,000,000", "records: 20000000"),
    Bad("51 producers", BASE.replace("  producers:\n", "  producers:\n" + "    - {cluster: primary, topics: [orders], "
                                     "rate: 1}\n" * 50, 1), "at most 50 producers in one drill; got 51", "producers:"),
    # --- distributed load (load.workers, load.remote_workers) ------------------------------
    Bad("remote load workers without a master port",
        BASE.replace("  consumers:\n", "  remote_workers: 1\n  master_bind: 0.0.0.0\n  consumers:\n", 1),
        "remote_workers need master_port", "load:"),
    Bad("fewer users than load workers", BASE.replace("  consumers:\n", "  workers: 2\n  consumers:\n", 1),
        "producers[0]: users must be at least the load's 2 worker(s)", "load:"),
    Bad("a day and an hour of load", BASE.replace("duration: 30s", "duration: 25h"),
        "at most 24h (86,400 s) of load; got 90,000 s", "duration: 25h"),
    Bad("a drain of a week", BASE + "drain_timeout: 168h\n", "at most 6h (21,600 s) for one wait; got 604,800 s",
        "drain_timeout: 168h"),
    Bad("a wait_drain of 7 hours", _step("at: 5s, do: wait_drain, timeout: 7h"), "at most 6h (21,600 s) for one wait",
        "do: wait_drain"),
    Bad("a runbook command of 7 hours", _step("at: 5s, do: runbook, command: [true], timeout: 7h"),
        "at most 6h (21,600 s) for one wait", "do: runbook"),
    Bad("a minute and a half of latency", BASE.replace("  - between: [primary, dr]\n",
                                                       "  - {between: [primary, dr], latency_ms: 90000}\n"),
        "at most 60,000 ms of latency on a link; got 90,000", "latency_ms: 90000"),
    Bad("records of 2 MiB", BASE.replace("rate: 100}", "rate: 100, record_size: 2097152}"),
        "records of up to 2,097,152 bytes, with about 1,024 bytes of key and headers, exceed the 1,048,576 bytes "
        "Kafka takes by the producer's max.request.size (settings); write at most 1,047,552 bytes", "record_size"),
    Bad("records of 2 MiB, the producer's limit raised", BASE.replace(
        "rate: 100}", "rate: 100, record_size: {uniform: [1000, 2097152]}, settings: {max.request.size: 4194304}}"),
        "exceed the 1,048,588 bytes Kafka takes by the brokers' message.max.bytes (broker_properties of primary), or "
        "topic orders's max.message.bytes", "record_size"),
    # --- broker settings the harness owns ------------------------------------------------
    Bad("listeners on every interface", _broker_props("listeners: 'PLAINTEXT://0.0.0.0:9092'"),
        "listeners is set by mirrordrill (the harness owns listeners: it binds 127.0.0.1 and the WAN proxies)",
        "listeners: 'PLAINTEXT"),
    Bad("advertised listeners", _broker_props("advertised.listeners: 'PLAINTEXT://kafka-1:9092'"),
        "advertised.listeners is set by mirrordrill", "advertised.listeners"),
    Bad("a listener's own setting", _broker_props("listener.name.local.ssl.client.auth: none"),
        "the harness owns listeners", "listener.name.local"),
    Bad("controller quorum", _broker_props("controller.quorum.voters: '1@127.0.0.1:9093'"),
        "controller.quorum.voters is set by mirrordrill (the harness owns each broker's KRaft identity",
        "controller.quorum.voters"),
    Bad("process roles", _broker_props("process.roles: broker"), "process.roles is set by mirrordrill", "process.roles"),
    Bad("node id", _broker_props("node.id: 7"), "node.id is set by mirrordrill", "node.id"),
    Bad("broker id", _broker_props("broker.id: 7"), "broker.id is set by mirrordrill", "broker.id"),
    Bad("data folder", _broker_props("log.dirs: /var/lib/kafka"), "the harness owns each broker's data folder",
        "log.dirs"),
    Bad("metadata folder", _broker_props("metadata.log.dir: /tmp/meta"), "metadata.log.dir is set by mirrordrill",
        "metadata.log.dir"),
    Bad("inter-broker protocol", _broker_props("security.inter.broker.protocol: SSL"),
        "security.inter.broker.protocol is set by mirrordrill", "security.inter.broker"),
    Bad("TLS on a secure cluster", BASE.replace("  primary: {brokers: 1}\n", "  primary:\n    brokers: 1\n"
                                                "    security: {protocol: SSL}\n"
                                                "    broker_properties: {ssl.client.auth: none}\n"),
        "the harness owns TLS and SASL on a cluster with security", "broker_properties: {ssl.client.auth"),
    Bad("a non-loopback address in a value", _broker_props("sasl.oauthbearer.jwks.endpoint.url: "
                                                           "'https://idp.example.com/keys'"),
        "names idp.example.com, which is not loopback", "sasl.oauthbearer"),
    Bad("every interface in a value", _broker_props("some.bind.address: '0.0.0.0'"), "names 0.0.0.0, which is not",
        "some.bind.address"),
    Bad("an empty host in a value", _broker_props("some.endpoint: 'PLAINTEXT://:9092'"),
        "names (every interface), which is not loopback", "some.endpoint"),
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
    # --- step targets that are not there when the step runs (issue 40) ------------------
    Bad("leader of a partition the topic lacks", _step("at: 5s, do: kill_broker, cluster: primary, "
                                                       "leader_of: {topic: orders, partition: 3}"),
        "has partitions 0..2 on primary by then, so there is no partition 3", "leader_of: {topic: orders, partition: 3"),
    Bad("leader of a partition a created topic lacks",
        BASE + "timeline:\n  - {at: 5s, do: create_topic, cluster: primary, topic: audit, partitions: 2}\n"
               "  - {at: 6s, do: kill_broker, cluster: primary, leader_of: {topic: audit, partition: 2}}\n",
        "topic audit has partitions 0..1", "leader_of: {topic: audit"),
    Bad("pause a killed broker", BASE.replace("primary: {brokers: 1}", "primary: {brokers: 3}")
        + "timeline:\n  - {at: 5s, do: kill_broker, cluster: primary, broker: 2}\n"
          "  - {at: 9s, do: pause_broker, cluster: primary, broker: 2}\n",
        "broker 2 of primary is already down: timeline[0] (kill_broker primary/2 at 5s) took it down", "at: 9s"),
    Bad("broker step on a killed cluster", BASE + "timeline:\n  - {at: 5s, do: kill_cluster, cluster: dr}\n"
                                                  "  - {at: 9s, do: stop_broker, cluster: dr, broker: 1}\n",
        "cluster dr is down: timeline[0] (kill_cluster dr at 5s) took it down", "at: 9s"),
    Bad("topic change on a stopped cluster", BASE + "timeline:\n  - {at: 5s, do: stop_cluster, cluster: primary}\n"
                                                    "  - {at: 9s, do: add_partitions, cluster: primary, topic: orders, "
                                                    "partitions: 6}\n",
        "add a start_cluster (or restart_cluster) step for primary", "at: 9s"),
    Bad("failover onto a killed cluster", BASE + "timeline:\n  - {at: 5s, do: kill_cluster, cluster: dr}\n"
                                                 "  - {at: 9s, do: unplanned_failover, from: primary, to: dr}\n",
        "cannot fail over onto dr: cluster dr is down: timeline[0] (kill_cluster dr at 5s)", "at: 9s"),
    Bad("planned failover from a killed cluster", BASE + "timeline:\n  - {at: 5s, do: kill_cluster, cluster: primary}\n"
                                                         "  - {at: 9s, do: planned_failover, from: primary, to: dr}\n",
        "make it an unplanned_failover", "at: 9s"),
    Bad("failback from a killed cluster", BASE + FAILOVER + "  - {at: 9s, do: kill_cluster, cluster: dr}\n"
                                                            "  - {at: 12s, do: failback, from: dr, to: primary}\n",
        "failback copies dr back into primary, but cluster dr is down: timeline[1]", "at: 12s"),
    Bad("kill a cluster twice", BASE + FAILOVER + "  - {at: 9s, do: kill_cluster, cluster: primary}\n",
        "cluster primary is already down: timeline[0] (unplanned_failover primary->dr at 5s)", "at: 9s"),
    # --- secret references resolved before anything starts (issue 40) -------------------
    Bad("unset env reference", _secured('"${env:MIRRORDRILL_TEST_UNSET_PASSWORD}"'),
        "environment variable MIRRORDRILL_TEST_UNSET_PASSWORD is not set", "password: \"${env"),
    Bad("unset env reference at run", _secured('"${env:MIRRORDRILL_TEST_UNSET_PASSWORD}"'),
        "environment variable MIRRORDRILL_TEST_UNSET_PASSWORD is not set", "password: \"${env", command="run"),
    Bad("missing file reference", _secured('"${file:no-such-creds.properties:password}"'),
        "no-such-creds.properties does not exist", "password: \"${file"),
    # --- the command replicator's program, and shell syntax it would not get (issue 40) ---
    Bad("command program not on PATH", _command("no-such-replicator-xyz --from {source_bootstrap}"),
        "program 'no-such-replicator-xyz' is not on PATH", "command: no-such"),
    Bad("command program path missing", _command("bin/replicate --from {source_bootstrap}"),
        "program bin/replicate does not exist", "command: bin/"),
    Bad("command with a pipe", _command("sh run.sh {source_bootstrap} | tee log"),
        "'|' (a pipe) is shell syntax, but the command runs without a shell", "command: sh run.sh"),
    Bad("command with a redirect", _command("sh run.sh {source_bootstrap} > repl.log"),
        "'>' (a redirect) is shell syntax", "command: sh run.sh"),
    Bad("command with &&", _command("cd /opt/repl && sh run.sh {source_bootstrap}"),
        "'&' (a background job or &&)", "command: cd"),
    Bad("command with command substitution", _command('sh run.sh --id "$(hostname)" {source_bootstrap}'),
        "'$(' (command substitution)", "command: sh run.sh"),
    Bad("command with a variable", _command("sh run.sh --home $REPL_HOME {source_bootstrap}"),
        "'$REPL_HOME' (a variable expansion)", "command: sh run.sh"),
    Bad("command with a glob", _command("java -cp lib/*.jar Repl {source_bootstrap}"),
        "'*' (a glob)", "command: java"),
    Bad("command with backticks", _command("sh run.sh `hostname` {source_bootstrap}"),
        "'`' (command substitution)", "command: sh run.sh"),
    # --- a topology the replicator would loop on forever (issue 40) ---------------------
    Bad("MM2 identity policy on a cycle", _identity_cycle("mirrormaker2"),
        "MirrorMaker 2 copies topic 'orders' round primary->dr->primary under the same name forever",
        "- {source: dr, target: primary}"),
    Bad("MM2 identity policy on a cycle, by --replicator", _identity_cycle("pyspark"),
        "use policy: default (MM2 never sends primary.orders back to primary)", "- {source: dr, target: primary}",
        argv=("--replicator", "mirrormaker2")),
    Bad("MM2 identity policy on a three-cluster cycle",
        _identity_cycle("mirrormaker2").replace("  dr: {brokers: 1}\n", "  dr: {brokers: 1}\n  west: {brokers: 1}\n")
        .replace("    - {source: dr, target: primary}\n", "    - {source: dr, target: west}\n"
                                                          "    - {source: west, target: primary}\n")
        .replace("links:\n  - between: [primary, dr]\n", ""),
        "round primary->dr->west->primary", "- {source: west, target: primary}"),
    Bad("bundled replicator on an identity cycle without its provenance header",
        _identity_cycle("pyspark").replace("{source: dr, target: primary}",
                                           "{source: dr, target: primary, settings: {mirrordrill.provenance.header: false}}"),
        "only the provenance header stops it coming back under the same name", "settings: {mirrordrill.provenance"),
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
    ("MM2 nodes with the pyspark replicator",
     BASE.replace("replication:\n", "replication:\n  mirrormaker2: {nodes: 2}\n", 1), (),
     "nodes applies to MirrorMaker 2 only (run --replicator mirrormaker2); pyspark ignores it"),
    ("flow settings with the command replicator", _flow_setting("tasks.max: 2").replace("replication:\n", COMMAND, 1),
     (), "never reach a command replicator"),
    ("MirrorMaker 1 streams with the bundled replicator",
     BASE.replace("replication:\n", "replication:\n  mirrormaker1: {streams: 4}\n", 1), (),
     "streams applies to MirrorMaker 1 only (run --replicator mirrormaker1); pyspark ignores it"),
    ("an MM2 setting with MirrorMaker 1", _flow_setting("tasks.max: 2").replace("replication:\n", MM1, 1), (),
     "MirrorMaker 1 ignores 'tasks.max': a flow's settings reach it only as consumer.* and producer.*"),
    ("shell with the bundled replicator", BASE.replace("replication:\n", "replication:\n  shell: true\n", 1), (),
     "shell applies to the command replicator only; pyspark ignores it"),
    ("identity policy on a cycle with the command replicator", _identity_cycle("command").replace(
        "  policy: identity\n", "  policy: identity\n  command: sh my-replicator.sh --from {source_bootstrap}\n"), (),
     "so topic 'orders' goes round primary->dr->primary forever unless it marks records itself"),
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
    from mirrordrill.harness.drill.validate import load_scenario
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
