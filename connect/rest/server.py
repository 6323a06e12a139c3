"""``RestServer``: Connect's REST app on the shared HTTP layer (``core.http.server``)."""

from __future__ import annotations

import logging
import socket
import ssl
from collections.abc import Callable
from typing import Any

from core.http.server import DEFAULT_THREADS, HttpServer, bind_listener
from core.http.tls import ReloadingContext

__all__ = ["RestServer", "bind_listener"]

log = logging.getLogger(__name__)


class RestServer(HttpServer):
    """Serves ``app`` on ``sock`` (or a new socket on ``host:port``) until ``stop()``."""

    def __init__(self, app: Any, *, host: str = "127.0.0.1", port: int = 8083,
                 sock: socket.socket | None = None, threads: int = DEFAULT_THREADS,
                 tls: ssl.SSLContext | ReloadingContext | None = None,
                 on_tls_failure: Callable[[Any, ssl.SSLError], None] | None = None) -> None:
        super().__init__(app, name="connect-rest-server", ident="ferry-connect", host=host,
                         port=port, sock=sock, threads=threads, tls=tls,
                         on_tls_failure=on_tls_failure)

    def start(self) -> None:
        super().start()
        log.info("Connect REST server listening on %s", self.url)

    def stop(self, timeout: float = 5.0) -> None:
        stopping = not self._stopped
        super().stop(timeout)
        if stopping:
            log.info("Connect REST server on %s stopped", self.url)
