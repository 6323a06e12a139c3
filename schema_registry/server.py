"""``RegistryServer``: the registry's REST app on the shared HTTP layer (``core.http``)."""

from __future__ import annotations

import socket
import ssl
from collections.abc import Callable
from typing import Any

from core.http.server import DEFAULT_THREADS, HttpServer, bind_listener
from core.http.tls import ReloadingContext

__all__ = ["RegistryServer", "bind_listener"]

#: waitress buffers a whole body before the app sees it; past this it answers 413 itself
#: without reading the body. The app refuses anything over the schemas topic's
#: ``max.message.bytes`` (1 MiB by default) with its own JSON 413 well below this.
MAX_BODY_BYTES = 64 * 1024 * 1024


class RegistryServer(HttpServer):
    """Serves ``app`` on ``sock`` until ``stop()``."""

    def __init__(self, app: Any, sock: socket.socket, *, threads: int = DEFAULT_THREADS,
                 tls: ssl.SSLContext | ReloadingContext | None = None,
                 on_tls_failure: Callable[[Any, ssl.SSLError], None] | None = None) -> None:
        super().__init__(app, name="sr-rest-server", ident="ferry-schema-registry",
                         sock=sock, threads=threads, max_request_body_size=MAX_BODY_BYTES,
                         tls=tls, on_tls_failure=on_tls_failure)
