"""Test support for the Elasticsearch sink: osmem-server, a fault-injecting HTTP proxy in
front of it, and reads through the plain HTTP API (not the connector's client)."""

from __future__ import annotations

import datetime
import http.client
import ipaddress
import json
import ssl
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from osmem_server import OsmemServer

__all__ = ["CLASS", "SCHEMA", "FaultProxy", "Http", "envelope", "row", "self_signed_cert",
           "sink", "start_osmem"]


CLASS = "io.confluent.connect.elasticsearch.ElasticsearchSinkConnector"
SCHEMA = {"type": "struct", "name": "order", "optional": False, "fields": [
    {"field": "id", "type": "int32"},
    {"field": "small", "type": "int8", "optional": True},
    {"field": "qty", "type": "int16", "optional": True},
    {"field": "total", "type": "int64", "optional": True},
    {"field": "price", "type": "float", "optional": True},
    {"field": "weight", "type": "double", "optional": True},
    {"field": "paid", "type": "boolean", "optional": True},
    {"field": "name", "type": "string", "optional": True},
    {"field": "blob", "type": "bytes", "optional": True},
    {"field": "at", "type": "int64", "name": "org.apache.kafka.connect.data.Timestamp",
     "optional": True},
    {"field": "day", "type": "int32", "name": "org.apache.kafka.connect.data.Date",
     "optional": True},
    {"field": "amount", "type": "bytes", "name": "org.apache.kafka.connect.data.Decimal",
     "parameters": {"scale": "2"}, "optional": True},
    {"field": "tags", "type": "array", "items": {"type": "string"}, "optional": True},
    {"field": "address", "type": "struct", "optional": True, "fields": [
        {"field": "city", "type": "string", "optional": True}]},
]}


def envelope(payload: dict[str, Any] | None, schema: dict[str, Any] = SCHEMA) -> bytes | None:
    return None if payload is None else json.dumps({"schema": schema,
                                                    "payload": payload}).encode()


def sink(url: str, topics: str, **extra: str) -> dict[str, str]:
    return {"connector.class": CLASS, "topics": topics, "connection.url": url,
            "key.converter": "org.apache.kafka.connect.storage.StringConverter",
            "value.converter": "org.apache.kafka.connect.json.JsonConverter",
            "value.converter.schemas.enable": "true", "linger.ms": "1",
            "retry.backoff.ms": "20", **extra}


def row(i: int, **over: Any) -> dict[str, Any]:
    base = {"id": i, "small": 1, "qty": 2, "total": 3, "price": 1.5, "weight": 2.25,
            "paid": True, "name": f"order {i}", "blob": "AAE=", "at": 1700000000000,
            "day": 19675, "amount": "MDk=", "tags": ["a", "b"], "address": {"city": "Oslo"}}
    base.update(over)
    return base


def start_osmem() -> OsmemServer:
    """osmem-server on a free 127.0.0.1 port (it exits with the test process)."""
    return OsmemServer.start(japanese=False, addr="127.0.0.1:0")


