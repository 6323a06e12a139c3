"""One TCP connection to one broker, and the per-broker pool that hands connections out.

A connection is used by one caller at a time (the pool guarantees it), so two requests'
bytes never interleave and responses arrive in request order; a caller that blocks in a
long poll or a JoinGroup holds its own connection while other calls take others. Any
failure (reset, timeout, a response that does not match) closes the connection: a
connection is never reused in an unknown state.
"""

from __future__ import annotations

import contextlib
import logging
import select
import socket
import ssl
import struct
import threading
import time
from collections.abc import Callable
from importlib import metadata as _metadata
from typing import Any

from kafka.protocol.metadata import ApiVersionsRequest, ApiVersionsResponse

from core.backends import errors as be
from core.backends.kafka.config import BrokerAddress
from core.backends.kafka.retry import Deadline
from core.protocol.client_security import ClientSecurity, ClientSecurityError
from core.protocol.errors import MalformedRequestError
from core.protocol.header import read_uvarint

__all__ = ["BrokerConnection", "ConnectionPool", "TransportError", "UnsupportedVersionError"]

log = logging.getLogger(__name__)

_SIZE = struct.Struct(">i")
_CORRELATION = struct.Struct(">i")
#: A response larger than this is taken for garbage (a desynchronised stream), not data.
MAX_FRAME_BYTES = 512 * 1024 * 1024
#: Close idle connections older than this rather than risk one the broker already dropped
#: (Kafka clients use 9 minutes against the broker's 10-minute idle limit).
MAX_IDLE_S = 540.0
_UNSUPPORTED_VERSION = 35
_API_VERSIONS_MAX = 3

try:
    _SOFTWARE_VERSION = _metadata.version("ferryman")
except _metadata.PackageNotFoundError:  # pragma: no cover - running from a source tree
    _SOFTWARE_VERSION = "0"


class TransportError(Exception):
    """The connection failed (refused, reset, timed out, garbled); the call may retry."""


class UnsupportedVersionError(be.BackendError):
    """The broker speaks no version of an API in the range this client can use."""


def _skip_tagged_fields(buf: memoryview, pos: int) -> int:
    """Skip a flexible-version tagged-field section (uvarint count, then tag/size/bytes)."""
    try:
        count, pos = read_uvarint(buf, pos)
        for _ in range(count):
            _tag, pos = read_uvarint(buf, pos)
            size, pos = read_uvarint(buf, pos)
            pos += size
    except MalformedRequestError as exc:
        raise TransportError(f"malformed tagged fields in a response header: {exc}") from exc
    return pos


