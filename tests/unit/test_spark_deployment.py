"""Where Spark runs: master forms, the slot check, spark-submit's command line, the drill file's field."""

from __future__ import annotations

import ast
import zipfile
from pathlib import Path

import pytest
import yaml

from mirrordrill.harness.drill.replicators.pyspark_launch import submitted_java_options
from mirrordrill.harness.drill.schema import Scenario
from mirrordrill.harness.lab.spark.deployment import SparkDeployment, SparkDeploymentError, check_task_slots
from mirrordrill.harness.lab.spark.submit import JavaOptions, package_replicator, submit_argv
from mirrordrill.replicator.config.settings import FlowConfig, ReplicatorConfig


@pytest.mark.parametrize("master, submitted", [
    ("local", False), ("local[4]", False), ("local[*]", False), ("standalone", True),
    ("spark://127.0.0.1:7077", True), ("spark://a:1,b:2", True), ("yarn", True), ("k8s://https://k:6443", True)])
def test_master_forms(master, submitted):
    assert SparkDeployment(master).submitted is submitted


@pytest.mark.parametrize("master", ["", "spark:/x", "spark://host", "mesos://m:5050", "locale", "local[x]"])
def test_bad_master_is_refused_naming_the_forms(master):
    with pytest.raises(SparkDeploymentError, match=r"is not one of: local \(default\), local\[N\], standalone"):
        SparkDeployment(master)


def test_local_master_reaches_the_replicator_only_when_it_runs_spark_itself():
    assert SparkDeployment("local").local_master() is None
    assert SparkDeployment("local[3]").local_master() == "local[3]"
    assert SparkDeployment("standalone").local_master() is None


def status(*workers):
    return {"url": "spark://127.0.0.1:1", "aliveworkers": sum(w[0] == "ALIVE" for w in workers),
            "workers": [{"state": s, "cores": c, "coresused": u, "coresfree": c - u} for s, c, u in workers]}


def test_slot_check_counts_free_cores_of_alive_workers_only():
    st = status(("ALIVE", 2, 0), ("DEAD", 2, 0), ("ALIVE", 2, 1))
    check_task_slots(st, 3, 4, "flow")  # 2 + 1 free
    with pytest.raises(SparkDeploymentError, match=r"needs 4 task slots .* has 3 free cores on 2 alive worker"):
        check_task_slots(st, 4, 4, "flow")


def test_slot_check_refuses_asking_for_fewer_slots_than_partitions():
    with pytest.raises(SparkDeploymentError, match=r"needs 3 task slots .* asks for 2 .* at least 3"):
        check_task_slots(status(("ALIVE", 8, 0)), 3, 2, "flow")
    check_task_slots(status(), 0, 1, "no real-time flow")  # nothing to hold


def test_submit_line_sizes_executors_and_ships_the_zip(tmp_path):
    archive, launcher = package_replicator(tmp_path)
    argv = submit_argv(SparkDeployment("standalone", executors=3, executor_cores=2, executor_memory="1g"),
                       "spark://127.0.0.1:7077", [Path("/j/a.jar"), Path("/j/b.jar")], archive, launcher,
                       ["--config", "c.properties"])
    assert argv[0].endswith("bin/spark-submit")
    joined = " ".join(argv)
    for part in ("--master spark://127.0.0.1:7077", "--executor-cores 2", "--total-executor-cores 6",
                 "--executor-memory 1g", "spark.executor.instances=3", "--jars /j/a.jar,/j/b.jar",
                 f"--py-files {archive}", "spark.driver.host=127.0.0.1"):
        assert part in joined
    assert argv[-3:] == [str(launcher), "--config", "c.properties"]
    names = zipfile.ZipFile(archive).namelist()
    assert "mirrordrill/replicator/__main__.py" in names and "mirrordrill/replicator/config/settings.py" in names
    assert "mirrordrill/__init__.py" in names  # the one import name, as installed
    assert all(n.startswith(("mirrordrill/replicator/", "mirrordrill/primitives/")) and n.endswith(".py")
               for n in names if n != "mirrordrill/__init__.py")


def test_the_zip_holds_every_mirrordrill_module_the_replicator_imports(tmp_path):
    """The submitted driver sees only the zip: an import of ours missing from it fails every start."""
    archive, _ = package_replicator(tmp_path)
    z = zipfile.ZipFile(archive)
    names = set(z.namelist())
    imported = 0
    for name in names:
        for node in ast.walk(ast.parse(z.read(name))):
            modules = ([a.name for a in node.names] if isinstance(node, ast.Import)
                       else [node.module] if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module
                       else [])
            for module in modules:
                if module.split(".")[0] == "mirrordrill":
                    imported += 1
                    path = module.replace(".", "/")
                    assert f"{path}.py" in names or f"{path}/__init__.py" in names, f"{name} imports {module}"
    assert imported > 100  # the walk read the replicator's imports of its own modules


