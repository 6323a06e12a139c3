"""The broker's HTTP port for ``/metrics`` and ``/health`` (``ferry broker --metrics``).

The port opens before the log is recovered, so a probe sees KIP-1017's ``starting`` (503)
during recovery, ``healthy`` (200) once the listener is bound, and ``unhealthy`` (500,
with the reason) while the data directory is offline after a failed write or when the
event loop has not run its periodic tick for ``STUCK_AFTER_S`` (a handler blocking it). A
cluster node adds its ``cluster_check`` (``core.broker.replication.observed``): starting
until the controller unfences it, unhealthy while the controller does not answer.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from core.broker.collector import BrokerCollector
from core.broker.metrics import BrokerMetrics
from core.http.observability import Health, ObservedApp, new_registry
from core.http.server import HttpServer

if TYPE_CHECKING:
    from core.broker.state import BrokerState

__all__ = ["STUCK_AFTER_S", "BrokerObservability"]

log = logging.getLogger(__name__)

STUCK_AFTER_S = 10.0  # as Connect's health check times out a herder that does not answer


class BrokerObservability:
    """``/metrics`` and ``/health`` on ``host:port`` for one broker; ``start`` it before
    recovery, ``attach`` the running broker, ``stop`` it last."""

    def __init__(self, host: str, port: int, *, stuck_after_s: float = STUCK_AFTER_S) -> None:
        self.metrics = BrokerMetrics()
        self._stuck_after_s = stuck_after_s
        self.registry = new_registry()
        self._state: BrokerState | None = None
        self._stage = "recovering the log"
        #: A cluster node's own states (None: nothing to add), asked after the log's.
        self.cluster_check: Callable[[], Health | None] | None = None
        self._server = HttpServer(ObservedApp(self.registry, self.health),
                                  name="ferry-broker-metrics", ident="ferry-broker",
                                  host=host, port=port, threads=2)

    @property
    def url(self) -> str:
        return self._server.url

    def start(self) -> None:
        self._server.start()
        log.info("broker metrics on %s/metrics, health on %s/health", self.url, self.url)

    def stage(self, text: str) -> None:
        """What startup is doing now (shown while ``starting``)."""
        self._stage = text

    def attach(self, state: BrokerState, connections: Callable[[], int]) -> None:
        """The broker serves: export its metrics, report healthy."""
        state.metrics = self.metrics
        self.metrics.last_tick = time.monotonic()
        self.registry.register(BrokerCollector(state, connections))
        self._state = state

    def health(self) -> Health:
        state = self._state
        if state is None:
            return Health.starting(f"broker is starting: {self._stage}")
        dir_health = state.manager.health
        if not dir_health.online:
            return Health.unhealthy(f"log directory {dir_health.directory} is offline: "
                                    f"{dir_health.reason}")
        stalled = time.monotonic() - self.metrics.last_tick
        if stalled > self._stuck_after_s:
            return Health.unhealthy(f"the broker's event loop has not run for {stalled:.0f} s")
        if self.cluster_check is not None:
            verdict = self.cluster_check()
            if verdict is not None:
                return verdict
        return Health.healthy("broker is serving")

    def stop(self) -> None:
        self._server.stop()
