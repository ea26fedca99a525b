"""Every pin agrees with the others."""

import importlib.metadata as md
import json
import re
from pathlib import Path

from mirrordrill.primitives import versions

REPO = Path(__file__).resolve().parents[2]


def test_pyspark_equals_the_spark_kafka_connector():
    pinned = re.search(r'"pyspark==([^"]+)"', (REPO / "pyproject.toml").read_text()).group(1)
    assert pinned == versions.spark_version()
    assert md.version("pyspark") == pinned  # the environment in use matches the pin


def test_kafka_is_a_4x_kraft_release():
    assert re.fullmatch(r"4\.\d+\.\d+", versions.kafka_version())


def test_toxiproxy_is_pinned_to_a_v2_tag():
    assert re.fullmatch(r"v2\.\d+\.\d+", versions.TOXIPROXY_VERSION)


def test_allure_is_pinned_exactly_and_locked():
    pkg = json.loads((REPO / "reports/allure/package.json").read_text())
    lock = json.loads((REPO / "reports/allure/package-lock.json").read_text())
    wanted = pkg["dependencies"]["allure"]
    assert re.fullmatch(r"3\.\d+\.\d+", wanted)
    assert lock["packages"]["node_modules/allure"]["version"] == wanted
