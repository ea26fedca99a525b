"""mirrordrill's pytest plugin: drill files as tests, and a lab fixture for a team's own checks.

Registered through the ``pytest11`` entry point, so installing mirrordrill into a repository's
environment is enough:

- ``pytest --mirrordrill drills/``: each drill file under the paths given is one test. It passes
  when the drill ran and every expectation held; a failure's message lists the failed expectations
  (or the file's problems, each with its line). ``--mirrordrill-replicator``, ``--mirrordrill-profile``
  and ``--mirrordrill-backend`` are ``mirrordrill run``'s ``--replicator``, ``--profile`` and
  ``--backend``. With ``--alluredir`` (allure-pytest) the drill's plots, summary and logs are
  attached to its test; JUnit XML carries the run folder as a property.
- ``mirrordrill_lab``: a fixture that starts a drill file's clusters and WAN links (as
  ``mirrordrill up`` does) and returns a ``Lab``: bootstrap addresses, client settings, the links
  and clusters to inject faults with. Everything it started is stopped when the test ends.

Without ``--mirrordrill`` nothing is collected, so a repository's other YAML files stay untouched.
Imports of the harness happen when a drill runs: loading the plugin costs pytest nothing.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import yaml

if TYPE_CHECKING:
    from mirrordrill.harness.lab.brokers.cluster import KafkaCluster
    from mirrordrill.harness.lab.environment import Environment
    from mirrordrill.harness.lab.network.wan import WanLink

DRILL_KEYS = frozenset({"clusters", "replication"})  # what makes a YAML file a drill file


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("mirrordrill", "mirrordrill drill files as tests")
    group.addoption("--mirrordrill", action="store_true",
                    help="collect drill files (YAML with clusters and replication) under the given paths, one test each")
    group.addoption("--mirrordrill-replicator", metavar="KIND",
                    help="the replicator under test (default: each file's replication.replicator)")
    group.addoption("--mirrordrill-profile", choices=("full", "short"), default="full",
                    help="full (default): each file as written; short: its short profile")
    group.addoption("--mirrordrill-backend", choices=("processes", "docker"), default="processes",
                    help="where brokers and Toxiproxy run (default: local processes)")
    group.addoption("--mirrordrill-out", metavar="DIR",
                    help="where run folders go (default: runs/pytest-<time>/ under the working directory)")


def is_drill_file(path: Path) -> bool:
    """A YAML mapping with the keys every drill file has; anything else is not ours to collect."""
    try:
        data = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError):
        # broken YAML that means to be a drill is still collected, so its syntax error is reported
        return "\nreplication:" in path.read_text(errors="replace")
    return isinstance(data, dict) and DRILL_KEYS <= set(data)


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    if parent.config.getoption("mirrordrill") and file_path.suffix in (".yaml", ".yml") and is_drill_file(file_path):
        return DrillFile.from_parent(parent, path=file_path)
    return None


class DrillFile(pytest.File):
    def collect(self) -> Iterator[pytest.Item]:
        yield DrillItem.from_parent(self, name=self.path.stem)


class DrillNotPassed(Exception):
    """A drill that could not run or did not pass: the message is the whole report."""


class DrillItem(pytest.Item):
    def runtest(self) -> None:
        from mirrordrill.harness.drill.engine import Drill
        from mirrordrill.harness.drill.summary import render_table
        from mirrordrill.harness.drill.validate import ScenarioInvalid, check_file
        options = self.config.getoption
        try:
            checked = check_file(self.path, options("mirrordrill_replicator"), options("mirrordrill_profile"))
        except ScenarioInvalid as e:
            raise DrillNotPassed(f"the drill file cannot run:\n{e}") from None
        replicator = options("mirrordrill_replicator") or checked.scenario.replication.replicator
        out = _runs_root(self.config) / f"{self.path.stem}-{replicator}"
        self.user_properties.append(("run_folder", str(out)))
        result = Drill(checked.scenario, self.path, out, replicator=options("mirrordrill_replicator"),
                       backend=options("mirrordrill_backend"), plan=checked.plan,
                       log=lambda m: print(f"mirrordrill: {m}", file=sys.stderr, flush=True)).run()
        if options("--alluredir", default=None):
            from mirrordrill.reports.allure_results import attach_to_pytest
            attach_to_pytest(out)
        if result.summary.interrupted:  # the engine stopped everything and saved the summary
            raise KeyboardInterrupt(f"drill {checked.scenario.name} interrupted (its summary is saved in {out})")
        if not result.passed:
            failed = [e.name for e in result.summary.expectations if not e.passed]
            raise DrillNotPassed(f"drill {checked.scenario.name} ({replicator}) failed: "
                                 f"{', '.join(failed) or result.summary.error}\n"
                                 f"{render_table(result.summary)}\nrun folder: {out}")

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        if isinstance(excinfo.value, DrillNotPassed):
            return str(excinfo.value)
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, f"drill {self.path.name}"


def _runs_root(config: pytest.Config) -> Path:
    """One folder per pytest session for its drills' run folders (kept: CI uploads them)."""
    root = config.stash.get(_RUNS_ROOT, None)
    if root is None:
        chosen = config.getoption("mirrordrill_out")
        base = Path(config.invocation_params.dir)
        root = (base / chosen) if chosen else base / "runs" / f"pytest-{datetime.now():%Y%m%d-%H%M%S}"
        config.stash[_RUNS_ROOT] = root
    return root


