"""``HttpServer``: a WSGI app under waitress, started and stopped from a thread.

waitress is a pure-Python production WSGI server (a thread pool behind an asyncore-style
loop). ``start()`` runs the loop on a daemon thread and returns once the socket is
listening; ``stop(timeout)`` closes the listening socket and every connection from the
loop's own thread (via waitress's trigger), then joins the loop and the worker threads,
each within the timeout, so shutdown is bounded even with a request stuck in the app.
Connect's REST server, the registry's and the broker's metrics port all run on it.
With an ``ssl.SSLContext`` the listener speaks HTTPS (``tls_channel``); request lines and
headers are bounded (``max_request_header_size``), bodies too (``max_request_body_size``):
waitress answers 431/413 itself past them, before the app runs.
"""

from __future__ import annotations

import logging
import socket
import ssl
import threading
from collections.abc import Callable
from typing import Any

from waitress.adjustments import Adjustments
from waitress.server import TcpWSGIServer
from waitress.task import ThreadedTaskDispatcher
from waitress.wasyncore import close_all

from core.http.tls import ReloadingContext
from core.http.tls_channel import TlsWSGIServer

__all__ = ["DEFAULT_THREADS", "HttpServer", "bind_listener"]

log = logging.getLogger(__name__)

DEFAULT_THREADS = 8
#: The request line and headers together (Jetty, under Connect and the registry, allows
#: 8 KiB; waitress 256 KiB): generous for any client, small enough to bound memory.
DEFAULT_MAX_HEADER_BYTES = 64 * 1024
#: Bodies past this get waitress's 413 unread (the apps set lower limits of their own).
DEFAULT_MAX_BODY_BYTES = 64 * 1024 * 1024


def bind_listener(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port`` (port 0 picks a free one). Binding first lets
    a caller learn the port before it builds the app."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    return socket.create_server((host, port), family=family, reuse_port=False)


class HttpServer:
    """Serves ``app`` on ``sock`` (or a new socket on ``host:port``) until ``stop()``.

    ``name`` names the server in logs and its thread; ``ident`` is the Server header;
    ``max_request_body_size`` and ``max_request_header_size`` (bytes) make waitress answer
    413/431 itself past them. ``tls`` (a context, or a ``ReloadingContext``)
    makes the listener HTTPS; ``on_tls_failure(addr,
    error)`` hears of each failed handshake (an untrusted or missing client certificate).
    """

    def __init__(self, app: Any, *, name: str, ident: str, host: str = "127.0.0.1",
                 port: int = 0, sock: socket.socket | None = None,
                 threads: int = DEFAULT_THREADS,
                 max_request_body_size: int = DEFAULT_MAX_BODY_BYTES,
                 max_request_header_size: int = DEFAULT_MAX_HEADER_BYTES,
                 tls: ssl.SSLContext | ReloadingContext | None = None,
                 on_tls_failure: Callable[[Any, ssl.SSLError], None] | None = None) -> None:
        self.name = name
        self._sock = sock if sock is not None else bind_listener(host, port)
        self._map: dict[int, Any] = {}
        self.tls = tls
        adj = Adjustments(sockets=[self._sock], threads=threads, ident=ident,
                          clear_untrusted_proxy_headers=True,
                          url_scheme="https" if tls is not None else "http",
                          max_request_body_size=max_request_body_size,
                          max_request_header_size=max_request_header_size)
        dispatcher = ThreadedTaskDispatcher()
        dispatcher.set_thread_count(threads)
        sockinfo = (self._sock.family, self._sock.type, self._sock.proto,
                    self._sock.getsockname())
        server_class = TcpWSGIServer if tls is None else TlsWSGIServer
        self._server = server_class(app, self._map, True, self._sock, dispatcher=dispatcher,
                                    adj=adj, bind_socket=False, sockinfo=sockinfo)
        if isinstance(self._server, TlsWSGIServer):
            self._server.ssl_context = tls  # type: ignore[assignment]
            self._server.on_tls_failure = on_tls_failure
        self.host, self.port = self._sock.getsockname()[:2]
        self._thread: threading.Thread | None = None
        self._stopped = False

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{'https' if self.tls is not None else 'http'}://{host}:{self.port}"

    def start(self) -> None:
        """Serve on a daemon thread; the socket is already listening when this returns."""
        if self._thread is not None:
            raise RuntimeError(f"{type(self).__name__}.start() called twice")
        self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._server.run()
        except Exception:  # top of the server thread: log, the owner decides what next
            log.exception("%s loop failed", self.name)

    def stop(self, timeout: float = 5.0) -> None:
        """Stop accepting, close connections, wait up to ``timeout`` for the loop and up to
        ``timeout`` for requests in progress. Safe to call twice or without ``start()``."""
        if self._stopped:
            return
        self._stopped = True
        thread, self._thread = self._thread, None
        if thread is not None and thread.is_alive():
            try:
                self._server.trigger.pull_trigger(
                    lambda: close_all(self._map, ignore_all=True))
            except OSError as exc:  # the loop's wake-up pipe is already gone
                log.warning("%s: could not wake the server loop (%s); closing its "
                            "connections from here", self.url, exc)
                close_all(self._map, ignore_all=True)
            thread.join(timeout)
            if thread.is_alive():
                log.warning("%s loop did not stop within %.1f s", self.name, timeout)
        else:
            close_all(self._map, ignore_all=True)
        self._server.task_dispatcher.shutdown(cancel_pending=True, timeout=timeout)
        self._sock.close()
