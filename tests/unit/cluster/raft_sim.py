"""A deterministic simulation of a Raft quorum: every node in this process, a simulated
clock (1 ms steps) and a simulated network with seeded loss, duplication, delay (so
reordering), partitions and crashes. It runs the real RaftNode, and checks after every step
what Raft promises: one leader per term, one committed entry per index for ever, and every
proposal a leader saw committed (the client's acknowledgement) present in the final log.

A crash throws a node's volatile state away and keeps its storage, which is what storage
that fsyncs before returning (FileRaftStorage) leaves after a power cut.
"""

from __future__ import annotations

import heapq
import random
from collections.abc import Callable
from dataclasses import dataclass, field

from core.cluster.raft import Entry, MemoryRaftStorage, Message, NotLeaderError, RaftNode, Role

ELECTION_TIMEOUT_MS = 100
TICK_MS = 5


class SafetyViolation(AssertionError):
    """The simulation saw Raft break one of its promises."""


@dataclass
class Fault:
    at_ms: int
    kind: str  # "crash", "restart", "isolate", "heal"
    node: int


@dataclass
class Simulation:
    seed: int
    voters: int = 3
    drop: float = 0.0
    duplicate: float = 0.0
    max_delay_ms: int = 10
    storage_factory: Callable[[], MemoryRaftStorage] = MemoryRaftStorage
    now: int = 0
    nodes: dict[int, RaftNode | None] = field(default_factory=dict)
    storages: dict[int, MemoryRaftStorage] = field(default_factory=dict)
    isolated: set[int] = field(default_factory=set)
    leaders: dict[int, int] = field(default_factory=dict)  # term -> leader
    committed: dict[int, Entry] = field(default_factory=dict)  # index -> entry
    acked: dict[bytes, int] = field(default_factory=dict)  # payload -> index
    pending: dict[bytes, tuple[int, int, int]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)
        self._queue: list[tuple[int, int, int, Message]] = []
        self._seq = 0
        self._proposals = 0
        self._checked: dict[int, int] = {}
        for node_id in range(1, self.voters + 1):
            self.storages[node_id] = self.storage_factory()
            self._start(node_id)

    # -- the world --------------------------------------------------------------------------

    def _start(self, node_id: int) -> None:
        self.nodes[node_id] = RaftNode(
            node_id, list(range(1, self.voters + 1)), self.storages[node_id], now_ms=self.now,
            rng=random.Random(self.rng.random()), election_timeout_ms=ELECTION_TIMEOUT_MS)

    def _send(self, src: int, out: list[tuple[int, Message]]) -> None:
        for dst, message in out:
            copies = 2 if self.rng.random() < self.duplicate else 1
            for _ in range(copies):
                if self.rng.random() < self.drop:
                    continue
                self._seq += 1
                delay = self.rng.randint(1, self.max_delay_ms)
                heapq.heappush(self._queue, (self.now + delay, self._seq, dst, message))

    def _cut(self, a: int, b: int) -> bool:
        return a in self.isolated or b in self.isolated

    def apply(self, fault: Fault) -> None:
        node_id = fault.node
        if fault.kind == "crash":
            self.nodes[node_id] = None
        elif fault.kind == "restart" and self.nodes[node_id] is None:
            self._start(node_id)
        elif fault.kind == "isolate":
            self.isolated.add(node_id)
        elif fault.kind == "heal":
            self.isolated.discard(node_id)

    def leader(self) -> RaftNode | None:
        live = [n for n in self.nodes.values() if n is not None and n.role is Role.LEADER]
        return max(live, key=lambda n: n.term) if live else None

    def propose(self, leader: RaftNode | None = None, data: bytes | None = None) -> None:
        """A client sends a unique payload to ``leader`` (default: the node it believes
        leads)."""
        leader = leader or self.leader()
        if leader is None:
            return
        self._proposals += 1
        data = data or f"v{self._proposals}".encode()
        try:
            index, out = leader.propose(data, self.now)
        except NotLeaderError:
            return
        self.pending[data] = (leader.node_id, leader.term, index)
        self._send(leader.node_id, out)

    def step(self) -> None:
        self.now += 1
        while self._queue and self._queue[0][0] <= self.now:
            _, _, dst, message = heapq.heappop(self._queue)
            node = self.nodes.get(dst)
            if node is None or self._cut(message.src, dst):
                continue
            self._send(dst, self._deliver(dst, message))
        if self.now % TICK_MS == 0:
            for node_id, node in list(self.nodes.items()):
                if node is not None:
                    self._send(node_id, self._tick(node_id))
        self.check()

    def _deliver(self, node_id: int, message: Message) -> list[tuple[int, Message]]:
        return self.nodes[node_id].receive(message, self.now)

    def _tick(self, node_id: int) -> list[tuple[int, Message]]:
        return self.nodes[node_id].tick(self.now)

    def run(self, until_ms: int, faults: list[Fault] = (), propose_every_ms: int = 0
            ) -> None:
        todo = sorted(faults, key=lambda f: f.at_ms)
        while self.now < until_ms:
            while todo and todo[0].at_ms <= self.now:
                self.apply(todo.pop(0))
            if propose_every_ms and self.now % propose_every_ms == 0:
                self.propose()
            self.step()

    # -- the checks -------------------------------------------------------------------------

    def check(self) -> None:
        for node_id, node in self.nodes.items():
            if node is None:
                continue
            if node.role is Role.LEADER:
                other = self.leaders.setdefault(node.term, node_id)
                if other != node_id:
                    raise SafetyViolation(f"two leaders in term {node.term}: {other}, {node_id}")
            # New commits are checked as they come, and the last committed entry on every
            # step (a truncation below the commit index removes it); check_final compares
            # every node's whole committed prefix.
            checked = min(self._checked.get(node_id, 0), node.commit_index - 1)
            self._check_prefix(node_id, node, max(0, checked))
            self._checked[node_id] = node.commit_index
        for data, (leader_id, term, index) in list(self.pending.items()):
            node = self.nodes.get(leader_id)
            if node is None or node.term != term or node.role is not Role.LEADER:
                continue
            if node.commit_index >= index:  # the leader would acknowledge it now
                self.acked[data] = index
                del self.pending[data]

    def _check_prefix(self, node_id: int, node: RaftNode, start: int) -> None:
        entries = node.storage.entries(start + 1, node.commit_index + 1)
        if len(entries) != node.commit_index - start:
            raise SafetyViolation(f"node {node_id} committed {node.commit_index} entries "
                                  f"but holds {start + len(entries)}")
        for index, entry in enumerate(entries, start=start + 1):
            known = self.committed.setdefault(index, entry)
            if known != entry:
                raise SafetyViolation(f"index {index} committed as {known} and as {entry} "
                                      f"(node {node_id})")

    def check_final(self) -> None:
        """Every node's committed prefix agrees, and every acknowledged payload is in the
        committed log at its index."""
        for node_id, node in self.nodes.items():
            if node is not None:
                self._check_prefix(node_id, node, 0)
        for data, index in self.acked.items():
            entry = self.committed.get(index)
            if entry is None or entry.data != data:
                raise SafetyViolation(f"acknowledged {data!r} at {index} is lost ({entry})")

    def heal_and_settle(self, budget_ms: int = 5000) -> int:
        """Restart every node, end partitions and loss; run until a fresh proposal commits
        on every node. Returns the simulated ms it took (raises if it never does)."""
        self.isolated.clear()
        self.drop = 0.0
        for node_id, node in self.nodes.items():
            if node is None:
                self._start(node_id)
        start = self.now
        target: bytes | None = None
        while self.now - start < budget_ms:
            if target is None and self.leader() is not None:
                before = set(self.pending)
                self.propose()
                new = set(self.pending) - before
                target = new.pop() if new else None
            self.step()
            if target is not None and target in self.acked:
                index = self.acked[target]
                if all(n is not None and n.commit_index >= index for n in self.nodes.values()):
                    self.check_final()
                    return self.now - start
            if target is not None and target not in self.pending and target not in self.acked:
                target = None
            elif target in self.pending and self.pending[target][1] != getattr(
                    self.nodes.get(self.pending[target][0]), "term", None):
                del self.pending[target]  # its leader lost the term: ask the next one
                target = None
        raise SafetyViolation(f"no proposal committed on every node within {budget_ms} ms "
                              "after healing")
