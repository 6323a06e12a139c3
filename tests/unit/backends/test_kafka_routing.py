"""KafkaBackend routing and retries against fake brokers that speak kafka.protocol.

The fake cluster is a few socket servers in threads answering from one shared model
(topics, partition leaders, stored batches, the group coordinator), so a test can move a
leader or a coordinator, fail a request, or hold a long poll, and check that the backend
routes each request to the right broker and retries within its deadline.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from kafka.protocol.admin import (
    AlterConfigsRequest,
    AlterConfigsResponse,
    DescribeConfigsRequest,
    DescribeConfigsResponse,
)
from kafka.protocol.consumer import (
    FetchRequest,
    FetchResponse,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    ListOffsetsRequest,
    ListOffsetsResponse,
)
from kafka.protocol.metadata import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    MetadataRequest,
    MetadataResponse,
)
from kafka.protocol.producer import ProduceRequest, ProduceResponse

from core.backends import OffsetSpec, ProducerRecord, TopicPartition
from core.backends import errors as be
from core.backends.kafka import KafkaBackend
from core.log.records import set_base_offset, validate_batch

# An old-style broker: no IncrementalAlterConfigs, so alter_topic_configs must fall back.
VERSIONS = {ApiVersionsRequest: (0, 3), MetadataRequest: (1, 12), ProduceRequest: (3, 9),
            FetchRequest: (4, 12), ListOffsetsRequest: (1, 7), FindCoordinatorRequest: (0, 4),
            HeartbeatRequest: (0, 4), JoinGroupRequest: (2, 7), DescribeConfigsRequest: (1, 4),
            AlterConfigsRequest: (0, 2)}
REQUESTS = {cls.API_KEY: cls for cls in VERSIONS}
WAIT_S = 30  # bound on anything a test waits for; never reached when the code is right

Hook = Callable[[int, Any], Any]


class FakeCluster:
    """Brokers 0..n-1 on 127.0.0.1 sharing one model; ``hooks[api_key](node, request)`` may
    return a response to answer instead of the model (or None to fall through)."""

    def __init__(self, nodes: int = 2) -> None:
        self.lock = threading.Lock()
        self.leaders: dict[str, list[int]] = {}  # topic -> leader node per partition
        self.logs: dict[TopicPartition, list[bytearray]] = {}
        self.coordinator = 0
        self.overrides: dict[str, dict[str, str]] = {}  # per-topic config overrides
        self.hooks: dict[int, Hook] = {}
        self.seen: list[tuple[int, int, Any]] = []  # (node, api key, request)
        self.brokers = [_FakeBroker(self, node) for node in range(nodes)]

    @property
    def url(self) -> str:
        return f"kafka://127.0.0.1:{self.brokers[0].port}"

    def create(self, topic: str, leaders: list[int]) -> None:
        with self.lock:
            self.leaders[topic] = list(leaders)
            for p in range(len(leaders)):
                self.logs[TopicPartition(topic, p)] = []

    def requests(self, api: Any, node: int | None = None) -> list[Any]:
        with self.lock:
            return [r for n, key, r in self.seen
                    if key == api.API_KEY and (node is None or n == node)]

    def end(self, tp: TopicPartition) -> int:
        batches = self.logs[tp]
        return validate_batch(batches[-1]).next_offset if batches else 0

    def close(self) -> None:
        for broker in self.brokers:
            broker.close()

    # ------------------------------------------------------------------ default answers

    def answer(self, node: int, request: Any) -> Any:
        hook = self.hooks.get(request.API_KEY)
        if hook is not None:
            response = hook(node, request)
            if response is not None:
                return response
        handler = getattr(self, "_" + type(request).__name__)
        with self.lock:
            return handler(node, request)

    def _ApiVersionsRequest(self, node: int, request: Any) -> Any:
        return ApiVersionsResponse(error_code=0, throttle_time_ms=0, api_keys=[
            ApiVersionsResponse.ApiVersion(api_key=cls.API_KEY, min_version=lo, max_version=hi)
            for cls, (lo, hi) in VERSIONS.items()])

    def _MetadataRequest(self, node: int, request: Any) -> Any:
        r = MetadataResponse
        names = list(self.leaders) if request.topics is None else [t.name for t in request.topics]
        topics = []
        for name in names:
            leaders = self.leaders.get(name)
            parts = [r.MetadataResponseTopic.MetadataResponsePartition(
                error_code=0, partition_index=p, leader_id=leader, leader_epoch=0,
                replica_nodes=[leader], isr_nodes=[leader], offline_replicas=[])
                for p, leader in enumerate(leaders or [])]
            topics.append(r.MetadataResponseTopic(error_code=0 if leaders is not None else 3,
                                                  name=name, is_internal=False,
                                                  partitions=parts))
        return r(throttle_time_ms=0, cluster_id="fake", controller_id=0, topics=topics,
                 brokers=[r.MetadataResponseBroker(node_id=b.node, host="127.0.0.1",
                                                   port=b.port, rack=None)
                          for b in self.brokers])

    def _ProduceRequest(self, node: int, request: Any) -> Any:
        r = ProduceResponse.TopicProduceResponse
        out = []
        for t in request.topic_data:
            parts = []
            for p in t.partition_data:
                tp = TopicPartition(t.name, p.index)
                if self.leaders[t.name][p.index] != node:
                    parts.append(r.PartitionProduceResponse(index=p.index, error_code=6))
                    continue
                batch = bytearray(p.records)
                base = self.end(tp)
                set_base_offset(batch, base)
                self.logs[tp].append(batch)
                parts.append(r.PartitionProduceResponse(index=p.index, error_code=0,
                                                        base_offset=base,
                                                        log_append_time_ms=-1))
            out.append(r(name=t.name, partition_responses=parts))
        return ProduceResponse(responses=out, throttle_time_ms=0)

    def _FetchRequest(self, node: int, request: Any) -> Any:
        r = FetchResponse.FetchableTopicResponse
        out = []
        for t in request.topics:
            parts = []
            for p in t.partitions:
                tp = TopicPartition(t.topic, p.partition)
                end = self.end(tp)
                code = 0
                if self.leaders[t.topic][p.partition] != node:
                    code = 6
                elif not 0 <= p.fetch_offset <= end:
                    code = 1
                data = b"".join(b for b in self.logs[tp]
                                if validate_batch(b).next_offset > p.fetch_offset)
                parts.append(r.PartitionData(
                    partition_index=p.partition, error_code=code, high_watermark=end,
                    last_stable_offset=end, log_start_offset=0, aborted_transactions=None,
                    preferred_read_replica=-1, records=data if code == 0 else None))
            out.append(r(topic=t.topic, partitions=parts))
        return FetchResponse(throttle_time_ms=0, error_code=0, session_id=0, responses=out)

    def _ListOffsetsRequest(self, node: int, request: Any) -> Any:
        r = ListOffsetsResponse.ListOffsetsTopicResponse
        return ListOffsetsResponse(throttle_time_ms=0, topics=[r(name=t.name, partitions=[
            r.ListOffsetsPartitionResponse(
                partition_index=p.partition_index, error_code=0, timestamp=-1,
                offset=0 if p.timestamp == OffsetSpec.EARLIEST
                else self.end(TopicPartition(t.name, p.partition_index)))
            for p in t.partitions]) for t in request.topics])

    def _FindCoordinatorRequest(self, node: int, request: Any) -> Any:
        b = self.brokers[self.coordinator]
        if request.version >= 4:
            return FindCoordinatorResponse(throttle_time_ms=0, coordinators=[
                FindCoordinatorResponse.Coordinator(
                    key=k, node_id=b.node, host="127.0.0.1", port=b.port, error_code=0,
                    error_message=None) for k in request.coordinator_keys])
        return FindCoordinatorResponse(throttle_time_ms=0, error_code=0, error_message=None,
                                       node_id=b.node, host="127.0.0.1", port=b.port)

    def _DescribeConfigsRequest(self, node: int, request: Any) -> Any:
        r = DescribeConfigsResponse.DescribeConfigsResult
        resource = request.resources[0]
        configs = {"retention.ms": "604800000", "segment.bytes": "1073741824",
                   "cleanup.policy": "delete"}
        overrides = self.overrides.get(resource.resource_name, {})
        configs.update(overrides)
        return DescribeConfigsResponse(throttle_time_ms=0, results=[r(
            error_code=0, error_message=None, resource_type=2,
            resource_name=resource.resource_name, configs=[r.DescribeConfigsResourceResult(
                name=k, value=v, read_only=False, config_source=1 if k in overrides else 5,
                is_sensitive=False, synonyms=[]) for k, v in configs.items()])])

    def _AlterConfigsRequest(self, node: int, request: Any) -> Any:
        resource = request.resources[0]
        self.overrides[resource.resource_name] = {c.name: c.value for c in resource.configs}
        return AlterConfigsResponse(throttle_time_ms=0, responses=[
            AlterConfigsResponse.AlterConfigsResourceResponse(
                error_code=0, error_message=None, resource_type=2,
                resource_name=resource.resource_name)])

    def _HeartbeatRequest(self, node: int, request: Any) -> Any:
        return HeartbeatResponse(throttle_time_ms=0,
                                 error_code=0 if node == self.coordinator else 16)

    def _JoinGroupRequest(self, node: int, request: Any) -> Any:
        if node != self.coordinator:
            return JoinGroupResponse(throttle_time_ms=0, error_code=16, generation_id=-1,
                                     protocol_name=None, leader="", member_id="", members=[])
        if not request.member_id:
            return JoinGroupResponse(throttle_time_ms=0, error_code=79, generation_id=-1,
                                     protocol_name=None, leader="", member_id="member-1",
                                     members=[])
        member = JoinGroupResponse.JoinGroupResponseMember(
            member_id=request.member_id, group_instance_id=None,
            metadata=request.protocols[0].metadata)
        return JoinGroupResponse(throttle_time_ms=0, error_code=0, generation_id=1,
                                 protocol_type=request.protocol_type,
                                 protocol_name=request.protocols[0].name,
                                 leader=request.member_id, member_id=request.member_id,
                                 members=[member])


class _FakeBroker:
    """One listening socket; a thread per connection decodes frames in order and answers."""

    def __init__(self, cluster: FakeCluster, node: int) -> None:
        self.cluster = cluster
        self.node = node
        self._server = socket.create_server(("127.0.0.1", 0))
        self.port = self._server.getsockname()[1]
        self._conns: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._server.accept()
            except OSError:
                return
            self._conns.append(conn)
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            while True:
                try:
                    head = _read(conn, 4)
                    frame = _read(conn, struct.unpack(">i", head)[0])
                except OSError:
                    return
                key, version = struct.unpack_from(">hh", frame)
                request = REQUESTS[key].decode(frame, version=version, header=True)
                with self.cluster.lock:
                    self.cluster.seen.append((self.node, key, request))
                try:
                    response = self.cluster.answer(self.node, request)
                except Exception:  # a broken fake must fail the test fast, not hang it
                    return
                if key == ProduceRequest.API_KEY and request.acks == 0:
                    continue
                response.API_VERSION = version
                response.with_header(correlation_id=request.header.correlation_id)
                try:
                    conn.sendall(response.encode(header=True, framed=True))
                except OSError:
                    return

    def close(self) -> None:
        self._server.close()
        for conn in self._conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
            conn.close()


def _read(conn: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = conn.recv(n - len(buf))
        if not chunk:
            raise OSError("closed")
        buf += chunk
    return buf


@pytest.fixture
def cluster() -> Iterator[FakeCluster]:
    c = FakeCluster()
    yield c
    c.close()


@pytest.fixture
def backend(cluster: FakeCluster) -> Iterator[KafkaBackend]:
    b = KafkaBackend.from_url(cluster.url, {"retry.backoff.ms": "1", "retry.backoff.max.ms": "20",
                                            "default.api.timeout.ms": "10000"})
    yield b
    b.close()


# ---------------------------------------------------------------------- produce routing


def test_produce_sends_each_partition_to_its_leader(cluster, backend):
    cluster.create("t", [0, 1])
    records = [ProducerRecord(value=b"%d" % i, partition=i % 2) for i in range(10)]
    metas = backend.produce("t", records)
    assert [(m.partition, m.offset) for m in metas] == [(i % 2, i // 2) for i in range(10)]
    for node in (0, 1):
        sent = [(t.name, p.index) for r in cluster.requests(ProduceRequest, node)
                for t in r.topic_data for p in t.partition_data]
        assert sent == [("t", node)]


def test_produce_follows_a_moved_leader(cluster, backend):
    cluster.create("t", [0])
    backend.produce("t", [ProducerRecord(value=b"a")])
    with cluster.lock:
        cluster.leaders["t"] = [1]  # node 0 now answers NOT_LEADER_OR_FOLLOWER
    meta = backend.produce("t", [ProducerRecord(value=b"b")])[0]
    assert meta.offset == 1
    assert len(cluster.requests(ProduceRequest, 1)) == 1
    assert len(cluster.requests(MetadataRequest)) >= 2  # refreshed after the refusal


def test_produce_splits_a_batch_the_broker_finds_too_large(cluster, backend):
    cluster.create("t", [0])

    def refuse_big(node: int, request: Any) -> Any:
        batch = request.topic_data[0].partition_data[0].records
        if validate_batch(batch).records_count > 2:
            r = ProduceResponse.TopicProduceResponse
            return ProduceResponse(throttle_time_ms=0, responses=[r(name="t", partition_responses=[
                r.PartitionProduceResponse(index=0, error_code=10, base_offset=-1)])])
        return None

    cluster.hooks[ProduceRequest.API_KEY] = refuse_big
    metas = backend.produce("t", [ProducerRecord(value=b"%d" % i) for i in range(7)])
    assert [m.offset for m in metas] == list(range(7))
    tp = TopicPartition("t", 0)
    assert [r.value for r in backend.fetch({tp: 0})[tp].records] == [b"%d" % i for i in range(7)]


def test_one_record_too_large_is_an_error(cluster, backend):
    cluster.create("t", [0])
    r = ProduceResponse.TopicProduceResponse
    cluster.hooks[ProduceRequest.API_KEY] = lambda node, req: ProduceResponse(
        throttle_time_ms=0, responses=[r(name="t", partition_responses=[
            r.PartitionProduceResponse(index=0, error_code=10, base_offset=-1,
                                       error_message="batch is 2000 bytes")])])
    with pytest.raises(be.RecordTooLargeError, match="2000 bytes"):
        backend.produce("t", [ProducerRecord(value=b"x" * 2000)])


def test_concurrent_calls_share_connections_without_mixing_responses(cluster, backend):
    cluster.create("t", [0, 1])

    def produce(i: int) -> list[int]:
        metas = backend.produce("t", [ProducerRecord(value=b"%d" % i, partition=i % 2)] * 5)
        return [m.partition for m in metas]

    with ThreadPoolExecutor(8) as pool:
        partitions = list(pool.map(produce, range(64)))
    assert partitions == [[i % 2] * 5 for i in range(64)]
    assert cluster.end(TopicPartition("t", 0)) == cluster.end(TopicPartition("t", 1)) == 160


# ---------------------------------------------------------------------- fetch routing


def test_multi_leader_long_poll_returns_when_one_leader_has_records(cluster, backend):
    cluster.create("t", [0, 1])
    backend.produce("t", [ProducerRecord(value=b"x", partition=1)])
    release, left = threading.Event(), threading.Event()
    tp0, tp1 = TopicPartition("t", 0), TopicPartition("t", 1)

    def hold(node: int, request: Any) -> None:
        # Node 0 holds its long poll (as a broker with nothing to return does) until
        # released; node 1 has a record, so the fetch must not wait for node 0.
        if node == 0 and request.max_wait_ms:
            release.wait(WAIT_S)
            left.set()

    cluster.hooks[FetchRequest.API_KEY] = hold
    try:
        result = backend.fetch({tp0: 0, tp1: 0}, max_wait_ms=WAIT_S * 1000)
        assert not left.is_set(), "the fetch waited for the leader without records"
        assert [r.value for r in result[tp1].records] == [b"x"]
        assert result[tp0].records == [] and result[tp0].next_offset == 0
        assert result[tp0].high_watermark == 0
    finally:
        release.set()


def test_fetch_out_of_range_reports_the_log_bounds(cluster, backend):
    cluster.create("t", [1])
    backend.produce("t", [ProducerRecord(value=b"x")] * 3)
    with pytest.raises(be.OffsetOutOfRangeError) as info:
        backend.fetch({TopicPartition("t", 0): 9})
    assert (info.value.log_start_offset, info.value.log_end_offset) == (0, 3)


def test_fetch_of_a_missing_partition_is_unknown_topic(cluster, backend):
    cluster.create("t", [0])
    with pytest.raises(be.UnknownTopicError, match="partition 4"):
        backend.fetch({TopicPartition("t", 4): 0})
    with pytest.raises(be.UnknownTopicError):
        backend.produce("nope", [ProducerRecord(value=b"x")])


# ---------------------------------------------------------------------- groups


def test_join_performs_the_member_id_round_trip(cluster, backend):
    joined = backend.join_group("g", member_id="", protocol_type="consumer",
                                protocols=[("range", b"meta")])
    assert joined.member_id == "member-1" and joined.is_leader
    assert [m.metadata for m in joined.members] == [b"meta"]
    assert [r.member_id for r in cluster.requests(JoinGroupRequest)] == ["", "member-1"]


def test_heartbeat_follows_a_moved_coordinator(cluster, backend):
    backend.heartbeat("g", generation_id=1, member_id="m")
    assert len(cluster.requests(HeartbeatRequest, 0)) == 1
    cluster.coordinator = 1  # node 0 now answers NOT_COORDINATOR
    backend.heartbeat("g", generation_id=1, member_id="m")
    assert len(cluster.requests(HeartbeatRequest, 1)) == 1
    assert len(cluster.requests(FindCoordinatorRequest)) == 2


def test_a_loading_coordinator_is_retried(cluster, backend):
    answers = iter([14, 14, 15])  # COORDINATOR_LOAD_IN_PROGRESS twice, then NOT_AVAILABLE
    cluster.hooks[HeartbeatRequest.API_KEY] = lambda node, req: next(
        (HeartbeatResponse(throttle_time_ms=0, error_code=code) for code in answers), None)
    backend.heartbeat("g", generation_id=1, member_id="m")
    assert len(cluster.requests(HeartbeatRequest)) == 4


# ---------------------------------------------------------------------- admin


def test_alter_configs_falls_back_to_alter_configs_on_old_brokers(cluster, backend):
    cluster.create("t", [0])
    cluster.overrides["t"] = {"retention.ms": "1", "segment.bytes": "2"}
    backend.alter_topic_configs("t", {"cleanup.policy": "compact"}, ["retention.ms"])
    # AlterConfigs replaces every override, so the untouched one must have been kept.
    assert cluster.overrides["t"] == {"segment.bytes": "2", "cleanup.policy": "compact"}
    desc = backend.describe_topic("t")
    assert desc.overrides == {"segment.bytes": "2", "cleanup.policy": "compact"}
    assert desc.configs["retention.ms"] == "604800000"


# ---------------------------------------------------------------------- failures


def _run_bounded(fn: Callable[[], Any]) -> BaseException | None:
    """Run ``fn`` in a thread and return what it raised; a hang fails the test."""
    outcome: list[BaseException | None] = []

    def target() -> None:
        try:
            fn()
            outcome.append(None)
        except BaseException as exc:  # handed back to the test
            outcome.append(exc)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(WAIT_S)
    assert outcome, "the call hung past its deadline"
    return outcome[0]


def test_unreachable_bootstrap_gives_backend_unavailable():
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    backend = KafkaBackend.from_url(f"kafka://127.0.0.1:{port}",
                                    {"default.api.timeout.ms": "300"})
    error = _run_bounded(backend.list_topics)
    assert isinstance(error, be.BackendUnavailableError)
    assert "gave up" in str(error)
    backend.close()


def test_a_dead_cluster_ends_a_join_before_its_rebalance_timeout():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    backend = KafkaBackend.from_url(f"kafka://127.0.0.1:{port}",
                                    {"default.api.timeout.ms": "300"})
    # The join may wait up to 10 minutes for an answer, but nobody is there to answer.
    error = _run_bounded(lambda: backend.join_group(
        "g", member_id="", protocol_type="consumer", protocols=[("range", b"")],
        rebalance_timeout_ms=600_000))
    assert isinstance(error, be.BackendUnavailableError)
    backend.close()


def test_silent_broker_times_out_as_unavailable():
    server = socket.create_server(("127.0.0.1", 0))  # accepts, never answers
    try:
        backend = KafkaBackend.from_url(
            f"kafka://127.0.0.1:{server.getsockname()[1]}",
            {"request.timeout.ms": "200", "default.api.timeout.ms": "600"})
        assert isinstance(_run_bounded(backend.list_topics), be.BackendUnavailableError)
        backend.close()
    finally:
        server.close()


def test_close_interrupts_a_blocked_call(cluster, backend):
    cluster.create("t", [0])
    release = threading.Event()
    cluster.hooks[FetchRequest.API_KEY] = lambda node, req: release.wait(WAIT_S) and None
    started = threading.Event()

    def fetch() -> None:
        started.set()
        backend.fetch({TopicPartition("t", 0): 0}, max_wait_ms=WAIT_S * 1000)

    try:
        outcome: list[BaseException] = []
        thread = threading.Thread(target=lambda: outcome.append(_run_bounded(fetch)))
        thread.start()
        started.wait(WAIT_S)
        # Wait until the fetch is on the wire, then close under it.
        for _ in range(int(WAIT_S / 0.01)):
            if cluster.requests(FetchRequest):
                break
            threading.Event().wait(0.01)
        backend.close()
        thread.join(WAIT_S)
        assert isinstance(outcome[0], be.BackendError)
        assert "closed" in str(outcome[0])
    finally:
        release.set()
