"""Real clusters shared between integration tests (starting one costs ~10 s of JVM time)."""

from __future__ import annotations

import pytest

from mirrordrill.harness.lab.brokers.cluster import ClusterSpec
from mirrordrill.harness.lab.environment import Environment, TopologySpec


def east_and_west(name: str, artifacts, session_workdir, lab_backend) -> Environment:
    """Two single-broker data centers, ``east`` and ``west``, joined by a WAN link."""
    spec = TopologySpec(clusters=(ClusterSpec("east"), ClusterSpec("west")))
    return Environment(spec, session_workdir / name, artifacts, backend=lab_backend.make(name))


@pytest.fixture(scope="session")
def wan_env(artifacts, session_workdir, lab_backend):
    """East and west shared by the whole session: each test's topics are its own, but the ``heartbeats``
    topics and the copies earlier replicators left in them are everyone's."""
    with east_and_west("wan-env", artifacts, session_workdir, lab_backend) as env:
        yield env


@pytest.fixture(scope="module")
def first_start_env(artifacts, session_workdir, lab_backend, request):
    """East and west no replicator ran on before this module: its first start is a first start.

    On the shared pair, an earlier module's flow east->west leaves copies in west's ``east.heartbeats``,
    so the next replicator with that flow resumes after them, and with 300 or more heartbeats
    waiting it skips its warm-up batch (CI, 2026-11-28: 2,571 waiting)."""
    name = "first-start-" + request.module.__name__.rsplit(".", 1)[-1]
    with east_and_west(name, artifacts, session_workdir, lab_backend) as env:
        yield env


@pytest.fixture
def wan_link(wan_env):
    """The east<->west link, healed after each test so tests cannot leak conditions."""
    link = wan_env.link("east", "west")
    link.heal()
    yield link
    link.heal()
