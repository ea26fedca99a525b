"""Fixtures of the container tests: an engine and our images (for the session), and two clusters
plus Toxiproxy as containers (testcontainers), removed once this package's tests have run.

Where no engine answers and none can be installed (root and apt-get), every test here is
reported SKIPPED with the reason; none is ever counted as passed.
"""

from __future__ import annotations

import sys
import uuid

import pytest

from mirrordrill.harness.lab.brokers.cluster import ClusterSpec
from mirrordrill.harness.lab.docker.engine import Engine, EngineError, ensure_engine
from mirrordrill.harness.lab.docker.images import ImageSet
from mirrordrill.harness.lab.environment import TopologySpec

from .lab import SESSION_LABEL, ContainerLab

LAB_IMAGES = ("broker", "toxiproxy")


def _log(msg: str) -> None:
    print(f"mirrordrill: {msg}", file=sys.stderr, flush=True)


def remove_labelled(engine: Engine, key: str, value: str) -> list[str]:
    """Force-remove every container carrying ``key=value``: only this session's, never another's."""
    ids = engine.run(["ps", "-aq", "--filter", f"label={key}={value}"]).stdout.split()
    if ids:
        engine.run(["rm", "-f", "-v", *ids])
    return ids


@pytest.fixture(scope="session")
def docker_engine() -> Engine:
    try:
        return ensure_engine(install=True, log=_log)
    except EngineError as e:
        pytest.skip(f"container tests did not run: {e}")


@pytest.fixture(scope="session")
def lab_images(docker_engine) -> dict[str, str]:
    """The broker and Toxiproxy images, built here when missing or stale."""
    images = ImageSet(docker_engine, log=_log)
    images.build(list(LAB_IMAGES))
    return {name: images.spec(name).ref for name in LAB_IMAGES}


@pytest.fixture(scope="session")
def session_labels(docker_engine):
    """A label only this session's containers carry; whatever carries it is removed at the end."""
    value = uuid.uuid4().hex[:12]
    yield {SESSION_LABEL: value}
    left = remove_labelled(docker_engine, SESSION_LABEL, value)
    if left:
        _log(f"removed {len(left)} container(s) of this session left running: {', '.join(left)}")


@pytest.fixture(scope="package")
def container_lab(docker_engine, lab_images, session_labels, session_workdir):
    """Two single-broker KRaft clusters, ``east`` and ``west``, in containers, joined by a WAN
    link whose Toxiproxy server is a container too.

    Package scope: shared by this package's tests and stopped when the last of them ends, so its
    brokers do not compete for the 2 cores with the drills and integration tests that follow (in
    CI on 2026-11-27, with the lab still up, the crash drill's restart took 25 s; alone, 18.5 s)."""
    spec = TopologySpec(clusters=(ClusterSpec("east"), ClusterSpec("west")))
    with ContainerLab(spec, session_workdir / "container-lab", lab_images, session_labels, docker_engine,
                      log=_log) as lab:
        _log(f"container lab ready in {lab.startup.total_s:.1f}s")
        yield lab


@pytest.fixture
def lab_link(container_lab):
    """The east<->west link, healed before and after each test."""
    link = container_lab.link("east", "west")
    link.heal()
    yield link
    link.heal()
