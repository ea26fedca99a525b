"""``docker-compose.chaos.yml``: the quickstart drill's lab as a self-contained Compose project.

Rendered by the code that renders a drill's brokers and proxies (``lab``), from
``scenarios/quickstart.yaml``'s topology, with fixed ports instead of free ones: primary on
127.0.0.1:${PRIMARY_PORT:-19092}, DR on 127.0.0.1:${DR_PORT:-29092}, Toxiproxy's API on
127.0.0.1:8474, a Spark master (UI 8080) and one worker, the bundled replicator submitted to
them (every topic, default naming: ``primary.<topic>`` on DR), and Locust's web UI on
127.0.0.1:8089 producing into the primary. ``tests/unit/test_compose_chaos.py`` keeps the
checked-in file equal to this rendering; ``python -m mirrordrill.harness.tools.compose_file`` rewrites it.
"""

from __future__ import annotations

import base64
import re
import sys
import uuid
from pathlib import Path

from mirrordrill.harness.drill.replicators.pyspark import pyspark_flow_defaults
from mirrordrill.harness.drill.replicators.setup import FlowSpec, ReplicationSetup
from mirrordrill.harness.drill.shipped import SHIPPED_DIR
from mirrordrill.harness.drill.topology import topology_of
from mirrordrill.harness.lab.brokers.cluster import KafkaCluster
from mirrordrill.harness.lab.compose.lab import (
    BrokerImage,
    broker_service_name,
    lab_broker_service,
    toxiproxy_config,
    toxiproxy_service,
)
from mirrordrill.harness.lab.compose.spec import ComposeProject, Mount, Service, compose_yaml
from mirrordrill.harness.lab.docker import images as img
from mirrordrill.harness.lab.environment import TopologySpec, plan_ports, proxy_routes
from mirrordrill.harness.lab.spark.standalone import DAEMON_JAVA_OPTS, MASTER_CLASS, WORKER_CLASS
from mirrordrill.harness.lab.spark.submit import LAUNCHER
from mirrordrill.primitives.bootstrap import REPO_ROOT, BootstrapError, require_checkout
from mirrordrill.primitives.ports import LOOPBACK
from mirrordrill.replicator.config.render import to_mm2_properties

CHAOS_FILE = REPO_ROOT / "docker-compose.chaos.yml"  # the checkout's (main() refuses without one)
QUICKSTART = SHIPPED_DIR / "quickstart.yaml"
PROJECT = "mirrordrill-chaos"
DATA = "/var/lib/mirrordrill"
PORT_BASE = {"primary": 19092, "dr": 29092}  # the first port of each cluster; the rest follow it
PORT_VARIABLE = {"primary": "PRIMARY_PORT", "dr": "DR_PORT"}
TOXIPROXY_PORT, SPARK_PORT, SPARK_UI, WORKER_PORT, WORKER_UI, LOCUST_UI = 8474, 7077, 8080, 7078, 8081, 8089
HEADER = """\
The quickstart lab in containers: rendered by harness/tools/compose_file.py, do not edit by hand
(python -m mirrordrill.harness.tools.compose_file rewrites it; tests/unit/test_compose_chaos.py keeps it equal).
  ./mirrordrill images build                        # the images, built here (no registry needed)
  docker compose -f docker-compose.chaos.yml up -d
primary: 127.0.0.1:${PRIMARY_PORT:-19092}   dr: 127.0.0.1:${DR_PORT:-29092}   Toxiproxy API: 127.0.0.1:8474
Spark master UI: 127.0.0.1:8080   Locust web UI: 127.0.0.1:8089   (docs/reference/docker-backend.md: "The chaos lab")"""


class _PlannedLab:
    """What ``ReplicationSetup`` reads of an environment, for a lab nobody starts from here."""

    def __init__(self, spec: TopologySpec, clusters: dict[str, KafkaCluster]):
        self.spec, self.clusters, self.workdir = spec, clusters, Path(DATA)

    def cluster(self, name: str) -> KafkaCluster:
        return self.clusters[name]


