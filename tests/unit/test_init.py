"""mirrordrill init: a team's repository gets a drill that validates, pytest settings that collect it,
and CI jobs; nothing existing is overwritten."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import yaml

from mirrordrill.harness.cli.commands import main
from mirrordrill.harness.drill.validate import check_file
from mirrordrill.primitives.import_root import IMPORT_ROOT

REPO = Path(__file__).resolve().parents[2]
ALL = ["drills/first-drill.yaml", "drills/drill.schema.json", "pytest.ini", ".github/workflows/mirrordrill.yml",
       ".gitlab-ci.yml"]


def _files(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): p.read_text() for p in sorted(root.rglob("*")) if p.is_file()}


def test_init_writes_a_drill_that_validates_and_pytest_collects(tmp_path, capsys):
    assert main(["init", str(tmp_path)]) == 0
    assert sorted(_files(tmp_path)) == sorted(ALL)
    checked = check_file(tmp_path / "drills" / "first-drill.yaml")
    assert checked.scenario.name == "first-drill" and checked.scenario.timeline
    collected = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"],
                               cwd=tmp_path, env=dict(os.environ, PYTHONPATH=str(IMPORT_ROOT)), text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120)
    assert "drills/first-drill.yaml::first-drill" in collected.stdout and "1 test collected" in collected.stdout, \
        collected.stdout


def test_the_ci_jobs_validate_install_then_run_pytest(tmp_path):
    assert main(["init", str(tmp_path), "--only", "github", "--only", "gitlab"]) == 0
    github = yaml.safe_load((tmp_path / ".github/workflows/mirrordrill.yml").read_text())
    steps = [s["run"] for s in github["jobs"]["drills"]["steps"] if "run" in s]
    gitlab = yaml.safe_load((tmp_path / ".gitlab-ci.yml").read_text())["drills"]
    for commands in (steps, gitlab["before_script"] + gitlab["script"]):
        order = [next(i for i, c in enumerate(commands) if c.startswith(prefix))
                 for prefix in ("pip install \"mirrordrill==", "mirrordrill validate", "mirrordrill setup", "pytest")]
        assert order == sorted(order), commands
    assert gitlab["artifacts"]["reports"]["junit"] == "test-results/junit.xml"
    assert sorted(_files(tmp_path)) == [".github/workflows/mirrordrill.yml", ".gitlab-ci.yml"]


def test_a_second_init_overwrites_nothing_and_says_what_exists(tmp_path, capsys):
    assert main(["init", str(tmp_path), "--only", "gitlab"]) == 0
    (tmp_path / ".gitlab-ci.yml").write_text("ours: {}\n")
    before = _files(tmp_path)
    assert main(["init", str(tmp_path)]) == 2
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith("mirrordrill init: nothing written: .gitlab-ci.yml already exist") and "--only" in line
    assert _files(tmp_path) == before


def test_a_repository_with_its_own_pytest_configuration_keeps_it(tmp_path, capsys):
    (tmp_path / "pyproject.toml").write_text("[tool.pytest.ini_options]\ntestpaths = ['tests']\n")
    assert main(["init", str(tmp_path)]) == 2
    assert "add '--mirrordrill' to its addopts" in capsys.readouterr().err
    assert sorted(_files(tmp_path)) == ["pyproject.toml"]
    assert main(["init", str(tmp_path), "--only", "drill"]) == 0


def test_a_bad_name_is_refused(tmp_path, capsys):
    assert main(["init", str(tmp_path), "--name", "my drill"]) == 2
    assert "--name 'my drill'" in capsys.readouterr().err and _files(tmp_path) == {}
