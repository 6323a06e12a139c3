"""This broker's replicas in a cluster (Kafka's ``ReplicaManager``): it applies the
committed metadata image (create the local logs, become leader or follower at each leader
epoch), keeps each led partition's ``PartitionLeader`` (ISR, high watermark, acks=all) and
leader-epoch cache, asks the controller to shrink or expand ISRs, and runs one fetcher per
leader this broker follows.

Everything here runs on the broker's event loop; the handlers of Produce, Fetch, Metadata
and ListOffsets ask it who leads, at which epoch, and up to where records are committed.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from core.broker.replication.isr import AcksResult, IsrChange, PartitionLeader
from core.broker.replication.leader_epoch import LeaderEpochCache, diverging_epoch
from core.cluster.records import NO_LEADER, PartitionSpec
from core.log.errors import TopicExistsError, UnknownTopicError
from core.protocol.client_security import ClientSecurity
from core.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from core.broker.state import BrokerState
    from core.cluster.config import ClusterConfig
    from core.cluster.image import MetadataImage
    from core.log.log import PartitionLog

__all__ = ["Replica", "ReplicaManager", "ReplicationError"]

log = logging.getLogger(__name__)

_TICK_S = 0.02
_ISR_CHECK_S = 0.25
_APPLY_TIMEOUT_S = 10.0


def _now_ms() -> int:
    return int(time.monotonic() * 1000)


class ReplicationError(Exception):
    """A request reached a broker that cannot serve it for this partition; ``code`` is
    the Kafka error to answer (NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH, ...)."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(eq=False)
class Replica:
    """One partition this broker holds a replica of. ``leader`` is set while this broker
    leads it at ``spec.leader_epoch``; ``high_watermark`` is what a follower learnt from
    its leader (a leader's is ``leader.high_watermark``)."""

    topic: str
    partition: int
    plog: PartitionLog
    epochs: LeaderEpochCache
    spec: PartitionSpec
    leader: PartitionLeader | None = None
    follower_high_watermark: int = 0
    changed: asyncio.Condition = field(default_factory=asyncio.Condition)

    @property
    def high_watermark(self) -> int:
        if self.leader is not None:
            return min(self.leader.high_watermark, self.plog.log_end_offset)
        return min(self.follower_high_watermark, self.plog.log_end_offset)

    async def notify(self) -> None:
        async with self.changed:
            self.changed.notify_all()


