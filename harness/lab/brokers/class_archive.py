"""The brokers' class-data archive: made once per JDK and broker jar set, by a one-broker run of its own.

A broker's start loads about nine thousand classes (Kafka, Scala, their libraries); mapping an
archive of them (``primitives.jvm_archive``) spares the CPU of loading them, and a drill or test
starts up to six brokers at once on two cores. The run that makes it formats one broker on
loopback, waits until a client can create a topic, produce and consume (the classes a drill's
brokers load first), and stops it cleanly: its JVM dumps as it exits. About 6 s, once; the
archive lives in the cache folder beside the jars it was made from.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

from mirrordrill.harness.lab.brokers.broker import BrokerPorts, LocalBrokerRunner
from mirrordrill.harness.lab.brokers.cluster import ClusterSpec, KafkaCluster
from mirrordrill.primitives.bootstrap import mirrordrill_home
from mirrordrill.primitives.jvm_archive import LazyArchive, fingerprint
from mirrordrill.primitives.ports import PortAllocator


def broker_archive(java: str, classpath: tuple[str | Path, ...], log: Callable[[str], None]) -> LazyArchive:
    """The archive for brokers run by ``java`` on ``classpath``; made when a first broker asks for it."""
    path = mirrordrill_home() / "jvm-cds" / f"broker-{fingerprint(java, classpath)}.jsa"
    return LazyArchive(path, lambda tmp: _dump_run(tmp, java, classpath, log), log)


def _dump_run(dump_to: Path, java: str, classpath: tuple[str | Path, ...], log: Callable[[str], None]) -> None:
    log("making the brokers' class-data archive (once per JDK and Kafka version, a few seconds)")
    workdir = mirrordrill_home() / "tmp" / f"broker-archive-{os.getpid()}"
    shutil.rmtree(workdir, ignore_errors=True)
    try:
        with PortAllocator() as ports:
            cluster = KafkaCluster(ClusterSpec("archive"), [BrokerPorts(local=ports.take(), controller=ports.take())],
                                   workdir, java, classpath, runner=LocalBrokerRunner(dump_to=dump_to))
            try:
                cluster.format()
                cluster.start()
                cluster.wait_ready(60)
            finally:
                cluster.stop()
        code = cluster.brokers[0].process.returncode
        if code is None or code < 0:  # killed, not exited: its dump may be cut short
            raise RuntimeError(f"the archive run's broker did not exit by itself (code {code})")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