class BrokerConnection:
    """A connected socket plus the broker's API version ranges (from ApiVersions)."""

    def __init__(self, address: BrokerAddress, client_id: str,
                 security: ClientSecurity | None = None) -> None:
        self.address = address
        self.security = security or ClientSecurity()
        self.client_id = client_id
        self.versions: dict[int, tuple[int, int]] = {}
        self.broken = False
        self.last_used = time.monotonic()
        self._sock: socket.socket | None = None
        self._correlation = 0

    # ------------------------------------------------------------------ setup

    def connect(self, connect_timeout_s: float, request_timeout_s: float,
                deadline: Deadline) -> None:
        """Open the socket and learn the broker's API versions; raises TransportError."""
        timeout = deadline.cap_s(connect_timeout_s)
        if timeout <= 0:
            raise TransportError(f"no time left to connect to {self.address}")
        try:
            sock = socket.create_connection((self.address.host, self.address.port), timeout)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError as exc:
            raise TransportError(f"cannot connect to {self.address}: {exc}") from exc
        try:
            sock = self.security.wrap(sock, self.address.host)
        except ClientSecurityError as exc:
            sock.close()
            raise be.InvalidConfigError(str(exc), key=exc.key or "ssl.ca.location") from exc
        except (OSError, ssl.SSLError) as exc:  # an untrusted broker certificate, a reset
            sock.close()
            raise TransportError(f"TLS with {self.address} failed: {exc}") from exc
        self._sock = sock
        try:
            self._negotiate(deadline.cap_s(request_timeout_s))
            try:
                self.security.authenticate(
                    lambda request, version: self.roundtrip(
                        request, version, deadline.cap_s(request_timeout_s)))
            except ClientSecurityError as exc:
                raise be.AuthenticationError(f"{self.address}: {exc}") from exc
        except BaseException:
            self.close()
            raise

    def _negotiate(self, timeout_s: float) -> None:
        version = _API_VERSIONS_MAX
        for _ in range(2):  # KIP-511: an old broker answers v0 with its own range
            request = ApiVersionsRequest(client_software_name="ferry",
                                         client_software_version=_SOFTWARE_VERSION)
            response = self.roundtrip(request, version, timeout_s)
            ranges = {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}
            if response.error_code == _UNSUPPORTED_VERSION and 18 in ranges:
                version = min(ranges[18][1], _API_VERSIONS_MAX)
                continue
            if response.error_code:
                raise TransportError(
                    f"{self.address} refused ApiVersions with error code {response.error_code}")
            self.versions = ranges
            return
        raise TransportError(f"{self.address} did not agree on an ApiVersions version")

    def version_for(self, api: Any, lowest: int, highest: int) -> int:
        """The highest version of ``api`` both sides speak within ``lowest..highest``."""
        broker = self.versions.get(api.API_KEY)
        if broker is not None:
            low, high = max(lowest, broker[0]), min(highest, broker[1])
            if low <= high:
                return high
        served = "none" if broker is None else f"{broker[0]}-{broker[1]}"
        raise UnsupportedVersionError(
            f"the broker at {self.address} does not support {api.name} versions "
            f"{lowest}-{highest} (it serves {served}); upgrade the broker or the client")

    # ------------------------------------------------------------------ requests

    def roundtrip(self, request: Any, version: int, timeout_s: float,
                  client_id: str | None = None) -> Any:
        """Send ``request`` encoded at ``version`` and return the decoded response."""
        correlation_id = self.send(request, version, timeout_s, client_id)
        return self.receive(request, version, correlation_id, timeout_s)

    def send(self, request: Any, version: int, timeout_s: float,
             client_id: str | None = None) -> int:
        sock = self._check()
        self._correlation = (self._correlation + 1) & 0x7FFFFFFF
        correlation_id = self._correlation
        request.API_VERSION = version
        request.with_header(correlation_id=correlation_id,
                            client_id=client_id or self.client_id)
        data = request.encode(header=True, framed=True)
        try:
            sock.settimeout(max(timeout_s, 0.001))
            sock.sendall(data)
        except OSError as exc:
            self._fail()
            raise TransportError(f"sending {request.name} to {self.address} failed: {exc}") from exc
        self.last_used = time.monotonic()
        return correlation_id

    def receive(self, request: Any, version: int, correlation_id: int, timeout_s: float) -> Any:
        until = time.monotonic() + timeout_s
        size = _SIZE.unpack(self._read(4, until, request))[0]
        if not 4 <= size <= MAX_FRAME_BYTES:
            self._fail()
            raise TransportError(f"{self.address} sent an impossible frame size {size}")
        frame = self._read(size, until, request)
        view = memoryview(frame)
        got = _CORRELATION.unpack_from(view, 0)[0]
        if got != correlation_id:
            self._fail()
            raise TransportError(
                f"{self.address} answered correlation id {got}, expected {correlation_id}")
        response_class = request.header.get_response_class()
        try:
            if response_class.API_KEY == ApiVersionsResponse.API_KEY:
                # KIP-511: ApiVersions responses always carry a v0 header.
                return ApiVersionsResponse.decode(bytes(view[4:]), version=version)
            pos = 4
            if request.flexible_version_q(version):
                pos = _skip_tagged_fields(view, pos)
            return response_class.decode(view[pos:], version=version)
        except (ValueError, IndexError, struct.error, UnicodeDecodeError) as exc:
            self._fail()
            raise TransportError(
                f"cannot decode {response_class.name} v{version} from {self.address}: {exc}"
            ) from exc
        finally:
            self.last_used = time.monotonic()

    def _read(self, n: int, until: float, request: Any) -> bytearray:
        sock = self._check()
        buf = bytearray(n)
        view = memoryview(buf)
        got = 0
        while got < n:
            remaining = until - time.monotonic()
            try:
                if remaining <= 0:
                    raise TimeoutError("timed out")
                sock.settimeout(remaining)
                k = sock.recv_into(view[got:], n - got)
            except OSError as exc:
                self._fail()
                raise TransportError(
                    f"no response to {request.name} from {self.address}: {exc}") from exc
            if k == 0:
                self._fail()
                raise TransportError(
                    f"{self.address} closed the connection during {request.name}")
            got += k
        return buf

    def looks_dead(self) -> bool:
        """True when an idle connection has something to read: the broker closed it (EOF)
        or sent bytes nobody asked for. Checked before reuse, so that a broker restart costs
        a reconnect rather than a failed attempt."""
        sock = self._sock
        if sock is None or self.broken:
            return True
        try:
            readable, _, _ = select.select([sock], [], [], 0)
        except (OSError, ValueError):
            return True
        return bool(readable)

    def _check(self) -> socket.socket:
        if self._sock is None or self.broken:
            raise TransportError(f"the connection to {self.address} is closed")
        return self._sock

    def _fail(self) -> None:
        self.broken = True
        self.close()

    def close(self) -> None:
        """Close the socket; a call blocked on it in another thread fails at once."""
        self.broken = True
        sock, self._sock = self._sock, None
        if sock is not None:
            with contextlib.suppress(OSError):  # not connected any more: nothing to wake
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()