class ReplicaManager:
    """``start``, then ``stop``. ``image`` gives the committed metadata; ``submit`` sends an
    operation to the active controller; ``broker_epoch`` is this broker's registration."""

    def __init__(self, config: ClusterConfig, state: BrokerState,
                 image: Callable[[], MetadataImage],
                 submit: Callable[..., Awaitable[dict[str, Any]]],
                 broker_epoch: Callable[[], int | None],
                 controller_id: Callable[[], int | None] = lambda: None,
                 inter_broker: ClientSecurity | None = None) -> None:
        self.config = config
        #: how the fetchers connect to a leader's inter-broker listener (TLS, SASL)
        self.inter_broker = inter_broker or ClientSecurity()
        self.controller_id = controller_id
        self.node_id = config.node_id
        self.state = state
        self._image = image
        self._submit = submit
        self._broker_epoch = broker_epoch
        self.replicas: dict[tuple[str, int], Replica] = {}
        self._topic_ids: dict[str, str] = {}  # of the topics held here, to see re-creation
        self._applied = -1
        self._strays_checked = False  # see _remove_strays
        self._fetchers: dict[int, Any] = {}
        self._tasks: list[asyncio.Task[None]] = []
        self._alters: set[asyncio.Task[None]] = set()
        self.last_error = ""  # the controller's message for the last refused create_topic
        #: ISR changes of partitions this broker leads, as Kafka's IsrShrinksPerSec and
        #: IsrExpandsPerSec count them: one per committed change (``/metrics``).
        self.isr_shrinks = 0
        self.isr_expands = 0
        #: Called (in a thread) when this broker becomes a partition's leader, after its
        #: state is set: the group coordinator reloads a __consumer_offsets partition.
        self.on_leader: Callable[[Replica], None] | None = None

    @property
    def image(self) -> MetadataImage:
        return self._image()

    def start(self) -> None:
        """Begin applying the metadata (on the event loop)."""
        self._tasks.append(asyncio.create_task(self._run(), name="ferry-replica-manager"))

    async def stop(self) -> None:
        for task in [*self._tasks, *self._alters]:
            task.cancel()
        for fetcher in self._fetchers.values():
            await fetcher.stop()
        await asyncio.gather(*self._tasks, *self._alters, return_exceptions=True)

    # -- what handlers ask --------------------------------------------------------------

    def leader_epoch_for_append(self, topic: str, partition: int) -> int:
        """The epoch to stamp on a broker-internal append (the group coordinator's), which
        only the leader may make; ReplicationError otherwise. Any thread."""
        replica = self.replicas.get((topic, partition))
        leader = replica.leader if replica is not None else None
        if leader is None:
            raise ReplicationError(ErrorCode.NOT_COORDINATOR,
                                   f"broker {self.node_id} does not lead {topic}-{partition}")
        return leader.leader_epoch

    def broker_address(self, broker_id: int, listener: str | None = None
                       ) -> tuple[str, int] | None:
        """Where clients of ``listener`` reach ``broker_id``, if it is live."""
        for found, host, port, _ in self.live_brokers(listener):
            if found == broker_id:
                return host, port
        return None

    def live_brokers(self, listener: str | None = None
                     ) -> list[tuple[int, str, int, str | None]]:
        """(id, host, port, rack) of every unfenced broker on ``listener`` (the name of
        the listener a client came through; default the inter-broker one), as Kafka
        answers Metadata with each broker's endpoint of the client's listener."""
        out = []
        name = listener or self.config.inter_broker_listener_name
        for broker_id, broker in sorted(self.image.brokers.items()):
            if broker.fenced:
                continue
            for endpoint in broker.registration.endpoints:
                if endpoint.name == name:
                    out.append((broker_id, endpoint.host, endpoint.port,
                                broker.registration.rack))
        return out

    def controller_for_clients(self, live: list[int]) -> int:
        """The ControllerId that Metadata and DescribeCluster give a client whose answer
        lists the brokers ``live``: the active controller when it is one of them, else
        this broker, else the first of them (-1 only when none is live). Any broker
        forwards admin requests to the active controller, so, as Kafka's KRaft brokers
        (which name a random live broker), the id is always one the client can reach:
        librdkafka parks an admin request until the broker named controller is connected,
        and never learns of a broker left out of the list, nor asks again for a
        controller of -1 until some broker's state changes; the request then hangs until
        the client's timeout, with no error."""
        active = self.controller_id()
        for candidate in (active, self.node_id):
            if candidate is not None and candidate in live:
                return candidate
        return live[0] if live else -1

    async def create_topic(self, name: str, partitions: int, replication_factor: int | None,
                           configs: dict[str, str], timeout_s: float = 10.0) -> ErrorCode:
        """Create a topic through the active controller, then wait until this broker's
        image holds it, so that the client's next Metadata here finds it; within
        ``timeout_s`` in all (REQUEST_TIMED_OUT when no controller answered by then)."""
        deadline = time.monotonic() + timeout_s
        reply = await self._submit("create_topic", {
            "name": name, "partitions": partitions, "replication_factor": replication_factor,
            "configs": configs}, timeout_s=timeout_s)
        code = reply.get("error_code", ErrorCode.UNKNOWN_SERVER_ERROR)
        if code != 0:
            self.last_error = str(reply.get("error_message") or "")
            if code == 41:  # NOT_CONTROLLER after retries: no controller answered
                return ErrorCode.REQUEST_TIMED_OUT
            return ErrorCode(code)
        while name not in self.image.topics and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        return ErrorCode.NONE

    async def add_partitions(self, name: str, total: int,
                             assignments: list[list[int]] | None,
                             timeout_s: float = 10.0) -> ErrorCode:
        """Grow a topic through the active controller; wait until this broker's image
        shows the new partitions."""
        reply = await self._submit("add_partitions", {
            "name": name, "total": total, "assignments": assignments}, timeout_s=timeout_s)
        code = reply.get("error_code", ErrorCode.UNKNOWN_SERVER_ERROR)
        if code != 0:
            self.last_error = str(reply.get("error_message") or "")
            return ErrorCode.REQUEST_TIMED_OUT if code == 41 else ErrorCode(code)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and len(
                getattr(self.image.topics.get(name), "partitions", ())) < total:
            await asyncio.sleep(0.01)
        return ErrorCode.NONE

    async def delete_topic(self, name: str, timeout_s: float = 10.0) -> ErrorCode:
        """Delete a topic through the active controller, then wait until this broker's image
        no longer holds it (every broker deletes its replicas as it applies the record)."""
        reply = await self._submit("delete_topic", {"name": name}, timeout_s=timeout_s)
        code = reply.get("error_code", ErrorCode.UNKNOWN_SERVER_ERROR)
        if code != 0:
            self.last_error = str(reply.get("error_message") or "")
            return ErrorCode.REQUEST_TIMED_OUT if code == 41 else ErrorCode(code)
        deadline = time.monotonic() + timeout_s
        while name in self.image.topics and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        return ErrorCode.NONE

    def replica(self, topic: str, partition: int) -> Replica:
        """The local replica; UNKNOWN_TOPIC_OR_PARTITION if this broker has none."""
        replica = self.replicas.get((topic, partition))
        if replica is None:
            if self.image.partition(topic, partition) is None:
                raise ReplicationError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                       f"{topic}-{partition} does not exist")
            raise ReplicationError(ErrorCode.NOT_LEADER_OR_FOLLOWER,
                                   f"this broker ({self.node_id}) holds no replica of "
                                   f"{topic}-{partition}")
        return replica

    def leader_replica(self, topic: str, partition: int, current_leader_epoch: int = -1
                       ) -> Replica:
        """The replica if this broker leads it; otherwise the error Kafka gives: a client
        that names a newer epoch than ours is ahead of our metadata (UNKNOWN_LEADER_EPOCH),
        an older one is behind (FENCED_LEADER_EPOCH)."""
        replica = self.replica(topic, partition)
        leader = replica.leader
        epoch = replica.spec.leader_epoch
        if current_leader_epoch >= 0 and current_leader_epoch > epoch:
            raise ReplicationError(ErrorCode.UNKNOWN_LEADER_EPOCH,
                                   f"leader epoch {current_leader_epoch} of {topic}-"
                                   f"{partition} is newer than this broker's {epoch}")
        if current_leader_epoch >= 0 and current_leader_epoch < epoch:
            raise ReplicationError(ErrorCode.FENCED_LEADER_EPOCH,
                                   f"leader epoch {current_leader_epoch} of {topic}-"
                                   f"{partition} is older than {epoch}; refresh metadata")
        if leader is None:
            raise ReplicationError(ErrorCode.NOT_LEADER_OR_FOLLOWER,
                                   f"broker {self.node_id} does not lead {topic}-{partition} "
                                   f"(the leader is {replica.spec.leader})")
        return replica

    def check_produce(self, topic: str, partition: int, acks: int) -> tuple[Replica, int]:
        """The led replica and the leader epoch to stamp; NOT_ENOUGH_REPLICAS for acks=all
        when the ISR is below min.insync.replicas."""
        replica = self.leader_replica(topic, partition)
        assert replica.leader is not None
        replica.leader.min_insync_replicas = replica.plog.config.min_insync_replicas
        if replica.leader.check_before_append(acks) != AcksResult.NONE:
            raise ReplicationError(
                ErrorCode.NOT_ENOUGH_REPLICAS,
                f"{topic}-{partition} has {len(replica.leader.isr)} in-sync replicas "
                f"{list(replica.leader.isr)}, fewer than min.insync.replicas="
                f"{replica.leader.min_insync_replicas}")
        return replica, replica.leader.leader_epoch

    def appended(self, replica: Replica) -> None:
        """The leader appended to ``replica``: with an ISR of one the HW moves now."""
        leader = replica.leader
        if leader is not None and leader.appended(replica.plog.log_end_offset):
            self._hw_moved(replica)

    async def wait_acks_all(self, replica: Replica, leader_epoch: int, end_offset: int,
                            timeout_s: float) -> ErrorCode:
        """Wait until the batch ending before ``end_offset`` is below the high watermark:
        NONE, NOT_ENOUGH_REPLICAS_AFTER_APPEND, NOT_LEADER_OR_FOLLOWER if this broker lost
        the leadership meanwhile (the batch may be truncated away), REQUEST_TIMED_OUT."""
        deadline = time.monotonic() + timeout_s

        def outcome() -> int | None:
            leader = replica.leader
            if leader is None or leader.leader_epoch != leader_epoch:
                return ErrorCode.NOT_LEADER_OR_FOLLOWER
            result = leader.acks_all_result(end_offset)
            return None if result == AcksResult.PENDING else result

        async with replica.changed:
            while (result := outcome()) is None:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return ErrorCode.REQUEST_TIMED_OUT
                try:
                    await asyncio.wait_for(replica.changed.wait(), remaining)
                except TimeoutError:
                    return ErrorCode.REQUEST_TIMED_OUT
        return ErrorCode(result)

    def follower_fetch(self, topic: str, partition: int, replica_id: int,
                       current_leader_epoch: int, fetch_offset: int, last_fetched_epoch: int
                       ) -> tuple[Replica, tuple[int, int] | None]:
        """A follower's Fetch reached this leader: check its epoch, find a divergence
        (then the follower truncates and its log end says nothing yet), else note its log
        end, which may move the HW or call for an ISR expansion."""
        replica = self.leader_replica(topic, partition, current_leader_epoch)
        leader = replica.leader
        assert leader is not None
        if replica_id not in leader.replicas:
            raise ReplicationError(ErrorCode.NOT_LEADER_OR_FOLLOWER,
                                   f"broker {replica_id} is no replica of {topic}-{partition}")
        end = replica.plog.log_end_offset
        diverging = diverging_epoch(replica.epochs, end, fetch_offset, last_fetched_epoch)
        if diverging is not None:
            return replica, diverging
        if fetch_offset > end:
            return replica, None  # ahead of this log: the read answers OFFSET_OUT_OF_RANGE
        leader.log_end = end
        moved, change = leader.follower_fetched(replica_id, fetch_offset, _now_ms())
        if moved:
            self._hw_moved(replica)
        if change is not None:
            self._alter(replica, change)
        return replica, None

    # -- applying the metadata ----------------------------------------------------------

    async def _run(self) -> None:
        next_isr_check = 0.0
        while True:
            try:
                if not self._strays_checked:
                    await self._remove_strays()
                image = self.image
                if image.offset != self._applied:
                    offset = image.offset
                    await asyncio.wait_for(self._apply(image), _APPLY_TIMEOUT_S)
                    self._applied = offset
            except TimeoutError:
                log.warning("applying metadata offset %d to the replicas took more than "
                            "%.0f s; trying again", self.image.offset, _APPLY_TIMEOUT_S)
            except Exception:  # the replicas must keep following the metadata
                log.exception("applying metadata to the replicas failed")
            try:
                if time.monotonic() >= next_isr_check:
                    next_isr_check = time.monotonic() + _ISR_CHECK_S
                    self._check_isrs()
            except Exception:
                log.exception("checking the ISRs failed")
            await asyncio.sleep(_TICK_S)

    async def _apply(self, image: MetadataImage) -> None:
        for name in {t for t, _ in self.replicas}:
            topic = image.topics.get(name)
            if topic is None or topic.topic_id != self._topic_ids.get(name):
                await self._remove_topic(name)  # deleted (and maybe created again)
        for name, topic in sorted(image.topics.items()):
            for p, spec in enumerate(topic.partitions):
                if self.node_id not in spec.replicas:
                    continue
                replica = self.replicas.get((name, p))
                if replica is None:
                    replica = await self._open(name, p, len(topic.partitions), topic.configs,
                                               spec)
                    self._topic_ids[name] = topic.topic_id
                await self._update(replica, spec)
        self._reconcile_fetchers()

    async def _remove_strays(self) -> None:
        """Once this broker's image holds its own registration, and so every change
        committed before this broker (re)started, delete the local topics of which the
        metadata gives this broker no replica: deleted while it was down (and maybe
        created again elsewhere under the same name), they would otherwise stay on its
        disk (Kafka's brokers delete such stray replicas at startup too). Internal topics
        are kept: this broker makes its ``__consumer_offsets`` itself before the
        controller's exists."""
        epoch = self._broker_epoch()
        image = self.image
        if epoch is None or image.offset < epoch:
            return
        self._strays_checked = True
        manager = self.state.manager
        for name in manager.topics():
            topic = image.topics.get(name)
            if manager.topic(name).internal or (topic is not None and any(
                    self.node_id in spec.replicas for spec in topic.partitions)):
                continue
            try:
                await asyncio.to_thread(manager.delete_topic, name)
            except UnknownTopicError:
                continue
            log.info("deleted the local replicas of %s: the topic was deleted while this "
                     "broker was away", name)

    async def _open(self, topic: str, partition: int, partitions: int,
                    configs: dict[str, str], spec: PartitionSpec) -> Replica:
        manager = self.state.manager
        try:
            manager.topic(topic)
        except UnknownTopicError:
            try:
                await asyncio.to_thread(manager.create_topic, topic, partitions, configs)
                log.info("created the local replicas of %s (%d partitions)", topic, partitions)
            except TopicExistsError:
                pass
        if manager.topic(topic).partitions < partitions:  # CreatePartitions grew it
            await asyncio.to_thread(manager.add_partitions, topic, partitions)
            log.info("grew the local replicas of %s to %d partitions", topic, partitions)
        plog = manager.log(topic, partition)
        epochs = await asyncio.to_thread(LeaderEpochCache.read, plog.directory)
        replica = Replica(topic, partition, plog, epochs, spec)
        self.replicas[(topic, partition)] = replica
        return replica

    async def _remove_topic(self, name: str) -> None:
        """The controller removed ``name``: drop its replicas (waiters answer
        NOT_LEADER_OR_FOLLOWER, fetchers skip it) and delete the local log."""
        gone = [self.replicas.pop(key) for key in [k for k in self.replicas if k[0] == name]]
        self._topic_ids.pop(name, None)
        for replica in gone:
            replica.leader = None
            await replica.notify()
        try:
            await asyncio.to_thread(self.state.manager.delete_topic, name)
            log.info("deleted the local replicas of %s (%d partitions)", name, len(gone))
        except UnknownTopicError:
            pass

    async def _update(self, replica: Replica, spec: PartitionSpec) -> None:
        old = replica.spec
        replica.spec = spec
        leader = replica.leader
        if spec.leader == self.node_id:
            if leader is None or leader.leader_epoch != spec.leader_epoch:
                await self._become_leader(replica, spec)
            elif spec.partition_epoch != leader.partition_epoch:
                before = set(leader.isr)
                if leader.committed(spec.isr, spec.leader_epoch, spec.partition_epoch):
                    self._count_isr_change(before, set(spec.isr))
                    self._hw_moved(replica)
            return
        if leader is not None:
            log.info("%s-%d: leader %d at epoch %d now; following", replica.topic,
                     replica.partition, spec.leader, spec.leader_epoch)
            replica.follower_high_watermark = leader.high_watermark
            replica.leader = None
            await replica.notify()  # acks=all waiters answer NOT_LEADER_OR_FOLLOWER
        elif old.leader_epoch != spec.leader_epoch:
            await replica.notify()

    async def _become_leader(self, replica: Replica, spec: PartitionSpec) -> None:
        plog = replica.plog
        end = plog.log_end_offset
        if replica.epochs.assign(spec.leader_epoch, end):
            await asyncio.to_thread(replica.epochs.write, plog.directory)
        # A follower's appends bypassed the producer state: rebuild it from the log, so
        # idempotent producers carry on with the sequences the old leader accepted.
        self.state.producers.forget(plog)
        replica.leader = PartitionLeader(
            broker_id=self.node_id, replicas=spec.replicas, isr=spec.isr,
            leader_epoch=spec.leader_epoch, partition_epoch=spec.partition_epoch,
            epoch_start_offset=end, log_end=end,
            min_insync_replicas=plog.config.min_insync_replicas,
            replica_lag_time_max_ms=self.config.replica_lag_time_max_ms, now_ms=_now_ms(),
            high_watermark=min(replica.follower_high_watermark, end))
        replica.leader.appended(end)
        log.info("%s-%d: leader at epoch %d from offset %d, ISR %s", replica.topic,
                 replica.partition, spec.leader_epoch, end, list(spec.isr))
        if self.on_leader is not None:  # its own task: a slow reload holds up nothing else
            task = asyncio.create_task(asyncio.to_thread(self.on_leader, replica))
            self._alters.add(task)
            task.add_done_callback(self._alters.discard)
        await replica.notify()

    def _count_isr_change(self, before: set[int], after: set[int]) -> None:
        if after < before:
            self.isr_shrinks += 1
        elif after > before:
            self.isr_expands += 1

    def _hw_moved(self, replica: Replica) -> None:
        self.state.append_waiters.notify(replica.plog)
        task = asyncio.ensure_future(replica.notify())
        self._alters.add(task)
        task.add_done_callback(self._alters.discard)

    # -- the ISR ------------------------------------------------------------------------

    def _check_isrs(self) -> None:
        now = _now_ms()
        for replica in self.replicas.values():
            leader = replica.leader
            if leader is None:
                continue
            leader.log_end = replica.plog.log_end_offset
            change = leader.maybe_shrink(now)
            if change is not None:
                self._alter(replica, change)

    def _alter(self, replica: Replica, change: IsrChange) -> None:
        task = asyncio.create_task(self._send_alter(replica, change))
        self._alters.add(task)
        task.add_done_callback(self._alters.discard)

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
                timeout_s=5.0)
        leader = replica.leader
        if reply.get("error_code") != 0 and leader is not None and leader.pending == change:
            log.info("%s-%d: ISR change %s refused: %s", replica.topic, replica.partition,
                     list(change.isr), reply.get("error_message"))
            leader.change_rejected()
        # On success the committed metadata brings the new ISR (``_update``).

    # -- fetchers -----------------------------------------------------------------------

    def following(self, leader_id: int) -> list[Replica]:
        """The replicas this broker follows whose leader is ``leader_id``."""
        return [r for r in self.replicas.values()
                if r.leader is None and r.spec.leader == leader_id]

    def _reconcile_fetchers(self) -> None:
        from core.broker.replication.fetcher import ReplicaFetcher

        wanted = {r.spec.leader for r in self.replicas.values()
                  if r.leader is None and r.spec.leader not in (NO_LEADER, self.node_id)}
        for leader_id in wanted - set(self._fetchers):
            fetcher = ReplicaFetcher(self, leader_id)
            fetcher.start()
            self._fetchers[leader_id] = fetcher
        for leader_id in set(self._fetchers) - wanted:
            fetcher = self._fetchers.pop(leader_id)
            task = asyncio.create_task(fetcher.stop())
            self._alters.add(task)
            task.add_done_callback(self._alters.discard)

    def leader_address(self, leader_id: int) -> tuple[str, int] | None:
        """The leader's inter-broker listener, from its registration."""
        broker = self.image.brokers.get(leader_id)
        if broker is None:
            return None
        name = self.config.inter_broker_listener_name
        for endpoint in broker.registration.endpoints:
            if endpoint.name == name:
                return endpoint.host, endpoint.port
        return None
