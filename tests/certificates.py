"""Certificates for TLS tests, made with the ``cryptography`` package (nothing checked in).

``make_certificates(dir)`` writes PEM files: a CA; a server certificate for 127.0.0.1 and
localhost (key and chain in one file, as ``ssl.keystore.location`` takes it); client
certificates for ``CN=alice,OU=tenant-a`` and ``CN=bob``; an expired client certificate;
and a client certificate signed by a CA nobody trusts.
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

__all__ = ["ClientCert", "TestCertificates", "make_certificates", "write_server_cert"]


@dataclass(frozen=True)
class ClientCert:
    cert: Path
    key: Path


@dataclass(frozen=True)
class TestCertificates:
    ca: Path  # the trusted CA certificate (PEM)
    ca_key: object
    ca_cert: x509.Certificate
    server: Path  # server key + certificate chain, one PEM file
    alice: ClientCert
    bob: ClientCert
    expired: ClientCert
    untrusted: ClientCert  # signed by another CA


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _name(**parts: str) -> x509.Name:
    oids = {"CN": NameOID.COMMON_NAME, "OU": NameOID.ORGANIZATIONAL_UNIT_NAME,
            "O": NameOID.ORGANIZATION_NAME}
    # x509 names go from the least specific part: O, OU, then CN
    order = [k for k in ("O", "OU", "CN") if k in parts]
    return x509.Name([x509.NameAttribute(oids[k], parts[k]) for k in order])


def _cert(subject: x509.Name, key, issuer: x509.Name, issuer_key, *, ca: bool = False,
          server: bool = False, days: tuple[int, int] = (-1, 365)) -> x509.Certificate:
    now = dt.datetime.now(dt.UTC)
    builder = (x509.CertificateBuilder().subject_name(subject).issuer_name(issuer)
               .public_key(key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(now + dt.timedelta(days=days[0]))
               .not_valid_after(now + dt.timedelta(days=days[1]))
               .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
    if ca:
        builder = builder.add_extension(x509.KeyUsage(
            digital_signature=True, key_cert_sign=True, crl_sign=True, content_commitment=False,
            key_encipherment=False, data_encipherment=False, key_agreement=False,
            encipher_only=False, decipher_only=False), critical=True)
    else:
        usage = ExtendedKeyUsageOID.SERVER_AUTH if server else ExtendedKeyUsageOID.CLIENT_AUTH
        builder = builder.add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
    if server:
        builder = builder.add_extension(x509.SubjectAlternativeName([
            x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]),
            critical=False)
    return builder.sign(issuer_key, hashes.SHA256())


def _pem_key(key) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def _client(directory: Path, stem: str, subject: x509.Name, ca_name, ca_key,
            days: tuple[int, int] = (-1, 365)) -> ClientCert:
    key = _key()
    cert = _cert(subject, key, ca_name, ca_key, days=days)
    (directory / f"{stem}.crt").write_bytes(_pem(cert))
    (directory / f"{stem}.key").write_bytes(_pem_key(key))
    return ClientCert(directory / f"{stem}.crt", directory / f"{stem}.key")


def write_server_cert(path: Path, ca_cert: x509.Certificate, ca_key, cn: str = "ferry") -> None:
    """A fresh server key and certificate (signed by the CA) into ``path``."""
    key = _key()
    cert = _cert(_name(CN=cn, O="Ferry"), key, ca_cert.subject, ca_key, server=True)
    path.write_bytes(_pem_key(key) + _pem(cert) + _pem(ca_cert))


def make_certificates(directory: Path) -> TestCertificates:
    ca_key = _key()
    ca_name = _name(CN="Ferry Test CA", O="Ferry")
    ca_cert = _cert(ca_name, ca_key, ca_name, ca_key, ca=True, days=(-1, 3650))
    (directory / "ca.crt").write_bytes(_pem(ca_cert))
    server = directory / "server.pem"
    write_server_cert(server, ca_cert, ca_key)
    other_key = _key()
    other_name = _name(CN="Unknown CA")
    alice = _client(directory, "alice", _name(CN="alice", OU="tenant-a", O="Ferry"), ca_name,
                    ca_key)
    bob = _client(directory, "bob", _name(CN="bob"), ca_name, ca_key)
    expired = _client(directory, "expired", _name(CN="old"), ca_name, ca_key, days=(-30, -1))
    untrusted = _client(directory, "untrusted", _name(CN="mallory"), other_name, other_key)
    return TestCertificates(directory / "ca.crt", ca_key, ca_cert, server, alice, bob,
                            expired, untrusted)
