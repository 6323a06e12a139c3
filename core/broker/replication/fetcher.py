"""A follower's fetcher (Kafka's ``ReplicaFetcherThread``): one connection to one leader,
Kafka's Fetch v12 with this broker's id as ``replica_id`` for every partition it follows
there, each from its log end with its current leader epoch and the epoch of its last
batch. The leader answers records (appended here byte for byte by
``PartitionLog.append_as_follower``: offsets, timestamps, leader epochs and CRCs kept),
its high watermark, or a diverging epoch (the follower cuts its log there and fetches
again, KIP-320/KIP-595's check).

Sizes are Kafka's replica fetcher's: up to ``replica.fetch.max.bytes`` per partition and
``replica.fetch.response.max.bytes`` in all, answered once ``replica.fetch.min.bytes``
are there or after ``replica.fetch.wait.max.ms``. Each fetch takes everything the leader
has up to those limits, so one round trip carries every batch appended meanwhile, and
the stored bytes are appended as they came (no per-record work). The next fetch, which
reports the new log end, is what moves the leader's high watermark, so it is sent as soon
as the answer is appended: on the event loop, since a page-cache append is quicker than a
thread hop (a partition that fsyncs every append appends on a thread).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import struct
from typing import TYPE_CHECKING, Any

from kafka.protocol.consumer import FetchRequest, FetchResponse

from core.broker.replication.leader_epoch import truncation_offset
from core.log.errors import StorageError, UnexpectedAppendOffsetError
from core.log.records import iter_batches
from core.protocol.client_security import ClientSecurity, ClientSecurityError
from core.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from core.broker.replication.manager import Replica, ReplicaManager

__all__ = ["ReplicaFetcher"]

log = logging.getLogger(__name__)

_VERSION = 12
_SIZE = struct.Struct(">i")
_BACKOFF_S = 0.1
_CONNECT_TIMEOUT_S = 1.0
_LOGIN_TIMEOUT_S = 10.0  # a TLS handshake and a SASL exchange (SCRAM's key stretching)
_REFUSED_BACKOFF_S = 1.0


class ReplicaFetcher:
    """``start`` then ``stop``; the partitions come from the manager at every fetch."""

    def __init__(self, manager: ReplicaManager, leader_id: int) -> None:
        self.manager = manager
        self.leader_id = leader_id
        self._task: asyncio.Task[None] | None = None
        self._correlation = itertools.count(1)
        # While a fetch waits for its answer: the partitions it names, and its connection.
        self._asked: frozenset[tuple[str, int]] | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._restart = False
        # Partitions the leader refused (it is behind on the metadata, or not the leader):
        # left out of fetches until this loop time, while the others carry on.
        self._backoff: dict[tuple[str, int], float] = {}

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name=f"ferry-fetcher-{self.leader_id}")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    def partitions_changed(self) -> None:
        """The manager applied new metadata. If this broker now follows a partition of
        this leader that the fetch in flight does not name (a new topic, a new leader), that
        fetch may wait up to ``replica.fetch.wait.max.ms`` on the leader with nothing to
        bring, while an acks=all produce to the new partition waits for this follower.
        Answers on a connection come in order, so the fetch is dropped with its connection
        and the next one, on a new connection at once, names the partition."""
        asked = self._asked
        if asked is None or self._writer is None:
            return
        if any(key not in asked and key not in self._backoff for key in self._following()):
            self._restart = True
            self._writer.close()

    def _following(self) -> list[tuple[str, int]]:
        return [(r.topic, r.partition) for r in self.manager.following(self.leader_id)]

    async def _run(self) -> None:
        while True:
            address = self.manager.leader_address(self.leader_id)
            if address is None:
                await asyncio.sleep(_BACKOFF_S)
                continue
            writer = None
            security = self.manager.inter_broker
            try:
                tls = security.ssl_context() if security.uses_tls else None
                async with asyncio.timeout(_CONNECT_TIMEOUT_S if tls is None
                                           else _LOGIN_TIMEOUT_S):
                    reader, writer = await asyncio.open_connection(
                        *address, ssl=tls, server_hostname=address[0] if tls else None)
                if security.uses_sasl:
                    async with asyncio.timeout(_LOGIN_TIMEOUT_S):
                        await self._login(reader, writer, security)
                while True:
                    if not await self._fetch_once(reader, writer):
                        await asyncio.sleep(_BACKOFF_S)
            except ClientSecurityError as exc:  # a setting or a credential: say so, slowly
                log.warning("broker %d at %s:%d refused this broker's inter-broker login: %s",
                            self.leader_id, *address, exc)
                await asyncio.sleep(_REFUSED_BACKOFF_S)
            except (OSError, TimeoutError, asyncio.IncompleteReadError) as exc:
                if self._restart:
                    log.debug("fetching from broker %d again, for new partitions",
                              self.leader_id)
                else:
                    log.debug("fetching from broker %d at %s:%d: %s", self.leader_id,
                              *address, exc)
            except Exception:  # a bad answer must not stop replication for good
                log.exception("fetcher for broker %d failed", self.leader_id)
            finally:
                self._asked = self._writer = None
                if writer is not None:
                    writer.close()
            if self._restart:  # partitions_changed dropped the connection: no backoff
                self._restart = False
                continue
            await asyncio.sleep(_BACKOFF_S)

    async def _login(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                     security: ClientSecurity) -> None:
        """SASL over the new connection, as every client logs in (``login_steps``)."""
        steps = security.login_steps()
        try:
            request, version = next(steps)
            while True:
                response = await self._roundtrip(reader, writer, request, version)
                request, version = steps.send(response)
        except StopIteration:
            return

    async def _roundtrip(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                         request: Any, version: int) -> Any:
        correlation_id = next(self._correlation)
        request.with_header(correlation_id=correlation_id,
                            client_id=f"ferry-replica-{self.manager.node_id}")
        writer.write(bytes(request.encode(version=version, header=True, framed=True)))
        await writer.drain()
        (size,) = _SIZE.unpack(await reader.readexactly(_SIZE.size))
        frame = await reader.readexactly(size)
        response = request.header.get_response_class().decode(frame, version=version,
                                                               header=True)
        if response.header.correlation_id != correlation_id:
            raise OSError("the leader answered another request")
        return response

    async def _fetch_once(self, reader: asyncio.StreamReader,
                          writer: asyncio.StreamWriter) -> bool:
        """One Fetch round trip; False when there was nothing to fetch or the leader
        refused the whole request (back off and let the metadata catch up). A partition
        the leader refuses is backed off alone."""
        replicas = self.manager.following(self.leader_id)
        config = self.manager.config
        max_wait_ms = config.replica_fetch_wait_max_ms
        if self._backoff:
            now = asyncio.get_running_loop().time()
            self._backoff = {k: t for k, t in self._backoff.items() if t > now}
            replicas = [r for r in replicas if (r.topic, r.partition) not in self._backoff]
            if self._backoff:  # the long poll ends when they may be asked for again
                wait_s = min(self._backoff.values()) - now
                max_wait_ms = min(max_wait_ms, max(1, int(wait_s * 1000)))
        if not replicas:
            return False
        by_topic: dict[str, list[Replica]] = {}
        for replica in replicas:
            by_topic.setdefault(replica.topic, []).append(replica)
        request = FetchRequest(
            replica_id=self.manager.node_id, max_wait_ms=max_wait_ms,
            min_bytes=config.replica_fetch_min_bytes,
            max_bytes=config.replica_fetch_response_max_bytes, isolation_level=0,
            session_id=0, session_epoch=-1, rack_id="", forgotten_topics_data=[],
            topics=[FetchRequest.FetchTopic(topic=topic, partitions=[
                FetchRequest.FetchTopic.FetchPartition(
                    partition=r.partition, current_leader_epoch=r.spec.leader_epoch,
                    fetch_offset=r.plog.log_end_offset,
                    last_fetched_epoch=r.epochs.latest_epoch,
                    log_start_offset=r.plog.log_start_offset,
                    partition_max_bytes=config.replica_fetch_max_bytes)
                for r in group]) for topic, group in by_topic.items()])
        correlation_id = next(self._correlation)
        request.with_header(correlation_id=correlation_id,
                            client_id=f"ferry-replica-{self.manager.node_id}")
        writer.write(bytes(request.encode(version=_VERSION, header=True, framed=True)))
        await writer.drain()
        timeout = config.replica_fetch_wait_max_ms / 1000 + 10.0
        self._asked, self._writer = frozenset((r.topic, r.partition) for r in replicas), writer
        try:
            async with asyncio.timeout(timeout):
                (size,) = _SIZE.unpack(await reader.readexactly(_SIZE.size))
                frame = await reader.readexactly(size)
        finally:
            self._asked = self._writer = None
        response = FetchResponse.decode(frame, version=_VERSION, header=True)
        if response.header.correlation_id != correlation_id:
            raise OSError("the leader answered another request")
        if response.error_code:
            log.info("broker %d refused the fetch: error %d", self.leader_id,
                     response.error_code)
            return False
        wanted = {(r.topic, r.partition): r for r in replicas}
        for topic in response.responses:
            for part in topic.partitions:
                key = (topic.topic, part.partition_index)
                replica = wanted.get(key)
                if replica is None or replica.leader is not None:
                    continue
                if not await self._apply(replica, part):
                    # This partition only: the leader's own append to it ends the next
                    # fetch's long poll once the backoff is over (the leader's
                    # ``_with_unrequested``).
                    self._backoff[key] = asyncio.get_running_loop().time() + _BACKOFF_S
        return True

    async def _apply(self, replica: Replica, part: object) -> bool:
        code = part.error_code  # type: ignore[attr-defined]
        leader_end = part.high_watermark  # type: ignore[attr-defined]
        if (code == ErrorCode.OFFSET_OUT_OF_RANGE
                and replica.plog.log_end_offset > leader_end >= 0):
            # Ahead of the leader with no epoch to compare (a lost checkpoint): Kafka's
            # follower cuts its log to the leader's end. (The leader puts its log end in
            # the high watermark field of an OFFSET_OUT_OF_RANGE answer.)
            await self._cut(replica, leader_end, "is ahead of the leader's log end")
            return True
        if code != ErrorCode.NONE:
            log.debug("%s-%d: leader %d answered error %d", replica.topic, replica.partition,
                      self.leader_id, code)
            return False
        plog = replica.plog
        diverging = part.diverging_epoch  # type: ignore[attr-defined]
        if diverging is not None:
            await self._truncate(replica, (diverging.epoch, diverging.end_offset))
            return True
        records = part.records  # type: ignore[attr-defined]
        if records:
            try:
                if self.manager.state.appender.fsyncs(plog):
                    await asyncio.to_thread(plog.append_as_follower, records)
                else:  # the page cache: quicker than a thread hop, as a leader's append
                    plog.append_as_follower(records)
            except UnexpectedAppendOffsetError as exc:
                # The leader's batch holding our log end starts below it: our log has a
                # batch boundary the leader's has not. The leader's batch is the truth.
                await self._cut(replica, exc.first_offset,
                                f"ends inside a batch of leader {self.leader_id}'s")
                return True
            except StorageError as exc:  # a corrupt answer or our disk: retry after backoff
                log.error("%s-%d: cannot append replicated records: %s", replica.topic,
                          replica.partition, exc)
                return False
            if self._note_epochs(replica, records):
                await asyncio.to_thread(replica.epochs.write, plog.directory)
        replica.follower_high_watermark = part.high_watermark  # type: ignore[attr-defined]
        return True

    @staticmethod
    def _note_epochs(replica: Replica, records: bytes) -> bool:
        changed = False
        for _, header in iter_batches(records, validate=False):  # the append checked CRCs
            changed |= replica.epochs.assign(header.partition_leader_epoch, header.base_offset)
        return changed

    async def _truncate(self, replica: Replica, diverging: tuple[int, int]) -> None:
        offset = truncation_offset(replica.epochs, replica.plog.log_end_offset, diverging)
        await self._cut(replica, offset, f"diverged from leader {self.leader_id}'s (epoch "
                                         f"{diverging[0]} ends at {diverging[1]} there)")

    async def _cut(self, replica: Replica, offset: int, why: str) -> None:
        plog = replica.plog
        log.warning("%s-%d: log %s; truncating from %d to %d", replica.topic,
                    replica.partition, why, plog.log_end_offset, offset)
        await asyncio.to_thread(plog.truncate_to, offset)
        replica.epochs.truncate_from_end(offset)
        with contextlib.suppress(OSError):
            await asyncio.to_thread(replica.epochs.write, plog.directory)
        self.manager.state.producers.forget(plog)
