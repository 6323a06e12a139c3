"""A blocking Kafka-protocol client for tests: one connection, raw frames or kafka-python
requests, responses decoded with kafka-python. Used by the broker's unit tests (in-process
broker) and integration tests (``ferry broker`` subprocess) to send exactly the frames a
test needs, including malformed ones.
"""

from __future__ import annotations

import itertools
import socket
import struct
import time
from typing import Any

__all__ = ["TIMEOUT_S", "WireClient"]

TIMEOUT_S = 20.0


class WireClient:
    """One connection speaking the Kafka protocol, one request at a time."""

    def __init__(self, port: int, host: str = "127.0.0.1") -> None:
        self.sock = socket.create_connection((host, port), timeout=TIMEOUT_S)
        self._correlation = itertools.count(1)

    def close(self) -> None:
        self.sock.close()

    def send(self, request: Any, version: int, client_id: str = "wire") -> int:
        """Send ``request`` at ``version``; returns its correlation id."""
        correlation_id = next(self._correlation)
        request.with_header(correlation_id=correlation_id, client_id=client_id)
        self.sock.sendall(bytes(request.encode(version=version, header=True, framed=True)))
        return correlation_id

    def receive(self, request: Any, correlation_id: int) -> Any:
        """The response to ``request`` (sent with ``correlation_id``), decoded."""
        frame = self.read_frame()
        response_class = request.header.get_response_class()
        response = response_class.decode(frame, header=True)
        assert response.header.correlation_id == correlation_id
        return response

    def call(self, request: Any, version: int) -> Any:
        return self.receive(request, self.send(request, version))

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def read_frame(self) -> bytes:
        (size,) = struct.unpack(">i", self._read_exactly(4))
        return self._read_exactly(size)

    def _read_exactly(self, n: int) -> bytes:
        chunks = []
        while n:
            chunk = self.sock.recv(n)
            if not chunk:
                raise ConnectionError("the broker closed the connection")
            chunks.append(chunk)
            n -= len(chunk)
        return b"".join(chunks)

    def closed_by_peer(self, timeout: float = TIMEOUT_S) -> bool:
        """Whether the broker closes this connection before ``timeout`` (reads until EOF)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.sock.settimeout(max(0.01, deadline - time.monotonic()))
            try:
                if not self.sock.recv(65536):
                    return True
            except (ConnectionResetError, BrokenPipeError):
                return True
            except TimeoutError:
                return False
        return False
