"""A lab's brokers formatted in one JVM: each gets its own node id, directory id and its cluster's id."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from mirrordrill.harness.lab.brokers.broker import BrokerPorts, LocalBrokerRunner, format_storages
from mirrordrill.harness.lab.brokers.cluster import ClusterSpec, KafkaCluster
from mirrordrill.harness.lab.brokers.storage_format import MAIN_CLASS
from mirrordrill.primitives.ports import PortAllocator
from mirrordrill.primitives.process import ProcessError

pytestmark = pytest.mark.integration


def _clusters(artifacts, root: Path, ports: PortAllocator, runner: LocalBrokerRunner,
              sizes: dict[str, int]) -> list[KafkaCluster]:
    return [KafkaCluster(ClusterSpec(name, brokers=n), [BrokerPorts(local=ports.take(), controller=ports.take())
                                                         for _ in range(n)],
                         root / name, artifacts.java, artifacts.broker_classpath, runner=runner)
            for name, n in sizes.items()]


def _meta(data_dir: Path) -> dict[str, str]:
    lines = (data_dir / "meta.properties").read_text().splitlines()
    return dict(line.split("=", 1) for line in lines if "=" in line and not line.startswith("#"))


def test_one_jvm_formats_every_broker_of_two_clusters_each_with_its_own_ids(artifacts, session_workdir, monkeypatch):
    runs: list[list[str]] = []
    real_run = subprocess.run

    def counted(argv, *args, **kwargs):
        runs.append(list(argv))
        return real_run(argv, *args, **kwargs)

    monkeypatch.setattr(subprocess, "run", counted)
    with PortAllocator() as ports:
        clusters = _clusters(artifacts, session_workdir / "format-together", ports, LocalBrokerRunner(),
                             {"east": 2, "west": 1})
        format_storages([b for c in clusters for b in c.brokers])
    jvms = [argv for argv in runs if Path(argv[0]).name == "java"]
    assert len(jvms) == 1 and MAIN_CLASS in jvms[0], f"expected one formatting JVM, ran {len(jvms)}"
    metas = {(c.name, b.node_id): _meta(b.data_dir) for c in clusters for b in c.brokers}
    assert {key: (m["node.id"], m["cluster.id"]) for key, m in metas.items()} == {
        ("east", 1): ("1", clusters[0].cluster_id), ("east", 2): ("2", clusters[0].cluster_id),
        ("west", 1): ("1", clusters[1].cluster_id)}
    assert len({m["directory.id"] for m in metas.values()}) == 3
    assert all((b.data_dir / "bootstrap.checkpoint").is_file() for c in clusters for b in c.brokers)


def test_without_javac_each_broker_is_formatted_by_its_own_storage_tool_run(artifacts, session_workdir,
                                                                           monkeypatch):
    from mirrordrill.harness.lab.brokers import broker as broker_module
    monkeypatch.setattr(broker_module, "format_classes", lambda java, classpath: None)  # as on a JRE
    with PortAllocator() as ports:
        (cluster,) = _clusters(artifacts, session_workdir / "format-each", ports, LocalBrokerRunner(), {"dc": 3})
        format_storages(cluster.brokers)
    assert [_meta(b.data_dir)["node.id"] for b in cluster.brokers] == ["1", "2", "3"]


def test_a_broker_whose_storage_cannot_be_formatted_is_named_and_nothing_after_it_is_formatted(
        artifacts, session_workdir):
    with PortAllocator() as ports:
        good, bad, after = _clusters(artifacts, session_workdir / "format-fails", ports, LocalBrokerRunner(),
                                     {"good": 1, "bad": 1, "after": 1})
        bad_dir = bad.brokers[0].data_dir  # a file where its data folder goes: StorageTool cannot make it
        bad_dir.parent.mkdir(parents=True)
        bad_dir.write_text("not a folder")
        with pytest.raises(ProcessError, match=r"brokers good/1, bad/1, after/1 failed") as failed:
            format_storages([*good.brokers, *bad.brokers, *after.brokers])
    assert str(bad.brokers[0].config_path) in str(failed.value)
    assert (good.brokers[0].data_dir / "meta.properties").is_file()
    assert not (after.brokers[0].data_dir / "meta.properties").exists()
