"""The shell recipes of the README and the manual, run as a new user types them (tests/doc_recipes.py
says which test runs which block): bash, the ``./mirrordrill`` wrapper, a scratch copy of the checkout."""

from __future__ import annotations

import glob
import json
import os
import re
import shutil
import signal
import subprocess
from pathlib import Path

import pytest
from confluent_kafka.admin import NewTopic

from tests.doc_recipes import REPO, script, words
from tests.integration.kafka_helpers import produce_values, unique_topic, values_in, wait_for
from tests.integration.recipe_shell import bash, fresh_home, recipe_env, scratch_checkout

pytestmark = pytest.mark.integration

QUICK = "tests/integration/test_doc_recipes.py::test_the_quick_recipes_as_typed"
FIRST_DRILL = "tests/integration/test_doc_recipes.py::test_the_first_drill_as_typed"
OWN_FILE = "tests/integration/test_doc_recipes.py::test_the_first_drill_tutorials_own_file_as_typed"
OWN_CLUSTERS = "tests/integration/test_doc_recipes.py::test_the_own_clusters_tutorial_as_typed"
REPLICATE = "tests/integration/test_doc_recipes.py::test_replicate_with_mm2_properties_as_typed"


def yaml_block_after(page: str, words: str) -> str:
    """The first ```yaml block of ``page`` after ``words``: the file a recipe on that page names."""
    text = (REPO / page).read_text()
    return re.search(r"```yaml\n(.*?)```", text[text.index(words):], re.S).group(1)


@pytest.fixture
def checkout(tmp_path) -> Path:
    return scratch_checkout(tmp_path / "checkout")


def test_the_quick_recipes_as_typed(checkout):
    shipped = sorted(p.name for p in (REPO / "scenarios").glob("*.yaml"))
    # the guide's minimal drill, as the guide's `my-drill.yaml`
    (checkout / "my-drill.yaml").write_text(yaml_block_after("docs/drill-files.md", "## 1. A minimal drill"))
    done = bash(script("drill-file-commands", QUICK), checkout, 120)
    assert done.returncode == 0, done.stdout
    assert done.stdout.count("my-drill.yaml: ok (") == 3, done.stdout

    done = bash(script("ci-lint-and-drills", QUICK), checkout, 180)
    assert done.returncode == 0, done.stdout
    verdict = json.loads((checkout / "verdict.json").read_text())
    assert verdict["ok"] and sorted(Path(f["file"]).name for f in verdict["files"]) == shipped
    assert all(f["problems"] == [] for f in verdict["files"])

    done = bash(script("mirrormaker2", QUICK), checkout, 60)
    assert done.returncode == 0 and "scenarios/quickstart.yaml: ok (quickstart" in done.stdout, done.stdout

    # what --drill-replicator mirrormaker2 would run: one test per shipped drill (each a full drill run)
    done = bash(script("mirrormaker2-drill-tests", QUICK), checkout, 120)
    assert done.returncode == 0, done.stdout
    assert sorted(re.findall(r"test_drills\.py::test_drill\[([\w-]+)\]", done.stdout)) == [s[:-5] for s in shipped]

    # your own replicator: validate checks that the template's program exists, and /opt/myrepl is not here
    drill = yaml_block_after("docs/tutorials/first-drill.md", "copy it to `my-drill.yaml`")
    fragment = yaml_block_after("docs/tutorials/own-replicator.md", "## 1. A command line")
    command = re.search(r'command: "(.*)"', fragment).group(1)
    (checkout / "my-drill.yaml").write_text(drill.replace("  replicator: pyspark\n", f'  replicator: command\n  command: "{command}"\n'))
    done = bash(script("own-replicator", QUICK), checkout, 60)
    assert done.returncode == 2 and "/opt/myrepl/bin/replicate" in done.stdout, done.stdout


