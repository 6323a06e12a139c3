"""Certificates for TLS tests, made with the ``cryptography`` package (nothing checked in):
the one home for every test that needs a CA, server or client certificates.

``CertAuthority(dir)`` is a CA (``.cert``: its PEM certificate, a truststore) whose
``issue()`` writes a key and certificate as PEM files the way Ferry's ``ssl.*`` settings
read them (``key_and_cert``: key, certificate and the CA's, Kafka's PEM keystore).

``make_certificates(dir)`` is the set the broker's TLS tests share: a CA; a server
certificate for 127.0.0.1 and localhost; client certificates for ``CN=alice,OU=tenant-a``
and ``CN=bob``; an expired client certificate; and a client certificate signed by a CA
nobody trusts.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

__all__ = ["CertAuthority", "Issued", "TestCertificates", "make_certificates",
           "write_server_cert"]

_LOCAL_HOSTS = ("127.0.0.1", "localhost")
_USAGES = {"server": ExtendedKeyUsageOID.SERVER_AUTH, "client": ExtendedKeyUsageOID.CLIENT_AUTH}


@dataclass(frozen=True)
class Issued:
    """PEM files: ``key_and_cert`` (key then chain, Kafka's PEM keystore), ``cert``, ``key``."""

    key_and_cert: Path
    cert: Path
    key: Path


def _name(common_name: str, unit: str | None = None, organization: str | None = None
          ) -> x509.Name:
    # x509 names go from the least specific part: O, OU, then CN
    parts = [(NameOID.ORGANIZATION_NAME, organization),
             (NameOID.ORGANIZATIONAL_UNIT_NAME, unit), (NameOID.COMMON_NAME, common_name)]
    return x509.Name([x509.NameAttribute(oid, value) for oid, value in parts if value])


def _certificate(subject: x509.Name, key: ec.EllipticCurvePrivateKey, issuer: x509.Name,
                 issuer_key: ec.EllipticCurvePrivateKey, *, ca: bool = False,
                 usage: Literal["server", "client"] | None = None,
                 hosts: tuple[str, ...] = (), expired: bool = False) -> x509.Certificate:
    now = dt.datetime.now(dt.UTC)
    start, end = ((now - dt.timedelta(days=30), now - dt.timedelta(days=1)) if expired
                  else (now - dt.timedelta(days=1), now + dt.timedelta(days=365)))
    builder = (x509.CertificateBuilder().subject_name(subject).issuer_name(issuer)
               .public_key(key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(start).not_valid_after(end)
               .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
    if ca:
        builder = builder.add_extension(x509.KeyUsage(
            digital_signature=True, key_cert_sign=True, crl_sign=True, content_commitment=False,
            key_encipherment=False, data_encipherment=False, key_agreement=False,
            encipher_only=False, decipher_only=False), critical=True)
    if usage is not None:
        builder = builder.add_extension(x509.ExtendedKeyUsage([_USAGES[usage]]),
                                        critical=False)
    if hosts:
        names: list[x509.GeneralName] = []
        for host in hosts:
            try:
                names.append(x509.IPAddress(ipaddress.ip_address(host)))
            except ValueError:
                names.append(x509.DNSName(host))
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
    return builder.sign(issuer_key, hashes.SHA256())


def _pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


class CertAuthority:
    """A CA whose certificate is ``self.cert`` (a PEM truststore), written in ``directory``
    as ``<name>.pem`` (or ``file_name``)."""

    def __init__(self, directory: Path, name: str = "ferry-test-ca", *,
                 organization: str | None = None, file_name: str | None = None) -> None:
        self.dir = directory
        self.dir.mkdir(parents=True, exist_ok=True)
        self.key = ec.generate_private_key(ec.SECP256R1())
        subject = _name(name, organization=organization)
        self.certificate = _certificate(subject, self.key, subject, self.key, ca=True)
        self.cert = self.dir / (file_name or f"{name}.pem")
        self.cert.write_bytes(_pem(self.certificate))

    def issue(self, common_name: str, *, hosts: tuple[str, ...] = _LOCAL_HOSTS,
              password: str | None = None, expired: bool = False, unit: str | None = None,
              organization: str | None = None,
              usage: Literal["server", "client"] | None = None,
              stem: str | None = None) -> Issued:
        """A certificate for ``common_name`` (with ``unit``/``organization``: OU, O) valid
        for ``hosts``; ``password`` encrypts its key; ``expired`` makes one whose validity
        ended yesterday; ``usage`` limits it to serving or to client authentication. Its
        files are named after ``stem`` (default: ``common_name``)."""
        key = ec.generate_private_key(ec.SECP256R1())
        cert = _certificate(_name(common_name, unit, organization), key,
                            self.certificate.subject, self.key, usage=usage, hosts=hosts,
                            expired=expired)
        encryption: serialization.KeySerializationEncryption = (
            serialization.BestAvailableEncryption(password.encode()) if password
            else serialization.NoEncryption())
        key_pem = key.private_bytes(serialization.Encoding.PEM,
                                    serialization.PrivateFormat.PKCS8, encryption)
        base = self.dir / (stem or common_name)
        issued = Issued(Path(f"{base}-keystore.pem"), Path(f"{base}-cert.pem"),
                        Path(f"{base}-key.pem"))
        issued.key_and_cert.write_bytes(key_pem + _pem(cert) + _pem(self.certificate))
        issued.cert.write_bytes(_pem(cert))
        issued.key.write_bytes(key_pem)
        return issued


@dataclass(frozen=True)
class TestCertificates:
    authority: CertAuthority
    ca: Path  # the trusted CA certificate (PEM)
    server: Path  # server key + certificate chain, one PEM file
    alice: Issued
    bob: Issued
    expired: Issued
    untrusted: Issued  # signed by another CA


def write_server_cert(path: Path, authority: CertAuthority, cn: str = "ferry") -> None:
    """A fresh server key and certificate (signed by ``authority``) into ``path``, as the
    keystore ``make_certificates`` writes."""
    issued = authority.issue(cn, organization="Ferry", usage="server")
    path.write_bytes(issued.key_and_cert.read_bytes())


def make_certificates(directory: Path) -> TestCertificates:
    authority = CertAuthority(directory, "Ferry Test CA", organization="Ferry",
                              file_name="ca.crt")
    server = authority.issue("ferry", organization="Ferry", usage="server").key_and_cert

    def client(common_name: str, *, unit: str | None = None, organization: str | None = None,
               expired: bool = False) -> Issued:
        return authority.issue(common_name, hosts=(), usage="client", unit=unit,
                               organization=organization, expired=expired)

    other = CertAuthority(directory / "other", "Unknown CA")
    return TestCertificates(
        authority, authority.cert, server,
        alice=client("alice", unit="tenant-a", organization="Ferry"), bob=client("bob"),
        expired=client("old", expired=True),
        untrusted=other.issue("mallory", hosts=(), usage="client"))
