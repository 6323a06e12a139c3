"""How a partition leader changes its ISR: every ``_ISR_CHECK_S`` it proposes removing
followers that have not caught up for ``replica.lag.time.max.ms``, and a follower's fetch
that catches up proposes adding it (``PartitionLeader`` decides, sans I/O); proposals go
to the active controller as AlterPartition and take effect when the committed metadata
shows them (``ReplicaManager._update``)."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from core.broker.replication.isr import IsrChange
    from core.broker.replication.replica import Replica

__all__ = ["IsrUpdates", "now_ms"]

log = logging.getLogger(__name__)

ISR_CHECK_S = 0.25
_ALTER_TIMEOUT_S = 5.0


def now_ms() -> int:
    return int(time.monotonic() * 1000)


class IsrUpdates:
    """A part of ``ReplicaManager``: ``_submit`` sends an operation to the active
    controller, ``_broker_epoch`` is this broker's registration (None before it)."""

    node_id: int
    replicas: dict[tuple[str, int], Replica]
    _submit: Callable[..., Awaitable[dict[str, Any]]]
    _broker_epoch: Callable[[], int | None]
    _alters: set[asyncio.Task[None]]
    #: ISR changes of partitions this broker leads, as Kafka's IsrShrinksPerSec and
    #: IsrExpandsPerSec count them: one per committed change (``/metrics``).
    isr_shrinks: int
    isr_expands: int

    def _check_isrs(self) -> None:
        now = now_ms()
        for replica in self.replicas.values():
            leader = replica.leader
            if leader is None:
                continue
            leader.log_end = replica.plog.log_end_offset
            change = leader.maybe_shrink(now)
            if change is not None:
                self._alter(replica, change)

    def _count_isr_change(self, before: set[int], after: set[int]) -> None:
        if after < before:
            self.isr_shrinks += 1
        elif after > before:
            self.isr_expands += 1

    def _background(self, coroutine: Awaitable[None]) -> None:
        """Run ``coroutine`` as a task that ``stop`` cancels."""
        task = asyncio.ensure_future(coroutine)
        self._alters.add(task)
        task.add_done_callback(self._alters.discard)

    def _alter(self, replica: Replica, change: IsrChange) -> None:
        self._background(self._send_alter(replica, change))

    async def _send_alter(self, replica: Replica, change: IsrChange) -> None:
        epoch = self._broker_epoch()
        reply: dict[str, Any] = {"error_code": -1, "error_message": "not registered yet"}
        if epoch is not None:
            log.info("%s-%d: asking the controller for ISR %s", replica.topic,
                     replica.partition, list(change.isr))
            reply = await self._submit("alter_partition", {
                "broker_id": self.node_id, "broker_epoch": epoch, "topic": replica.topic,
                "partition": replica.partition, "leader_epoch": change.leader_epoch,
                "partition_epoch": change.partition_epoch, "isr": list(change.isr)},
                timeout_s=_ALTER_TIMEOUT_S)
        leader = replica.leader
        if reply.get("error_code") != 0 and leader is not None and leader.pending == change:
            log.info("%s-%d: ISR change %s refused: %s", replica.topic, replica.partition,
                     list(change.isr), reply.get("error_message"))
            leader.change_rejected()
        # On success the committed metadata brings the new ISR (``_update``).
