"""A user's own replicator, started through the command adapter, against real clusters.

The "user replicator" is ``fixtures/pipe_replicator.py`` (confluent-kafka consumer -> producer),
placed at the target like MM2: it reads east through the WAN proxy and writes west locally.
"""

from __future__ import annotations

import signal
import sys
import time
from pathlib import Path

import pytest
from confluent_kafka.admin import NewTopic

from mirrordrill.harness.drill.replicators import FlowSpec, ReplicationSetup, make_replicator
from mirrordrill.harness.drill.replicators.command import CommandReplicator
from tests.integration.kafka_helpers import produce_values, read_values, unique_topic

pytestmark = pytest.mark.integration

PIPE = Path(__file__).parent / "fixtures" / "pipe_replicator.py"
COMMAND = [
    sys.executable, str(PIPE), "--source-bootstrap", "{source_bootstrap}", "--target-bootstrap", "{target_bootstrap}",
    "--topics-regex", "{topics_regex}", "--topics-exclude-regex", "{topics_exclude_regex}",
    "--remote-prefix", "{remote_prefix}", "--group", "pipe-{source}-{target}", "--workdir", "{workdir}",
]


def remote_values(cluster, topic: str, partitions: int) -> list[bytes]:
    meta = cluster.admin().list_topics(topic, timeout=10).topics.get(topic)
    if meta is None or meta.error is not None:
        return []
    return read_values(cluster.bootstrap, topic, partitions, timeout_s=10)


def wait_until(check, timeout_s: float, what: str):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.5)
    pytest.fail(f"timed out after {timeout_s:.0f}s waiting for {what}")


@pytest.fixture(scope="module")
def setup(wan_env, tmp_path_factory) -> ReplicationSetup:
    wan_env.link("east", "west").heal()
    return ReplicationSetup(wan_env, [FlowSpec("east", "west", topics=["cmdt-.*"])],
                            workdir=tmp_path_factory.mktemp("command"))


@pytest.fixture(scope="module")
def pipe(setup):
    replicator = make_replicator("command", setup, command=COMMAND, ready_pattern=r"pipe replicator: subscribed")
    replicator.start()
    try:
        yield replicator
    finally:
        replicator.stop()


@pytest.fixture
def topic(setup):
    name = unique_topic("cmdt")
    setup.env.cluster("east").create_topics([NewTopic(name, 2, 1)])
    return name


def test_placeholders_are_filled_from_where_the_replicator_runs(pipe: CommandReplicator, setup):
    east, west = setup.env.cluster("east"), setup.env.cluster("west")
    proc = pipe.process_for("east", "west")
    log = proc.log_path.read_text()
    # Placed at the target: east through its WAN proxy as seen from west, west locally.
    assert f"source={east.wan_bootstrap('west')} target={west.bootstrap}" in log
    assert "topics='cmdt-.*' prefix='east.'" in log
    assert f"workdir={proc.cwd}" in log and Path(proc.cwd).is_relative_to(setup.workdir)
    assert pipe.describe()["processes"][0]["argv"][-1] == str(proc.cwd)


def test_replicates_records_into_prefixed_topics(pipe: CommandReplicator, setup, topic):
    east, west = setup.env.cluster("east"), setup.env.cluster("west")
    values = [f"v-{i}".encode() for i in range(100)]
    assert produce_values(east.bootstrap, topic, values) == [None] * 100
    remote = pipe.remote_topic("east", topic)
    assert remote == f"east.{topic}"
    wait_until(lambda: sorted(remote_values(west, remote, 2)) == sorted(values), 60, f"{remote} complete")
    # the lag is the group's: the replicator commits a batch after the target acknowledged it, so
    # the last copies can show on the target a moment before the commit that ends the lag
    wait_until(lambda: [r.lag_records for r in pipe.metrics().for_flow("east->west") if r.topic == topic] == [0, 0],
               30, "the lag of both partitions at 0")


