"""mirrordrill as a team installs it: ``python -m build`` makes the sdist and the wheel from that sdist,
the wheel goes into a fresh venv in a scratch folder outside the checkout, and from there ``init``, the
steps of the CI jobs it writes (validate, ``setup``, ``pytest`` on the team's drills), the shipped
quickstart by name and ``pytest --mirrordrill`` run as a user would run them.
The venv shares pip's cache and MIRRORDRILL_HOME (jars, Toxiproxy, Allure) with this session, so a warm
machine downloads nothing.

The plugin's behaviour in a team's repository is asserted on these runs of the installed tool, found through
the wheel's entry point as a team finds it: the CI jobs' ``pytest`` runs init's starter drill (its run folder
under ``runs/``, JUnit XML, Allure attachments); a second session, with no drill to run, gets a broken drill
file (it fails with its line), a YAML file that is no drill (not collected) and a ``mirrordrill_lab`` test."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from tests.conftest import processes_under
from tests.integration.test_replicator_plugin_package import adapter_package

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]

# The lab test's drill file (kept outside drills/: only its clusters start). With rate -5 instead, the broken
# drill file under drills/, whose test fails with the file, the line and the field's problem.
LAB_DRILL = """\
format: 1
name: plugin-passes
description: primary -> dr, a light load for 6 s, no fault; nothing may be lost.
clusters:
  primary: {brokers: 1}
  dr: {brokers: 1}
topics:
  - {name: orders, cluster: primary, partitions: 2}
replication:
  flows: [{source: primary, target: dr, topics: [orders]}]
load:
  producers:
    - {name: orders, cluster: primary, topics: [orders], rate: 50, record_size: {fixed: 200}}
duration: 6s
expectations:
  lost: 0
"""

# A team's own check beside its drills, through the lab fixture. Its outcome is asserted: the pytest run's exit
# status is 1 for the broken file alone, so a failing lab test would otherwise go unseen.
LAB_TEST = """\
import pytest
from confluent_kafka import KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic


def test_a_record_goes_through_the_lab_and_the_link_can_be_cut(mirrordrill_lab):
    lab = mirrordrill_lab("lab/passes.yaml")
    # the lab's brokers create no topic on first use (as a replicator must create its own)
    admin = AdminClient(lab.client_config("primary"))  # kept: a client gone before its result cancels the request
    admin.create_topics([NewTopic("hello", 1, 1)])["hello"].result(30)
    producer = Producer(lab.client_config("primary"))
    producer.produce("hello", b"x")
    assert producer.flush(30) == 0
    assert "hello" in AdminClient(lab.client_config("primary", from_cluster="dr")).list_topics(timeout=10).topics
    lab.link("primary", "dr").blackhole()
    with pytest.raises(KafkaException):  # through the cut link, metadata never comes back
        AdminClient(lab.client_config("primary", from_cluster="dr")).list_topics(timeout=3)
    lab.link("primary", "dr").heal()
