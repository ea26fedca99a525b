"""Pinned versions of everything mirrordrill installs.

The JVM pins live in ``primitives/jvm/pom.xml`` (Maven resolves from there), the Python pins in
``pyproject.toml`` and the Allure pin in ``reports/allure/package-lock.json``; this module
holds the one pin that has no file of its own (Toxiproxy) and reads the others, so a test can
check that they agree (pyspark must equal the Spark Kafka connector).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from functools import cache
from pathlib import Path

TOXIPROXY_MODULE = "github.com/Shopify/toxiproxy/v2"
TOXIPROXY_VERSION = "v2.12.0"

POM_PATH = Path(__file__).parent / "jvm" / "pom.xml"
_POM_NS = {"m": "http://maven.apache.org/POM/4.0.0"}


@cache
def pom_properties() -> dict[str, str]:
    """The ``<properties>`` of the JVM artifact pom (kafka.version, spark.version, ...)."""
    root = ET.parse(POM_PATH).getroot()
    props = root.find("m:properties", _POM_NS)
    if props is None:
        return {}
    return {re.sub(r"^\{.*\}", "", child.tag): (child.text or "").strip() for child in props}


def kafka_version() -> str:
    return pom_properties()["kafka.version"]


def mirrormaker1_kafka_version() -> str:
    """The Kafka release MirrorMaker 1 runs from (its last: 4.0 removed it)."""
    return pom_properties()["mirrormaker1.kafka.version"]


def spark_version() -> str:
    return pom_properties()["spark.version"]
