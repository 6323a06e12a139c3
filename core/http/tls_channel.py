"""HTTPS under waitress: a channel that speaks TLS through memory BIOs.

waitress has no TLS of its own, and a non-blocking ``SSLSocket`` does not fit its
asyncore loop (``SSLWantReadError`` is not ``EWOULDBLOCK``, and decrypted bytes buffered in
the TLS object do not wake ``select``). So the channel keeps the plain socket and an
``ssl.SSLObject`` over two ``MemoryBIO``s: what the socket delivers goes into the incoming
BIO, and every plaintext byte available is read out at once (nothing stays buffered);
what the app writes is encrypted into the outgoing BIO and sent as the socket allows. The
handshake runs the same way, on the first reads. The client certificate, if any, reaches
the app as ``environ["ferry.tls.peercert"]`` (``SSLObject.getpeercert()``).
"""

from __future__ import annotations

import logging
import ssl
import time
from collections.abc import Callable
from typing import Any

from waitress.channel import HTTPChannel
from waitress.server import TcpWSGIServer
from waitress.task import WSGITask

__all__ = ["PEERCERT_ENVIRON_KEY", "TlsChannel", "TlsWSGIServer"]

log = logging.getLogger(__name__)

PEERCERT_ENVIRON_KEY = "ferry.tls.peercert"
#: Encrypted bytes the socket did not take yet; past this the channel takes no more
#: plaintext until the socket drained it (back-pressure for large answers).
_MAX_PENDING = 256 * 1024
_SEND_CHUNK = 64 * 1024


class TlsTask(WSGITask):
    """A request on a TLS channel: the environ says ``https`` and carries the peer cert."""

    def get_environment(self) -> dict[str, Any]:
        environ: dict[str, Any] = super().get_environment()
        environ["wsgi.url_scheme"] = "https"
        environ["HTTPS"] = "on"
        environ[PEERCERT_ENVIRON_KEY] = getattr(self.channel, "peercert", None)
        return environ


class TlsChannel(HTTPChannel):
    """An ``HTTPChannel`` whose bytes go through the server's ``ssl_context``."""

    task_class = TlsTask

    def __init__(self, server: TlsWSGIServer, sock: Any, addr: Any, adj: Any,
                 map: Any = None) -> None:
        self._incoming = ssl.MemoryBIO()
        self._outgoing = ssl.MemoryBIO()
        source = server.ssl_context
        context = source if isinstance(source, ssl.SSLContext) else source.current()
        self._tls = context.wrap_bio(self._incoming, self._outgoing, server_side=True)
        self._pending = bytearray()
        self._handshaken = False
        self._closing = False
        self._on_failure = server.on_tls_failure
        self.peercert: dict[str, Any] | None = None
        super().__init__(server, sock, addr, adj, map)

    # --------------------------------------------------------------- reading

    def handle_read(self) -> None:
        try:
            raw = self.socket.recv(self.adj.recv_bytes)
        except BlockingIOError:
            return
        except OSError:
            self.handle_close()
            return
        if not raw:
            self.handle_close()
            return
        self._incoming.write(raw)
        plain = bytearray()
        try:
            if not self._handshaken:
                self._tls.do_handshake()
                self._handshaken = True
                self.peercert = self._tls.getpeercert() or None
            while True:
                plain += self._tls.read(65536)
        except ssl.SSLWantReadError:
            pass
        except ssl.SSLZeroReturnError:  # close_notify: answer what came before it, then close
            self._move_outgoing()
            self._send_pending()
            if not plain:
                self.handle_close()
                return
            self.close_when_flushed = True
        except ssl.SSLError as exc:
            self._send_pending()
            if not self._handshaken and self._on_failure is not None:
                self._on_failure(self.addr, exc)
            self.handle_close()
            return
        self._move_outgoing()
        self._send_pending()
        if plain:
            self.last_activity = time.time()
            self.received(bytes(plain))

    # --------------------------------------------------------------- writing

    def send(self, data: bytes, do_close: bool = True) -> int:
        """Encrypt ``data`` (all of it, or none while earlier bytes wait) and send."""
        if self._pending:
            self._send_pending()
            if len(self._pending) >= _MAX_PENDING:
                return 0
        try:
            self._tls.write(data)
        except ssl.SSLError:
            self.will_close = True
            return 0
        self._move_outgoing()
        self._send_pending()
        return len(data)

    def writable(self) -> bool:
        return bool(self._pending) or super().writable()

    def readable(self) -> bool:
        return not self._closing and super().readable()

    def handle_write(self) -> None:
        if self._pending:
            self._send_pending()
            if self._pending:
                return
            if self._closing:
                super().handle_close()
                return
        super().handle_write()

    def handle_close(self) -> None:
        # waitress closes once its own buffers are empty, but the end of the answer may
        # still wait here encrypted: the close then waits for ``handle_write`` to send it
        # (a peer that went away fails the send, which drops it).
        if self._pending and self.connected:
            self._send_pending()
            if self._pending:
                self._closing = True
                return
        super().handle_close()

    def _move_outgoing(self) -> None:
        if self._outgoing.pending:
            self._pending += self._outgoing.read()

    def _send_pending(self) -> None:
        while self._pending:
            try:
                # a copy: a bytearray exported to a failing send cannot be cleared
                sent = self.socket.send(bytes(self._pending[:_SEND_CHUNK]))
            except BlockingIOError:
                return
            except OSError:
                self._pending.clear()
                self.will_close = True
                return
            if not sent:
                return
            del self._pending[:sent]


class TlsWSGIServer(TcpWSGIServer):
    """waitress's TCP server with ``TlsChannel`` connections."""

    channel_class = TlsChannel
    #: A context, or a ``ReloadingContext`` asked for the current one at each accept.
    ssl_context: Any
    on_tls_failure: Callable[[Any, ssl.SSLError], None] | None = None
