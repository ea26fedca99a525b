"""The docker backend's Compose rendering: pure data, no engine needed."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from mirrordrill.harness.lab.brokers.cluster import ClusterSpec, KafkaCluster
from mirrordrill.harness.lab.compose.backend import make_backend
from mirrordrill.harness.lab.compose.cpu import cgroup_cpu_seconds
from mirrordrill.harness.lab.compose.lab import BrokerImage, broker_service, toxiproxy_config, toxiproxy_service
from mirrordrill.harness.lab.compose.spec import ComposeProject, Mount, Service, compose_dict, compose_yaml
from mirrordrill.harness.lab.environment import ProcessBackend, TopologySpec, plan_ports, proxy_routes
from mirrordrill.primitives.cpu import CpuMeter

IMAGE = BrokerImage("mirrordrill/broker:test", "/usr/bin/java", "/opt/mirrordrill/kafka/libs/*", "/opt/log4j2.properties")


def _counter(start: int = 40000):
    n = {"v": start}

    def take(cluster: str) -> int:
        n["v"] += 1
        return n["v"]
    return take


def _clusters(tmp_path: Path, brokers: int = 1) -> tuple[TopologySpec, dict[str, KafkaCluster]]:
    spec = TopologySpec((ClusterSpec("primary", brokers=brokers), ClusterSpec("dr", brokers=brokers)))
    plan = plan_ports(spec, _counter())
    clusters = {c.name: KafkaCluster(c, plan[c.name], tmp_path / c.name, "java", (Path("/x/*"),))
                for c in spec.clusters}
    return spec, clusters


def test_every_service_is_on_the_host_network_and_labelled_with_its_project():
    svc = Service("a", "img:1", ("run",), role="broker", mounts=(Mount("data-a", "/data", volume=True),))
    d = compose_dict(ComposeProject("mirrordrill-x-1", (svc,), (("c", "k=v\n"),)))
    a = d["services"]["a"]
    assert a["network_mode"] == "host"
    assert a["labels"] == {"mirrordrill": "true", "mirrordrill.drill": "mirrordrill-x-1", "mirrordrill.role": "broker"}
    assert a["container_name"] == "mirrordrill-x-1-a"
    assert d["volumes"] == {"data-a": {"labels": {"mirrordrill": "true", "mirrordrill.drill": "mirrordrill-x-1"}}}
    assert d["configs"] == {"c": {"content": "k=v\n"}}
    assert "networks" not in d and "version" not in d


def test_yaml_reads_back_as_the_dict_and_keeps_config_contents_as_blocks():
    svc = Service("a", "img:1", ("sh", "-c", "exec x"), role="toxiproxy", configs=(("c", "/etc/c"),))
    project = ComposeProject("p", (svc,), (("c", "line1\nline2\n"),), header="first\nsecond")
    text = compose_yaml(project)
    assert text.startswith("# first\n# second\n")
    assert "content: |" in text
    assert yaml.safe_load(text) == compose_dict(project)


def test_a_project_refuses_repeated_services_and_unknown_configs():
    a = Service("a", "i", (), role="broker")
    with pytest.raises(ValueError, match="repeat"):
        ComposeProject("p", (a, a))
    with pytest.raises(ValueError, match="does not define"):
        ComposeProject("p", (Service("b", "i", (), role="broker", configs=(("nope", "/x"),)),))


def test_a_drill_broker_mounts_its_own_folder_and_runs_the_image_java_on_its_config(tmp_path):
    _, clusters = _clusters(tmp_path)
    broker = clusters["primary"].brokers[0]
    svc = broker_service(broker, IMAGE)
    assert svc.name == "broker-primary-1" and svc.role == "broker"
    assert svc.mounts == (Mount(str(broker.workdir), str(broker.workdir)),)  # same path: properties, data, log
    shell = svc.command[2]
    assert svc.command[:2] == ("sh", "-c") and shell.startswith("exec /usr/bin/java ")
    assert "-cp '/opt/mirrordrill/kafka/libs/*' kafka.Kafka " + str(broker.config_path) in shell
    assert shell.endswith(f">>{broker.log_path} 2>&1")
    props = broker.properties()
    for key in ("listeners", "advertised.listeners"):
        assert all(addr.split("//")[1].startswith("127.0.0.1:") for addr in props[key].split(","))


def test_fixed_port_plans_repeat_and_proxies_listen_where_brokers_advertise(tmp_path):
    spec, clusters = _clusters(tmp_path, brokers=2)
    assert plan_ports(spec, _counter()) == plan_ports(spec, _counter())
    routes = list(proxy_routes(clusters, "primary", "dr"))
    assert len(routes) == 4  # one per broker and direction
    config = yaml.safe_load(toxiproxy_config(routes))  # JSON is YAML
    for r, c in zip(routes, config, strict=True):
        broker = clusters[r.server_cluster].broker(int(r.name.rsplit("_b", 1)[1]))
        assert c["listen"] == f"127.0.0.1:{broker.ports.wan_advertised[r.client_cluster]}"
        assert c["upstream"] == f"127.0.0.1:{broker.ports.wan[r.client_cluster]}"
    svc = toxiproxy_service("mirrordrill/toxiproxy:t", 8474, "/etc/t.json", "t")
    assert svc.command == ("-host", "127.0.0.1", "-port", "8474", "-proxy-metrics", "-config", "/etc/t.json")


def test_backends_by_name():
    assert isinstance(make_backend(None), ProcessBackend)
    assert make_backend("processes").describe() == {"backend": "processes"}
    docker = make_backend("docker", hint="Quick Start!")
    assert docker.describe()["backend"] == "docker"
    assert docker.project.startswith("mirrordrill-quick-start-")
    with pytest.raises(ValueError, match="processes .*docker"):
        make_backend("podman")


def test_container_cpu_is_read_from_either_cgroup_layout(tmp_path):
    v1 = tmp_path / "v1" / "cpu,cpuacct" / "docker" / "abc"
    v1.mkdir(parents=True)
    (v1 / "cpuacct.usage").write_text("2500000000\n")
    assert cgroup_cpu_seconds("abc", tmp_path / "v1") == 2.5
    v2 = tmp_path / "v2" / "system.slice" / "docker-abc.scope"
    v2.mkdir(parents=True)
    (v2 / "cpu.stat").write_text("usage_usec 1500000\nuser_usec 1000000\n")
    assert cgroup_cpu_seconds("abc", tmp_path / "v2") == 1.5
    assert cgroup_cpu_seconds("none", tmp_path / "v2") is None


def test_cpu_meter_adds_what_its_extra_reports(tmp_path):
    meter = CpuMeter([tmp_path / "a", tmp_path / "b"], extra=lambda: {"container-1": 3.0})
    meter.sample()
    assert meter.cpu_s == 3.0


def test_a_spark_daemon_container_runs_the_image_spark_class_with_the_same_arguments(tmp_path):
    from mirrordrill.harness.lab.compose.spark import SparkDaemonLauncher
    launcher = SparkDaemonLauncher(run=None, image="mirrordrill/spark:t", spark_home="/opt/spark",  # type: ignore[arg-type]  # no runner: never started
                                   java_home="/jvm", image_python="/opt/venv/bin/python", mount_root=tmp_path,
                                   host_python="/host/venv/bin/python")
    argv = ["/host/pyspark/bin/spark-class", "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
            "spark://127.0.0.1:7077"]
    svc = launcher.service("spark worker 1", argv, tmp_path / "spark" / "worker-1" / "worker.log",
                           {"SPARK_LOCAL_IP": "127.0.0.1", "PATH": "/host/bin",
                            "SPARK_DAEMON_JAVA_OPTS": "-XX:TieredStopAtLevel=1"})
    assert svc.name == "spark-worker-1" and svc.role == "spark"
    assert dict(svc.environment) == {"JAVA_HOME": "/jvm", "SPARK_LOCAL_IP": "127.0.0.1",  # not the host's PATH
                                     "SPARK_DAEMON_JAVA_OPTS": "-XX:TieredStopAtLevel=1"}
    assert svc.mounts == (Mount(str(tmp_path), str(tmp_path)),)
    shell = svc.command[2]
    assert "ln -sf /opt/venv/bin/python /host/venv/bin/python" in shell  # executors run the driver's python path
    assert "exec /opt/spark/bin/spark-class org.apache.spark.deploy.worker.Worker --host 127.0.0.1 " in shell
    assert shell.endswith(f">>{tmp_path / 'spark' / 'worker-1' / 'worker.log'} 2>&1")


def test_without_compose_a_service_becomes_the_same_docker_run(tmp_path):
    from mirrordrill.harness.lab.compose.project import docker_run_argv
    svc = Service("broker-a-1", "img:1", ("sh", "-c", "exec java"), role="broker",
                  mounts=(Mount("/r/a", "/r/a"),), environment=(("K", "V"),), stop_grace_s=20)
    argv = docker_run_argv(ComposeProject("p", (svc,)), svc)
    assert argv == ["run", "-d", "--name", "p-broker-a-1", "--network", "host", "--label", "mirrordrill=true",
                    "--label", "mirrordrill.drill=p", "--label", "mirrordrill.role=broker", "-v", "/r/a:/r/a",
                    "-e", "K=V", "--stop-timeout", "20", "img:1", "sh", "-c", "exec java"]
    with pytest.raises(ValueError, match="Compose v2"):
        docker_run_argv(ComposeProject("p", (svc,)), Service("x", "i", (), role="load",
                                                             mounts=(Mount("v", "/v", volume=True),)))
