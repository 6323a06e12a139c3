"""SSL and SASL_SSL listeners with real clients; client certificates, their principal
mapping, refusals (expired, untrusted, missing) and certificate reload without restart.

Certificates are made by the tests (``tests/certificates.py``).
"""

from __future__ import annotations

import shutil
import socket
import ssl
import time

import pytest
from broker_process import BrokerProcess
from certificates import write_server_cert
from client_sends import aiokafka_send, kafka_python_send
from confluent_kafka import KafkaError, Producer

pytestmark = pytest.mark.integration

JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
        'user_alice="alice-secret";')


def _ssl_conf(bootstrap: str, tls, client=None, protocol: str = "SSL") -> dict:
    conf = {"bootstrap.servers": bootstrap, "security.protocol": protocol,
            "ssl.ca.location": str(tls.ca), "message.timeout.ms": 8000}
    if client is not None:
        conf.update({"ssl.certificate.location": str(client.cert),
                     "ssl.key.location": str(client.key)})
    return conf


def _produce(conf: dict, topic: str = "tls-topic") -> list:
    errors: list = []
    producer = Producer({**conf, "error_cb": errors.append})
    producer.produce(topic, b"x")
    left = producer.flush(10)
    return errors if left or errors else []


@pytest.fixture
def tls_broker(secure_broker, tls, tmp_path):
    server = tmp_path / "server.pem"
    shutil.copy(tls.server, server)
    broker, ports = secure_broker(
        {"SSL": "SSL", "MTLS": "SSL", "SECURE": "SASL_SSL"},
        {"ssl.keystore.location": str(server),
         "ssl.truststore.location": str(tls.ca),
         "listener.name.mtls.ssl.client.auth": "required",
         # alice's certificate maps to "alice"; bob's matches no rule and is refused
         "listener.name.mtls.ssl.principal.mapping.rules":
             "RULE:^CN=([a-z]+),OU=tenant-a,O=Ferry$/$1/L",
         "listener.name.secure.sasl.enabled.mechanisms": "PLAIN",
         "listener.name.secure.plain.sasl.jaas.config": JAAS,
         "connection.failed.authentication.delay.ms": "10",
         "auto.create.topics.enable": "true"})
    return broker, {n: f"127.0.0.1:{p}" for n, p in ports.items()}, server


def test_ssl_listener_with_librdkafka(tls_broker, tls):
    _, addr, _ = tls_broker
    assert _produce(_ssl_conf(addr["SSL"], tls)) == []


def test_mutual_tls_and_principal_mapping(tls_broker, tls):
    broker, addr, _ = tls_broker
    assert _produce(_ssl_conf(addr["MTLS"], tls, tls.alice)) == []
    for refused in (None, tls.bob, tls.expired, tls.untrusted):
        errors = _produce(_ssl_conf(addr["MTLS"], tls, refused))
        assert errors, f"{refused} was let in"
    log = broker.log_path.read_text()
    assert "no rule of ssl.principal.mapping.rules matches 'CN=bob'" in log
    assert "certificate has expired" in log and "TLS handshake" in log


def test_sasl_ssl_plain_with_three_clients(tls_broker, tls):
    from aiokafka.helpers import create_ssl_context

    _, addr, _ = tls_broker
    conf = {**_ssl_conf(addr["SECURE"], tls, protocol="SASL_SSL"),
            "sasl.mechanism": "PLAIN", "sasl.username": "alice",
            "sasl.password": "alice-secret"}
    assert _produce(conf) == []
    wrong = _produce({**conf, "sasl.password": "wrong"})
    assert any(e.code() == KafkaError._AUTHENTICATION for e in wrong)

    login = {"bootstrap_servers": addr["SECURE"], "security_protocol": "SASL_SSL",
             "sasl_mechanism": "PLAIN", "sasl_plain_username": "alice",
             "sasl_plain_password": "alice-secret"}
    kafka_python_send("kp-tls", ssl_cafile=str(tls.ca), **login)
    aiokafka_send("aio-tls", ssl_context=create_ssl_context(cafile=str(tls.ca)), **login)


