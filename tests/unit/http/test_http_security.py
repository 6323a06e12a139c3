"""The shared HTTP layer's doors: HTTPS (server and client certificates made here with
``cryptography``), HTTP Basic authentication from the users files Kafka Connect and
Confluent read, failures counted, logged without the secret and rate-limited, request
limits. Real servers (waitress on 127.0.0.1) and a real client (requests)."""

from __future__ import annotations

import base64
import hashlib
import logging
import re
import socket
import ssl
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from certificates import CertAuthority
from hypothesis import example, given, settings
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry

from core.http.access_log import AccessLog
from core.http.auth import BasicAuth, FailureLimiter, failure_counter, tls_failure_hook
from core.http.server import HttpServer
from core.http.tls import ReloadingContext, TlsConfigError, TlsSettings
from core.http.users import UserEntry, UsersFileError, UserStore, jaas_login_file


def hello(environ: dict[str, Any], start_response: Any) -> list[bytes]:
    size = int(environ.get("QUERY_STRING") or 0)
    body = (f"{environ['wsgi.url_scheme']} {environ.get('REMOTE_USER', '-')} "
            f"{(environ.get('ferry.tls.peercert') or {}).get('subject', '')}").encode()
    body += b"x" * size
    start_response("200 OK", [("Content-Type", "text/plain"),
                              ("Content-Length", str(len(body)))])
    return [body]


@pytest.fixture
def ca(tmp_path: Path) -> CertAuthority:
    return CertAuthority(tmp_path / "pki")


def serve(app: Any, **kwargs: Any) -> HttpServer:
    server = HttpServer(app, name="test-http", ident="ferry-test", **kwargs)
    server.start()
    return server


@pytest.fixture
def servers() -> Iterator[list[HttpServer]]:
    started: list[HttpServer] = []
    yield started
    for server in started:
        server.stop(2)


def failures(registry: CollectorRegistry, reason: str) -> float:
    return registry.get_sample_value("ferry_http_authentication_failures_total",
                                     {"reason": reason}) or 0.0


def test_https_serves_large_answers_and_sees_client_certificates(
        ca: CertAuthority, servers: list[HttpServer]) -> None:
    server_cert, alice = ca.issue("server"), ca.issue("alice")
    tls = TlsSettings.from_props({"ssl.keystore.location": str(server_cert.key_and_cert),
                                  "ssl.truststore.location": str(ca.cert),
                                  "ssl.client.auth": "requested"})
    server = serve(hello, tls=tls.server_context())
    servers.append(server)
    assert server.url.startswith("https://")
    answer = requests.get(server.url + "/", verify=str(ca.cert), timeout=10)
    assert answer.status_code == 200 and answer.text.startswith("https - ")
    # 4 MiB through the TLS channel (many records, socket back-pressure), keep-alive too.
    with requests.Session() as session:
        for _ in range(2):
            big = session.get(server.url + "/?4194304", verify=str(ca.cert),
                              cert=(str(alice.cert), str(alice.key)), timeout=30)
            assert big.status_code == 200 and len(big.content) > 4194304
            assert "alice" in big.text[:200]
    # Plain HTTP on the HTTPS port never reaches the app.
    with pytest.raises(requests.ConnectionError):
        requests.get(server.url.replace("https", "http") + "/", timeout=5)


def test_required_client_auth_refuses_missing_untrusted_and_expired_certificates(
        ca: CertAuthority, servers: list[HttpServer], tmp_path: Path) -> None:
    registry = CollectorRegistry()
    counter = failure_counter(registry)
    server_cert = ca.issue("server")
    tls = TlsSettings(keystore=str(server_cert.key_and_cert), truststore=str(ca.cert),
                      client_auth="required")
    server = serve(hello, tls=tls.server_context(),
                   on_tls_failure=tls_failure_hook(counter, "test"))
    servers.append(server)
    good = ca.issue("bob")
    assert requests.get(server.url + "/", verify=str(ca.cert),
                        cert=(str(good.cert), str(good.key)), timeout=10).status_code == 200
    stranger = CertAuthority(tmp_path / "other", "other-ca").issue("mallory")
    expired = ca.issue("old", expired=True)
    for cert in (None, (str(stranger.cert), str(stranger.key)),
                 (str(expired.cert), str(expired.key))):
        with pytest.raises(requests.exceptions.RequestException):
            requests.get(server.url + "/", verify=str(ca.cert), cert=cert, timeout=10)
    # TLS 1.3: a client without a certificate learns of the refusal on its first read;
    # the server counts every refusal.
    assert failures(registry, "tls_handshake") >= 2


