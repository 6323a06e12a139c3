"""A broker-only node's view of the metadata (KRaft's observer): it votes on nothing, pulls
committed entries from any voter (``controller.quorum.bootstrap.servers``), applies them to
its image, and keeps its broker lease with the active controller, which the voters name in
their answers."""

from __future__ import annotations

import asyncio
import base64
import logging
import time
from typing import Any

from core.cluster.config import ClusterConfig
from core.cluster.controller import ErrorCode
from core.cluster.image import MetadataImage
from core.cluster.records import decode_batch
from core.cluster.service import BrokerLease, request
from core.cluster.wire import WireError

__all__ = ["MetadataObserver"]

log = logging.getLogger(__name__)

_FETCH_INTERVAL_S = 0.05
_ERRORS = (OSError, TimeoutError, WireError, asyncio.IncompleteReadError)


class MetadataObserver:
    """``start``, then ``stop``; ``image`` is the committed metadata applied so far."""

    def __init__(self, config: ClusterConfig) -> None:
        if not config.bootstrap_servers:
            raise ValueError("an observer needs controller.quorum.bootstrap.servers")
        self.config = config
        self.image = MetadataImage()
        self.applied = 0
        self.lease = BrokerLease(config)
        self._servers = list(config.bootstrap_servers)
        self._next_server = 0
        self._leader: tuple[str, int] | None = None
        self._tasks: list[asyncio.Task[None]] = []

    async def start(self) -> None:
        self._tasks = [asyncio.create_task(self._fetch_loop(), name="ferry-metadata-fetch")]
        if self.config.is_broker:
            self._tasks.append(asyncio.create_task(
                self.lease.run(self.submit, lambda: self.image.offset), name="ferry-lease"))
        log.info("node %d: observing the metadata quorum through %s", self.config.node_id,
                 ", ".join(f"{h}:{p}" for h, p in self._servers))

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    def _target(self) -> tuple[str, int]:
        if self._leader is not None:
            return self._leader
        server = self._servers[self._next_server % len(self._servers)]
        self._next_server += 1
        return server

    def _learn_leader(self, reply: dict[str, Any]) -> None:
        leader = reply.get("leader")
        self._leader = (str(leader[0]), int(leader[1])) if leader else None

    async def _fetch_loop(self) -> None:
        while True:
            host, port = self._target()
            try:
                reply = await request(host, port, "fetch_log", {"from": self.applied + 1},
                                      timeout_s=1.0)
                if reply.get("error_code") == 0:
                    self._apply(reply["result"]["from"], reply["result"]["entries"])
                    self._learn_leader(reply)
                    if reply["result"]["entries"]:
                        continue  # more may be waiting
                else:
                    self._leader = None
            except _ERRORS as exc:
                log.debug("metadata fetch from %s:%d failed: %s", host, port, exc)
                self._leader = None
            except Exception:
                log.exception("applying fetched metadata failed")
            await asyncio.sleep(_FETCH_INTERVAL_S)

    def _apply(self, start: int, entries: list[list[Any]]) -> None:
        if start != self.applied + 1:
            return
        for index, (_, data) in enumerate(entries, start=start):
            payload = base64.b64decode(data)
            for record in decode_batch(payload) if payload else ():
                self.image.apply(index, record)
            self.applied = index

    async def submit(self, op: str, args: dict[str, Any], timeout_s: float = 10.0
                     ) -> dict[str, Any]:
        """Send ``op`` to the active controller (as the voters name it), retrying."""
        deadline = time.monotonic() + timeout_s
        reply: dict[str, Any] = {"error_code": ErrorCode.NOT_CONTROLLER}
        while time.monotonic() < deadline:
            host, port = self._target()
            try:
                reply = await request(host, port, op, args,
                                      timeout_s=min(1.0, max(0.05, deadline - time.monotonic())))
            except _ERRORS:
                self._leader = None
                reply = {"error_code": ErrorCode.NOT_CONTROLLER}
            if reply.get("error_code") != ErrorCode.NOT_CONTROLLER:
                return reply
            self._learn_leader(reply)
            await asyncio.sleep(0.05)
        return reply
