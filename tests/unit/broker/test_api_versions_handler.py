"""ApiVersions over real frames: advertised ranges, KIP-511, v3 software names."""

from __future__ import annotations

import struct

import pytest
from broker_harness import WireClient
from kafka.protocol.metadata import ApiVersionsRequest, ApiVersionsResponse

from core.protocol.errors import ErrorCode


@pytest.mark.parametrize("version", range(5))
def test_api_versions_advertises_the_data_plane(client: WireClient, version: int) -> None:
    request = ApiVersionsRequest(client_software_name="ferry-test",
                                 client_software_version="1.0")
    response = client.call(request, version)
    assert response.error_code == 0
    ranges = {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}
    assert {key: ranges[key] for key in (0, 1, 2, 3, 18, 22)} == {
        0: (0, 9), 1: (4, 12), 2: (1, 7), 3: (0, 12), 18: (0, 4), 22: (0, 4)}


def test_a_too_new_api_versions_gets_the_kip_511_answer(client: WireClient) -> None:
    request = ApiVersionsRequest(client_software_name="x", client_software_version="9")
    request.with_header(correlation_id=77, client_id="future")
    frame = bytearray(request.encode(version=4, header=True, framed=True))
    frame[6:8] = struct.pack(">h", 9)  # a version this broker has never heard of
    client.send_raw(bytes(frame))
    reply = client.read_frame()
    assert reply[:4] == struct.pack(">i", 77)  # header v0: no tagged-field byte
    body = ApiVersionsResponse.decode(reply[4:], version=0)
    assert body.error_code == ErrorCode.UNSUPPORTED_VERSION
    assert [(k.api_key, k.min_version, k.max_version) for k in body.api_keys] == [(18, 0, 4)]


def test_api_versions_v3_with_an_invalid_software_name(client: WireClient) -> None:
    correlation = client.send(ApiVersionsRequest(client_software_name="bad name!",
                                                 client_software_version="1"), 3)
    reply = client.read_frame()
    # A v3 body (kafka-python's decoder assumes v0 for any error, so read it by hand):
    # header v0, error INVALID_REQUEST, an empty compact array of API keys.
    assert reply[:4] == struct.pack(">i", correlation)
    assert struct.unpack_from(">h", reply, 4)[0] == ErrorCode.INVALID_REQUEST
    assert reply[6] == 1
