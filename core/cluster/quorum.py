"""A controller node's metadata quorum: the Raft node, the committed metadata image, and
(while this node leads) the active controller, wired together and still sans-IO.

The committed image is what brokers may act on and what Metadata answers. The active
controller decides on a second image built from this node's whole log, committed or not:
a leader's log is never cut, so every record in it will commit, and decisions made on it
never contradict one another. When leadership is lost that image is dropped; the next
leader rebuilds its own from its log.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable, Sequence

from core.cluster.controller import ControllerError, ErrorCode, QuorumController
from core.cluster.image import MetadataImage
from core.cluster.raft import Message, RaftNode, RaftStorage, Role
from core.cluster.raft.node import Outbox
from core.cluster.records import MetadataRecord, decode_batch, encode_batch

__all__ = ["MetadataQuorum", "Outcome"]

log = logging.getLogger(__name__)


class Outcome:
    PENDING = "pending"
    COMMITTED = "committed"
    LOST = "lost"  # its leader lost office before it committed: the change did not happen


class MetadataQuorum:
    def __init__(self, node_id: int, voters: Sequence[int], storage: RaftStorage, *,
                 now_ms: int, rng: random.Random, election_timeout_ms: int = 1000,
                 session_timeout_ms: int = 9000, default_replication_factor: int = 1,
                 unclean_leader_election: bool = False) -> None:
        self.raft = RaftNode(node_id, voters, storage, now_ms=now_ms, rng=rng,
                             election_timeout_ms=election_timeout_ms)
        self.image = MetadataImage()
        self.controller: QuorumController | None = None
        self._controller_term = -1
        self._applied = 0
        self._rng = rng
        self._session_timeout_ms = session_timeout_ms
        self._default_rf = default_replication_factor
        self._unclean = unclean_leader_election
        self._out: Outbox = []
        self._batch: list[MetadataRecord] = []
        self._now = now_ms

    # -- driving it ---------------------------------------------------------------------------

    def tick(self, now_ms: int) -> Outbox:
        self._out += self.raft.tick(now_ms)
        return self._sync(now_ms, expire=True)

    def receive(self, message: Message, now_ms: int) -> Outbox:
        self._out += self.raft.receive(message, now_ms)
        return self._sync(now_ms)

    def submit(self, operation: Callable[[QuorumController], int | None], now_ms: int
               ) -> tuple[int, int, Outbox]:
        """Run one controller operation (``lambda c: c.create_topic(...)``); returns the log
        index and term to wait on (see ``outcome``): an operation that appended nothing
        (None) waits for this leader's log end, so its answer follows every decision made
        before it. Raises ControllerError, NOT_CONTROLLER when this node is not the active
        controller."""
        self._sync(now_ms)
        if self.controller is None:
            raise ControllerError(ErrorCode.NOT_CONTROLLER,
                                  f"node {self.raft.node_id} is not the active controller "
                                  f"(leader: {self.raft.leader_id})")
        try:
            index = operation(self.controller)
        finally:
            self._flush()  # what the operation decided before failing still stands
        if index is None:
            index = self.raft.last_index
        return index, self.raft.term, self._sync(now_ms)

    @property
    def applied(self) -> int:
        """The log index of the last committed entry applied to ``image``."""
        return self._applied

    def outcome(self, index: int, term: int) -> str:
        """Whether the record appended at ``index`` in ``term`` is committed, or lost."""
        storage = self.raft.storage
        # Only term's leader wrote entries of that term, once per index: the same term at
        # the same index is the same record (Raft's log matching).
        if storage.last_index() < index or storage.term_at(index) != term:
            return Outcome.LOST
        return Outcome.COMMITTED if self._applied >= index else Outcome.PENDING

    # -- internals ----------------------------------------------------------------------------

    def _sync(self, now_ms: int, expire: bool = False) -> Outbox:
        self._now = now_ms
        for index, entry in enumerate(self.raft.committed(self._applied + 1),
                                      start=self._applied + 1):
            for record in decode_batch(entry.data) if entry.data else ():
                self.image.apply(index, record)
            self._applied = index
        if self.raft.role is Role.LEADER and self._controller_term != self.raft.term:
            self._take_office(now_ms)
        elif self.raft.role is not Role.LEADER and self.controller is not None:
            log.info("node %d: no longer the active controller", self.raft.node_id)
            self.controller, self._controller_term = None, -1
        if expire and self.controller is not None:
            self.controller.expire_leases(now_ms)
            self._flush()
        out, self._out = self._out, []
        return out

    def _take_office(self, now_ms: int) -> None:
        image = MetadataImage()
        last = self.raft.last_index
        for index, entry in enumerate(self.raft.storage.entries(1, last + 1), start=1):
            for record in decode_batch(entry.data) if entry.data else ():
                image.apply(index, record)
        self.controller = QuorumController(
            image, self._append, self._session_timeout_ms, self._default_rf, self._unclean,
            rng=random.Random(self._rng.random()))
        self._controller_term = self.raft.term
        # Every broker gets a full session from now: the previous controller's leases are
        # not known here, and fencing a live broker for that would move leaders for nothing.
        self.controller.expire_leases(now_ms)
        self._flush()
        log.info("node %d: active controller in term %d", self.raft.node_id, self.raft.term)

    def _append(self, record: MetadataRecord) -> int:
        """Add ``record`` to the decision being made: applied to the controller's image at
        once (the next decision reads it), appended to the log with its siblings by
        ``_flush`` as one entry."""
        assert self.controller is not None
        index = self.raft.last_index + 1
        self.controller.image.apply(index, record)
        self._batch.append(record)
        return index

    def _flush(self) -> None:
        if self._batch:
            _, out = self.raft.propose(encode_batch(self._batch), self._now)
            self._batch = []
            self._out += out
