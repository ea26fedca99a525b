"""A replicator kind from an installed package, as a team ships one: a distribution whose entry point
(group ``mirrordrill.replicators``) names its adapter. Built and installed here with pip, then the
command line offers it, validates a drill naming it, and runs that drill on real brokers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from mirrordrill.primitives.import_root import IMPORT_ROOT
from tests.conftest import processes_under
from tests.integration.test_command_replicator import COMMAND

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]

ADAPTER = '''
"""A team's replicator: a command of its own, as a kind of its own."""
from mirrordrill.harness.drill.replicators.command import CommandReplicator


class TeamPipe(CommandReplicator):
    kind = "team-pipe"

    @classmethod
    def options_for(cls, replication, run):
        return {{"command": {command!r}, "ready_pattern": r"pipe replicator: subscribed", "base_dir": run.base_dir}}

    @classmethod
    def version(cls):
        return "team-pipe 1.0"

    @classmethod
    def delivery_mode(cls, mode, exactly_once):
        return "at-least-once"
'''

PYPROJECT = """\
[build-system]
requires = ["setuptools"]
build-backend = "setuptools.build_meta"

[project]
name = "team-pipe-replicator"
version = "1.0"

[project.entry-points."mirrordrill.replicators"]
team-pipe = "team_pipe:TeamPipe"
"""


def adapter_package(folder: Path, command: list[str]) -> Path:
    """A team's adapter distribution (kind ``team-pipe``, entry point ``mirrordrill.replicators``) that
    runs ``command``, written into ``folder`` for pip to install."""
    folder.mkdir(parents=True)
    (folder / "pyproject.toml").write_text(PYPROJECT)
    (folder / "team_pipe.py").write_text(textwrap.dedent(ADAPTER.format(command=command)))
    return folder


DRILL = """\
name: plugin-kind
clusters: {primary: {brokers: 1}, dr: {brokers: 1}}
topics: [{name: cmdt-orders, cluster: primary, partitions: 2}]
replication:
  replicator: team-pipe
  flows: [{source: primary, target: dr, topics: [cmdt-orders]}]
load:
  producers: [{name: orders, cluster: primary, topics: [cmdt-orders], rate: 50, record_size: {fixed: 128}}]
duration: 5s
expectations: {lost: 0}
"""


def test_an_installed_packages_replicator_kind_is_offered_validated_and_run(tmp_path):
    package, site = adapter_package(tmp_path / "team-pipe", COMMAND), tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-build-isolation", "--no-deps",
                    "--target", str(site), str(package)], check=True, timeout=300)
    env = dict(os.environ, PYTHONPATH=f"{IMPORT_ROOT}{os.pathsep}{site}")

    def cli(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "mirrordrill.harness.cli.commands", *args], cwd=tmp_path, env=env, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=600)

    assert "team-pipe" in cli("run", "--help").stdout.replace("\n", " ")
    drill = tmp_path / "plugin-kind.yaml"
    drill.write_text(DRILL)
    validated = cli("validate", str(drill))
    assert validated.returncode == 0, validated.stdout
    ran = cli("run", str(drill), "--out", str(tmp_path / "run"))
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert ran.returncode == 0 and summary["passed"], (ran.stdout[-3000:], summary.get("error"))
    assert (summary["replicator"], summary["versions"]["replicator"]) == ("team-pipe", "team-pipe 1.0")
    assert processes_under(tmp_path) == []
