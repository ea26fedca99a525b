"""The pytest plugin as a team uses it: `pytest --mirrordrill drills/` in their own repository,
found through its entry point (no conftest), with JUnit XML and Allure results, and the lab fixture."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.conftest import processes_under

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]

DRILL = """\
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

LAB_TEST = """\
import pytest
from confluent_kafka import KafkaException, Producer
from confluent_kafka.admin import AdminClient


def test_a_record_goes_through_the_lab_and_the_link_can_be_cut(mirrordrill_lab):
    lab = mirrordrill_lab("drills/passes.yaml")
    producer = Producer(lab.client_config("primary"))
    producer.produce("hello", b"x")
    assert producer.flush(30) == 0
    assert "hello" in AdminClient(lab.client_config("primary", from_cluster="dr")).list_topics(timeout=10).topics
    lab.link("primary", "dr").blackhole()
    with pytest.raises(KafkaException):  # through the cut link, metadata never comes back
        AdminClient(lab.client_config("primary", from_cluster="dr")).list_topics(timeout=3)
    lab.link("primary", "dr").heal()
"""


def test_drill_files_are_tests_in_a_teams_repository(tmp_path):
    team = tmp_path / "team-repo"
    (team / "drills").mkdir(parents=True)
    (team / "drills" / "passes.yaml").write_text(DRILL)
    (team / "drills" / "broken.yaml").write_text(DRILL.replace("rate: 50", "rate: -5"))
    (team / "drills" / "ci.yaml").write_text("stages: [test]\nreplication: a CI file, not a drill\n")
    (team / "test_lab.py").write_text(LAB_TEST)
    env = dict(os.environ, PYTHONPATH=str(REPO))
    done = subprocess.run([sys.executable, "-m", "pytest", "--mirrordrill", "drills", "test_lab.py", "-p",
                           "no:cacheprovider", "--junitxml=junit.xml", "--alluredir=allure-results"],
                          cwd=team, env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=900)
    assert done.returncode == 1, done.stdout[-3000:]  # the broken file fails; the rest pass

    cases = {c.get("name"): c for c in ET.parse(team / "junit.xml").getroot().iter("testcase")}
    assert sorted(cases) == ["broken", "passes", "test_a_record_goes_through_the_lab_and_the_link_can_be_cut"]
    [failure] = cases["broken"].findall("failure")
    assert f"{team / 'drills' / 'broken.yaml'}:13: load.producers[0].rate: must be greater than 0" in failure.get("message", "") \
        + (failure.text or ""), failure.text
    assert not cases["passes"].findall("failure") and not cases["passes"].findall("skipped")
    [run_folder] = [p.get("value") for p in cases["passes"].iter("property") if p.get("name") == "run_folder"]
    summary = json.loads((Path(run_folder) / "summary.json").read_text())
    assert summary["passed"] and summary["scenario"] == "plugin-passes"
    assert Path(run_folder).is_relative_to(team / "runs")

    results = [json.loads(p.read_text()) for p in (team / "allure-results").glob("*-result.json")]
    [drill_result] = [r for r in results if r["name"] == "passes"]
    assert drill_result["status"] == "passed" and drill_result["attachments"]
    assert processes_under(team) == []