class ConnectionPool:
    """Connections to one broker address: idle ones are reused (most recent first), more are
    opened while calls overlap, and at most ``max_idle`` are kept once they are returned."""

    def __init__(self, address: BrokerAddress, factory: Callable[[Deadline], BrokerConnection],
                 max_idle: int) -> None:
        self.address = address
        self._factory = factory
        self._max_idle = max_idle
        self._lock = threading.Lock()
        self._idle: list[BrokerConnection] = []  # guarded by _lock
        self._live: set[BrokerConnection] = set()  # every open connection; guarded by _lock
        self._closed = False

    def acquire(self, deadline: Deadline) -> BrokerConnection:
        stale: list[BrokerConnection] = []
        with self._lock:
            if self._closed:
                raise TransportError(f"the connection pool for {self.address} is closed")
            now = time.monotonic()
            conn = None
            while self._idle:
                candidate = self._idle.pop()
                if now - candidate.last_used > MAX_IDLE_S or candidate.looks_dead():
                    stale.append(candidate)
                    continue
                conn = candidate
                break
        for old in stale:
            self._discard(old)
        if conn is not None:
            return conn
        conn = self._factory(deadline)
        with self._lock:
            if self._closed:
                conn.close()
                raise TransportError(f"the connection pool for {self.address} is closed")
            self._live.add(conn)
        return conn

    def release(self, conn: BrokerConnection) -> None:
        with self._lock:
            if not conn.broken and not self._closed and len(self._idle) < self._max_idle:
                self._idle.append(conn)
                return
        self._discard(conn)

    def _discard(self, conn: BrokerConnection) -> None:
        conn.close()
        with self._lock:
            self._live.discard(conn)

    def close(self) -> None:
        """Close every connection, idle or in use (in-use callers fail promptly)."""
        with self._lock:
            self._closed = True
            live, self._live, self._idle = list(self._live), set(), []
        for conn in live:
            conn.close()
