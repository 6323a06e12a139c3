"""Listener resolution, TLS context building and the connection's SASL state machine,
without sockets: the settings' errors name their key, the inline PEM form works, and a
successful login sets the connection's principal."""

from __future__ import annotations

from pathlib import Path

import pytest
from certificates import make_certificates

from core.broker.config import BrokerConfigError
from core.broker.security.authenticator import ConnectionAuth
from core.broker.security.listener_security import build_listener_security
from core.broker.security.listeners import resolve_listeners
from core.broker.security.principal import ANONYMOUS, KafkaPrincipal
from core.broker.security.tls import TlsContext
from core.protocol.errors import ErrorCode


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    return make_certificates(tmp_path_factory.mktemp("certs"))


def test_listeners_and_their_protocols():
    specs = resolve_listeners({
        "listeners": "CLIENT://0.0.0.0:9092,SSL://127.0.0.1:9093,CONTROLLER://127.0.0.1:9094",
        "advertised.listeners": "CLIENT://kafka.example.com:9092",
        "listener.security.protocol.map": "CLIENT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT",
        "controller.listener.names": "CONTROLLER"})
    assert [(s.name, s.protocol, s.advertised_host, s.advertised_port) for s in specs] == [
        ("CLIENT", "SASL_PLAINTEXT", "kafka.example.com", 9092),
        ("SSL", "SSL", "127.0.0.1", 9093)]
    # A bare HOST:PORT (accepted by the single-node broker before named listeners) is one
    # PLAINTEXT listener.
    (bare,) = resolve_listeners({"listeners": "127.0.0.1:9095"})
    assert (bare.name, bare.protocol, bare.advertised_port) == ("PLAINTEXT", "PLAINTEXT", 9095)
    with pytest.raises(BrokerConfigError) as missing:
        resolve_listeners({"listeners": "EXTERNAL://127.0.0.1:9092"})
    assert missing.value.key == "listener.security.protocol.map"
    with pytest.raises(BrokerConfigError) as bad:
        resolve_listeners({"listeners": "A://127.0.0.1:1",
                           "listener.security.protocol.map": "A:KERBEROS"})
    assert bad.value.key == "listener.security.protocol.map"
    with pytest.raises(BrokerConfigError) as inter:
        resolve_listeners({"listeners": "PLAINTEXT://127.0.0.1:1",
                           "inter.broker.listener.name": "INTERNAL"})
    assert inter.value.key == "inter.broker.listener.name"


def test_tls_settings(certs):
    pem = certs.server.read_text()
    key = pem[:pem.index("-----END PRIVATE KEY-----") + len("-----END PRIVATE KEY-----")]
    chain = pem[len(key):].strip()
    inline = TlsContext({"ssl.keystore.type": "PEM", "ssl.keystore.key": key,
                         "ssl.keystore.certificate.chain": chain,
                         "ssl.truststore.certificates": Path(certs.ca).read_text(),
                         "ssl.client.auth": "required"}, "SSL")
    assert inline.context is not None and inline.client_auth == "required"
    for settings, key_name in (
            ({"ssl.keystore.location": str(certs.server), "ssl.keystore.type": "JKS"},
             "ssl.keystore.type"),
            ({}, "ssl.keystore.location"),
            ({"ssl.keystore.location": str(certs.server), "ssl.client.auth": "required"},
             "ssl.truststore.location"),
            ({"ssl.keystore.location": str(certs.ca)}, "ssl.keystore.location"),
            ({"ssl.keystore.location": str(certs.server),
              "listener.name.ssl.ssl.principal.mapping.rules": "RULE:x"},
             "ssl.principal.mapping.rules")):
        with pytest.raises(BrokerConfigError) as failure:
            TlsContext(settings, "SSL")
        assert failure.value.key == key_name


def test_a_plain_login_sets_the_principal():
    spec = resolve_listeners({"listeners": "SASL_PLAINTEXT://127.0.0.1:9092"})[0]
    security = build_listener_security(spec, {
        "sasl.jaas.config": 'x required user_alice="pw";', "connections.max.reauth.ms": "0"},
        None)
    auth = ConnectionAuth(security, "127.0.0.1:1")
    assert auth.principal == ANONYMOUS and auth.refusal(3) is not None
    assert auth.handshake("PLAIN", 1) == (ErrorCode.NONE, ["PLAIN", "SCRAM-SHA-256",
                                                           "SCRAM-SHA-512"])
    step = auth.authenticate(b"\0alice\0pw")
    assert not step.failed and auth.principal == KafkaPrincipal("User", "alice")
    assert auth.refusal(3) is None
    assert security.counts.successful == 1 and security.counts.failed == 1


def test_encrypted_key_with_ssl_key_password(certs, tmp_path):
    from cryptography.hazmat.primitives import serialization

    pem = certs.server.read_bytes()
    key = serialization.load_pem_private_key(pem, password=None)
    encrypted = key.private_bytes(serialization.Encoding.PEM,
                                  serialization.PrivateFormat.PKCS8,
                                  serialization.BestAvailableEncryption(b"k3y-pw"))
    chain = pem[pem.index(b"-----BEGIN CERTIFICATE-----"):]
    store = tmp_path / "encrypted.pem"
    store.write_bytes(encrypted + chain)
    assert TlsContext({"ssl.keystore.location": str(store),
                       "ssl.key.password": "k3y-pw"}, "SSL").context is not None
    with pytest.raises(BrokerConfigError) as wrong:
        TlsContext({"ssl.keystore.location": str(store), "ssl.key.password": "nope"}, "SSL")
    assert wrong.value.key == "ssl.keystore.location" and "nope" not in str(wrong.value)