def _clusters(spec: TopologySpec, image: BrokerImage) -> dict[str, KafkaCluster]:
    """Each cluster's ports counted up from its base (19092, 19093, ...), its id fixed by its name."""
    taken = {c.name: PORT_BASE[c.name] for c in spec.clusters}

    def take(cluster: str) -> int:
        taken[cluster] += 1
        return taken[cluster] - 1
    plan = plan_ports(spec, take)
    out = {}
    for c in spec.clusters:
        # a fixed cluster id: the same rendering every time (each cluster formats its own volume once)
        cid = base64.urlsafe_b64encode(uuid.uuid5(uuid.NAMESPACE_DNS, f"{PROJECT}.{c.name}").bytes).decode()
        cid = "m" + cid.rstrip("=")[1:]  # KRaft's form (22 characters), never starting with '-'
        out[c.name] = KafkaCluster(c, plan[c.name], Path(DATA) / c.name, image.java, (image.classpath,),
                                   cluster_id=cid)
    return out


def chaos_project() -> ComposeProject:
    from mirrordrill.harness.drill.validate import load_scenario
    spec = topology_of(load_scenario(QUICKSTART))
    broker_image = broker_image_contract()
    clusters = _clusters(spec, broker_image)
    services: list[Service] = []
    configs: list[tuple[str, str]] = []
    for c in clusters.values():
        for b in c.brokers:
            name = f"{broker_service_name(b)}-properties"
            configs.append((name, b.config_text()))
            services.append(lab_broker_service(b, broker_image, name))
    routes = [r for a, b in spec.link_pairs() for r in proxy_routes(clusters, a, b)]
    configs.append(("toxiproxy-json", toxiproxy_config(routes)))
    services.append(toxiproxy_service(_ref("toxiproxy"), TOXIPROXY_PORT, "/etc/mirrordrill/toxiproxy.json",
                                      "toxiproxy-json"))
    brokers = tuple(s.name for s in services if s.role == "broker")
    services += _spark_services(brokers)
    configs += [("replicator-properties", _replicator_properties(spec, clusters)), ("run-replicator-py", LAUNCHER)]
    services.append(_locust_service(clusters["primary"].bootstrap))
    return ComposeProject(PROJECT, tuple(services), tuple(configs), HEADER)


def broker_image_contract() -> BrokerImage:
    return BrokerImage(_ref("broker"), img.JAVA, f"{img.KAFKA_LIBS}/*", img.KAFKA_LOG4J)


def _ref(name: str) -> str:
    return next(s.ref for s in img.default_specs() if s.name == name)


def _spark_env() -> tuple[tuple[str, str], ...]:
    java_home = str(Path(img.JAVA).parent.parent)
    return (("SPARK_LOCAL_IP", LOOPBACK), ("JAVA_HOME", java_home), ("PYSPARK_PYTHON", f"{img.VENV}/bin/python"),
            ("PYSPARK_DRIVER_PYTHON", f"{img.VENV}/bin/python"))


