"""Certificates made by the tests (``cryptography``): a CA, server and client certificates
signed by it, written as PEM files the way Ferry's ``ssl.*`` settings read them."""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

__all__ = ["CertAuthority", "Issued"]


@dataclass(frozen=True)
class Issued:
    """PEM files: ``key_and_cert`` (key then chain, Kafka's PEM keystore), ``cert``, ``key``."""

    key_and_cert: Path
    cert: Path
    key: Path


class CertAuthority:
    """A CA whose certificate is ``self.cert`` (a PEM truststore)."""

    def __init__(self, directory: Path, name: str = "ferry-test-ca") -> None:
        self.dir = directory
        self.dir.mkdir(parents=True, exist_ok=True)
        self._key = ec.generate_private_key(ec.SECP256R1())
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
        now = datetime.datetime.now(datetime.UTC)
        self._cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject)
                      .public_key(self._key.public_key()).serial_number(x509.random_serial_number())
                      .not_valid_before(now - datetime.timedelta(minutes=5))
                      .not_valid_after(now + datetime.timedelta(days=2))
                      .add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
                      .sign(self._key, hashes.SHA256()))
        self.cert = self.dir / f"{name}.pem"
        self.cert.write_bytes(self._cert.public_bytes(serialization.Encoding.PEM))

    def issue(self, common_name: str, *, hosts: tuple[str, ...] = ("127.0.0.1", "localhost"),
              password: str | None = None, expired: bool = False) -> Issued:
        """A certificate for ``common_name`` valid for ``hosts``; ``password`` encrypts its
        key; ``expired`` makes one whose validity ended yesterday."""
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.UTC)
        start, end = ((now - datetime.timedelta(days=3), now - datetime.timedelta(days=1))
                      if expired else (now - datetime.timedelta(minutes=5),
                                       now + datetime.timedelta(days=2)))
        names: list[x509.GeneralName] = []
        for host in hosts:
            try:
                names.append(x509.IPAddress(ipaddress.ip_address(host)))
            except ValueError:
                names.append(x509.DNSName(host))
        cert = (x509.CertificateBuilder()
                .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)]))
                .issuer_name(self._cert.subject).public_key(key.public_key())
                .serial_number(x509.random_serial_number())
                .not_valid_before(start).not_valid_after(end)
                .add_extension(x509.SubjectAlternativeName(names), False)
                .sign(self._key, hashes.SHA256()))
        encryption: serialization.KeySerializationEncryption = (
            serialization.BestAvailableEncryption(password.encode()) if password
            else serialization.NoEncryption())
        key_pem = key.private_bytes(serialization.Encoding.PEM,
                                    serialization.PrivateFormat.PKCS8, encryption)
        cert_pem = cert.public_bytes(serialization.Encoding.PEM)
        stem = self.dir / common_name
        issued = Issued(Path(f"{stem}-keystore.pem"), Path(f"{stem}-cert.pem"),
                        Path(f"{stem}-key.pem"))
        issued.key_and_cert.write_bytes(key_pem + cert_pem)
        issued.cert.write_bytes(cert_pem)
        issued.key.write_bytes(key_pem)
        return issued