def test_submit_line_carries_the_driver_and_executor_java_options(tmp_path):
    archive, launcher = package_replicator(tmp_path)
    java = JavaOptions(driver=("-Djava.io.tmpdir=/w/t", "-XX:TieredStopAtLevel=1"), executor=("-XX:TieredStopAtLevel=1",))
    argv = submit_argv(SparkDeployment("standalone"), "spark://127.0.0.1:7077", [], archive, launcher, [], java)
    assert argv[argv.index("--driver-java-options") + 1] == "-Djava.io.tmpdir=/w/t -XX:TieredStopAtLevel=1"
    assert "spark.executor.extraJavaOptions=-XX:TieredStopAtLevel=1" in argv
    plain = submit_argv(SparkDeployment("standalone"), "spark://127.0.0.1:7077", [], archive, launcher, [])
    assert "--driver-java-options" not in plain and not any("extraJavaOptions" in a for a in plain)


C1 = ("-XX:TieredStopAtLevel=1", "-XX:CompileThresholdScaling=0.1")


@pytest.mark.parametrize("mode, our_cluster, jit, executor", [
    ("realtime", True, C1, ("tmp", *C1)),
    ("realtime", False, C1, ()),  # someone else's cluster: its executors keep their owners' options
    ("microbatch", True, (), ("tmp",))])  # every flow micro-batch: tiered, the JVM's default
def test_submitted_driver_and_our_executors_get_the_replicators_jit(mode, our_cluster, jit, executor, tmp_path):
    config = ReplicatorConfig(clusters={"A": {"bootstrap_servers": ["a:1"]}, "B": {"bootstrap_servers": ["b:1"]}},
                              flows=[FlowConfig(source="A", target="B", mode=mode)])
    java = submitted_java_options(config, tmp_path, our_cluster)
    tmp = f"-Djava.io.tmpdir={tmp_path / 'spark-tmp'}"
    assert (tmp_path / "spark-tmp").is_dir() and java.driver == (tmp, *jit)
    assert java.executor == tuple(tmp if o == "tmp" else o for o in executor)  # the driver's folder


def test_yarn_gets_no_standalone_only_flags(tmp_path):
    archive, launcher = package_replicator(tmp_path)
    argv = submit_argv(SparkDeployment("yarn"), "yarn", [], archive, launcher, [])
    assert "--total-executor-cores" not in argv and not any("driver.host" in a for a in argv)


def drill(spark: dict | None) -> dict:
    doc = yaml.safe_load((Path(__file__).parents[2] / "scenarios" / "spark-worker-kill.yaml").read_text())
    if spark is None:
        doc["replication"].pop("spark")
    else:
        doc["replication"]["spark"] = spark
    return doc


def test_drill_file_spark_field():
    assert Scenario.model_validate(drill(None)).replication.spark.master == "local"
    s = Scenario.model_validate(drill({"master": "spark://h:7077", "executors": 4})).replication.spark
    assert (s.master, s.executors, s.executor_cores) == ("spark://h:7077", 4, 2)
    with pytest.raises(ValueError, match=r"not one of: local"):
        Scenario.model_validate(drill({"master": "mesos://x:1"}))
    with pytest.raises(ValueError, match=r"executor_memory"):
        Scenario.model_validate(drill({"executor_memory": "lots"}))


def test_kill_spark_worker_needs_the_standalone_cluster(tmp_path):
    from mirrordrill.harness.drill.validate import ScenarioInvalid, check_file
    doc = drill({"master": "local"})
    path = tmp_path / "d.yaml"
    path.write_text(yaml.safe_dump(doc))
    with pytest.raises(ScenarioInvalid, match=r"kill_spark_worker needs the Spark standalone cluster"):
        check_file(path, None)
    doc = drill(None)
    doc["replication"]["spark"] = {"master": "standalone"}
    doc["timeline"][0]["worker"] = 2
    path.write_text(yaml.safe_dump(doc))
    with pytest.raises(ScenarioInvalid, match=r"worker 2 does not exist"):
        check_file(path, None)
    doc["timeline"][0]["worker"] = 1
    path.write_text(yaml.safe_dump(doc))
    assert check_file(path, None).scenario.timeline[0].worker == 1


def test_the_standalone_daemons_compile_with_c1_only_unless_the_person_set_their_own_options(monkeypatch):
    from mirrordrill.harness.lab.spark.standalone import daemon_env, spark_env
    monkeypatch.delenv("SPARK_DAEMON_JAVA_OPTS", raising=False)
    assert daemon_env(None)["SPARK_DAEMON_JAVA_OPTS"] == "-XX:TieredStopAtLevel=1"
    assert "SPARK_DAEMON_JAVA_OPTS" not in spark_env(None)  # the driver's and spark-submit's: not theirs
    monkeypatch.setenv("SPARK_DAEMON_JAVA_OPTS", "-Xlog:gc")
    assert daemon_env(None)["SPARK_DAEMON_JAVA_OPTS"] == "-Xlog:gc"
