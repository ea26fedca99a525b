"""The throwaway CA, the secret folder and its clean-up."""

from __future__ import annotations

import ssl
import stat

from cryptography import x509

from mirrordrill.primitives.kafka.tls import CertificateAuthority
from mirrordrill.primitives.secret_dir import SecretDir, random_password


def test_certificates_verify_for_local_addresses(tmp_path):
    ca = CertificateAuthority(tmp_path)
    issued = ca.issue("primary-broker-1")
    for path in (ca.cert_pem, issued.cert_pem, issued.key_pem):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert "BEGIN PRIVATE KEY" in issued.key_pem.read_text()  # PKCS#8, what Kafka's PEM store reads
    leaf = x509.load_pem_x509_certificates(issued.cert_pem.read_bytes())[0]
    sans = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert [str(ip) for ip in sans.get_values_for_type(x509.IPAddress)] == ["127.0.0.1"]
    # OpenSSL (what librdkafka uses) accepts the chain, the key and the CA
    ctx = ssl.create_default_context(cafile=str(ca.cert_pem))
    ctx.load_cert_chain(str(issued.cert_pem), str(issued.key_pem))


def test_secret_dir_is_private_and_removed(tmp_path):
    with SecretDir("my drill/1", root=tmp_path / "secrets") as secrets:
        f = secrets.file("creds.properties", "password=x\n")
        assert stat.S_IMODE(secrets.path.stat().st_mode) == 0o700
        assert stat.S_IMODE(f.stat().st_mode) == 0o600
        assert secrets.path.name.startswith("my_drill_1-")
    assert not secrets.path.exists()
    assert len(random_password()) >= 24 and random_password() != random_password()


def test_stale_folders_of_dead_runs_are_swept(tmp_path):
    root = tmp_path / "secrets"
    root.mkdir()
    stale = root / "d-999999999-abcd"
    stale.mkdir()
    SecretDir("d", root=root).remove()
    assert not stale.exists()
