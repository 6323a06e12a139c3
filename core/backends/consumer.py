"""A consumer on any LogBackend: manual assignment or a ``consumer`` group, like Kafka's.

Lifecycle: construct → ``poll()`` repeatedly (the first poll of a group consumer joins the
group) → ``commit()`` as needed → ``close()`` (commits when auto-commit is on, leaves the
group). ``poll``, ``commit`` and ``close`` belong to one thread, as with Kafka's consumer;
a background thread sends heartbeats and flags when the group asks for a rejoin.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping, Sequence

from core.backends import errors as be
from core.backends.base import LogBackend
from core.backends.consumer_protocol import (
    Subscription,
    assigned_partitions,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
    range_assign,
)
from core.backends.types import ConsumerRecord, OffsetAndMetadata, OffsetSpec, TopicPartition

__all__ = ["Consumer"]

log = logging.getLogger(__name__)

_RESETS = {"earliest": OffsetSpec.EARLIEST, "latest": OffsetSpec.LATEST, "none": None}
#: Longest single fetch wait of a group member, so a rejoin request is noticed promptly.
_GROUP_FETCH_SLICE_MS = 500


class Consumer:
    """Reads topics through a LogBackend, alone (manual assignment) or in a group.

    ``start_offsets`` values may be real offsets or ``OffsetSpec.EARLIEST``/``LATEST``;
    partitions without one start at the group's committed offset, else per
    ``auto_offset_reset`` (``earliest``, ``latest`` or ``none``, which raises).
    """

    def __init__(self, backend: LogBackend, topics: Sequence[str], *,
                 group_id: str | None = None, auto_offset_reset: str = "latest",
                 partitions: Sequence[int] | None = None,
                 start_offsets: Mapping[TopicPartition, int] | None = None,
                 enable_auto_commit: bool = True, auto_commit_interval_ms: int = 5000,
                 session_timeout_ms: int = 45000, rebalance_timeout_ms: int = 60000,
                 heartbeat_interval_ms: int = 3000, max_poll_records: int = 500,
                 client_id: str = "ferry-consumer",
                 group_instance_id: str | None = None) -> None:
        if auto_offset_reset not in _RESETS:
            raise be.InvalidConfigError(
                f"Invalid value {auto_offset_reset!r} for configuration auto.offset.reset: "
                "String must be one of: earliest, latest, none", key="auto.offset.reset")
        if group_id is not None and not group_id:
            raise be.InvalidConfigError("group.id must not be empty", key="group.id")
        if group_id is not None and partitions is not None:
            raise be.InvalidConfigError(
                "a consumer either joins a group or is assigned partitions, not both",
                key="group.id")
        self._backend = backend
        self._topics = list(dict.fromkeys(topics))
        self._group_id = group_id
        self._reset = auto_offset_reset
        self._auto_commit = enable_auto_commit and group_id is not None
        self._auto_commit_interval = auto_commit_interval_ms / 1000
        self._session_timeout_ms = session_timeout_ms
        self._rebalance_timeout_ms = rebalance_timeout_ms
        self._heartbeat_interval = min(heartbeat_interval_ms, session_timeout_ms // 3) / 1000
        self._max_poll_records = max(1, max_poll_records)
        self._client_id = client_id
        self._instance_id = group_instance_id
        self._fetch_positions: dict[TopicPartition, int] = {}
        self._consumed: dict[TopicPartition, int] = {}
        self._buffer: list[ConsumerRecord] = []
        self._next_commit = time.monotonic() + self._auto_commit_interval
        self._closed = False
        # Group state, shared with the heartbeat thread under _lock.
        self._lock = threading.Lock()
        self._member_id = ""
        self._generation = -1
        self._rejoin = threading.Event()
        self._stop_heartbeat = threading.Event()
        self._heartbeat_thread: threading.Thread | None = None
        if group_id is None:
            self._assign_manual(partitions, start_offsets or {})
        else:
            self._rejoin.set()

    # ------------------------------------------------------------------ public API

    @property
    def assignment(self) -> list[TopicPartition]:
        return sorted(self._fetch_positions)

    def position(self, tp: TopicPartition) -> int:
        return self._consumed[tp]

    def seek(self, tp: TopicPartition, offset: int) -> None:
        """Make the next poll of ``tp`` start at ``offset``."""
        self._buffer = [r for r in self._buffer if (r[0], r[1]) != tp]
        resolved = self._resolve({tp: offset})[tp]
        self._fetch_positions[tp] = self._consumed[tp] = resolved

    def poll(self, timeout_ms: int) -> list[ConsumerRecord]:
        """Records after the current positions, waiting up to ``timeout_ms`` for some."""
        if self._closed:
            raise be.BackendError("the consumer is closed")
        deadline = time.monotonic() + max(0, timeout_ms) / 1000
        while True:
            if self._group_id is not None:
                self._ensure_membership(deadline)
                self._maybe_auto_commit()
            if self._buffer:
                return self._drain_buffer()
            remaining_ms = int((deadline - time.monotonic()) * 1000)
            if not self._fetch_positions:
                if remaining_ms <= 0:
                    return []
                self._rejoin.wait(min(remaining_ms, _GROUP_FETCH_SLICE_MS) / 1000)
                continue
            wait_ms = max(0, remaining_ms)
            if self._group_id is not None:
                wait_ms = min(wait_ms, _GROUP_FETCH_SLICE_MS)
            try:
                results = self._backend.fetch(dict(self._fetch_positions), max_wait_ms=wait_ms)
            except be.OffsetOutOfRangeError:
                self._reset_out_of_range()
                continue
            for tp, result in results.items():
                if tp in self._fetch_positions:
                    self._buffer.extend(result.records)
                    self._fetch_positions[tp] = result.next_offset
                    if not result.records:
                        self._consumed[tp] = max(self._consumed[tp], result.next_offset)
            if self._buffer:
                return self._drain_buffer()
            if time.monotonic() >= deadline:
                return []

    def commit(self, offsets: Mapping[TopicPartition, OffsetAndMetadata] | None = None) -> None:
        """Commit ``offsets`` for this member's group (group consumers only).

        Without ``offsets``, commits the positions after the last records returned; a caller
        that decides what is safe to commit (a Connect sink task after ``pre_commit``)
        passes its own. Either way the commit carries this member's generation and ids.
        """
        if self._group_id is None:
            return
        if offsets is None:
            offsets = {tp: OffsetAndMetadata(o) for tp, o in self._consumed.items()}
        if not offsets:
            return
        with self._lock:
            generation, member_id = self._generation, self._member_id
        self._backend.commit_offsets(self._group_id, offsets, generation_id=generation,
                                     member_id=member_id, group_instance_id=self._instance_id)
        self._next_commit = time.monotonic() + self._auto_commit_interval

    def _maybe_auto_commit(self) -> None:
        if not self._auto_commit or time.monotonic() < self._next_commit:
            return
        try:
            self.commit()
        except be.RetriableError as exc:
            # The rebalance that caused this asks for a rejoin; the next poll handles it.
            log.info("auto-commit of group %s deferred: %s", self._group_id, exc)
            self._next_commit = time.monotonic() + self._auto_commit_interval
        except (be.IllegalGenerationError, be.UnknownMemberIdError) as exc:
            log.info("auto-commit of group %s skipped: %s", self._group_id, exc)
            self._rejoin.set()

    def close(self) -> None:
        """Commit (with auto-commit), leave the group and stop the heartbeat thread."""
        if self._closed:
            return
        self._closed = True
        self._stop_heartbeat.set()
        if self._heartbeat_thread is not None:
            self._heartbeat_thread.join(timeout=5)
        if self._group_id is None or not self._member_id:
            return
        try:
            if self._auto_commit and not self._rejoin.is_set():
                self.commit()
        except be.BackendError as exc:
            log.warning("final offset commit of group %s failed: %s", self._group_id, exc)
        finally:
            try:
                if self._instance_id is None:  # static members keep their slot, as in Kafka
                    self._backend.leave_group(self._group_id, member_id=self._member_id)
            except be.BackendError as exc:
                log.warning("leaving group %s failed: %s", self._group_id, exc)

    def __enter__(self) -> Consumer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ positions

    def _drain_buffer(self) -> list[ConsumerRecord]:
        out = self._buffer[: self._max_poll_records]
        del self._buffer[: self._max_poll_records]
        for record in out:
            self._consumed[TopicPartition(record[0], record[1])] = record[2] + 1
        return out

    def _assign_manual(self, partitions: Sequence[int] | None,
                       start_offsets: Mapping[TopicPartition, int]) -> None:
        tps = []
        for topic in self._topics:
            count = self._backend.partition_count(topic)
            wanted = range(count) if partitions is None else partitions
            for p in wanted:
                if not 0 <= p < count:
                    raise be.UnknownTopicError(
                        f"partition {p} of topic {topic!r} does not exist "
                        f"(the topic has {count} partitions)")
                tps.append(TopicPartition(topic, p))
        explicit = {tp: start_offsets[tp] for tp in tps if tp in start_offsets}
        positions = self._resolve(explicit)
        missing = [tp for tp in tps if tp not in positions]
        positions.update(self._reset_positions(missing))
        self._fetch_positions = dict(positions)
        self._consumed = dict(positions)

    def _resolve(self, offsets: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]:
        """Turn EARLIEST/LATEST markers into offsets; clamp nothing else."""
        out: dict[TopicPartition, int] = {}
        for spec in (OffsetSpec.EARLIEST, OffsetSpec.LATEST):
            tps = [tp for tp, o in offsets.items() if o == spec]
            if tps:
                out.update(self._backend.list_offsets(tps, spec))
        out.update({tp: o for tp, o in offsets.items() if o >= 0})
        return out

    def _reset_positions(self, tps: Sequence[TopicPartition]) -> dict[TopicPartition, int]:
        if not tps:
            return {}
        spec = _RESETS[self._reset]
        if spec is None:
            raise be.OffsetOutOfRangeError(
                f"no committed offset for {', '.join(f'{t}-{p}' for t, p in tps)} and "
                "auto.offset.reset is none")
        return self._backend.list_offsets(tps, spec)

    def _reset_out_of_range(self) -> None:
        tps = list(self._fetch_positions)
        earliest = self._backend.list_offsets(tps, OffsetSpec.EARLIEST)
        latest = self._backend.list_offsets(tps, OffsetSpec.LATEST)
        bad = [tp for tp in tps
               if not earliest[tp] <= self._fetch_positions[tp] <= latest[tp]]
        for tp, offset in self._reset_positions(bad).items():
            log.info("offset %d of %s-%d is out of range; resetting to %d (%s)",
                     self._fetch_positions[tp], tp[0], tp[1], offset, self._reset)
            self._fetch_positions[tp] = self._consumed[tp] = offset

    # ------------------------------------------------------------------ group membership

    def _ensure_membership(self, deadline: float) -> None:
        if not self._rejoin.is_set():
            return
        assert self._group_id is not None
        if self._auto_commit and self._member_id and self._consumed:
            try:
                self.commit()
            except be.GroupError as exc:
                log.info("commit before rejoining group %s failed: %s", self._group_id, exc)
        self._buffer = []
        while True:
            self._rejoin.clear()
            try:
                self._join_and_sync()
                return
            except (be.RebalanceInProgressError, be.IllegalGenerationError):
                continue
            except be.UnknownMemberIdError:
                self._member_id = ""
                continue

    def _join_and_sync(self) -> None:
        group = self._group_id
        assert group is not None
        metadata = encode_subscription(Subscription(tuple(self._topics)))
        joined = self._backend.join_group(
            group, member_id=self._member_id, protocol_type="consumer",
            protocols=[("range", metadata)], session_timeout_ms=self._session_timeout_ms,
            rebalance_timeout_ms=self._rebalance_timeout_ms,
            group_instance_id=self._instance_id, client_id=self._client_id)
        with self._lock:
            self._member_id, self._generation = joined.member_id, joined.generation_id
        assignments = None
        if joined.is_leader:
            subs = {m.member_id: decode_subscription(m.metadata) for m in joined.members}
            counts = {}
            for topic in {t for s in subs.values() for t in s.topics}:
                try:
                    counts[topic] = self._backend.partition_count(topic)
                except be.UnknownTopicError:
                    log.warning("group %s subscribes to unknown topic %s", group, topic)
            assignments = {m: encode_assignment(a) for m, a in range_assign(subs, counts).items()}
        raw = self._backend.sync_group(group, generation_id=joined.generation_id,
                                       member_id=joined.member_id, assignments=assignments,
                                       group_instance_id=self._instance_id)
        tps = [TopicPartition(t, p) for t, p in assigned_partitions(decode_assignment(raw))]
        committed = self._backend.fetch_offsets(group, tps) if tps else {}
        positions = {tp: committed[tp].offset for tp in tps if tp in committed}
        positions.update(self._reset_positions([tp for tp in tps if tp not in positions]))
        self._fetch_positions = dict(positions)
        self._consumed = dict(positions)
        log.info("consumer %s joined group %s generation %d with %d partitions",
                 joined.member_id, group, joined.generation_id, len(tps))
        self._start_heartbeat()

    def _start_heartbeat(self) -> None:
        if self._heartbeat_thread is None or not self._heartbeat_thread.is_alive():
            self._heartbeat_thread = threading.Thread(
                target=self._heartbeat_loop, name=f"ferry-heartbeat:{self._group_id}",
                daemon=True)
            self._heartbeat_thread.start()

    def _heartbeat_loop(self) -> None:
        while not self._stop_heartbeat.wait(self._heartbeat_interval):
            if self._rejoin.is_set():
                continue
            with self._lock:
                generation, member_id = self._generation, self._member_id
            try:
                self._backend.heartbeat(self._group_id or "", generation_id=generation,
                                        member_id=member_id,
                                        group_instance_id=self._instance_id)
            except (be.RebalanceInProgressError, be.IllegalGenerationError):
                self._rejoin.set()
            except be.UnknownMemberIdError:
                with self._lock:
                    self._member_id = ""
                self._rejoin.set()
            except be.BackendError as exc:
                log.warning("heartbeat to group %s failed: %s", self._group_id, exc)
