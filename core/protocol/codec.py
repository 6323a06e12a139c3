"""Requests from frames and responses to frames, for the APIs a broker serves.

Bodies use kafka-python's schema-driven message classes (``kafka.protocol``, generated from
Kafka's JSON definitions, one version-agnostic class per API). ``decode_request`` never
lets one of their exceptions escape: whatever a frame holds, the result is a
``DecodedRequest`` or a ``ProtocolError``, after which the caller closes the connection.
A handler may also answer with an ``EncodedResponse``: body bytes it encoded itself, written
as they are (Fetch uses this to send stored record batches without copying them).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from core.protocol.errors import (
    MalformedRequestError,
    ProtocolError,
    UnsupportedApiError,
    UnsupportedVersionError,
)
from core.protocol.framing import size_prefix
from core.protocol.header import RequestHeader, parse_request_header, peek_api, response_header

__all__ = [
    "API_VERSIONS_KEY",
    "Buffer",
    "DecodedRequest",
    "EncodedResponse",
    "SupportedApi",
    "decode_request",
    "encode_response",
    "is_flexible",
]

API_VERSIONS_KEY = 18

Buffer = bytes | bytearray | memoryview


@dataclass(frozen=True, slots=True)
class SupportedApi:
    """An API the caller serves: its kafka-python request class and the versions it reads."""

    request_class: type
    min_version: int
    max_version: int


@dataclass(frozen=True, slots=True)
class DecodedRequest:
    """A request's header and body. ``body`` is None only for an ApiVersions request above
    the supported versions: KIP-511 says to answer it (in v0 format) without reading it."""

    header: RequestHeader
    body: Any | None


@dataclass(frozen=True, slots=True)
class EncodedResponse:
    """A response body already encoded for the request's version, as buffers in order."""

    body: Sequence[Buffer]


def is_flexible(request_class: type, version: int) -> bool:
    """Whether ``version`` of the API uses flexible (KIP-482) encodings."""
    return bool(request_class.flexible_version_q(version))


def decode_request(frame: Buffer, supported: Mapping[int, SupportedApi]) -> DecodedRequest:
    """Decode one request frame (without its size prefix).

    Raises UnsupportedApiError, UnsupportedVersionError or MalformedRequestError (a
    truncated frame, or any failure inside the body decoder).
    """
    api_key, version, _ = peek_api(frame)
    api = supported.get(api_key)
    if api is None:
        raise UnsupportedApiError(api_key)
    cls = api.request_class
    if not api.min_version <= version <= api.max_version:
        if api_key == API_VERSIONS_KEY and version > api.max_version:
            # KIP-511: a newer client's body cannot be parsed; only the header is needed
            # to answer, and its v1 prefix is readable whatever the header version.
            return DecodedRequest(parse_request_header(frame, flexible=False), None)
        raise UnsupportedVersionError(cls.name, api_key, version, api.min_version,
                                      api.max_version)
    flexible = is_flexible(cls, version)
    header = parse_request_header(frame, flexible=flexible)
    view = frame if isinstance(frame, memoryview) else memoryview(frame)
    try:
        # The compiled decoder (rather than ``cls.decode``) reports where the body ended,
        # which is how a truncated frame is told from a whole one: the generated code
        # slices past the end silently.
        decoder = cls._struct.compiled_decode_from(
            version, compact=flexible, tagged=flexible, data_class=cls)
        body, end = decoder(view, header.size)
    except ProtocolError:
        raise
    except Exception as exc:  # the generated code raises whatever its input provokes
        raise MalformedRequestError(
            f"cannot decode {cls.name} v{version}: {type(exc).__name__}: {exc}") from None
    if end > len(view):
        raise MalformedRequestError(f"{cls.name} v{version} request is truncated")
    # Bytes after the body are ignored, as Kafka's parser ignores them: librdkafka 2.16
    # sends Metadata v12 with 3 of them.
    return DecodedRequest(header, body)


def encode_response(response: Any, *, request_class: type, api_version: int,
                    correlation_id: int) -> list[Buffer]:
    """Frame ``response`` (a kafka-python response message or an ``EncodedResponse``) with
    its response header: v1 for flexible versions, v0 otherwise and always for ApiVersions
    (KIP-511: a client must be able to read it before it knows the broker's versions)."""
    flexible = request_class.API_KEY != API_VERSIONS_KEY and is_flexible(request_class,
                                                                        api_version)
    header = response_header(correlation_id, flexible=flexible)
    if isinstance(response, EncodedResponse):
        body = list(response.body)
    else:
        body = [response.encode(version=api_version)]
    size = len(header) + sum(memoryview(b).nbytes for b in body)
    return [size_prefix(size) + header, *body]