def test_tls_settings_name_the_bad_key(ca: CertAuthority, tmp_path: Path) -> None:
    with pytest.raises(TlsConfigError, match=re.escape("ssl.keystore.location")):
        TlsSettings().server_context()
    with pytest.raises(TlsConfigError, match=re.escape("listeners.https.ssl.keystore.type")):
        TlsSettings.from_props({"listeners.https.ssl.keystore.type": "JKS"},
                               ("listeners.https.", ""))
    with pytest.raises(TlsConfigError, match=re.escape("ssl.client.auth")):
        TlsSettings.from_props({"ssl.client.auth": "sometimes"})
    encrypted = ca.issue("locked", password="s3cret")
    with pytest.raises(TlsConfigError, match=re.escape("ssl.key.password")):
        TlsSettings(keystore=str(encrypted.key_and_cert)).server_context()
    context = TlsSettings.from_props({"ssl.keystore.location": str(encrypted.key_and_cert),
                                      "ssl.key.password": "s3cret"}).server_context()
    assert isinstance(context, ssl.SSLContext)
    # The prefixed key wins over the bare one.
    settings = TlsSettings.from_props({"listeners.https.ssl.truststore.location": "a",
                                       "ssl.truststore.location": "b"},
                                      ("listeners.https.", ""))
    assert settings.truststore == "a"


def test_basic_auth_users_files_and_jaas(tmp_path: Path) -> None:
    kafka_file = tmp_path / "connect.password"
    kafka_file.write_text("# Kafka's PropertyFileLoginModule\nadmin=pass,with,commas\n"
                          "reader: r3ad\n")
    store = UserStore.from_file(kafka_file, with_roles=False)
    assert store.authenticate("admin", "pass,with,commas") is not None
    assert store.authenticate("reader", "r3ad") is not None
    assert store.authenticate("reader", "wrong") is None
    assert store.authenticate("nobody", "r3ad") is None
    jetty = tmp_path / "registry.password"
    jetty.write_text("alice: alice-secret,admin,developer\n"
                     "bob: MD5:5f4dcc3b5aa765d61d8327deb882cf99,user\n")
    users = UserStore.from_file(jetty, with_roles=True)
    entry = users.authenticate("alice", "alice-secret")
    assert entry is not None and entry.roles == ("admin", "developer")
    assert users.authenticate("bob", "password") is not None  # MD5 of "password"
    (tmp_path / "bad").write_text("carol: CRYPT:abc\n")
    with pytest.raises(UsersFileError, match="CRYPT"):
        UserStore.from_file(tmp_path / "bad", with_roles=True)
    jaas = tmp_path / "jaas.conf"
    jaas.write_text('// comment\nOther { x.Y required file="/nope"; };\n'
                    'KafkaConnect {\n  org.apache.kafka.connect.rest.basic.auth.extension.'
                    f'PropertyFileLoginModule required\n  file="{kafka_file}";\n}};\n')
    assert jaas_login_file(jaas, "KafkaConnect") == str(kafka_file)
    with pytest.raises(UsersFileError, match="no section SchemaRegistry"):
        jaas_login_file(jaas, "SchemaRegistry")


def test_basic_auth_401_403_429_counted_logged_without_secret(
        tmp_path: Path, servers: list[HttpServer], caplog: pytest.LogCaptureFixture) -> None:
    users_file = tmp_path / "users"
    users_file.write_text("alice: wonderland,admin\nbob: builder,guest\n")
    registry = CollectorRegistry()
    now = [0.0]
    limiter = FailureLimiter(max_failures=3, window_s=60, clock=lambda: now[0])
    app = AccessLog(BasicAuth(hello, UserStore.from_file(users_file, with_roles=True),
                              realm="Test", service="test", registry=registry,
                              allowed_roles={"admin"}, limiter=limiter),
                    logging.getLogger("test.access"))
    server = serve(app)
    servers.append(server)
    url = server.url + "/"
    with caplog.at_level(logging.INFO):
        ok = requests.get(url, auth=("alice", "wonderland"), timeout=5)
        assert ok.status_code == 200 and ok.text.startswith("http alice")
        assert any("user alice" in r.getMessage() for r in caplog.records
                   if r.name == "test.access")
        missing = requests.get(url, timeout=5)
        assert missing.status_code == 401
        assert missing.headers["WWW-Authenticate"] == 'Basic realm="Test"'
        assert missing.json()["error_code"] == 401
        assert requests.get(url, auth=("bob", "builder"), timeout=5).status_code == 403
        wrong = requests.get(url, auth=("alice", "not-the-password"), timeout=5)
        assert wrong.status_code == 401
        assert requests.get(url, headers={"Authorization": "Basic !!!"},
                            timeout=5).status_code == 401
        assert requests.get(url, headers={"Authorization": "Bearer abc"},
                            timeout=5).status_code == 401
        # Three wrong credentials from this address (asking without any is no guess, a
        # refused role no failure of the password): now even the right password waits.
        limited = requests.get(url, auth=("alice", "wonderland"), timeout=5)
        assert limited.status_code == 429 and int(limited.headers["Retry-After"]) >= 1
        now[0] += 61  # the window moved on
        assert requests.get(url, auth=("alice", "wonderland"), timeout=5).status_code == 200
    text = "\n".join(r.getMessage() for r in caplog.records)
    assert "not-the-password" not in text and "wonderland" not in text
    assert "authentication failed for user 'alice' from 127.0.0.1" in text
    assert failures(registry, "missing_credentials") == 1
    assert failures(registry, "invalid_credentials") == 1
    assert failures(registry, "malformed_credentials") == 1
    assert failures(registry, "role_not_allowed") == 1
    assert failures(registry, "unsupported_scheme") == 1
    assert failures(registry, "rate_limited") == 1


