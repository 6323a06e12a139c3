"""This broker's replicas in a cluster (Kafka's ``ReplicaManager``): it applies the
committed metadata image (create the local logs, become leader or follower at each leader
epoch), keeps each led partition's ``PartitionLeader`` (ISR, high watermark, acks=all) and
leader-epoch cache, asks the controller to shrink or expand ISRs, and runs one fetcher per
leader this broker follows.

Everything here runs on the broker's event loop. Its parts, one concept each:
``leading.LeaderRequests`` (what the request handlers ask: who leads, acks=all, a
follower's fetch), ``isr_updates.IsrUpdates`` (AlterPartition proposals),
``topic_admin.TopicAdmin`` (topic changes through the controller), ``replica.Replica``
(one partition's replica and the requests parked on its high watermark) and
``fetcher.ReplicaFetcher`` (a follower's fetches from one leader).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from core.broker.replication.isr import PartitionLeader
from core.broker.replication.isr_updates import ISR_CHECK_S, IsrUpdates, now_ms
from core.broker.replication.leader_epoch import LeaderEpochCache
from core.broker.replication.leading import LeaderRequests
from core.broker.replication.replica import Replica, ReplicationError
from core.broker.replication.topic_admin import TopicAdmin
from core.cluster.records import NO_LEADER, PartitionSpec
from core.log.errors import TopicExistsError, UnknownTopicError
from core.protocol.client_security import ClientSecurity

if TYPE_CHECKING:
    from core.broker.state import BrokerState
    from core.cluster.config import ClusterConfig
    from core.cluster.image import MetadataImage

__all__ = ["Replica", "ReplicaManager", "ReplicationError"]

log = logging.getLogger(__name__)

_TICK_S = 0.02
_APPLY_TIMEOUT_S = 10.0


class ReplicaManager(LeaderRequests, TopicAdmin, IsrUpdates):
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
                    next_isr_check = time.monotonic() + ISR_CHECK_S
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
            replica.wake(everyone=True)
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
            replica.wake(everyone=True)  # acks=all waiters answer NOT_LEADER_OR_FOLLOWER
        elif old.leader_epoch != spec.leader_epoch:
            replica.wake(everyone=True)

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
            replica_lag_time_max_ms=self.config.replica_lag_time_max_ms, now_ms=now_ms(),
            high_watermark=min(replica.follower_high_watermark, end))
        replica.leader.appended(end)
        log.info("%s-%d: leader at epoch %d from offset %d, ISR %s", replica.topic,
                 replica.partition, spec.leader_epoch, end, list(spec.isr))
        if self.on_leader is not None:  # its own task: a slow reload holds up nothing else
            self._background(asyncio.to_thread(self.on_leader, replica))
        replica.wake(everyone=True)

    def _hw_moved(self, replica: Replica) -> None:
        """Wake what waits on the high watermark: consumers' long polls and acks=all."""
        self.state.append_waiters.notify(replica.plog)
        replica.wake()

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
            self._background(fetcher.stop())
        for fetcher in self._fetchers.values():
            fetcher.partitions_changed()

    # -- brokers ------------------------------------------------------------------------

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

    def leader_address(self, leader_id: int) -> tuple[str, int] | None:
        """The leader's inter-broker listener, from its registration."""
        return self.broker_address(leader_id, self.config.inter_broker_listener_name,
                                   live_only=False)

    def broker_address(self, broker_id: int, listener: str | None = None, *,
                       live_only: bool = True) -> tuple[str, int] | None:
        """Where clients of ``listener`` (default the inter-broker one) reach
        ``broker_id``; with ``live_only``, None while it is fenced."""
        broker = self.image.brokers.get(broker_id)
        if broker is None or (live_only and broker.fenced):
            return None
        name = listener or self.config.inter_broker_listener_name
        for endpoint in broker.registration.endpoints:
            if endpoint.name == name:
                return endpoint.host, endpoint.port
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
