"""Fuzzing the request decoder: whatever the bytes, a request or a ProtocolError.

The table is the broker's real one (every handler module registered), so every served API
and version is exercised; valid frames are mutated (bytes flipped, cut, inserted) as well
as built from random bytes.
"""

from __future__ import annotations

import uuid

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.protocol.consumer import FetchRequest, ListOffsetsRequest
from kafka.protocol.metadata import ApiVersionsRequest, MetadataRequest
from kafka.protocol.producer import InitProducerIdRequest, ProduceRequest

from core.broker.registry import all_specs, load_handlers
from core.protocol.codec import DecodedRequest, SupportedApi, decode_request
from core.protocol.errors import ProtocolError

load_handlers()
SUPPORTED = {s.api_key: SupportedApi(s.request_class, s.min_version, s.max_version)
             for s in all_specs()}

_PT = ProduceRequest.TopicProduceData
_FT = FetchRequest.FetchTopic
_LT = ListOffsetsRequest.ListOffsetsTopic


def _samples() -> list[bytes]:
    requests = [
        (ProduceRequest(transactional_id=None, acks=1, timeout_ms=100, topic_data=[
            _PT(name="t", partition_data=[_PT.PartitionProduceData(index=0, records=b"r" * 70)])
        ]), range(3, 10)),
        (FetchRequest(replica_id=-1, max_wait_ms=10, min_bytes=1, max_bytes=1000,
                      isolation_level=0, session_id=0, session_epoch=-1, topics=[
                          _FT(topic="t", partitions=[_FT.FetchPartition(
                              partition=0, fetch_offset=5, partition_max_bytes=100)])],
                      forgotten_topics_data=[], rack_id=""), range(4, 13)),
        (ListOffsetsRequest(replica_id=-1, isolation_level=0, topics=[_LT(name="t", partitions=[
            _LT.ListOffsetsPartition(partition_index=0, timestamp=-2)])]), range(1, 8)),
        (MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(
            name="t", topic_id=uuid.UUID(int=1))], allow_auto_topic_creation=True), range(13)),
        (ApiVersionsRequest(client_software_name="c", client_software_version="1"), range(5)),
        (InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=100), range(5)),
    ]
    frames = []
    for request, versions in requests:
        for version in versions:
            request.with_header(correlation_id=version, client_id="fuzz")
            frames.append(bytes(request.encode(version=version, header=True)))
    return frames


SAMPLES = _samples()


def check(frame: bytes) -> None:
    try:
        result = decode_request(frame, SUPPORTED)
    except ProtocolError:
        return
    assert isinstance(result, DecodedRequest)


@settings(max_examples=800, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=400))
def test_random_bytes(frame: bytes) -> None:
    check(frame)


@settings(max_examples=800, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(min_size=4, max_size=200))
def test_random_bodies_behind_each_served_header(tail: bytes) -> None:
    # A plausible header (key, version) with garbage after it reaches the body decoders.
    for key, api in SUPPORTED.items():
        version = api.min_version + tail[0] % (api.max_version - api.min_version + 1)
        check(key.to_bytes(2, "big") + version.to_bytes(2, "big") + tail[1:])


@settings(max_examples=2000, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(SAMPLES), st.lists(
    st.tuples(st.sampled_from(["flip", "cut", "insert", "delete"]),
              st.integers(min_value=0, max_value=10_000), st.integers(min_value=0, max_value=255)),
    min_size=1, max_size=4))
def test_mutated_valid_frames(frame: bytes, mutations: list[tuple[str, int, int]]) -> None:
    data = bytearray(frame)
    for kind, where, value in mutations:
        pos = where % (len(data) + 1)
        if kind == "flip" and pos < len(data):
            data[pos] = value
        elif kind == "cut":
            del data[pos:]
        elif kind == "insert":
            data[pos:pos] = bytes([value]) * (1 + value % 8)
        elif kind == "delete" and pos < len(data):
            del data[pos]
    check(bytes(data))


def test_the_unmutated_samples_decode() -> None:
    for frame in SAMPLES:
        assert isinstance(decode_request(frame, SUPPORTED), DecodedRequest)