def _spark_services(brokers: tuple[str, ...]) -> list[Service]:
    spark_class, submit = f"{img.SPARK_HOME}/bin/spark-class", f"{img.SPARK_HOME}/bin/spark-submit"
    master_url = f"spark://{LOOPBACK}:{SPARK_PORT}"
    master = Service("spark-master", _ref("spark"), (spark_class, MASTER_CLASS, "--host", LOOPBACK, "--port",
                     str(SPARK_PORT), "--webui-port", str(SPARK_UI)), role="spark",
                     environment=(*_spark_env(), ("SPARK_MASTER_OPTS", "-Dspark.master.rest.enabled=false"),
                                  ("SPARK_DAEMON_JAVA_OPTS", DAEMON_JAVA_OPTS)))
    worker = Service("spark-worker", _ref("spark"), (spark_class, WORKER_CLASS, "--host", LOOPBACK, "--port",
                     str(WORKER_PORT), "--webui-port", str(WORKER_UI), "--cores", "2", "--memory", "2g",
                     "--work-dir", "/tmp/spark-work", master_url), role="spark",
                     environment=(*_spark_env(), ("SPARK_DAEMON_JAVA_OPTS", DAEMON_JAVA_OPTS)),
                     depends_on=("spark-master",))
    # The project is installed in the image, so executors import the replicator from there: no --py-files.
    argv = [submit, "--master", master_url, "--deploy-mode", "client", "--executor-cores", "2",
            "--executor-memory", "768m", "--total-executor-cores", "2",
            "--conf", f"spark.driver.host={LOOPBACK}", "--conf", f"spark.driver.bindAddress={LOOPBACK}",
            "--jars", "$$MIRRORDRILL_REPLICATOR_JARS", "/etc/mirrordrill/run_replicator.py",
            "--config", "/etc/mirrordrill/replicator.properties", "--workdir", f"{DATA}/replicator"]
    replicator = Service("replicator", _ref("spark"), ("sh", "-c", "exec " + " ".join(argv)), role="replicator",
                         environment=_spark_env(), depends_on=("spark-worker", "toxiproxy", *brokers),
                         configs=(("replicator-properties", "/etc/mirrordrill/replicator.properties"),
                                  ("run-replicator-py", "/etc/mirrordrill/run_replicator.py")),
                         mounts=(Mount("replicator-work", f"{DATA}/replicator", volume=True),),
                         restart="on-failure", stop_grace_s=30)
    return [master, worker, replicator]


def _replicator_properties(spec: TopologySpec, clusters: dict[str, KafkaCluster]) -> str:
    """primary -> dr, every topic, default naming, placed near DR (reads the primary through the WAN proxy)."""
    setup = ReplicationSetup(env=_PlannedLab(spec, clusters), flows=[FlowSpec("primary", "dr")])
    flow = setup.flows[0]
    # the replicator builds its own Spark session: it must be told the master spark-submit was given
    config = setup.replicator_config([flow], flow.location, flow_defaults={
        flow.name: pyspark_flow_defaults(len(clusters["dr"].brokers), mode=None, drill_intervals=True)},
        top_settings={"mirrordrill.spark.master": f"spark://{LOOPBACK}:{SPARK_PORT}"})
    return "# primary -> dr: every topic, named primary.<topic> on dr (written by harness/tools/compose_file.py)\n" + \
        to_mm2_properties(config)


def _locust_service(bootstrap: str) -> Service:
    locustfile = f"{img.VENV}/lib/python3.11/site-packages/mirrordrill/loadgen/producer_user.py"
    return Service("locust", _ref("loadgen"), (
        "locust", "-f", locustfile, "--web-host", LOOPBACK, "--web-port", str(LOCUST_UI),
        "--kafka-bootstrap", bootstrap, "--kafka-cluster", "primary", "--topics", "orders", "--create-topics", "3",
        "--rate", "200", "--record-size", "1024", "--ledger-dir", f"{DATA}/ledger"), role="load",
        mounts=(Mount("ledger", f"{DATA}/ledger", volume=True),), restart="on-failure")


def render_chaos() -> str:
    """The file's text: the rendering with each cluster's first port made a variable."""
    text = compose_yaml(chaos_project())
    for cluster, var in PORT_VARIABLE.items():
        port = PORT_BASE[cluster]
        text = re.sub(rf"(?<![\d$-]){port}(?!\d)", f"${{{var}:-{port}}}", text)
    return text


def main() -> int:
    try:
        require_checkout("rewriting docker-compose.chaos.yml")
    except BootstrapError as e:
        print(f"mirrordrill: {e}", file=sys.stderr)
        return 2
    CHAOS_FILE.write_text(render_chaos())
    print(f"wrote {CHAOS_FILE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
