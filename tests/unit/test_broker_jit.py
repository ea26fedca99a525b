"""The brokers' JIT: from the drill file's cluster to the broker's command line, and swept."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from mirrordrill.harness.drill.schema import Scenario
from mirrordrill.harness.drill.topology import topology_of
from mirrordrill.harness.lab.brokers.broker import BrokerPorts, BrokerSettings, KafkaBroker
from mirrordrill.harness.lab.docker.images import broker_java_argv
from mirrordrill.harness.tools.sweep.params import SweepError, apply_params, parse_params

C1_ONLY = "-XX:TieredStopAtLevel=1"


def drill(**dr) -> Scenario:
    return Scenario.model_validate({
        "name": "t", "clusters": {"primary": {}, "dr": dr},
        "replication": {"flows": [{"source": "primary", "target": "dr"}]},
    })


def argv(tmp_path, jit: str) -> list[str]:
    settings = BrokerSettings(cluster_name="dr", cluster_id="x", quorum_voters="1@127.0.0.1:1002",
                              java="java", classpath=(), jit=jit)
    return KafkaBroker(1, BrokerPorts(local=1001, controller=1002), tmp_path, settings).java_argv("kafka.Kafka", "p")


def test_a_drill_s_brokers_compile_with_c1_only_unless_a_cluster_asks_for_tiered(tmp_path):
    specs = {c.name: c for c in topology_of(drill(broker_jit="tiered")).clusters}
    assert (specs["primary"].broker_jit, specs["dr"].broker_jit) == ("c1", "tiered")
    assert C1_ONLY in argv(tmp_path, "c1")
    assert not any("Tiered" in a for a in argv(tmp_path, "tiered"))


def test_a_broker_container_gets_the_same_jit_options_as_a_local_broker(tmp_path):
    def jvm_options(a: list[str]) -> list[str]:  # the paths differ: the container's are its own
        return [o for o in a[1:a.index("-cp")] if not o.startswith(("-Dlog4j2.configurationFile=", "-Dkafka.logs.dir="))]
    assert jvm_options(broker_java_argv("kafka.Kafka", "p")) == jvm_options(argv(tmp_path, "c1"))
    assert jvm_options(broker_java_argv("kafka.Kafka", "p", jit="tiered")) == jvm_options(argv(tmp_path, "tiered"))
    assert C1_ONLY not in broker_java_argv("kafka.Kafka", "p", jit="tiered")


def test_an_unknown_broker_jit_or_one_beside_an_existing_cluster_is_refused():
    with pytest.raises(ValidationError, match="broker_jit"):
        drill(broker_jit="c2")
    with pytest.raises(ValidationError, match="broker_jit describe"):
        drill(broker_jit="tiered", existing={"bootstrap_servers": "kafka.example:9092"})


def test_broker_jit_is_swept_into_every_cluster_the_drill_starts():
    d = {"clusters": {"primary": {"brokers": 3}, "dr": {}, "staging": {"existing": {"bootstrap_servers": "s:9092"}}},
         "replication": {"flows": [{"source": "primary", "target": "dr"}]}}
    (p,) = parse_params(["broker_jit=c1,tiered"])
    swept = apply_params(d, {"broker_jit": p.values[1]})["clusters"]
    assert swept == {"primary": {"brokers": 3, "broker_jit": "tiered"}, "dr": {"broker_jit": "tiered"},
                     "staging": {"existing": {"bootstrap_servers": "s:9092"}}}
    with pytest.raises(SweepError, match="valid values are c1, tiered"):
        apply_params(d, {"broker_jit": "c2"})
    with pytest.raises(SweepError, match="starts no broker"):
        apply_params({"clusters": {"s": {"existing": {}}}, "replication": {"flows": []}}, {"broker_jit": "c1"})


def test_a_local_broker_keeps_its_temporary_files_in_its_own_folder(tmp_path):
    """Kafka's compression libraries unpack native code there; a killed broker left it in /tmp."""
    from mirrordrill.harness.lab.brokers.broker import LocalBrokerRunner
    settings = BrokerSettings(cluster_name="dr", cluster_id="x", quorum_voters="1@127.0.0.1:1002",
                              java="java", classpath=(), jit="c1")
    broker = KafkaBroker(1, BrokerPorts(local=1001, controller=1002), tmp_path, settings)
    argv = LocalBrokerRunner().process(broker).argv
    assert f"-Djava.io.tmpdir={broker.workdir}" in argv[:argv.index("-cp")]
