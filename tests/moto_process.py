"""A real S3 API for tests: ``moto_server`` (PyPI ``moto[server]``) as a subprocess on a
free 127.0.0.1 port, and ``FaultProxy``, an HTTP proxy in front of it that answers chosen
requests with 500/503, or stalls them past the client's read timeout, to inject S3
faults."""

from __future__ import annotations

import http.client
import http.server
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import botocore.config

from core.cli.demo.processes import start_moto

__all__ = ["FaultProxy", "MotoServer", "Stall", "s3_client"]

START_TIMEOUT_S = 30.0


def s3_client(url: str) -> Any:
    """A boto3 client for tests (dummy credentials: moto accepts any)."""
    return boto3.client("s3", endpoint_url=url, region_name="us-east-1",
                        aws_access_key_id="test", aws_secret_access_key="test",
                        config=botocore.config.Config(s3={"addressing_style": "path"}))


class MotoServer:
    """``moto_server -H 127.0.0.1 -p PORT``; ``stop()`` kills it."""

    def __init__(self, log_dir: Path) -> None:
        self._child, self.url = start_moto(log_dir / "moto.log", START_TIMEOUT_S)
        self.proc = self._child.proc
        self.port = int(self.url.rsplit(":", 1)[1])
        self.client = s3_client(self.url)

    def create_bucket(self, name: str) -> None:
        self.client.create_bucket(Bucket=name)

    def objects(self, bucket: str, prefix: str = "") -> dict[str, bytes]:
        """Every object under ``prefix``: key -> content."""
        out: dict[str, bytes] = {}
        for page in self.client.get_paginator("list_objects_v2").paginate(Bucket=bucket,
                                                                           Prefix=prefix):
            for item in page.get("Contents", []):
                out[item["Key"]] = self.client.get_object(Bucket=bucket,
                                                          Key=item["Key"])["Body"].read()
        return out

    def keys(self, bucket: str, prefix: str = "") -> list[str]:
        keys: list[str] = []
        for page in self.client.get_paginator("list_objects_v2").paginate(Bucket=bucket,
                                                                           Prefix=prefix):
            keys += [item["Key"] for item in page.get("Contents", [])]
        return sorted(keys)

    def stop(self) -> None:
        self._child.stop(timeout=0)


@dataclass(frozen=True)
class Stall:
    """Hold the request ``seconds`` without answering, then close the connection: the
    request never reaches S3, and a client whose read timeout is shorter gives up first."""

    seconds: float


#: ``rule(method, path)``: None forwards; a status (500, 503) or (status, S3 error code)
#: answers with that error instead; a ``Stall`` answers nothing.
Rule = Callable[[str, str], "int | tuple[int, str] | Stall | None"]
_CODES = {500: "InternalError", 503: "ServiceUnavailable"}


class FaultProxy:
    """Forwards HTTP requests to ``target``; ``rule`` (see ``Rule``) may answer with an
    error instead, without forwarding. Counts injected faults."""

    def __init__(self, target_port: int) -> None:
        self.rule: Rule = lambda _m, _p: None
        self.injected = 0
        self.stalled = 0
        self.forwarded = 0
        self._stopping = threading.Event()
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *_args: Any) -> None:
                pass

            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                answer_with = proxy.rule(self.command, self.path)
                if isinstance(answer_with, Stall):
                    proxy.stalled += 1
                    proxy._stopping.wait(answer_with.seconds)
                    self.close_connection = True
                    return
                if answer_with is not None:
                    proxy.injected += 1
                    status, code = (answer_with if isinstance(answer_with, tuple)
                                    else (answer_with, _CODES.get(answer_with, "Error")))
                    payload = (f"<?xml version=\"1.0\"?><Error><Code>{code}</Code>"
                               "<Message>injected</Message></Error>").encode()
                    self.send_response(status)
                    self.send_header("Content-Type", "application/xml")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                    return
                conn = http.client.HTTPConnection("127.0.0.1", target_port, timeout=60)
                headers = {k: v for k, v in self.headers.items()
                           if k.lower() not in ("connection", "transfer-encoding")}
                conn.request(self.command, self.path, body=body, headers=headers)
                answer = conn.getresponse()
                data = answer.read()
                proxy.forwarded += 1
                self.send_response(answer.status)
                for k, v in answer.getheaders():
                    if k.lower() not in ("connection", "transfer-encoding", "content-length",
                                         "server", "date"):
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)
                conn.close()

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _handle

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        self.server.shutdown()
        self.server.server_close()
        self._thread.join(10)
