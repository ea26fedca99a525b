"""The docker backend on a real engine: broker faults through the engine, and the quickstart drill
in a short form. Skipped, with the reason, where no engine can be found or started."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import yaml

from mirrordrill.harness.drill.engine import Drill
from mirrordrill.harness.drill.validate import parse_scenario
from mirrordrill.harness.lab.brokers.cluster import ClusterSpec, round_trip
from mirrordrill.harness.lab.compose.backend import DockerBackend
from mirrordrill.harness.lab.compose.spec import DRILL_LABEL
from mirrordrill.harness.lab.environment import Environment, TopologySpec

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def engine():
    from mirrordrill.harness.lab.docker.engine import EngineError, ensure_engine
    try:
        eng = ensure_engine(log=print)
    except EngineError as e:
        pytest.skip(f"no Docker engine: {e}")
    return eng


def _left(engine, project: str) -> dict[str, list[str]]:
    label = f"label={DRILL_LABEL}={project}"
    out = {"containers": engine.run(["ps", "-aq", "--filter", label]).stdout.split()}
    for kind in ("network", "volume"):
        out[kind] = engine.run([kind, "ls", "-q", "--filter", label]).stdout.split()
    return out


def test_broker_faults_go_through_the_engine_and_nothing_is_left(engine, artifacts, tmp_path):
    backend = DockerBackend("faults", log=print)
    spec = TopologySpec((ClusterSpec("east"), ClusterSpec("west")))
    env = Environment(spec, tmp_path / "env", artifacts, log=print, backend=backend)
    try:
        # generous: on the shared 2-core machine (load 50-60) a broker took minutes to start either way
        env.start(timeout_s=480)
        compose = yaml.safe_load((tmp_path / "env" / "compose.yaml").read_text())
        assert set(compose["services"]) == {"toxiproxy", "broker-east-1", "broker-west-1"}
        east = env.cluster("east")
        broker = east.brokers[0]
        round_trip(env.cluster("west"), from_cluster="east")  # through the WAN proxy, in a container
        container = backend.run.project.container_name("broker-east-1")

        broker.pause()
        process = broker.process
        state = backend.run.state(container)
        # frozen by the cgroup freezer, or (when the freezer gave up under load) its program SIGSTOPped
        assert state["Paused"] is True if process._frozen_by == "pause" else state["Status"] == "running"
        assert process.paused and process._frozen_by in ("pause", "SIGSTOP")
        print(f"paused by {process._frozen_by}")
        broker.resume()
        assert backend.run.state(container)["Paused"] is False and not process.paused
        broker.kill()
        assert not broker.running and backend.run.state(container)["ExitCode"] == 137  # SIGKILL
        east.start()
        east.wait_ready(480)
        broker.stop()
        assert not broker.running
        broker.wipe()  # stopped, data folder cleared, formatted afresh: an empty broker
        east.start()
        east.wait_ready(480)
        assert "started" in broker.log_path.read_text().lower()  # the log is in the broker's folder
    finally:
        env.stop()
        left = _left(engine, backend.project)
    assert left == {"containers": [], "network": [], "volume": []}
    assert (tmp_path / "env" / "toxiproxy.log").exists()


SHORT_QUICKSTART_CHANGES = {"duration": "25s", "drain_timeout": "60s",
                            "timeline": [{"at": "8s", "do": "blackhole", "link": ["primary", "dr"]},
                                         {"at": "13s", "do": "heal", "link": ["primary", "dr"]}]}


def test_the_quickstart_drill_passes_on_containers(engine, artifacts, tmp_path):
    drill = yaml.safe_load((REPO / "scenarios" / "quickstart.yaml").read_text())
    drill.update(SHORT_QUICKSTART_CHANGES)
    drill["load"]["producers"][0]["rate"] = 100
    text = yaml.safe_dump(drill, sort_keys=False)
    path = tmp_path / "quickstart-short.yaml"
    path.write_text(text)
    run = tmp_path / "run"
    d = Drill(parse_scenario(text, str(path)), path, run, artifacts=artifacts, backend="docker")
    result = d.run()
    summary = json.loads((run / "summary.json").read_text())
    env = summary["environment"]
    assert env["backend"] == "docker", env
    assert result.summary.passed, [e for e in summary["expectations"] if not e["passed"]] or summary.get("error")
    assert summary["flows"][0]["acked"] > 0 and summary["flows"][0]["lost"] == 0
    assert Path(env["compose_file"]).exists()
    for log in summary["logs"]["brokers"].values():
        assert Path(log).stat().st_size > 0
    assert _left(engine, env["compose_project"]) == {"containers": [], "network": [], "volume": []}
    if engine.compose_version() is not None:  # without Compose v2 the backend made them with docker run
        # the file a person would start by hand is a valid Compose file for the engine's Compose
        subprocess.run([engine.cli, "compose", "-f", env["compose_file"], "config", "-q"], check=True)
