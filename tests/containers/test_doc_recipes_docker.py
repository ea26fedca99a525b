"""The docker pages' recipes as a new user types them, on a fresh cache: an empty HOME (so no Compose
plugin and an empty MIRRORDRILL_HOME) that shares only the download caches and the Python environment.
Skipped, with the reason, where no engine can be found or started (conftest.py's ``docker_engine``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.doc_recipes import commands, script, words
from tests.integration.recipe_shell import bash, fresh_home, scratch_checkout

pytestmark = pytest.mark.integration

TEST = "tests/containers/test_doc_recipes_docker.py::test_the_docker_recipes_on_a_fresh_cache"


# The suite's 900 s per test is shorter than this test's own hang guards: on a machine whose Go
# caches are empty, the fix step compiles the Compose v2 plugin from source (the test took 23 minutes beside
# the rest of the suite on 2 cores, where warm caches take about 4).
@pytest.mark.timeout(3600)
def test_the_docker_recipes_on_a_fresh_cache(docker_engine, tmp_path):
    checkout = scratch_checkout(tmp_path / "checkout")
    env = fresh_home(tmp_path)

    doctor, fix, build, only = commands("containers-docker", TEST)
    before = bash(doctor, checkout, 600, env)  # a hang guard: on a fresh cache doctor unpacks what it checks
    assert before.returncode != 0 and "docker compose v2" in before.stdout, before.stdout  # nothing built yet
    fixed = bash(fix, checkout, 1800, env)
    assert fixed.returncode == 0, fixed.stdout[-4000:]
    assert (Path(env["HOME"]) / ".docker" / "cli-plugins" / "docker-compose").exists()
    built = bash(build, checkout, 600, env)
    assert built.returncode == 0 and "docker compose v2 plugin:" in built.stdout, built.stdout[-4000:]
    assert "up to date" in built.stdout and "built in" not in built.stdout, built.stdout  # --fix built them all
    broker = bash(only, checkout, 300, env)
    assert broker.returncode == 0 and "mirrordrill/broker" in broker.stdout, broker.stdout
    assert "docker compose v2 plugin" not in broker.stdout

    # the backend page's first step is the same command (its own comment)
    assert words(script("docker-backend", TEST)) == words(build)

    lab = script("chaos-lab", TEST)
    down = commands("chaos-lab", TEST)[-1]
    try:
        done = bash(lab, checkout, 900, env)
    finally:
        bash(down, checkout, 300, env)
    out = done.stdout
    assert done.returncode == 0, out[-6000:]
    assert "\nhello\n" in out and "Processed a total of 1 messages" in out, out[-6000:]
    assert '"name":"latency"' in out.replace(" ", ""), out[-3000:]
