"""Bad SASL input over raw sockets: Kafka's error codes, the connection closed, one log
line without the secret, failures counted on /metrics and answered only after
``connection.failed.authentication.delay.ms``; KIP-368 session lifetimes and the raw
tokens of a v0 handshake."""

from __future__ import annotations

import os
import re
import struct
import time
import urllib.request

import pytest
from broker_process import free_port
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.protocol.metadata import ApiVersionsRequest, MetadataRequest
from kafka.protocol.sasl import SaslAuthenticateRequest, SaslHandshakeRequest
from kafka_wire import WireClient

from core.protocol.errors import ErrorCode

pytestmark = pytest.mark.integration

JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
        'user_alice="alice-secret";')
DELAY_MS = 400


@pytest.fixture
def sasl(secure_broker):
    metrics = free_port()
    broker, ports = secure_broker(
        {"SASL": "SASL_PLAINTEXT", "FAST": "SASL_PLAINTEXT"},
        {"sasl.jaas.config": JAAS,
         "listener.name.sasl.sasl.enabled.mechanisms": "PLAIN",
         "connection.failed.authentication.delay.ms": str(DELAY_MS),
         # per-listener overrides: the fuzzing listener answers failures at once
         "listener.name.fast.connection.failed.authentication.delay.ms": "0",
         "listener.name.fast.sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256",
         "connections.max.reauth.ms": "1500"},
        extra_args=["--metrics", f"127.0.0.1:{metrics}"])
    broker.fast_port = ports["FAST"]
    return broker, ports["SASL"], metrics


def _handshake(client: WireClient, mechanism: str = "PLAIN", version: int = 1):
    return client.call(SaslHandshakeRequest(mechanism=mechanism), version)


def _authenticate(client: WireClient, token: bytes, version: int = 2):
    return client.call(SaslAuthenticateRequest(auth_bytes=token), version)


def _failed_total(metrics_port: int, listener: str) -> float:
    text = urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics",
                                  timeout=10).read().decode()
    match = re.search(r'kafka_server_socket_server_metrics_failed_authentication_total'
                      rf'\{{listener="{listener}"\}} (\S+)', text)
    assert match, text[-2000:]
    return float(match.group(1))


def test_plain_login_and_wrong_password(sasl):
    broker, port, metrics = sasl
    good = WireClient(port)
    assert _handshake(good).mechanisms == ["PLAIN"]
    answer = _authenticate(good, b"\0alice\0alice-secret")
    assert answer.error_code == 0 and answer.session_lifetime_ms == 1500
    assert good.call(MetadataRequest(topics=[]), 1).brokers[0].port == port

    before = _failed_total(metrics, "SASL")
    bad = WireClient(port)
    _handshake(bad)
    started = time.monotonic()
    answer = _authenticate(bad, b"\0alice\0hunter2")
    assert time.monotonic() - started >= DELAY_MS / 1000 * 0.9  # a lower bound, not a timing
    assert answer.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
    assert "Invalid username or password" in answer.error_message
    assert bad.closed_by_peer(5)
    assert _failed_total(metrics, "SASL") == before + 1
    log = broker.log_path.read_text()
    assert "hunter2" not in log
    assert len([line for line in log.splitlines()
                if "Failed authentication" in line and "'alice'" in line]) == 1


# The random token has a fixed id: pytest-xdist workers each collect the suite and must
# see the same test names.
@pytest.mark.parametrize("token", [b"no-nul-bytes", b"\0\0", b"a\0alice\0alice-secret",
                                   b"\xff\0alice\0x",
                                   pytest.param(os.urandom(300), id="300-random-bytes")])
def test_malformed_plain_messages(sasl, token):
    _, port, _ = sasl
    client = WireClient(port)
    _handshake(client)
    answer = _authenticate(client, token)
    assert answer.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
    assert client.closed_by_peer(5)