"""
LAB_CASE = "test_a_record_goes_through_the_lab_and_the_link_can_be_cut"


@dataclass(frozen=True)
class Installed:
    """A venv with the built wheel (and a team's adapter package) installed, and a team's folder beside it."""

    root: Path  # the scratch folder: venv/, dist/, team/
    venv: Path
    team: Path
    wheel: Path
    run: Callable[..., subprocess.CompletedProcess]


def _site_packages(venv: Path) -> Path:
    return next((venv / "lib").glob("python3*/site-packages"))


# The Spark driver's class-data archive the drills made for this venv's Python (one per interpreter path,
# about 170 MB): no later session can map it, so it is removed with the venv.
ARCHIVE_OF_THIS_VENV = ("from mirrordrill.primitives.bootstrap import Bootstrap; "
                        "from mirrordrill.harness.drill.replicators.pyspark_launch import cds_archive_path, replicator_jars; "
                        "print(cds_archive_path(Bootstrap().java(), replicator_jars(None)))")


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Iterator[Installed]:
    root = tmp_path_factory.mktemp("wheel")
    assert not root.resolve().is_relative_to(REPO), "the scratch folder must lie outside the checkout"
    dist, venv, team = root / "dist", root / "venv", root / "team"
    team.mkdir()
    # An sdist, then the wheel built from it: the sdist must carry everything the wheel needs.
    subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(dist), str(REPO)],
                   check=True, timeout=300, stdout=subprocess.DEVNULL)
    wheel = next(dist.glob("mirrordrill-*.whl"))
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    # The user's shell: the venv first on PATH, nothing of the checkout (the wrapper's PYTHONPATH names it, and
    # pip would take the checkout's mirrordrill.egg-info there for mirrordrill already installed).
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    # A team's replicator kind, installed beside mirrordrill (only validated here: its command never runs).
    adapter = adapter_package(root / "team-pipe", ["team-pipe", "--from", "{source_bootstrap}", "--to", "{target_bootstrap}"])
    # --no-compile: byte code is written on first import instead (pyspark's files are most of the install's time).
    pip = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-compile", str(wheel),
                          str(adapter), "pytest", "allure-pytest"], env=env, cwd=root, text=True,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=600)
    assert pip.returncode == 0 and (venv / "bin" / "mirrordrill").is_file(), pip.stdout[-3000:]

    def run(*argv: str, timeout: float = 600, extra_env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
        return subprocess.run(list(argv), cwd=team, env={**env, **(extra_env or {})}, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout)
    yield Installed(root, venv, team, wheel, run)
    archive = run(str(venv / "bin" / "python"), "-c", ARCHIVE_OF_THIS_VENV)
    assert archive.returncode == 0, archive.stdout
    archive_path = Path(archive.stdout.strip().splitlines()[-1])
    for made in (archive_path, archive_path.with_suffix(".log")):
        made.unlink(missing_ok=True)


def test_the_installed_tool_sets_up_runs_the_shipped_quickstart_and_a_teams_drills_through_pytest(installed):
    run = installed.run
    version = run("mirrordrill", "--version")
    assert version.returncode == 0 and installed.wheel.name.split("-")[1] in version.stdout, version.stdout
    init = run("mirrordrill", "init")
    assert init.returncode == 0, init.stdout
    assert sorted(p.name for p in (installed.team / "drills").glob("*.yaml")) == ["first-drill.yaml"]
    _init_s_ci_jobs_run_the_teams_drills(installed)

    assert "quickstart" in run("mirrordrill", "drills").stdout
    quickstart = run("mirrordrill", "run", "quickstart", "--profile", "short", "--out", "runs/quickstart")
    summary = json.loads((installed.team / "runs" / "quickstart" / "summary.json").read_text())
    assert quickstart.returncode == 0 and summary["passed"], (quickstart.stdout[-3000:], summary.get("error"))
    assert summary["scenario"] == "quickstart"
    _pytest_runs_a_teams_drills_and_checks(installed)


def ci_steps(team: Path) -> tuple[str, list[str]]:
    """The install line and the commands after it, as both CI files ``init`` wrote give them (they must agree)."""
    github = yaml.safe_load((team / ".github" / "workflows" / "mirrordrill.yml").read_text())
    gitlab = yaml.safe_load((team / ".gitlab-ci.yml").read_text())["drills"]
    github_runs = [step["run"] for step in github["jobs"]["drills"]["steps"] if "run" in step]
    # GitLab's job starts from a bare image: its before_script installs Python, Java and Maven and makes the venv
    # (what this test's fixture made), then installs mirrordrill with GitHub's line
    assert gitlab["before_script"][-1] == github_runs[0], (gitlab["before_script"], github_runs)
    assert gitlab["script"] == github_runs[1:], (gitlab["script"], github_runs)
    return github_runs[0], github_runs[1:]


def _init_s_ci_jobs_run_the_teams_drills(installed: Installed) -> None:
    """The steps of the CI jobs ``init`` wrote, in order, in the team's folder, each as typed in a shell.

    The install line names the wheel's version on the registry, where it is not: the fixture installed the built
    wheel and pytest into the venv instead, the line's effect. The drills run at the short profile and attach to
    Allure (``PYTEST_ADDOPTS``, pytest's own variable, so every command stays as written)."""
    install, steps = ci_steps(installed.team)
    assert install == f'pip install "mirrordrill=={installed.wheel.name.split("-")[1]}" pytest', install
    assert [s.split()[:2] for s in steps] == [["mirrordrill", "validate"], ["mirrordrill", "setup"], ["pytest"]], steps
    for step in steps:
        done = installed.run("bash", "-e", "-o", "pipefail", "-c", step,
                             extra_env={"PYTEST_ADDOPTS": "--mirrordrill-profile short --alluredir allure-results"})
        assert done.returncode == 0, (step, done.stdout[-3000:])
    team = installed.team
    verdicts = json.loads((team / "validate.json").read_text())
    assert [(Path(v["file"]).name, v["ok"]) for v in verdicts["files"]] == [("first-drill.yaml", True)], verdicts
    # what both jobs keep: JUnit XML (GitLab's test report), the run folders, validate.json
    cases = {str(c.get("name")): c for c in ET.parse(team / "test-results" / "junit.xml").getroot().iter("testcase")}
    assert sorted(cases) == ["first-drill"]
    assert not cases["first-drill"].findall("failure") and not cases["first-drill"].findall("skipped")
    [run_folder] = [p.get("value") for p in cases["first-drill"].iter("property") if p.get("name") == "run_folder"]
    summary = json.loads((Path(run_folder) / "summary.json").read_text())
    assert summary["passed"] and summary["scenario"] == "first-drill"
    assert Path(run_folder).is_relative_to(team / "runs")
    [result] = [r for r in (json.loads(p.read_text()) for p in (team / "allure-results").glob("*-result.json"))]
    assert result["name"] == "first-drill" and result["status"] == "passed"
    attachments = result.get("attachments", [])
    assert attachments and all((team / "allure-results" / a["source"]).is_file() for a in attachments)


def _pytest_runs_a_teams_drills_and_checks(installed: Installed) -> None:
    """``pytest --mirrordrill``: a broken drill, a CI file that is no drill, a lab test (the starter ran above)."""
    team = installed.team
    (team / "more").mkdir()
    (team / "more" / "broken.yaml").write_text(LAB_DRILL.replace("rate: 50", "rate: -5"))
    (team / "lab").mkdir()
    (team / "lab" / "passes.yaml").write_text(LAB_DRILL)
    (team / "more" / "ci.yaml").write_text("stages: [test]\nreplication: a CI file, not a drill\n")
    (team / "test_lab.py").write_text(LAB_TEST)
    drills = installed.run("pytest", "--mirrordrill", "more/", "test_lab.py", "--alluredir", "lab-results")
    assert drills.returncode == 1, drills.stdout[-3000:]  # the broken file fails; the rest pass
    junit = ET.parse(team / "test-results" / "junit.xml").getroot()
    suite = junit if junit.tag == "testsuite" else junit.find("testsuite")
    assert suite is not None
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors"), suite.get("skipped")) == ("2", "1", "0", "0")
    cases = {c.get("name"): c for c in junit.iter("testcase")}
    assert sorted(cases) == ["broken", LAB_CASE]
    [failure] = cases["broken"].findall("failure")
    assert f"{team / 'more' / 'broken.yaml'}:13: load.producers[0].rate: must be greater than 0" in \
        failure.get("message", "") + (failure.text or ""), failure.text

    results = {r["name"]: r for r in (json.loads(p.read_text()) for p in (team / "lab-results").glob("*-result.json"))}
    assert sorted(results) == ["broken", LAB_CASE]
    # Allure's two failure states: "failed" for an assertion, "broken" for any other exception
    assert results[LAB_CASE]["status"] == "passed"
    assert results["broken"]["status"] in ("failed", "broken")
    assert processes_under(installed.root) == []


def test_a_replicator_kind_installed_beside_it_is_selectable(installed):
    assert "team-pipe" in installed.run("mirrordrill", "run", "--help").stdout.replace("\n", " ")
    drill = installed.team / "plugin-kind.yaml"
    drill.write_text((REPO / "scenarios" / "quickstart.yaml").read_text())
    validated = installed.run("mirrordrill", "validate", str(drill), "--replicator", "team-pipe")
    assert validated.returncode == 0, validated.stdout


def test_commands_that_need_a_checkout_say_so_in_one_line(installed):
    for argv in (["mirrordrill", "docs"], ["mirrordrill", "test"]):
        said = installed.run(*argv)
        assert said.returncode == 2 and "checkout" in said.stdout and "Traceback" not in said.stdout, said.stdout
        assert len(said.stdout.strip().splitlines()) == 1, said.stdout


def test_the_docker_images_project_wheel_is_the_installed_package(installed, tmp_path):
    """``--backend docker`` builds its images from the installed package: repacked, it installs to the same files."""
    made = installed.run(str(installed.venv / "bin" / "python"), "-c",
                         "import sys; from pathlib import Path; from mirrordrill.primitives.bootstrap import Bootstrap; "
                         "from mirrordrill.harness.lab.docker.contexts import project_wheel; "
                         f"print(project_wheel(Bootstrap(), Path({str(tmp_path / 'wheel')!r})))")
    assert made.returncode == 0, made.stdout
    target = tmp_path / "target"
    repacked = installed.run(str(installed.venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-deps",
                             "--target", str(target), made.stdout.strip().splitlines()[-1])
    assert repacked.returncode == 0, repacked.stdout
    site = _site_packages(installed.venv)
    for name in ("mirrordrill/harness/drill/scenarios/quickstart.yaml", "mirrordrill/replicator/jvm/pom.xml",
                 "mirrordrill/reports/allure/package-lock.json"):
        assert (target / name).read_bytes() == (site / name).read_bytes(), name
    # the console script and the pytest plugin: what pip in the image makes `mirrordrill` and `pytest --mirrordrill` from
    entry_points = next(target.glob("mirrordrill-*.dist-info")) / "entry_points.txt"
    assert entry_points.read_text() == next(site.glob("mirrordrill-*.dist-info")).joinpath("entry_points.txt").read_text()


def test_no_installed_file_refers_to_the_checkout(installed):
    checkout = str(REPO).encode()
    referring = [str(p) for p in installed.venv.rglob("*") if p.is_file() and not p.is_symlink()
                 and checkout in p.read_bytes()]
    assert referring == []


def test_it_installs_one_import_name(installed):
    """Other distributions on PyPI use harness, reports, …: the wheel installs mirrordrill alone."""
    site = _site_packages(installed.venv)
    record = next(site.glob("mirrordrill-*.dist-info")) / "RECORD"
    paths = [line.split(",", 1)[0] for line in record.read_text().splitlines()]
    tops = {path.split("/", 1)[0] for path in paths if "/" in path and not path.startswith("../")}  # ../: bin/
    assert tops == {"mirrordrill", record.parent.name}
    assert not any((site / name).exists() for name in ("harness", "loadgen", "primitives", "replicator", "reports"))
