"""The cluster client: connection pools per broker, metadata, routing to partition leaders and
group coordinators, and the bounded retry loop every backend call runs in."""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

from kafka.protocol.metadata import FindCoordinatorRequest, MetadataRequest

from core.backends import errors as be
from core.backends.kafka.codes import COORDINATOR_MOVED, LEADER_MOVED, kafka_error
from core.backends.kafka.config import BrokerAddress, ClientConfig
from core.backends.kafka.connection import BrokerConnection, ConnectionPool, TransportError
from core.backends.kafka.metadata import (
    MetadataCache,
    MetadataSnapshot,
    TopicMetadata,
    parse_metadata,
)
from core.backends.kafka.retry import Backoff, Deadline, RetryableProblem
from core.backends.types import TopicPartition
from core.protocol.errors import ErrorCode as E

__all__ = ["KafkaClient"]

log = logging.getLogger(__name__)

T = TypeVar("T")

#: Threads that run requests to several brokers at once (multi-leader fetch and produce).
_PARALLEL_WORKERS = 16
#: After this long without reaching any broker, a call says what it is waiting for.
WAIT_NOTICE_S = 2.0
#: ... at most this often per client, so that a loop of calls cannot flood the log.
WAIT_NOTICE_INTERVAL_S = 30.0


class KafkaClient:
    """Shared by every component of one ``KafkaBackend``; safe to call from any thread."""

    def __init__(self, config: ClientConfig) -> None:
        self.config = config
        self.metadata = MetadataCache(config.metadata_max_age_ms / 1000)
        self._pools: dict[BrokerAddress, ConnectionPool] = {}
        self._coordinators: dict[str, int] = {}
        self._lock = threading.Lock()  # guards _pools, _coordinators and _executor
        self._stop = threading.Event()
        self._executor: ThreadPoolExecutor | None = None
        self._rotation = itertools.count()
        self._reached_a_broker = False  # once true, a refused connection is a restart
        self._last_wait_notice = -WAIT_NOTICE_INTERVAL_S

    # ------------------------------------------------------------------ lifecycle

    @property
    def closed(self) -> bool:
        return self._stop.is_set()

    def check_open(self) -> None:
        if self._stop.is_set():
            raise be.BackendError("the kafka backend is closed")

    def close(self) -> None:
        """Close every connection (blocked calls fail promptly) and the worker threads."""
        self._stop.set()
        with self._lock:
            pools, self._pools = list(self._pools.values()), {}
            executor, self._executor = self._executor, None
        for pool in pools:
            pool.close()
        if executor is not None:
            executor.shutdown(wait=False, cancel_futures=True)

    # ------------------------------------------------------------------ deadlines

    def api_deadline(self, extra_ms: float = 0) -> Deadline:
        return Deadline(self.config.api_timeout_ms + extra_ms)

    def request_timeout_s(self, extra_ms: float = 0) -> float:
        return (self.config.request_timeout_ms + extra_ms) / 1000

    # ------------------------------------------------------------------ sending

    def _pool(self, address: BrokerAddress) -> ConnectionPool:
        with self._lock:
            self.check_open()
            pool = self._pools.get(address)
            if pool is None:
                pool = self._pools[address] = ConnectionPool(
                    address, lambda deadline: self._connect(address, deadline),
                    self.config.max_idle_connections)
            return pool

    def _connect(self, address: BrokerAddress, deadline: Deadline) -> BrokerConnection:
        conn = BrokerConnection(address, self.config.client_id, self.config.security)
        conn.connect(self.config.connect_timeout_ms / 1000, self.request_timeout_s(), deadline)
        self._reached_a_broker = True
        log.debug("connected to %s", address)
        return conn

    def send(self, address: BrokerAddress, api: Any, build: Callable[[int], Any], *,
             versions: tuple[int, int], deadline: Deadline, extra_timeout_ms: float = 0,
             client_id: str | None = None, expect_response: bool = True) -> Any:
        """One request to ``address``: the highest common version of ``api`` in ``versions``,
        built by ``build(version)``. Raises ``TransportError`` (retriable) on any failure."""
        pool = self._pool(address)
        conn = pool.acquire(deadline)
        done = False
        try:
            version = conn.version_for(api, *versions)
            request = build(version)
            timeout = deadline.cap_s(self.request_timeout_s(extra_timeout_ms))
            if timeout <= 0:
                raise TransportError(f"no time left for {api.name} to {address}")
            if not expect_response:
                conn.send(request, version, timeout, client_id)
                response = None
            else:
                response = conn.roundtrip(request, version, timeout, client_id)
            done = True
            return response
        finally:
            if not done:
                conn.close()  # whatever went wrong, the stream may be out of step
            pool.release(conn)

    def send_to_node(self, node_id: int, api: Any, build: Callable[[int], Any],
                     **kwargs: Any) -> Any:
        address = self.metadata.broker(node_id)
        if address is None:
            raise RetryableProblem(
                be.BackendUnavailableError(f"broker {node_id} is not in the cluster metadata"),
                refresh_metadata=True)
        return self.send(address, api, build, **kwargs)

    def send_to_any(self, api: Any, build: Callable[[int], Any], **kwargs: Any) -> Any:
        """Send to the first reachable broker: known brokers first, then the bootstrap list."""
        candidates = list(dict.fromkeys([*self.metadata.brokers().values(),
                                         *self.config.bootstrap]))
        start = next(self._rotation) % len(candidates)
        failure: TransportError | None = None
        for address in candidates[start:] + candidates[:start]:
            try:
                return self.send(address, api, build, **kwargs)
            except TransportError as exc:
                failure = exc
                log.debug("%s to %s failed: %s", api.name, address, exc)
        assert failure is not None
        raise failure

    def parallel(self, calls: Sequence[Callable[[], T]]) -> list[Future[T]]:
        """Run ``calls`` on worker threads (the first one on this thread when alone)."""
        if len(calls) == 1:
            future: Future[T] = Future()
            try:
                future.set_result(calls[0]())
            except BaseException as exc:  # handed to the caller through the future
                future.set_exception(exc)
            return [future]
        with self._lock:
            self.check_open()
            if self._executor is None:
                self._executor = ThreadPoolExecutor(_PARALLEL_WORKERS,
                                                    thread_name_prefix="ferry-kafka")
            executor = self._executor
        return [executor.submit(call) for call in calls]

    # ------------------------------------------------------------------ retries

    def retrying(self, what: str, attempt: Callable[[], T], deadline: Deadline, *,
                 unreachable_ms: float | None = None) -> T:
        """Run ``attempt`` until it succeeds, raises a non-retriable error, or ``deadline``
        passes (then the last attempt's error is raised, a ``RetriableError``).

        Brokers that cannot be reached at all end the call after ``unreachable_ms``
        (default: ``default.api.timeout.ms``) even when ``deadline`` is further away: a join
        may wait out a rebalance timeout for an answer, but not for a dead cluster.
        """
        backoff = Backoff(self.config.retry_backoff_ms, self.config.retry_backoff_max_ms,
                          self._stop)
        limit_s = (self.config.api_timeout_ms if unreachable_ms is None else unreachable_ms) / 1000
        unreachable_since: float | None = None
        noticed = False
        attempts = 0
        while True:
            self.check_open()
            attempts += 1
            try:
                return attempt()
            except TransportError as exc:
                if self.closed:
                    raise be.BackendError(f"{what}: the kafka backend was closed") from exc
                self._fail_fast_if_refused(what, exc)
                problem = RetryableProblem(be.BackendUnavailableError(f"{what}: {exc}"),
                                           refresh_metadata=True)
                now = time.monotonic()
                unreachable_since = unreachable_since or now
                unreachable = now - unreachable_since >= limit_s
                if (not noticed and not unreachable and now - unreachable_since >= WAIT_NOTICE_S
                        and now - self._last_wait_notice >= WAIT_NOTICE_INTERVAL_S):
                    noticed, self._last_wait_notice = True, now
                    log.warning("%s: waiting for a Kafka broker at %s (%s); giving up after "
                                "%.0f s", what, self._bootstrap_text(), exc, limit_s)
            except RetryableProblem as exc:
                problem, unreachable_since, unreachable = exc, None, False
            if problem.refresh_metadata:
                self.metadata.forget_all()
            if problem.coordinator_of is not None:
                self.forget_coordinator(problem.coordinator_of)
            log.debug("%s: attempt %d failed, retrying: %s", what, attempts, problem.error)
            if unreachable or not backoff.pause(deadline):
                self.check_open()
                error = problem.error
                spent_ms = limit_s * 1000 if unreachable else deadline.budget_ms
                error.args = (f"{error} (gave up after {attempts} attempts in "
                              f"{spent_ms:.0f} ms)",)
                raise error

    def _bootstrap_text(self) -> str:
        return ",".join(str(a) for a in self.config.bootstrap)

    def _fail_fast_if_refused(self, what: str, exc: TransportError) -> None:
        """With ``ferry.fail.fast.on.refused``, a refused connection before any broker was
        ever reached ends the call: nothing listens there, and waiting will not change it."""
        if (self.config.fail_fast_on_refused and not self._reached_a_broker
                and isinstance(exc.__cause__, ConnectionRefusedError)):
            raise be.BackendUnavailableError(
                f"{what}: no Kafka broker at {self._bootstrap_text()} (connection refused); "
                "check the address and that the broker (ferry up or ferry broker) is running"
            ) from exc

    # ------------------------------------------------------------------ metadata

    def refresh_metadata(self, topics: Sequence[str] | None,
                         deadline: Deadline) -> MetadataSnapshot:
        """One Metadata request (``None``: every topic); the cache is updated with it."""

        def build(version: int) -> Any:
            wanted = None if topics is None else [
                MetadataRequest.MetadataRequestTopic(name=t) for t in topics]
            return MetadataRequest(topics=wanted, allow_auto_topic_creation=False,
                                   include_topic_authorized_operations=False)

        response = self.send_to_any(MetadataRequest, build, versions=(1, 12), deadline=deadline)
        snapshot = parse_metadata(response)
        self.metadata.update(snapshot, complete=topics is None)
        return snapshot

    def topic(self, name: str, deadline: Deadline, *, fresh: bool = False) -> TopicMetadata:
        """Metadata of one topic, cached unless ``fresh``. One attempt: raises
        ``UnknownTopicError``, or ``RetryableProblem`` while its leaders are unknown."""
        if not fresh:
            cached = self.metadata.topic(name)
            if cached is not None:
                return cached
        snapshot = self.refresh_metadata([name], deadline)
        meta = snapshot.topics.get(name)
        if meta is not None:
            return meta
        code = snapshot.topic_errors.get(name, E.UNKNOWN_TOPIC_OR_PARTITION)
        if code == E.UNKNOWN_TOPIC_OR_PARTITION:
            raise be.UnknownTopicError(f"topic {name!r} does not exist")
        error = kafka_error(code, f"metadata of topic {name!r}")
        if code in LEADER_MOVED:
            raise RetryableProblem(error, refresh_metadata=True)
        raise error

    def leader(self, tp: TopicPartition, deadline: Deadline) -> int:
        """The node id leading ``tp`` (one attempt, like ``topic``)."""
        meta = self.topic(tp[0], deadline)
        if not 0 <= tp[1] < len(meta.partitions):
            meta = self.topic(tp[0], deadline, fresh=True)  # partitions may have been added
            if not 0 <= tp[1] < len(meta.partitions):
                raise be.UnknownTopicError(
                    f"partition {tp[1]} of topic {tp[0]!r} does not exist "
                    f"(the topic has {len(meta.partitions)} partitions)")
        leader = meta.partitions[tp[1]].leader
        if leader < 0 or self.metadata.broker(leader) is None:
            raise RetryableProblem(
                be.RetriableError(f"partition {tp[1]} of topic {tp[0]!r} has no leader"),
                refresh_metadata=True)
        return leader

    def leaders(self, partitions: Sequence[TopicPartition],
                deadline: Deadline) -> dict[int, list[TopicPartition]]:
        """``partitions`` grouped by their leader's node id."""
        by_leader: dict[int, list[TopicPartition]] = {}
        for tp in partitions:
            by_leader.setdefault(self.leader(tp, deadline), []).append(tp)
        return by_leader

    # ------------------------------------------------------------------ coordinators

    def coordinator(self, group_id: str, deadline: Deadline) -> int:
        """The node id coordinating ``group_id``, from FindCoordinator (cached)."""
        with self._lock:
            node = self._coordinators.get(group_id)
        if node is not None and self.metadata.broker(node) is not None:
            return node

        def build(version: int) -> Any:
            if version >= 4:
                return FindCoordinatorRequest(key_type=0, coordinator_keys=[group_id])
            return FindCoordinatorRequest(key=group_id, key_type=0)

        response = self.send_to_any(FindCoordinatorRequest, build, versions=(0, 4),
                                    deadline=deadline)
        found = response.coordinators[0] if response.version >= 4 else response
        what = f"finding the coordinator of group {group_id!r}"
        if found.error_code in COORDINATOR_MOVED:
            raise RetryableProblem(kafka_error(found.error_code, what, found.error_message),
                                   coordinator_of=group_id)
        if found.error_code:
            raise kafka_error(found.error_code, what, found.error_message)
        self.metadata.add_broker(found.node_id, BrokerAddress(found.host, found.port))
        with self._lock:
            self._coordinators[group_id] = found.node_id
        return found.node_id

    def forget_coordinator(self, group_id: str) -> None:
        with self._lock:
            self._coordinators.pop(group_id, None)
