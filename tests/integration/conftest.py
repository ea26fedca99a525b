"""Real clusters shared between integration tests (starting one costs ~10 s of JVM time)."""

from __future__ import annotations

import pytest

from harness.environment import Environment, TopologySpec
from harness.kafka.cluster import ClusterSpec


@pytest.fixture(scope="session")
def wan_env(artifacts, session_workdir, lab_backend):
    """Two single-broker data centers, ``east`` and ``west``, joined by a WAN link."""
    spec = TopologySpec(clusters=(ClusterSpec("east"), ClusterSpec("west")))
    with Environment(spec, session_workdir / "wan-env", artifacts, backend=lab_backend.make("wan-env")) as env:
        yield env


@pytest.fixture
def wan_link(wan_env):
    """The east<->west link, healed after each test so tests cannot leak conditions."""
    link = wan_env.link("east", "west")
    link.heal()
    yield link
    link.heal()
