"""The image set's logic: build order, freshness by the inputs label, the broker's command line."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from mirrordrill.harness.lab.docker import images as img
from mirrordrill.harness.lab.docker.images import INPUTS_LABEL, ImageSet, ImageSpec


@dataclass
class FakeEngine:
    """Stands in for the Docker CLI: the images it 'has', by reference."""

    present: dict[str, dict] = field(default_factory=dict)
    cli: str = "docker"

    def inspect_image(self, ref: str) -> dict | None:
        return self.present.get(ref)


def specs(inputs: dict[str, list[str]]) -> list[ImageSpec]:
    ctx = lambda b, c, s: ""  # noqa: E731 - never called: nothing is built here
    return [ImageSpec("base", "1", None, lambda b: inputs["base"]),
            ImageSpec("python", "1", "base", lambda b: inputs["python"], ctx),
            ImageSpec("broker", "1", "base", lambda b: inputs["broker"], ctx),
            ImageSpec("spark", "1", "python", lambda b: inputs["spark"], ctx)]


def image_set(engine, inputs=None) -> ImageSet:
    inputs = inputs or {"base": ["a"], "python": ["p"], "broker": ["k"], "spark": ["s"]}
    return ImageSet(engine, boot=None, specs=specs(inputs), log=lambda m: None)


def test_only_builds_the_image_and_its_parents_in_order():
    s = image_set(FakeEngine())
    assert s.chain("spark") == ["base", "python", "spark"]
    assert [n for n in s.names if any(n in s.chain(w) for w in ["spark"])] == ["base", "python", "spark"]
    with pytest.raises(KeyError, match="the images are: base, python, broker, spark"):
        s.spec("nope")


def test_fresh_stale_missing_follow_the_inputs_label():
    engine = FakeEngine()
    s = image_set(engine)
    assert s.status("broker") == "missing"
    engine.present["mirrordrill/base:1"] = {"Id": "sha256:base1", "Config": {"Labels": {}}}
    engine.present["mirrordrill/broker:1"] = {"Id": "x", "Config": {"Labels": {INPUTS_LABEL: s.digest("broker")}}}
    assert s.status("broker") == "fresh"
    changed = image_set(engine, {"base": ["a"], "python": ["p"], "broker": ["k2"], "spark": ["s"]})
    assert changed.status("broker") == "stale"


def test_a_rebuilt_parent_makes_its_children_stale():
    engine = FakeEngine({"mirrordrill/base:1": {"Id": "sha256:old", "Config": {"Labels": {}}}})
    before = image_set(engine).digest("broker")
    engine.present["mirrordrill/base:1"]["Id"] = "sha256:new"
    assert image_set(engine).digest("broker") != before


def test_every_shipped_image_is_labelled_with_a_stable_tag():
    names = {s.name: s.ref for s in img.default_specs()}
    assert set(names) == {"base", "python", "broker", "toxiproxy", "spark", "loadgen"}
    assert names["broker"].startswith("mirrordrill/broker:4.")
    assert names["spark"] == f"mirrordrill/spark:{img.pyspark_version()}"
    assert names["toxiproxy"] == "mirrordrill/toxiproxy:v2.12.0"


def test_broker_argv_uses_the_image_classpath_and_config():
    argv = img.broker_java_argv("kafka.Kafka", "/etc/mirrordrill/server.properties", heap_mb=300)
    assert argv[0] == img.JAVA and "-Xmx300m" in argv and "-Xms256m" in argv
    assert argv[argv.index("-cp") + 1] == "/opt/mirrordrill/kafka/libs/*"
    assert argv[-2:] == ["kafka.Kafka", "/etc/mirrordrill/server.properties"]
