"""Drill arguments by name, the shipped list, --version, and the JSON verdicts CI reads."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from mirrordrill.harness.cli.commands import main
from mirrordrill.harness.drill.shipped import SHIPPED_DIR, drill_path, shipped_drills
from tests.unit.test_existing_clusters import DRILL as EXISTING_DRILL

ROOT = Path(__file__).resolve().parents[2]


def test_drills_lists_every_shipped_file_once_with_its_first_sentence(capsys):
    assert main(["drills"]) == 0
    out = capsys.readouterr().out.splitlines()
    names = sorted(p.stem for p in SHIPPED_DIR.glob("*.yaml"))
    listed = [line.split()[0] for line in out if line and not line.startswith("run one:")]
    assert listed == names
    quickstart = next(line for line in out if line.startswith("quickstart "))
    assert "the link is blackholed for 10 s at 20 s." in quickstart
    assert all(d.summary for d in shipped_drills())


def test_a_bare_name_is_the_shipped_drill_unless_the_team_has_a_file_of_that_name(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert drill_path("quickstart") == SHIPPED_DIR / "quickstart.yaml"
    (tmp_path / "quickstart.yaml").write_text("name: ours\n")
    assert drill_path("quickstart") == Path("quickstart.yaml")
    assert drill_path("drills/quickstart") == Path("drills/quickstart")  # a path stays a path
    assert drill_path("nope") == Path("nope")


def test_a_name_that_is_neither_a_file_nor_shipped_gets_one_line_listing_the_shipped_ones(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["validate", "quickstrat"]) == 2
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith("quickstrat: (file): no such file, and no shipped drill of that name (shipped: ")
    assert "quickstart" in line


def test_run_and_validate_take_a_shipped_drill_by_name_from_any_folder(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["validate", "quickstart", "wan-partition"]) == 0
    out = capsys.readouterr().out
    assert f"{SHIPPED_DIR / 'quickstart.yaml'}: ok (quickstart:" in out and "wan-partition: 2 clusters" in out


def test_version_is_the_projects(capsys):
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert capsys.readouterr().out.strip() == f"mirrordrill {version}"


def test_validate_json_gives_each_files_verdict_with_located_problems(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text((SHIPPED_DIR / "quickstart.yaml").read_text().replace("rate: 200", "rate: -1"))
    assert main(["validate", "--json", "quickstart", str(bad)]) == 2
    captured = capsys.readouterr()
    assert captured.err == ""  # CI parses stdout; nothing else is printed
    verdict = json.loads(captured.out)
    good, wrong = verdict["files"]
    assert verdict["ok"] is False
    assert (good["ok"], good["scenario"], good["flows"], good["problems"]) == (True, "quickstart", 1, [])
    [problem] = wrong["problems"]
    assert wrong["ok"] is False and problem["file"] == str(bad) and problem["field"].endswith("rate")
    assert "rate: -1" in bad.read_text().splitlines()[problem["line"] - 1]


def test_plan_json_lists_what_the_drill_would_touch_on_each_existing_cluster(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("DRILL_PASSWORD", "not-printed")
    drill = tmp_path / "d.yaml"
    drill.write_text(EXISTING_DRILL)
    assert main(["plan", "--json", "--offline", str(drill)]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["ok"] is True and plan["scenario"]
    assert sorted(c["cluster"] for c in plan["clusters"]) == ["md-t-dr", "md-t-primary"]
    for cluster in plan["clusters"]:
        assert all(t["name"].startswith(cluster["owned_prefix"]) or ".internal" in t["name"] for t in cluster["topics"])
        assert cluster["permissions"] and cluster["checks"] == []
    assert "not-printed" not in json.dumps(plan)