def test_unknown_mechanism_and_sasl_out_of_order(sasl):
    broker, port, metrics = sasl
    before = _failed_total(metrics, "SASL")
    client = WireClient(port)
    answer = _handshake(client, "GSSAPI")
    assert answer.error_code == ErrorCode.UNSUPPORTED_SASL_MECHANISM
    assert answer.mechanisms == ["PLAIN"]
    assert client.closed_by_peer(5)

    early = WireClient(port)  # SaslAuthenticate before any handshake
    assert _authenticate(early, b"\0alice\0alice-secret").error_code == \
        ErrorCode.ILLEGAL_SASL_STATE
    assert early.closed_by_peer(5)

    # ApiVersions is served before authentication; Metadata is not
    sneaky = WireClient(port)
    assert sneaky.call(ApiVersionsRequest(), 0).error_code == 0
    sneaky.send(MetadataRequest(topics=[]), 1)
    assert sneaky.closed_by_peer(5)
    assert "ILLEGAL_SASL_STATE" in broker.log_path.read_text()
    assert _failed_total(metrics, "SASL") == before + 3


def test_sasl_on_a_plaintext_port(sasl):
    broker, _, _ = sasl
    client = WireClient(broker.port)
    assert _handshake(client).error_code == ErrorCode.ILLEGAL_SASL_STATE
    assert client.closed_by_peer(5)
    assert "SaslHandshake on a PLAINTEXT listener" in broker.log_path.read_text()
    other = WireClient(broker.port)  # the PLAINTEXT listener keeps serving
    assert other.call(MetadataRequest(topics=[]), 1).brokers[0].port == broker.port


def test_session_expiry_and_reauthentication(sasl):
    _, port, _ = sasl
    client = WireClient(port)
    _handshake(client)
    assert _authenticate(client, b"\0alice\0alice-secret").session_lifetime_ms == 1500
    time.sleep(1.0)  # re-authenticate before the end, as clients do
    _handshake(client)
    assert _authenticate(client, b"\0alice\0alice-secret").error_code == 0
    time.sleep(1.0)  # 2 s after the first login: alive thanks to the re-authentication
    assert client.call(MetadataRequest(topics=[]), 1).brokers
    time.sleep(1.8)  # past the second session's end
    client.send(MetadataRequest(topics=[]), 1)
    assert client.closed_by_peer(5)


def _raw(token: bytes) -> bytes:
    return struct.pack(">i", len(token)) + token


def test_v0_handshake_raw_tokens(sasl):
    _, port, _ = sasl
    client = WireClient(port)  # after SaslHandshake v0 the tokens travel unframed
    assert _handshake(client, version=0).error_code == 0
    client.send_raw(_raw(b"\0alice\0alice-secret"))
    assert client.read_frame() == b""
    assert client.call(MetadataRequest(topics=[]), 1).brokers
    wrong = WireClient(port)
    _handshake(wrong, version=0)
    wrong.send_raw(_raw(b"\0alice\0secret"))
    assert wrong.closed_by_peer(5)


def test_large_frame_before_authentication_is_refused(sasl):
    _, port, _ = sasl
    client = WireClient(port)
    client.send_raw(struct.pack(">i", 600_000) + b"\0" * 1000)  # over 512 KiB, unauthenticated
    assert client.closed_by_peer(5)
    ok = WireClient(port)  # after login the broker-wide limit applies again
    _handshake(ok)
    assert _authenticate(ok, b"\0alice\0alice-secret").error_code == 0
    big = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="t" * 200)] * 3000)
    assert ok.call(big, 1).brokers


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(mechanism=st.sampled_from(["PLAIN", "SCRAM-SHA-256"]),
       tokens=st.lists(st.binary(max_size=400), min_size=1, max_size=3))
def test_fuzzed_sasl_tokens_over_the_wire(sasl, mechanism, tokens):
    """Whatever the tokens, each is answered (never a crash): an error closes the
    connection, and the broker keeps serving."""
    broker, _, _ = sasl
    client = WireClient(broker.fast_port)
    assert _handshake(client, mechanism).error_code == 0
    for token in tokens:
        answer = _authenticate(client, token)
        if answer.error_code:
            assert answer.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
            assert client.closed_by_peer(5)
            break
    client.close()
    probe = WireClient(broker.fast_port)
    assert probe.call(ApiVersionsRequest(), 0).error_code == 0
    probe.close()
