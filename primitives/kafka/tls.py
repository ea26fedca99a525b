"""A throwaway certificate authority for one drill: a CA and leaf certificates as PEM files.

Certificates are valid for the addresses clients use on this machine (``127.0.0.1`` and
``localhost``): through a Toxiproxy proxy the client still connects to 127.0.0.1, only the
port differs, so the broker's certificate verifies on every path. Private keys are PKCS#8,
unencrypted, in 0600 files of the drill's secret folder (never the run folder).
"""

from __future__ import annotations

import datetime as dt
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from mirrordrill.primitives.kafka.security import write_private

LOCAL_NAMES = ("localhost",)
LOCAL_IPS = ("127.0.0.1",)
VALIDITY = dt.timedelta(days=2)  # a drill lasts minutes; a leaked certificate is soon worthless


@dataclass(frozen=True)
class IssuedCert:
    """Where one certificate and its key were written."""

    name: str
    cert_pem: Path
    key_pem: Path


def _key() -> ec.EllipticCurvePrivateKey:
    # P-256: generated in a millisecond, read by OpenSSL (librdkafka) and by Kafka's PEM store.
    return ec.generate_private_key(ec.SECP256R1())


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "mirrordrill"),
                      x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _key_pem(key: ec.EllipticCurvePrivateKey) -> str:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption()).decode()


class CertificateAuthority:
    """A CA made for one drill; ``issue`` signs server+client certificates for local addresses."""

    def __init__(self, folder: Path, name: str = "mirrordrill drill CA"):
        self.folder = folder
        self._key = _key()
        now = dt.datetime.now(dt.UTC)
        self._cert = (
            x509.CertificateBuilder()
            .subject_name(_name(name)).issuer_name(_name(name))
            .public_key(self._key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5)).not_valid_after(now + VALIDITY)
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                         content_commitment=False, key_encipherment=False, data_encipherment=False,
                                         key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
            .sign(self._key, hashes.SHA256())
        )
        self.cert_pem = folder / "ca.pem"
        # The CA certificate is public; its key never leaves this object.
        write_private(self.cert_pem, self._cert.public_bytes(serialization.Encoding.PEM).decode())

    def issue(self, name: str, dns_names: tuple[str, ...] = LOCAL_NAMES,
              ip_addresses: tuple[str, ...] = LOCAL_IPS) -> IssuedCert:
        """A certificate for ``name`` usable as a TLS server and client, with its key; both 0600."""
        key = _key()
        now = dt.datetime.now(dt.UTC)
        sans = [x509.DNSName(d) for d in dns_names] + [x509.IPAddress(ipaddress.ip_address(i)) for i in ip_addresses]
        cert = (
            x509.CertificateBuilder()
            .subject_name(_name(name)).issuer_name(self._cert.subject)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5)).not_valid_after(now + VALIDITY)
            .add_extension(x509.SubjectAlternativeName(sans), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]),
                           critical=False)
            .sign(self._key, hashes.SHA256())
        )
        issued = IssuedCert(name, self.folder / f"{name}.cert.pem", self.folder / f"{name}.key.pem")
        # The chain (leaf, then CA) lets a peer that trusts only the CA build the path.
        write_private(issued.cert_pem, cert.public_bytes(serialization.Encoding.PEM).decode()
                      + self._cert.public_bytes(serialization.Encoding.PEM).decode())
        write_private(issued.key_pem, _key_pem(key))
        return issued
