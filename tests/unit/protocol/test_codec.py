"""decode_request / encode_response: headers, versions, truncation, KIP-511."""

from __future__ import annotations

import uuid

import pytest
from kafka.protocol.consumer import FetchRequest
from kafka.protocol.metadata import ApiVersionsRequest, ApiVersionsResponse, MetadataRequest
from kafka.protocol.producer import ProduceRequest, ProduceResponse

from core.protocol.codec import (
    DecodedRequest,
    EncodedResponse,
    SupportedApi,
    decode_request,
    encode_response,
)
from core.protocol.errors import (
    MalformedRequestError,
    UnsupportedApiError,
    UnsupportedVersionError,
)

SUPPORTED = {
    0: SupportedApi(ProduceRequest, 3, 9),
    1: SupportedApi(FetchRequest, 4, 12),
    3: SupportedApi(MetadataRequest, 0, 12),
    18: SupportedApi(ApiVersionsRequest, 0, 4),
}
_T = ProduceRequest.TopicProduceData
_P = _T.PartitionProduceData


def frame_of(request: object, version: int, correlation_id: int = 42) -> bytes:
    request.with_header(correlation_id=correlation_id, client_id="tester")
    return bytes(request.encode(version=version, header=True))


def produce(records: bytes = b"batch") -> ProduceRequest:
    return ProduceRequest(transactional_id=None, acks=-1, timeout_ms=500, topic_data=[
        _T(name="t", partition_data=[_P(index=0, records=records)])])


@pytest.mark.parametrize("version", range(3, 10))
def test_produce_decodes_at_every_served_version(version: int) -> None:
    decoded = decode_request(frame_of(produce(), version), SUPPORTED)
    assert (decoded.header.api_key, decoded.header.api_version) == (0, version)
    assert (decoded.header.correlation_id, decoded.header.client_id) == (42, "tester")
    data = decoded.body.topic_data[0]
    assert (data.name, data.partition_data[0].records, decoded.body.acks) == ("t", b"batch", -1)


@pytest.mark.parametrize("version", [0, 4, 10, 12])
def test_metadata_topics_and_topic_ids(version: int) -> None:
    topic = MetadataRequest.MetadataRequestTopic(name="orders", topic_id=uuid.UUID(int=7))
    request = MetadataRequest(topics=[topic], allow_auto_topic_creation=False)
    body = decode_request(frame_of(request, version), SUPPORTED).body
    assert body.topics[0].name == "orders"
    if version >= 10:
        assert body.topics[0].topic_id == uuid.UUID(int=7)


def test_every_shorter_prefix_of_a_frame_is_malformed() -> None:
    frame = frame_of(produce(b"x" * 50), 9)
    for end in range(len(frame)):
        with pytest.raises((MalformedRequestError,)):
            decode_request(frame[:end], SUPPORTED)


def test_trailing_bytes_are_ignored_as_kafka_ignores_them() -> None:
    # librdkafka sends Metadata v12 with three bytes after the body.
    frame = frame_of(MetadataRequest(topics=None), 12) + b"\x00\x00\x00"
    assert decode_request(frame, SUPPORTED).body.topics is None


def test_unknown_api_and_unsupported_version_are_refused() -> None:
    frame = bytearray(frame_of(produce(), 7))
    frame[0:2] = b"\x00\x63"  # api key 99
    with pytest.raises(UnsupportedApiError):
        decode_request(bytes(frame), SUPPORTED)
    with pytest.raises(UnsupportedVersionError, match="versions 3-9"):
        decode_request(frame_of(produce(), 2), SUPPORTED)


def test_api_versions_above_the_range_is_returned_unparsed_for_kip_511() -> None:
    frame = frame_of(ApiVersionsRequest(client_software_name="x", client_software_version="1"),
                     4)
    frame = frame[:2] + b"\x00\x07" + frame[4:]  # claim v7, a version from the future
    decoded = decode_request(frame, SUPPORTED)
    assert decoded == DecodedRequest(decoded.header, None)
    assert (decoded.header.api_version, decoded.header.correlation_id) == (7, 42)


def test_response_headers_flexible_except_api_versions() -> None:
    response = ProduceResponse(responses=[], throttle_time_ms=0)
    flexible = b"".join(encode_response(response, request_class=ProduceRequest, api_version=9,
                                        correlation_id=5))
    body = bytes(response.encode(version=9))
    assert flexible == (len(body) + 5).to_bytes(4, "big") + b"\x00\x00\x00\x05\x00" + body
    versions = ApiVersionsResponse(error_code=0, api_keys=[], throttle_time_ms=0)
    chunks = encode_response(versions, request_class=ApiVersionsRequest, api_version=3,
                             correlation_id=5)
    body = bytes(versions.encode(version=3))
    assert b"".join(chunks) == (len(body) + 4).to_bytes(4, "big") + b"\x00\x00\x00\x05" + body


def test_an_encoded_response_is_framed_without_copying_its_buffers() -> None:
    records = memoryview(bytearray(b"r" * 100))
    chunks = encode_response(EncodedResponse([b"head", records]), request_class=FetchRequest,
                             api_version=11, correlation_id=1)
    assert chunks[1] == b"head" and chunks[2] is records
    assert chunks[0] == (4 + 4 + 100).to_bytes(4, "big") + b"\x00\x00\x00\x01"
