"""A network partition for cluster tests on loopback, without root: a TCP proxy in front of
each listener of each node, all proxies of a cluster sharing one ``FaultNetwork``.

``isolate(group)`` splits the processes in two sides, ``group`` (node ids, and the test's
own clients when ``with_clients``) and everyone else. Every proxied connection that
crosses the cut is closed at once and every new one is closed as it is accepted, in both
directions: a connection is from the process owning its client socket (found through
``/proc/net/tcp`` and ``/proc/PID/fd``, Linux only) to the node the proxy stands for.
``heal()`` lets connections through again. Connections that do not cross the cut, and
anything that bypasses the proxies (the tests' ``describe`` on the real controller port),
are untouched.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
from collections.abc import Callable
from pathlib import Path

from broker_process import free_port

__all__ = ["CLIENT", "FaultNetwork", "FaultProxy", "supported"]

#: The side of a connection made by the test process itself (its Kafka clients) or by a
#: process that is none of the nodes.
CLIENT = 0
_BUFFER = 1 << 16


def supported() -> bool:
    """Whether connections can be traced to their process here (Linux's /proc)."""
    return Path("/proc/net/tcp").exists() and Path(f"/proc/{os.getpid()}/fd").exists()


def _socket_inode(local_port: int, remote_port: int) -> str | None:
    """The inode of the loopback socket from ``local_port`` to ``remote_port``."""
    local, remote = f":{local_port:04X}", f":{remote_port:04X}"
    with contextlib.suppress(OSError):
        for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
            fields = line.split()
            if fields[1].endswith(local) and fields[2].endswith(remote):
                return fields[9]
    return None


def _owns(pid: int, inode: str) -> bool:
    target = f"socket:[{inode}]"
    fd_dir = Path(f"/proc/{pid}/fd")
    try:
        names = os.listdir(fd_dir)
    except OSError:
        return False
    for name in names:
        with contextlib.suppress(OSError):
            if os.readlink(fd_dir / name) == target:
                return True
    return False


class FaultNetwork:
    """The shared cut of a cluster's proxies. ``node_pids()`` maps each running node's
    pid to its node id (it changes as nodes restart)."""

    def __init__(self, node_pids: Callable[[], dict[int, int]]) -> None:
        self._node_pids = node_pids
        self._lock = threading.Lock()
        self._group: frozenset[int] | None = None
        self.proxies: list[FaultProxy] = []

    def proxy(self, node_id: int, target_port: int) -> FaultProxy:
        """A started proxy on a free port, forwarding to 127.0.0.1:``target_port``."""
        proxy = FaultProxy(self, node_id, target_port)
        self.proxies.append(proxy)
        return proxy

    def isolate(self, nodes: set[int], *, with_clients: bool) -> None:
        """Cut ``nodes`` (with the test's clients, if ``with_clients``) off the rest."""
        with self._lock:
            self._group = frozenset(nodes | ({CLIENT} if with_clients else set()))
        for proxy in self.proxies:
            proxy.drop_crossing()

    def heal(self) -> None:
        with self._lock:
            self._group = None

    def allows(self, source: int, destination: int) -> bool:
        with self._lock:
            group = self._group
        return group is None or ((source in group) == (destination in group))

    def source_of(self, peer_port: int, proxy_port: int) -> int:
        """The node id of the process that opened the connection from ``peer_port``, or
        CLIENT (the test process, or a process that is no node)."""
        inode = _socket_inode(peer_port, proxy_port)
        if inode is None:
            return CLIENT
        for pid, node_id in self._node_pids().items():
            if _owns(pid, inode):
                return node_id
        return CLIENT

    def close(self) -> None:
        for proxy in self.proxies:
            proxy.close()


class _Link:
    """One proxied connection: two sockets and the threads pumping between them."""

    def __init__(self, source: int, inbound: socket.socket, outbound: socket.socket) -> None:
        self.source = source
        self.sockets = (inbound, outbound)

    def start(self, name: str) -> None:
        for a, b in ((0, 1), (1, 0)):
            threading.Thread(target=self._pump, args=(self.sockets[a], self.sockets[b]),
                             name=name, daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(_BUFFER):
                dst.sendall(data)
        except OSError:
            pass
        self.close()

    def close(self) -> None:
        for sock in self.sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            with contextlib.suppress(OSError):
                sock.close()


class FaultProxy:
    """A proxy on ``port`` standing for ``node_id``'s listener at ``target_port``."""

    def __init__(self, network: FaultNetwork, node_id: int, target_port: int) -> None:
        self.network, self.node_id, self.target_port = network, node_id, target_port
        self.port = free_port()
        self._server = socket.create_server(("127.0.0.1", self.port))
        self._server.settimeout(0.2)
        self._links: set[_Link] = set()
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True,
                                        name=f"fault-proxy-{node_id}-{self.port}")
        self._thread.start()

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                inbound, (_, peer_port) = self._server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            source = self.network.source_of(peer_port, self.port)
            if not self.network.allows(source, self.node_id):
                inbound.close()  # across the cut: as if nothing answered
                continue
            try:
                outbound = socket.create_connection(("127.0.0.1", self.target_port), 2.0)
            except OSError:
                inbound.close()  # the node is down: so is its proxied listener
                continue
            for sock in (inbound, outbound):
                sock.settimeout(None)
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            link = _Link(source, inbound, outbound)
            with self._lock:
                self._links = {lk for lk in self._links if lk.sockets[0].fileno() != -1}
                self._links.add(link)
            link.start(f"fault-link-{source}-{self.node_id}")
            if not self.network.allows(source, self.node_id):
                link.close()  # the cut came while it was being connected

    def drop_crossing(self) -> None:
        with self._lock:
            links = list(self._links)
        for link in links:
            if not self.network.allows(link.source, self.node_id):
                link.close()

    def close(self) -> None:
        self._closed.set()
        with contextlib.suppress(OSError):
            self._server.close()
        with self._lock:
            links = list(self._links)
        for link in links:
            link.close()
        self._thread.join(2)