def test_the_first_drill_as_typed(checkout, tmp_path):
    """On a fresh cache, as on a new machine: the first `run` installs what it runs (from the download caches).

    Not serial: the README's command runs the full profile, whose latency limit (p99 <= 19 s over a 10 s
    blackhole) is twice what the drill gives on a quiet machine; the wheel test runs the same drill at the
    short profile's tighter one (7.4 s over 5 s) in the parallel part too. Its installs fill a core for a
    minute, which no drill may have beside it."""
    env = fresh_home(tmp_path)
    validated = bash(script("first-drill-validate", FIRST_DRILL), checkout, 60, env)
    assert validated.returncode == 0 and "scenarios/quickstart.yaml: ok (quickstart" in validated.stdout, validated.stdout

    # the README's, the getting-started page's and the tutorial's command: one line, run once
    run = script("first-drill-run", FIRST_DRILL)
    assert words(script("quickstart", FIRST_DRILL)) == words(script("getting-started", FIRST_DRILL)) == words(run)
    ran = bash(run, checkout, 900, env)
    assert ran.returncode == 0, ran.stdout[-4000:]
    # what "What the quickstart prints" shows: the verdict, the flow's row, each expectation
    assert re.search(r"^drill quickstart with pyspark: PASSED \(\d+s\)$", ran.stdout, re.M), ran.stdout[-4000:]
    assert re.search(r"^  primary->dr +\d+ +\d+ +0 +0 ", ran.stdout, re.M), ran.stdout[-4000:]
    assert "[ok] latency_ms.p99[primary->dr] <= " in ran.stdout
    installed = Path(env["HOME"]) / ".cache" / "mirrordrill"
    assert (installed / "jvm").is_dir() and (installed / "toxiproxy").is_dir(), sorted(installed.iterdir())
    (folder,) = glob.glob(str(checkout / "runs" / "quickstart-pyspark-*"))
    assert json.loads((Path(folder) / "summary.json").read_text())["passed"] is True

    reported = bash(script("first-drill-report", FIRST_DRILL), checkout, 300, env)
    assert reported.returncode == 0, reported.stdout
    html = Path(folder) / "report" / "index.html"
    assert html.stat().st_size > 0 and str(html.relative_to(checkout)) in reported.stdout, reported.stdout


def test_the_first_drill_tutorials_own_file_as_typed(checkout):
    """The tutorial's smallest drill, as its reader copies it. Not serial and not on a fresh cache: its latency
    limit (20 s over a 5 s blackhole) does not need a quiet machine, and the install is the first run's test."""
    (checkout / "my-drill.yaml").write_text(yaml_block_after("docs/tutorials/first-drill.md", "copy it to `my-drill.yaml`"))
    own = bash(script("first-drill-own-file", OWN_FILE), checkout, 400)
    assert own.returncode == 0 and "my-drill.yaml: ok (my-first-drill" in own.stdout, own.stdout[-4000:]
    assert re.search(r"^drill my-first-drill with pyspark: PASSED", own.stdout, re.M), own.stdout[-4000:]


def test_the_own_clusters_tutorial_as_typed(checkout):
    done = bash(script("own-clusters", OWN_CLUSTERS), checkout, 900)
    out = done.stdout
    # up keeps its lab's folder (data and logs) under /tmp/mirrordrill, as it tells the person; not a test's
    lab = re.search(r"manifest: (/\S+)/manifest\.json$", out, re.M)
    if lab:
        shutil.rmtree(lab.group(1), ignore_errors=True)
    assert done.returncode == 0, out[-6000:]
    assert "connection file:" in out and "bootstrap_servers:" in out, out[-6000:]
    assert re.search(r"^drill team-drill with pyspark: PASSED", out, re.M), out[-6000:]
    # the drill's own names are gone again: cleanup finds nothing under the prefix on either cluster
    for cluster in ("md-t-primary", "md-t-dr"):
        assert re.search(rf"^{cluster} \(.*\): would delete 0 topic\(s\) \[\] and 0 group\(s\) \[\]$", out, re.M), \
            out[-3000:]
    summary = json.loads(next((checkout / "runs").glob("team-drill-pyspark-*/summary.json")).read_text())
    assert summary["passed"] and summary["failovers"][0]["skipped"] == 0


def test_replicate_with_mm2_properties_as_typed(checkout, wan_env):
    """The bundled replicator on its own, from a MirrorMaker 2 dedicated-mode file, until Ctrl-C."""
    east, west = wan_env.cluster("east"), wan_env.cluster("west")
    topic = unique_topic("recipe-replicate")
    (checkout / "connect-mirror-maker.properties").write_text(
        f"clusters = east, west\neast.bootstrap.servers = {east.bootstrap}\nwest.bootstrap.servers = {west.bootstrap}\n"
        f"east->west.enabled = true\neast->west.topics = {topic}\n")
    east.create_topics([NewTopic(topic, 1, 1)])
    assert produce_values(east.bootstrap, topic, [b"one", b"two", b"three"]) == [None] * 3
    # its own session: Ctrl-C reaches the wrapper's Python as a terminal's would, and no one else
    proc = subprocess.Popen(["bash", "-e", "-c", script("replicate-mm2-properties", REPLICATE)], cwd=checkout,
                            env=recipe_env(), text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)
    try:
        wait_for(lambda: values_in(west, f"east.{topic}") == [b"one", b"two", b"three"] or proc.poll() is not None,
                 240, "the records copied to west")
        assert proc.poll() is None, proc.stdout.read()
        os.killpg(proc.pid, signal.SIGINT)
        assert proc.wait(120) in (0, 130), proc.stdout.read()
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
