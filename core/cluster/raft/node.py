"""One Raft node (Ongaro's rules), sans-IO: ``tick`` and ``receive`` return the messages
to send, as ``(destination id, message)``.

Safety rests on four habits, each marked where it happens: a vote and appended entries are
durable (storage fsyncs) before the reply leaves; a vote goes only to a candidate whose log
is at least as up to date; a follower never cuts entries that match the leader's; a leader
counts only entries of its own term toward commitment (the no-op it appends on election
commits its predecessors' entries). Two additions help liveness and fencing: a leader that
has not heard from a majority for an election timeout steps down (CheckQuorum), so a
partitioned leader stops claiming leadership; observers (broker-only nodes) receive the log
but never vote or count toward a majority.
"""

from __future__ import annotations

import enum
import logging
import random
from collections.abc import Iterable, Sequence

from core.cluster.raft.messages import (
    AppendRequest,
    AppendResponse,
    Entry,
    Message,
    VoteRequest,
    VoteResponse,
)
from core.cluster.raft.storage import RaftStorage

__all__ = ["NotLeaderError", "Outbox", "RaftNode", "Role"]

log = logging.getLogger(__name__)

Outbox = list[tuple[int, Message]]


class Role(enum.Enum):
    FOLLOWER = "follower"
    CANDIDATE = "candidate"
    LEADER = "leader"


class NotLeaderError(Exception):
    """A proposal went to a node that is not the leader; ``leader_id`` is the leader it
    knows of, if any."""

    def __init__(self, node_id: int, leader_id: int | None):
        super().__init__(f"node {node_id} is not the metadata quorum leader "
                         f"(leader: {leader_id if leader_id is not None else 'unknown'})")
        self.leader_id = leader_id


