"""`mirrordrill up FILE --connection-file PATH`: a second client reaches the secure clusters from the file alone."""

from __future__ import annotations

import signal
import stat
from pathlib import Path

import pytest
import yaml
from confluent_kafka import KafkaException

from mirrordrill.harness.lab.brokers.cluster import READY_TOPIC
from mirrordrill.primitives.config_refs import RefResolver, find_refs
from mirrordrill.primitives.kafka.reading import read_topic
from mirrordrill.primitives.kafka.security import ClientSecurity
from tests.conftest import processes_under, up_secure_clusters

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
PASSWORD = "up-connection-file-test-pw"


def test_connection_file_reaches_the_secure_clusters_by_reference(tmp_path):
    proc, workdir, conn, lines = up_secure_clusters(tmp_path, PASSWORD)
    creds_files: list[Path] = []
    try:
        assert any("connection file:" in line for line in lines), "".join(lines)
        text = conn.read_text()
        assert stat.S_IMODE(conn.stat().st_mode) == 0o600
        assert PASSWORD not in text
        doc = yaml.safe_load(text)
        assert sorted(doc["clusters"]) == ["dr", "primary"]
        manifest = yaml.safe_load((workdir / "manifest.json").read_text())
        for name, entry in doc["clusters"].items():
            # only the local listener: a drill using these clusters as existing ones brings its own proxies
            assert entry["bootstrap_servers"] == manifest["clusters"][name]["bootstrap"]
            security = ClientSecurity(**entry["security"])
            assert security.protocol == "SASL_SSL" and security.sasl_mechanism == "SCRAM-SHA-512"
            creds = Path(str(find_refs(str(security.password))[0].path))
            creds_files.append(creds)
            assert stat.S_IMODE(creds.stat().st_mode) == 0o600
            props = Path(entry["client_properties_file"])
            assert PASSWORD not in props.read_text() and "${file:" in props.read_text()
            # A second client, from the file alone: reads what the harness's readiness check wrote.
            conf = security.resolve(RefResolver({})).librdkafka()
            assert read_topic(entry["bootstrap_servers"], READY_TOPIC, timeout_s=30, security=conf)
            wrong = {**conf, "sasl.password": "not-the-password"}
            with pytest.raises(KafkaException):  # the client's authentication failure
                read_topic(entry["bootstrap_servers"], READY_TOPIC, timeout_s=10, security=wrong)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(90) == 130
    finally:
        if proc.poll() is None:
            proc.kill()
    assert processes_under(workdir) == []
    assert not any(c.exists() for c in creds_files), "credential files outlived `up`"