def test_pause_freezes_it_and_resume_continues(pipe: CommandReplicator, setup, topic):
    east, west = setup.env.cluster("east"), setup.env.cluster("west")
    remote = pipe.remote_topic("east", topic)
    produce_values(east.bootstrap, topic, [b"before"])
    wait_until(lambda: remote_values(west, remote, 2) == [b"before"], 60, "the first record")
    pipe.pause()
    try:
        assert pipe.running and pipe.paused
        produce_values(east.bootstrap, topic, [b"during"])
        time.sleep(4)
        assert remote_values(west, remote, 2) == [b"before"], "a frozen process copied a record"
    finally:
        pipe.resume()
    wait_until(lambda: sorted(remote_values(west, remote, 2)) == [b"before", b"during"], 60, "the record after resume")


def test_kill_and_restart_loses_nothing(pipe: CommandReplicator, setup, topic):
    east, west = setup.env.cluster("east"), setup.env.cluster("west")
    remote = pipe.remote_topic("east", topic)
    first = [f"a-{i}".encode() for i in range(50)]
    produce_values(east.bootstrap, topic, first)
    wait_until(lambda: len(remote_values(west, remote, 2)) >= 50, 60, "the first batch")
    pipe.kill()
    proc = pipe.process_for("east", "west")
    assert not pipe.running and proc.returncode == -signal.SIGKILL
    second = [f"b-{i}".encode() for i in range(50)]
    produce_values(east.bootstrap, topic, second)  # written while the replicator is dead
    pipe.start()
    assert pipe.running
    wait_until(lambda: set(first + second) <= set(remote_values(west, remote, 2)), 90, "every record after restart")
    assert set(remote_values(west, remote, 2)) == set(first + second)


def test_sigterm_stops_it_cleanly(pipe: CommandReplicator):
    proc = pipe.process_for("east", "west")
    started = time.monotonic()
    pipe.stop(grace_s=20)
    assert not pipe.running
    assert proc.returncode == 0, "exited by itself on SIGTERM, not killed"
    assert time.monotonic() - started < 20
    assert "stopped on SIGTERM after committing" in proc.log_tail(5)


def test_sigkill_follows_an_ignored_sigterm_after_the_grace_period(setup, tmp_path):
    stubborn = [sys.executable, "-c", "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
                "print('ignoring SIGTERM in', '{workdir}', flush=True); time.sleep(600)"]
    own = ReplicationSetup(setup.env, setup.flows, workdir=tmp_path)
    replicator = make_replicator("command", own, command=stubborn, ready_pattern="ignoring SIGTERM")
    replicator.start()
    try:
        proc = replicator.process_for("east", "west")
        started = time.monotonic()
        replicator.stop(grace_s=2)
        elapsed = time.monotonic() - started
        assert not replicator.running and proc.returncode == -signal.SIGKILL
        assert 2 <= elapsed < 15
    finally:
        replicator.kill()


def test_a_shell_command_pipes_and_gets_each_placeholder_as_one_word(setup, tmp_path):
    # replication.shell: true -- a pipe the template asks for, and a regex placeholder holding '*', '|'
    # and spaces that the shell must neither split, expand nor pipe (it is filled in quoted).
    command = (f"exec {sys.executable} {PIPE} --source-bootstrap {{source_bootstrap}} --target-bootstrap "
               "{target_bootstrap} --topics-regex {topics_regex} --topics-exclude-regex {topics_exclude_regex} "
               "--remote-prefix {remote_prefix} --group shell-{source}-{target} --workdir {workdir} "
               "2>&1 | tee shell.log")
    own = ReplicationSetup(setup.env, [FlowSpec("east", "west", topics=["cmds-.*", "no such topic"])],
                           workdir=tmp_path)
    replicator = make_replicator("command", own, command=command, shell=True,
                                 ready_pattern=r"pipe replicator: subscribed")
    east, west = setup.env.cluster("east"), setup.env.cluster("west")
    name = unique_topic("cmds")
    east.create_topics([NewTopic(name, 2, 1)])
    replicator.start()
    try:
        proc = replicator.process_for("east", "west")
        assert proc.argv[:2] == ["/bin/sh", "-c"]
        values = [f"s-{i}".encode() for i in range(20)]
        assert produce_values(east.bootstrap, name, values) == [None] * 20
        wait_until(lambda: sorted(remote_values(west, f"east.{name}", 2)) == sorted(values), 60, "the copies")
        assert "topics='cmds-.*|no such topic'" in (Path(proc.cwd) / "shell.log").read_text()
    finally:
        replicator.stop()
    assert not replicator.running