def _server_cn(address: str, ca) -> str:
    host, port = address.rsplit(":", 1)
    context = ssl.create_default_context(cafile=str(ca))
    with socket.create_connection((host, int(port)), timeout=5) as raw, \
            context.wrap_socket(raw, server_hostname=host) as conn:
        subject = dict(item[0] for item in conn.getpeercert()["subject"])
    return subject["commonName"]


def test_certificate_reload_without_restart(tls_broker, tls):
    broker, addr, server = tls_broker
    assert _server_cn(addr["SSL"], tls.ca) == "ferry"
    fresh = server.with_name("fresh.pem")
    write_server_cert(fresh, tls.authority, cn="ferry-renewed")
    fresh.replace(server)  # atomically, as cert-manager and certbot do
    deadline = time.monotonic() + 10
    while _server_cn(addr["SSL"], tls.ca) != "ferry-renewed":
        assert time.monotonic() < deadline, broker.output()
        time.sleep(0.2)
    assert _produce(_ssl_conf(addr["SSL"], tls)) == []
    assert isinstance(broker, BrokerProcess)


def test_kcat_over_sasl_ssl_and_mutual_tls(tls_broker, tls):
    import subprocess

    _, addr, _ = tls_broker
    common = ["kcat", "-X", f"ssl.ca.location={tls.ca}"]
    produced = subprocess.run(
        [*common, "-b", addr["SECURE"], "-X", "security.protocol=SASL_SSL",
         "-X", "sasl.mechanisms=PLAIN", "-X", "sasl.username=alice",
         "-X", "sasl.password=alice-secret", "-P", "-t", "kcat-tls"],
        input=b"a\nb\n", capture_output=True, timeout=60)
    assert produced.returncode == 0, produced.stderr
    consumed = subprocess.run(
        [*common, "-b", addr["MTLS"], "-X", "security.protocol=SSL",
         "-X", f"ssl.certificate.location={tls.alice.cert}",
         "-X", f"ssl.key.location={tls.alice.key}",
         "-C", "-t", "kcat-tls", "-o", "beginning", "-e", "-c", "2"],
        capture_output=True, timeout=60)
    assert consumed.stdout.split() == [b"a", b"b"], consumed.stderr
    refused = subprocess.run(
        [*common, "-b", addr["SECURE"], "-X", "security.protocol=SASL_SSL",
         "-X", "sasl.mechanisms=PLAIN", "-X", "sasl.username=alice",
         "-X", "sasl.password=wrong", "-L", "-m", "5"],
        capture_output=True, timeout=60)
    assert refused.returncode != 0
    assert b"Invalid username or password" in refused.stderr


def test_certificate_change_by_alter_configs(tls_broker, tls):
    from confluent_kafka.admin import (
        AdminClient,
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        ResourceType,
    )

    broker, addr, server = tls_broker
    renewed = server.with_name("renewed.pem")
    write_server_cert(renewed, tls.authority, cn="ferry-by-alter-configs")
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    resource = ConfigResource(ResourceType.BROKER, "0", incremental_configs=[ConfigEntry(
        "listener.name.ssl.ssl.keystore.location", str(renewed),
        incremental_operation=AlterConfigOpType.SET)])
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(20)
    deadline = time.monotonic() + 10
    while _server_cn(addr["SSL"], tls.ca) != "ferry-by-alter-configs":
        assert time.monotonic() < deadline, broker.output()
        time.sleep(0.2)
    assert _server_cn(addr["MTLS"], tls.ca) == "ferry"  # other listeners keep theirs
    # stored with the dynamic configs: after a restart every listener is as it was
    broker.restart()
    assert _server_cn(addr["SSL"], tls.ca) == "ferry-by-alter-configs"
    assert _server_cn(addr["MTLS"], tls.ca) == "ferry"