_RUNS_ROOT = pytest.StashKey[Path]()


class Lab:
    """A drill file's clusters and WAN links, running: what a test needs to connect and to break things."""

    def __init__(self, environment: Environment) -> None:
        self.environment = environment

    def bootstrap(self, cluster: str) -> str:
        """The cluster's bootstrap servers, for clients in its own data center."""
        return self.environment.cluster(cluster).bootstrap

    def wan_bootstrap(self, cluster: str, from_cluster: str) -> str:
        """The cluster's bootstrap servers as clients in ``from_cluster`` reach it: through the WAN link."""
        return self.environment.cluster(cluster).wan_bootstrap(from_cluster)

    def client_config(self, cluster: str, from_cluster: str | None = None) -> dict[str, str]:
        """librdkafka settings to reach the cluster (from ``from_cluster``: through the WAN link), security included."""
        return self.environment.cluster(cluster).client_config(from_cluster)

    def link(self, a: str, b: str) -> WanLink:
        """The WAN link between two clusters: ``blackhole()``, ``partition()``, ``set(latency_ms=…)``, ``heal()``."""
        return self.environment.link(a, b)

    def cluster(self, name: str) -> KafkaCluster:
        """A cluster the lab started: ``kill()``, ``stop()``, ``restart()``, ``broker(n)``…"""
        cluster = self.environment.cluster(name)
        from mirrordrill.harness.lab.brokers.cluster import KafkaCluster
        if not isinstance(cluster, KafkaCluster):
            raise TypeError(f"{name} is an existing cluster: the lab does not start or stop its brokers")
        return cluster


@pytest.fixture
def mirrordrill_lab(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Callable[[str | Path], Lab]]:
    """``mirrordrill_lab("drills/x.yaml")`` starts that drill's clusters and links and returns a ``Lab``."""
    from mirrordrill.harness.lab.environment import Environment
    from mirrordrill.harness.tools.up import up_topology
    started: list[Environment] = []
    backend = request.config.getoption("mirrordrill_backend")

    def start(drill_file: str | Path) -> Lab:
        from mirrordrill.harness.lab.compose.backend import make_backend
        spec, refs = up_topology(str(drill_file), None, 1)
        log = lambda m: print(f"mirrordrill: {m}", file=sys.stderr, flush=True)  # noqa: E731
        environment = Environment(spec, tmp_path / f"lab-{len(started)}", log=log, refs=refs,
                                  backend=make_backend(backend, "lab", log))
        started.append(environment)
        environment.start()
        return Lab(environment)

    try:
        yield start
    finally:
        for environment in reversed(started):
            environment.stop()