class Http:
    """Plain JSON calls to a server (``Accept: application/json``)."""

    def __init__(self, base: str) -> None:
        self.base = base.rstrip("/")

    def call(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.base + path, data=data, method=method, headers={
            "Content-Type": "application/json", "Accept": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                text = resp.read().decode()
                return resp.status, json.loads(text) if text else None
        except urllib.error.HTTPError as exc:
            text = exc.read().decode()
            return exc.code, json.loads(text) if text else None

    def docs(self, index: str) -> dict[str, Any]:
        """Every document of ``index`` by id (after a refresh)."""
        status, _ = self.call("POST", f"/{index}/_refresh")
        if status == 404:
            return {}
        status, body = self.call("POST", f"/{index}/_search?version=true",
                                 {"size": 10000, "query": {"match_all": {}}})
        assert status == 200, body
        return {h["_id"]: h["_source"] for h in body["hits"]["hits"]}

    def versions(self, index: str) -> dict[str, int]:
        self.call("POST", f"/{index}/_refresh")
        _, body = self.call("POST", f"/{index}/_search?version=true",
                            {"size": 10000, "query": {"match_all": {}}})
        return {h["_id"]: h["_version"] for h in body["hits"]["hits"]}

    def mapping(self, index: str) -> dict[str, Any]:
        status, body = self.call("GET", f"/{index}/_mapping")
        assert status == 200, body
        return body[index]["mappings"]

    def exists(self, index: str) -> bool:
        return self.call("HEAD", f"/{index}")[0] == 200


class FaultProxy:
    """An HTTP proxy to ``upstream`` on a free 127.0.0.1 port that records the media types
    of each request and injects faults on demand:

    * ``fail_bulk(n, status)``: the next n bulk requests get ``status`` (e.g. 429, 503);
    * ``reject_items(n)``: the next n bulk requests get 200 with every item refused 429
      (``es_rejected_execution_exception``), as a busy cluster answers;
    * ``down = True``: every connection is closed without an answer (server gone);
    * ``pose_as(major)``: answer the root endpoint as Elasticsearch ``major`` and refuse
      (406) requests whose media types are not ``compatible-with=<major>``, translating
      accepted ones to plain JSON for the upstream (osmem-server speaks only that);
    * ``require_auth(user, password)``: 401 without those basic credentials.
    """

    def __init__(self, upstream: str, tls: tuple[str, str] | None = None) -> None:
        """``tls``: (certificate, key) PEM files to serve HTTPS with."""
        self.upstream = urlsplit(upstream)
        self.requests: list[tuple[str, str, str, str]] = []  # method, path, accept, type
        self.down = False
        self._bulk_failures: list[int] = []
        self._item_rejections = 0
        self._pose_major: int | None = None
        self._auth: str | None = None
        self.bulk_calls = 0
        self.bulk_bodies: list[bytes] = []
        self.refused = 0  # connections dropped while down
        self.bulk_delay_s = 0.0  # a slow server: each bulk request answers this late
        self._lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _handle(self) -> None:
                proxy._serve(self)

            do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = _handle

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        scheme = "http"
        if tls is not None:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(*tls)
            self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
            scheme = "https"
        self.url = f"{scheme}://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()

    def fail_bulk(self, n: int, status: int) -> None:
        with self._lock:
            self._bulk_failures.extend([status] * n)

    def reject_items(self, n: int) -> None:
        with self._lock:
            self._item_rejections += n

    def pose_as(self, major: int) -> None:
        self._pose_major = major

    def require_auth(self, user: str, password: str) -> None:
        import base64
        self._auth = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    # -- serving --------------------------------------------------------------------
    def _serve(self, h: BaseHTTPRequestHandler) -> None:
        length = int(h.headers.get("Content-Length") or 0)
        body = h.rfile.read(length) if length else b""
        accept = h.headers.get("Accept", "")
        ctype = h.headers.get("Content-Type", "")
        self.requests.append((h.command, h.path, accept, ctype))
        if self.down:
            self.refused += 1
            h.close_connection = True
            h.connection.close()
            return
        if self._auth is not None and h.headers.get("Authorization") != self._auth:
            return self._reply(h, 401, {"error": {"type": "security_exception",
                                                  "reason": "unable to authenticate user"},
                                        "status": 401})
        path = h.path.split("?")[0]
        is_bulk = path.endswith("/_bulk")
        if self._pose_major is not None:
            if path == "/" and h.command == "GET":
                return self._reply(h, 200, {"name": "proxy", "cluster_name": "posing",
                                            "version": {"number": f"{self._pose_major}.15.0",
                                                        "build_flavor": "default"},
                                            "tagline": "You Know, for Search"},
                                   product=True)
            wanted = f"compatible-with={self._pose_major}"
            for value in (accept, ctype if body else wanted):
                if value and "vnd.elasticsearch" in value and wanted not in value:
                    return self._reply(h, 400, {"error": {
                        "type": "media_type_header_exception",
                        "reason": f"Invalid media-type value on headers [{value}]"},
                        "status": 400})
        if is_bulk:
            if self.bulk_delay_s:
                time.sleep(self.bulk_delay_s)
            with self._lock:
                self.bulk_calls += 1
                self.bulk_bodies.append(body)
                status = self._bulk_failures.pop(0) if self._bulk_failures else None
                reject = status is None and self._item_rejections > 0
                if reject:
                    self._item_rejections -= 1
            if status is not None:
                return self._reply(h, status, {"error": {
                    "type": "es_rejected_execution_exception" if status == 429
                    else "injected_failure", "reason": f"injected {status}"},
                    "status": status})
            if reject:
                return self._reply(h, 200, {"took": 1, "errors": True,
                                            "items": _rejected_items(body)})
        headers = {"Content-Type": _plain(ctype) or "application/json",
                   "Accept": _plain(accept) or "application/json"}
        if h.headers.get("Content-Encoding"):
            headers["Content-Encoding"] = h.headers["Content-Encoding"]
        conn = http.client.HTTPConnection(self.upstream.hostname, self.upstream.port,
                                          timeout=30)
        try:
            conn.request(h.command, h.path, body=body or None, headers=headers)
            resp = conn.getresponse()
            data = resp.read()
            h.send_response(resp.status)
            if self._pose_major is not None:  # Elasticsearch 8 names itself on every answer
                h.send_header("X-Elastic-Product", "Elasticsearch")
            h.send_header("Content-Type", resp.getheader("Content-Type", "application/json"))
            h.send_header("Content-Length", str(len(data)))
            h.end_headers()
            if h.command != "HEAD":
                h.wfile.write(data)
        finally:
            conn.close()

    @staticmethod
    def _reply(h: BaseHTTPRequestHandler, status: int, payload: Any,
               product: bool = False) -> None:
        data = json.dumps(payload).encode()
        h.send_response(status)
        if product:
            h.send_header("X-Elastic-Product", "Elasticsearch")
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        if h.command != "HEAD":
            h.wfile.write(data)


def self_signed_cert(directory: Path) -> tuple[str, str]:
    """A certificate for 127.0.0.1 and its key, as PEM files in ``directory``."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    cert_path, key_path = directory / "cert.pem", directory / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                           serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return str(cert_path), str(key_path)


def _plain(media_type: str) -> str:
    """``application/vnd.elasticsearch+json; compatible-with=8`` → ``application/json``."""
    if "vnd.elasticsearch+" in media_type:
        return "application/" + media_type.split("+", 1)[1].split(";")[0].strip()
    return media_type


def _rejected_items(body: bytes) -> list[dict[str, Any]]:
    items = []
    lines = iter(body.splitlines())
    for line in lines:
        if not line.strip():
            continue
        op = next(iter(json.loads(line)))
        if op != "delete":
            next(lines, None)
        items.append({op: {"status": 429, "error": {
            "type": "es_rejected_execution_exception",
            "reason": "rejected execution of coordinating operation"}}})
    return items
