"""Request headers v1/v2 and response headers v0/v1, against kafka-python's encoder."""

from __future__ import annotations

import pytest
from kafka.protocol.api_header import RequestHeader as KafkaRequestHeader

from core.protocol.errors import MalformedRequestError
from core.protocol.header import parse_request_header, peek_api, read_uvarint, response_header


@pytest.mark.parametrize("flexible", [False, True])
@pytest.mark.parametrize("client_id", ["rdkafka", "", None, "ünïcode"])
def test_request_header_round_trips_kafka_python(flexible: bool, client_id: str | None) -> None:
    encoded = KafkaRequestHeader(request_api_key=3, request_api_version=12, correlation_id=77,
                                 client_id=client_id).encode(flexible=flexible)
    header = parse_request_header(bytes(encoded) + b"body", flexible=flexible)
    assert (header.api_key, header.api_version, header.correlation_id, header.client_id,
            header.size) == (3, 12, 77, client_id, len(encoded))
    assert peek_api(encoded) == (3, 12, 77)


def test_tagged_fields_of_a_v2_header_are_skipped() -> None:
    prefix = b"\x00\x00\x00\x09\x00\x00\x00\x01\x00\x01c"
    tagged = b"\x02" + b"\x00\x03abc" + b"\x05\x00"  # two fields: tag 0 (3 bytes), tag 5 (0)
    header = parse_request_header(prefix + tagged + b"rest", flexible=True)
    assert header.size == len(prefix) + len(tagged)


@pytest.mark.parametrize("frame", [
    b"\x00\x00\x00",  # shorter than the fixed part
    b"\x00\x00\x00\x00\x00\x00\x00\x01\x00\x05ab",  # client id runs past the end
    b"\x00\x00\x00\x00\x00\x00\x00\x01\xff\xfe",  # client id length -2
    b"\x00\x00\x00\x00\x00\x00\x00\x01\x00\x01\xff",  # client id not UTF-8
])
def test_malformed_headers_raise_the_protocol_error(frame: bytes) -> None:
    with pytest.raises(MalformedRequestError):
        parse_request_header(frame, flexible=False)


@pytest.mark.parametrize("tagged", [b"\x01\x00\x09ab", b"\x80\x80\x80\x80\x80\x01", b"\x81"])
def test_truncated_or_oversized_tagged_fields_are_malformed(tagged: bytes) -> None:
    with pytest.raises(MalformedRequestError):
        parse_request_header(b"\x00\x00\x00\x09\x00\x00\x00\x01\xff\xff" + tagged,
                             flexible=True)


def test_uvarint_and_response_headers() -> None:
    assert read_uvarint(b"\x96\x01", 0) == (150, 2)
    assert response_header(5, flexible=False) == b"\x00\x00\x00\x05"
    assert response_header(5, flexible=True) == b"\x00\x00\x00\x05\x00"
