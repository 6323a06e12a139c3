"""``RegistryServer``: the REST app under waitress, started and stopped from a thread.

``start()`` runs waitress's loop on a daemon thread and returns once the socket listens;
``stop(timeout)`` closes the listening socket and every connection from the loop's own
thread, then joins the loop and the worker threads, each within the timeout, so shutdown
is bounded even while a request waits on the log.
"""

from __future__ import annotations

import logging
import socket
import threading
from typing import Any

from waitress.server import create_server
from waitress.wasyncore import close_all

__all__ = ["RegistryServer", "bind_listener"]

log = logging.getLogger(__name__)

DEFAULT_THREADS = 8
#: waitress buffers a whole body before the app sees it; past this it answers 413 itself
#: without reading the body. The app refuses anything over the schemas topic's
#: ``max.message.bytes`` (1 MiB by default) with its own JSON 413 well below this.
MAX_BODY_BYTES = 64 * 1024 * 1024


def bind_listener(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port`` (port 0 picks a free one)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    return socket.create_server((host, port), family=family, reuse_port=False)


class RegistryServer:
    """Serves ``app`` on ``sock`` until ``stop()``."""

    def __init__(self, app: Any, sock: socket.socket, *, threads: int = DEFAULT_THREADS
                 ) -> None:
        self._sock = sock
        self._map: dict[int, Any] = {}
        self._server = create_server(app, map=self._map, sockets=[sock], threads=threads,
                                     ident="ferry-schema-registry",
                                     clear_untrusted_proxy_headers=True,
                                     max_request_body_size=MAX_BODY_BYTES)
        self.host, self.port = sock.getsockname()[:2]
        self._thread: threading.Thread | None = None
        self._stopped = False

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def start(self) -> None:
        if self._thread is not None:
            raise RuntimeError("RegistryServer.start() called twice")
        self._thread = threading.Thread(target=self._run, name="sr-rest-server", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._server.run()
        except Exception:  # top of the server thread: log, the owner decides what next
            log.exception("Schema Registry REST server loop failed")

    def stop(self, timeout: float = 5.0) -> None:
        """Stop accepting, close connections, wait up to ``timeout`` for the loop and for
        requests in progress. Safe to call twice or without ``start()``."""
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
                log.warning("Schema Registry REST loop did not stop within %.1f s", timeout)
        else:
            close_all(self._map, ignore_all=True)
        self._server.task_dispatcher.shutdown(cancel_pending=True, timeout=timeout)
        self._sock.close()
