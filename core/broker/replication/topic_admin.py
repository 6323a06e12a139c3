"""Topic changes a cluster broker asks the active controller for (CreateTopics,
CreatePartitions, DeleteTopics): each waits until this broker's own metadata image shows
the change, so that the client's next request here sees it."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from core.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from core.cluster.image import MetadataImage

__all__ = ["TopicAdmin"]

_NOT_CONTROLLER = 41  # after the submitter's retries: no controller answered
_IMAGE_POLL_S = 0.01


class TopicAdmin:
    """A part of ``ReplicaManager``: ``_submit`` sends an operation to the active
    controller; ``image`` is the committed metadata this broker applied."""

    _submit: Callable[..., Awaitable[dict[str, Any]]]
    image: MetadataImage
    #: the controller's message for the last refused topic change
    last_error: str

    async def create_topic(self, name: str, partitions: int, replication_factor: int | None,
                           configs: dict[str, str], timeout_s: float = 10.0) -> ErrorCode:
        """Create a topic through the active controller, then wait until this broker's
        image holds it, so that the client's next Metadata here finds it; within
        ``timeout_s`` in all (REQUEST_TIMED_OUT when no controller answered by then)."""
        deadline = time.monotonic() + timeout_s
        code = await self._ask("create_topic", {
            "name": name, "partitions": partitions, "replication_factor": replication_factor,
            "configs": configs}, timeout_s)
        if code == ErrorCode.NONE:
            await self._until(lambda: name in self.image.topics,
                              max(0.0, deadline - time.monotonic()))
        return code

    async def add_partitions(self, name: str, total: int,
                             assignments: list[list[int]] | None,
                             timeout_s: float = 10.0) -> ErrorCode:
        """Grow a topic through the active controller; wait until this broker's image
        shows the new partitions."""
        code = await self._ask("add_partitions", {
            "name": name, "total": total, "assignments": assignments}, timeout_s)
        if code == ErrorCode.NONE:
            await self._until(lambda: len(getattr(self.image.topics.get(name), "partitions",
                                                  ())) >= total, timeout_s)
        return code

    async def delete_topic(self, name: str, timeout_s: float = 10.0) -> ErrorCode:
        """Delete a topic through the active controller, then wait until this broker's image
        no longer holds it (every broker deletes its replicas as it applies the record)."""
        code = await self._ask("delete_topic", {"name": name}, timeout_s)
        if code == ErrorCode.NONE:
            await self._until(lambda: name not in self.image.topics, timeout_s)
        return code

    async def _ask(self, operation: str, args: dict[str, Any], timeout_s: float
                   ) -> ErrorCode:
        reply = await self._submit(operation, args, timeout_s=timeout_s)
        code = reply.get("error_code", ErrorCode.UNKNOWN_SERVER_ERROR)
        if code == 0:
            return ErrorCode.NONE
        self.last_error = str(reply.get("error_message") or "")
        return ErrorCode.REQUEST_TIMED_OUT if code == _NOT_CONTROLLER else ErrorCode(code)

    @staticmethod
    async def _until(done: Callable[[], bool], timeout_s: float) -> None:
        # The image is replaced as the metadata log is applied; it has no change event
        # to wait on, and this runs once per admin request, not per record.
        deadline = time.monotonic() + timeout_s
        while not done() and time.monotonic() < deadline:
            await asyncio.sleep(_IMAGE_POLL_S)