def test_request_limits_answer_before_the_app(servers: list[HttpServer]) -> None:
    server = serve(hello, max_request_body_size=1024, max_request_header_size=4096)
    servers.append(server)
    assert requests.post(server.url + "/", data=b"x" * 2048, timeout=5).status_code == 413
    big_header = requests.get(server.url + "/", headers={"X-Big": "y" * 8192}, timeout=5)
    assert big_header.status_code == 431


def echo_length(environ: dict[str, Any], start_response: Any) -> list[bytes]:
    body = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
    answer = hashlib.sha256(body).hexdigest().encode()
    start_response("200 OK", [("Content-Length", str(len(answer)))])
    return [answer]


def test_https_reads_large_bodies_and_survives_garbage(ca: CertAuthority,
                                                       servers: list[HttpServer]) -> None:
    registry = CollectorRegistry()
    server_cert = ca.issue("server")
    server = serve(echo_length, tls=TlsSettings(keystore=str(server_cert.key_and_cert))
                   .server_context(),
                   on_tls_failure=tls_failure_hook(failure_counter(registry), "test"))
    servers.append(server)
    body = bytes(range(256)) * 12288  # 3 MiB: hundreds of TLS records in
    answer = requests.post(server.url + "/", data=body, verify=str(ca.cert), timeout=30)
    assert answer.text == hashlib.sha256(body).hexdigest()
    # Bytes that are no TLS at all close that connection only, counted.
    with socket.create_connection((server.host, server.port), timeout=5) as raw:
        raw.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n" + bytes(range(256)))
        assert not raw.recv(4096).startswith(b"HTTP/")  # an alert or EOF, no answer
    assert requests.post(server.url + "/", data=b"ok", verify=str(ca.cert),
                         timeout=30).status_code == 200
    assert failures(registry, "tls_handshake") == 1


def served_name(server: HttpServer, ca: Path) -> str:
    context = ssl.create_default_context(cafile=str(ca))
    with socket.create_connection((server.host, server.port), timeout=5) as raw, \
            context.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
        subject = dict(pair[0] for pair in tls.getpeercert()["subject"])
        return str(subject["commonName"])


def test_renewed_certificates_are_served_without_a_restart(
        ca: CertAuthority, servers: list[HttpServer], tmp_path: Path) -> None:
    keystore = tmp_path / "keystore.pem"
    keystore.write_bytes(ca.issue("first").key_and_cert.read_bytes())
    source = ReloadingContext(TlsSettings(keystore=str(keystore)), interval_s=0)
    server = serve(hello, tls=source)
    servers.append(server)
    assert served_name(server, ca.cert) == "first"
    keystore.write_bytes(ca.issue("second").key_and_cert.read_bytes())
    assert served_name(server, ca.cert) == "second" and source.reloads == 1
    # A file caught half-written keeps the previous certificate in service.
    keystore.write_bytes(b"-----BEGIN PRIVATE KEY-----\nMIG")
    assert served_name(server, ca.cert) == "second"
    keystore.write_bytes(ca.issue("third").key_and_cert.read_bytes())
    assert served_name(server, ca.cert) == "third" and source.reloads == 2


@given(header=st.one_of(st.text(max_size=200),
                        st.binary(max_size=120).map(
                            lambda b: "Basic " + base64.b64encode(b).decode())))
@example(header="Basic " + base64.b64encode(b"alice:wonderland").decode())
@example(header="basic  " + base64.b64encode(b"alice:wonderland ").decode())
@settings(max_examples=300)
def test_no_authorization_header_but_the_right_one_passes(header: str) -> None:
    store = UserStore({"alice": UserEntry("wonderland")})
    auth = BasicAuth(hello, store, realm="Fuzz", service="fuzz",
                     registry=CollectorRegistry(),
                     limiter=FailureLimiter(max_failures=10**9))
    statuses: list[str] = []
    auth({"PATH_INFO": "/", "REQUEST_METHOD": "GET", "REMOTE_ADDR": "10.0.0.1",
          "wsgi.url_scheme": "http", "HTTP_AUTHORIZATION": header},
         lambda status, headers, exc_info=None: statuses.append(status))
    right = header.strip().lower().startswith("basic ") and header.strip()[6:].strip() == \
        base64.b64encode(b"alice:wonderland").decode()
    assert statuses == ["200 OK" if right else "401 Unauthorized"]
