"""The listening sockets: accept, apply the connection quotas, hand over to a protocol.

asyncio's own ``create_server`` accepts up to its backlog in one go before any protocol
sees a connection, and when ``accept()`` fails for lack of file descriptors it reports
the failure once per pending connection and schedules one retry for each (which is how a
flood of idle connections once wrote 322 MB of log in 25 s). The ``Acceptor`` accepts one
connection at a time instead, asks ``ConnectionQuotas`` before a transport exists, closes
a refused socket at once, and when ``accept()`` itself fails it logs through the
rate-limited log and pauses accepting for a second, once.

All methods run on the event loop's thread.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import socket
import ssl
from collections.abc import Callable

from core.broker.connection_quotas import ConnectionQuotas
from core.broker.log_limit import RateLimitedLog

__all__ = ["Acceptor"]

log = logging.getLogger(__name__)

_ACCEPTS_PER_WAKEUP = 64  # then the loop serves the connections it has for a while
_RETRY_AFTER_S = 1.0
_OUT_OF_RESOURCES = (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM)


class Acceptor:
    """Listens on ``host``:``port`` (every interface when ``host`` is empty) and starts
    ``protocol_factory(address)`` for each admitted connection from ``address``; the
    protocol must call ``quotas.release(address)`` when its connection is lost."""

    def __init__(self, host: str, port: int, *, quotas: ConnectionQuotas,
                 warnings: RateLimitedLog,
                 protocol_factory: Callable[[str], asyncio.Protocol],
                 backlog: int = 1024,
                 tls: Callable[[], ssl.SSLContext] | None = None,
                 on_handshake_failure: Callable[[str, Exception, asyncio.Protocol | None],
                                                None] | None = None,
                 ) -> None:
        """``tls`` gives the SSLContext for each new connection (it may be replaced
        between connections: certificate reload); ``on_handshake_failure`` hears of each
        connection whose TLS handshake failed, with the protocol made for it (which never
        saw ``connection_made``)."""
        self._tls = tls
        self._on_handshake_failure = on_handshake_failure
        self._host = host
        self._port = port
        self._quotas = quotas
        self._warnings = warnings
        self._factory = protocol_factory
        self._backlog = backlog
        self._sockets: list[socket.socket] = []
        self._paused: set[int] = set()  # listening fds waiting for a retry
        self._loop: asyncio.AbstractEventLoop | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def port(self) -> int:
        """The bound port (useful when listening on port 0)."""
        assert self._sockets, "start() first"
        return int(self._sockets[0].getsockname()[1])

    def start(self) -> None:
        """Bind and listen; raises OSError if the address cannot be bound."""
        self._loop = asyncio.get_running_loop()
        port = self._port
        try:
            for family, kind, proto, _, address in _addresses(self._host, port):
                sock = socket.socket(family, kind, proto)
                self._sockets.append(sock)
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                if family == socket.AF_INET6:
                    sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
                if port == 0 and len(self._sockets) > 1:  # every family on the same port
                    address = (address[0], self.port, *address[2:])
                sock.bind(address)
                sock.listen(self._backlog)
                sock.setblocking(False)
        except BaseException:
            self.close()
            raise
        for sock in self._sockets:
            self._loop.add_reader(sock.fileno(), self._accept, sock)

    def close(self) -> None:
        """Stop accepting and close the listening sockets (connections stay open)."""
        for sock in self._sockets:
            if self._loop is not None and sock.fileno() >= 0:
                self._loop.remove_reader(sock.fileno())
            sock.close()
        self._sockets = []

    async def wait_closed(self) -> None:
        """Until connections accepted before ``close`` have been handed over."""
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    def _accept(self, listening: socket.socket) -> None:
        for _ in range(_ACCEPTS_PER_WAKEUP):
            try:
                conn, peer = listening.accept()
            except (BlockingIOError, InterruptedError):
                return
            except ConnectionAbortedError:
                continue
            except OSError as exc:
                if exc.errno not in _OUT_OF_RESOURCES:
                    self._warnings.error("accept", "accepting a connection failed: %s", exc)
                    return
                self._warnings.error(
                    "accept", "cannot accept connections: %s; retrying in %.0f s", exc,
                    _RETRY_AFTER_S)
                self._pause(listening)
                return
            address = str(peer[0]) if isinstance(peer, tuple) else str(peer)
            refused = self._quotas.admit(address, conn.fileno())
            if refused is not None:
                conn.close()  # before any transport: the descriptor is free at once
                self._warnings.warning("refused", "Rejected connection from %s: %s",
                                       _peer_text(peer), refused)
                continue
            conn.setblocking(False)
            assert self._loop is not None
            task = self._loop.create_task(self._hand_over(conn, address))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _hand_over(self, conn: socket.socket, address: str) -> None:
        assert self._loop is not None
        made: list[asyncio.Protocol] = []

        def factory() -> asyncio.Protocol:
            made.append(self._factory(address))
            return made[0]

        try:
            if self._tls is None:
                await self._loop.connect_accepted_socket(lambda: self._factory(address), conn)
            else:
                from core.broker.security.tls import HANDSHAKE_TIMEOUT_S

                await self._loop.connect_accepted_socket(
                    factory, conn, ssl=self._tls(),
                    ssl_handshake_timeout=HANDSHAKE_TIMEOUT_S)
        except Exception as exc:  # the socket failed before the protocol owned it
            self._quotas.release(address)
            conn.close()
            if self._tls is not None and self._on_handshake_failure is not None:
                self._on_handshake_failure(address, exc, made[0] if made else None)
            log.debug("connection from %s failed before it started: %s", address, exc)

    def _pause(self, listening: socket.socket) -> None:
        fd = listening.fileno()
        if fd in self._paused or self._loop is None:
            return
        self._paused.add(fd)
        self._loop.remove_reader(fd)

        def resume() -> None:
            self._paused.discard(fd)
            if listening in self._sockets:
                assert self._loop is not None
                self._loop.add_reader(fd, self._accept, listening)

        self._loop.call_later(_RETRY_AFTER_S, resume)


def _addresses(host: str, port: int) -> list[tuple]:
    infos = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM,
                               flags=socket.AI_PASSIVE)
    unique: list[tuple] = []
    for info in infos:
        if info not in unique:
            unique.append(info)
    return unique


def _peer_text(peer: object) -> str:
    return f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else str(peer)
