"""core.http.client: the one request a follower sends to its leader (Connect, registry)."""

from __future__ import annotations

import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from core.http.client import RequestFailedError, send_request


class _Echo(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        answer = f"{self.path} {self.headers['X-Test']} ".encode() + body
        self.send_response(201)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Echo)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()
    thread.join(5)


def test_sends_path_query_headers_and_body_and_reads_the_whole_answer(server):
    response = send_request(f"{server}/a/b?x=1", "POST", b"hello", {"X-Test": "yes"},
                            timeout_s=5)
    assert response.status == 201
    assert response.body == b"/a/b?x=1 yes hello"
    assert response.headers["content-type"] == "text/plain"


@pytest.mark.parametrize("url", ["ftp://127.0.0.1/x", "not a url", "http:///path"])
def test_a_url_that_is_not_http_is_refused_without_a_cause(url):
    with pytest.raises(RequestFailedError) as info:
        send_request(url, "GET", timeout_s=1)
    assert info.value.cause is None and info.value.reason == "not an http(s) URL"


def test_an_unreachable_server_names_the_lower_error():
    with socket.socket() as sock:  # a port nobody listens on: bound, never listened
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        with pytest.raises(RequestFailedError) as info:
            send_request(f"http://127.0.0.1:{port}/", "GET", timeout_s=2)
    assert isinstance(info.value.cause, ConnectionRefusedError)
    assert info.value.reason.startswith("ConnectionRefusedError:")