class RaftNode:
    """A voter (when ``node_id`` is in ``voters``) or an observer of one Raft log."""

    def __init__(self, node_id: int, voters: Sequence[int], storage: RaftStorage, *,
                 now_ms: int, rng: random.Random, election_timeout_ms: int = 1000,
                 heartbeat_interval_ms: int | None = None, max_batch: int = 256,
                 observers: Iterable[int] = ()) -> None:
        self.node_id = node_id
        self.voters = tuple(sorted(set(voters)))
        self.observers = set(observers) - set(self.voters)
        self.storage = storage
        self.term, self.voted_for = storage.load_state()
        self.role = Role.FOLLOWER
        self.leader_id: int | None = None
        self.commit_index = 0  # volatile: re-learned from the leader after a restart
        self._rng = rng
        self._election_timeout = election_timeout_ms
        self._heartbeat = heartbeat_interval_ms or max(1, election_timeout_ms // 4)
        self._max_batch = max_batch
        self._votes: set[int] = set()
        self._next: dict[int, int] = {}
        self._match: dict[int, int] = {}
        self._last_ack: dict[int, int] = {}
        self._next_heartbeat = 0
        self._reset_election_deadline(now_ms)

    # -- the node's view ---------------------------------------------------------------------

    @property
    def is_voter(self) -> bool:
        return self.node_id in self.voters

    @property
    def last_index(self) -> int:
        return self.storage.last_index()

    def committed(self, start: int) -> list[Entry]:
        """Committed entries from index ``start`` on."""
        return self.storage.entries(start, self.commit_index + 1) if start <= self.commit_index \
            else []

    def _majority(self) -> int:
        return len(self.voters) // 2 + 1

    def _peers(self) -> list[int]:
        return [p for p in (*self.voters, *sorted(self.observers)) if p != self.node_id]

    def _reset_election_deadline(self, now: int) -> None:
        self._election_deadline = now + self._election_timeout + self._rng.randrange(
            self._election_timeout)

    # -- inputs -------------------------------------------------------------------------------

    def add_observer(self, node_id: int, now_ms: int) -> Outbox:
        """Start sending the log to ``node_id`` (a broker-only node), if this is the leader."""
        if node_id in self.voters or node_id in self.observers:
            return []
        self.observers.add(node_id)
        if self.role is not Role.LEADER:
            return []
        self._next[node_id] = self.last_index + 1
        self._match[node_id] = 0
        return [self._append_request(node_id)]

    def propose(self, data: bytes, now_ms: int) -> tuple[int, Outbox]:
        """Append ``data`` to the log (durably) and send it on; returns its index, which is
        applied once ``commit_index`` reaches it. Raises NotLeaderError on a non-leader."""
        if self.role is not Role.LEADER:
            raise NotLeaderError(self.node_id, self.leader_id)
        if not data:
            raise ValueError("an empty payload is reserved for the leader's no-op entry")
        self.storage.append([Entry(self.term, data)])
        index = self.last_index
        out = self._maybe_commit()  # a single voter commits at once
        return index, out + [self._append_request(p) for p in self._peers()]

    def tick(self, now_ms: int) -> Outbox:
        """Time passed: heartbeats, election timeouts, stepping down without a quorum."""
        if self.role is Role.LEADER:
            if len(self.voters) > 1:
                heard = 1 + sum(1 for p in self.voters if p != self.node_id and
                                now_ms - self._last_ack.get(p, now_ms) < self._election_timeout)
                if heard < self._majority():
                    log.info("node %d: no majority heard for %d ms; stepping down in term %d",
                             self.node_id, self._election_timeout, self.term)
                    self.role, self.leader_id = Role.FOLLOWER, None
                    self._reset_election_deadline(now_ms)
                    return []
            if now_ms >= self._next_heartbeat:
                self._next_heartbeat = now_ms + self._heartbeat
                return [self._append_request(p) for p in self._peers()]
            return []
        if self.is_voter and now_ms >= self._election_deadline:
            return self._start_election(now_ms)
        return []

    def receive(self, message: Message, now_ms: int) -> Outbox:
        """Handle one message from a peer."""
        if message.term > self.term:
            # A newer term: whatever this node was, it is now a follower of that term.
            self._set_term(message.term, None)
            if self.role is not Role.FOLLOWER:
                self.role = Role.FOLLOWER
            self.leader_id = None
        if isinstance(message, VoteRequest):
            return self._on_vote_request(message, now_ms)
        if isinstance(message, VoteResponse):
            return self._on_vote_response(message, now_ms)
        if isinstance(message, AppendRequest):
            return self._on_append_request(message, now_ms)
        return self._on_append_response(message, now_ms)

    # -- elections ----------------------------------------------------------------------------

    def _set_term(self, term: int, voted_for: int | None) -> None:
        self.storage.save_state(term, voted_for)  # durable before any reply depends on it
        self.term, self.voted_for = term, voted_for

    def _start_election(self, now: int) -> Outbox:
        self._set_term(self.term + 1, self.node_id)
        self.role, self.leader_id = Role.CANDIDATE, None
        self._votes = {self.node_id}
        self._reset_election_deadline(now)
        log.debug("node %d: election for term %d", self.node_id, self.term)
        if len(self._votes) >= self._majority():
            return self._become_leader(now)
        request = VoteRequest(self.node_id, self.term, self.last_index,
                              self.storage.term_at(self.last_index))
        return [(p, request) for p in self.voters if p != self.node_id]

    def _on_vote_request(self, request: VoteRequest, now: int) -> Outbox:
        my_last_term = self.storage.term_at(self.last_index)
        up_to_date = (request.last_log_term, request.last_log_index) >= (my_last_term,
                                                                         self.last_index)
        granted = (self.is_voter and request.term == self.term and up_to_date
                   and self.voted_for in (None, request.src))
        if granted and self.voted_for is None:
            self._set_term(self.term, request.src)  # the vote is durable before it is sent
        if granted:
            self._reset_election_deadline(now)
        return [(request.src, VoteResponse(self.node_id, self.term, granted))]

    def _on_vote_response(self, response: VoteResponse, now: int) -> Outbox:
        if self.role is not Role.CANDIDATE or response.term != self.term or not response.granted:
            return []
        self._votes.add(response.src)
        if len(self._votes) >= self._majority():
            return self._become_leader(now)
        return []

    def _become_leader(self, now: int) -> Outbox:
        log.info("node %d: leader of term %d", self.node_id, self.term)
        self.role, self.leader_id = Role.LEADER, self.node_id
        # Only entries of the leader's own term are counted toward commitment, so a no-op of
        # this term is what commits whatever earlier leaders left uncommitted.
        self.storage.append([Entry(self.term, b"")])
        for peer in self._peers():
            self._next[peer] = self.last_index
            self._match[peer] = 0
            self._last_ack[peer] = now
        self._next_heartbeat = now + self._heartbeat
        return self._maybe_commit() + [self._append_request(p) for p in self._peers()]

    # -- replication --------------------------------------------------------------------------

    def _append_request(self, peer: int) -> tuple[int, Message]:
        next_index = self._next[peer]
        entries = self.storage.entries(next_index, min(self.last_index + 1,
                                                       next_index + self._max_batch))
        # Pipelined: the next request carries what follows these entries, so the window in
        # flight is sent once. A lost request shows up as a failed heartbeat, which
        # rewinds next_index to the follower's hint.
        self._next[peer] = next_index + len(entries)
        return peer, AppendRequest(self.node_id, self.term, next_index - 1,
                                   self.storage.term_at(next_index - 1), tuple(entries),
                                   self.commit_index)

    def _on_append_request(self, request: AppendRequest, now: int) -> Outbox:
        if request.term < self.term:
            return [(request.src, AppendResponse(self.node_id, self.term, False, 0))]
        # Same term: there is one leader per term, and it is the sender.
        self.role, self.leader_id = Role.FOLLOWER, request.src
        self._reset_election_deadline(now)
        if request.prev_index > self.last_index:
            return [(request.src, AppendResponse(self.node_id, self.term, False,
                                                 self.last_index))]
        if self.storage.term_at(request.prev_index) != request.prev_term:
            return [(request.src, AppendResponse(self.node_id, self.term, False,
                                                 request.prev_index - 1))]
        index = request.prev_index
        new: list[Entry] = []
        for entry in request.entries:
            index += 1
            if new or index > self.last_index:
                new.append(entry)
            elif self.storage.term_at(index) != entry.term:
                # A conflict: this entry and all after it were never committed (the leader
                # has every committed entry), so they go. Matching entries are never cut,
                # which a delayed, shorter request from the same leader must not do.
                self.storage.truncate_from(index)
                new.append(entry)
        self.storage.append(new)  # durable before the acknowledgement leaves
        match = request.prev_index + len(request.entries)
        if request.leader_commit > self.commit_index:
            self.commit_index = max(self.commit_index, min(request.leader_commit, match))
        return [(request.src, AppendResponse(self.node_id, self.term, True, match))]

    def _on_append_response(self, response: AppendResponse, now: int) -> Outbox:
        if self.role is not Role.LEADER or response.term != self.term:
            return []
        peer = response.src
        if peer not in self._next:
            return []
        self._last_ack[peer] = now
        if response.success:
            if response.match_index > self._match[peer]:
                self._match[peer] = response.match_index
            self._next[peer] = max(self._next[peer], self._match[peer] + 1)
            out = self._maybe_commit()  # sends more only when the window was cut by max_batch
            if self._next[peer] <= self.last_index:
                out.append(self._append_request(peer))
            return out
        # Retry from the follower's hint; never below what it is known to match.
        self._next[peer] = max(self._match[peer] + 1,
                               min(self._next[peer], response.match_index + 1))
        return [self._append_request(peer)]

    def _maybe_commit(self) -> Outbox:
        for index in range(self.last_index, self.commit_index, -1):
            if self.storage.term_at(index) != self.term:
                break  # earlier entries are older terms: committed only through this term's
            acks = 1 + sum(1 for p in self.voters if p != self.node_id
                           and self._match.get(p, 0) >= index)
            if acks >= self._majority():
                self.commit_index = index
                return []
        return []
