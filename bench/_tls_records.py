"""A TCP relay that tallies the TLS records a client sends, for the security benchmark.

It sits between a client and a broker's TLS listener (the broker advertises the relay's
port) and counts the length of every TLS record in the client-to-broker direction from
the records' 5-byte headers; it neither decrypts nor changes anything. What a TLS
listener costs the broker depends on how many records carry the data, not only on how
many bytes: each ``SSLObject.read`` returns at most one record.
"""

from __future__ import annotations

import collections
import contextlib
import socket
import threading
from types import TracebackType
from typing import Self

__all__ = ["TlsRecordTally"]

_HEADER = 5  # content type, version (2), length (2)
_ACCEPT_TIMEOUT_S = 0.5


class TlsRecordTally:
    """Relays 127.0.0.1:``port`` to ``target`` and counts record lengths (``sizes``).

    A context manager: leaving it closes the listener; relayed connections end when
    either side closes. Its threads are daemons and every blocking call is bounded or
    ends with its socket.
    """

    def __init__(self, port: int, target: tuple[str, int]) -> None:
        self.sizes: collections.Counter[int] = collections.Counter()
        self._target = target
        self._lock = threading.Lock()
        self._listener = socket.create_server(("127.0.0.1", port))
        self._listener.settimeout(_ACCEPT_TIMEOUT_S)
        self._closed = threading.Event()
        self._sockets: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True, name="tls-tally").start()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._closed.set()
        self._listener.close()
        for sock in self._sockets:
            sock.close()

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                client, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            client.settimeout(None)
            broker = socket.create_connection(self._target, timeout=10)
            broker.settimeout(None)
            self._sockets += [client, broker]
            threading.Thread(target=self._relay, args=(client, broker, True),
                             daemon=True).start()
            threading.Thread(target=self._relay, args=(broker, client, False),
                             daemon=True).start()

    def _relay(self, src: socket.socket, dst: socket.socket, tally: bool) -> None:
        pending = bytearray()
        while True:
            try:
                data = src.recv(1 << 20)
                if not data:
                    break
                dst.sendall(data)
            except OSError:
                break
            if tally:
                pending += data
                self._count(pending)
        with contextlib.suppress(OSError):
            dst.shutdown(socket.SHUT_WR)

    def _count(self, pending: bytearray) -> None:
        at = 0
        while len(pending) - at >= _HEADER:
            length = int.from_bytes(pending[at + 3:at + 5], "big")
            if len(pending) - at < _HEADER + length:
                break
            with self._lock:
                self.sizes[length] += 1
            at += _HEADER + length
        del pending[:at]
