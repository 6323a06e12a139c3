"""Distributed worker settings (Kafka's names and defaults) and KIP-507 request signing."""

from __future__ import annotations

import base64

import pytest

from connect.api.errors import ConfigError
from connect.runtime.distributed.config_store import SessionKey
from connect.runtime.distributed.errors import InternalRequestSignatureError
from connect.runtime.distributed.session_keys import (
    ALGORITHM_HEADER,
    SIGNATURE_HEADER,
    InternalRequestSignature,
    new_session_key,
    sign,
    signature_headers,
    verify_request,
)
from connect.runtime.worker_config import DistributedConfig


def test_defaults_are_kafkas() -> None:
    c = DistributedConfig.from_props({"group.id": "g"})
    assert (c.session_timeout_ms, c.heartbeat_interval_ms, c.rebalance_timeout_ms) == (
        10000, 3000, 60000)
    assert c.scheduled_rebalance_max_delay_ms == 300000
    assert c.connect_protocol == "sessioned"
    assert (c.config_storage_topic, c.status_storage_topic, c.worker.offset_storage_topic) == (
        "connect-configs", "connect-status", "connect-offsets")
    assert c.status_storage_partitions == 5 and c.worker.offset_storage_partitions == 25
    assert c.inter_worker_key_ttl_ms == 3600000
    assert c.inter_worker_signature_algorithm == "HmacSHA256"
    assert c.inter_worker_verification_algorithms == ["HmacSHA256"]
    assert c.worker_sync_timeout_ms == 3000
    assert c.replication_factor(c.config_storage_replication_factor) is None


def test_storage_topic_settings_pass_through() -> None:
    c = DistributedConfig.from_props({"group.id": "g", "config.storage.topic": "cfg",
                                      "config.storage.min.insync.replicas": "2",
                                      "status.storage.partitions": "3",
                                      "status.storage.segment.ms": "60000"})
    assert c.storage_topic_settings("config.storage.") == {"min.insync.replicas": "2"}
    assert c.storage_topic_settings("status.storage.") == {"segment.ms": "60000"}


@pytest.mark.parametrize(("props", "key"), [
    ({}, "group.id"),
    ({"group.id": "g", "heartbeat.interval.ms": "10000"}, "heartbeat.interval.ms"),
    ({"group.id": "g", "connect.protocol": "eager"}, "connect.protocol"),
    ({"group.id": "g", "connect.protocol": "fast"}, "connect.protocol"),
    ({"group.id": "g", "inter.worker.signature.algorithm": "HmacSHA512"},
     "inter.worker.verification.algorithms"),
    ({"group.id": "g", "inter.worker.verification.algorithms": "HmacSHA256,MD5"},
     "inter.worker.verification.algorithms"),
    ({"group.id": "g", "scheduled.rebalance.max.delay.ms": "-1"},
     "scheduled.rebalance.max.delay.ms"),
])
def test_bad_settings_name_their_key(props: dict[str, str], key: str) -> None:
    with pytest.raises(ConfigError) as caught:
        DistributedConfig.from_props(props)
    assert key in str(caught.value)


# RFC 4231, test case 1.
RFC_KEY = SessionKey(b"\x0b" * 20, "HmacSHA256", 0)
RFC_BODY = b"Hi There"
RFC_MAC = bytes.fromhex("b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7")


def test_signature_is_the_base64_hmac_of_the_body_in_kafkas_headers() -> None:
    assert sign(RFC_KEY, "HmacSHA256", RFC_BODY) == base64.b64encode(RFC_MAC).decode()
    headers = signature_headers(RFC_KEY, "HmacSHA256", RFC_BODY)
    assert headers == {"X-Connect-Authorization": base64.b64encode(RFC_MAC).decode(),
                       "X-Connect-Request-Signature-Algorithm": "HmacSHA256"}
    assert tuple(headers) == (SIGNATURE_HEADER, ALGORITHM_HEADER)
    signature = InternalRequestSignature.from_headers(RFC_BODY, headers)
    assert signature is not None
    verify_request(signature, RFC_KEY, ["HmacSHA256"])


def test_verification_refuses_what_the_key_did_not_sign() -> None:
    good = InternalRequestSignature.from_headers(
        RFC_BODY, signature_headers(RFC_KEY, "HmacSHA256", RFC_BODY))
    assert good is not None
    other_key = SessionKey(b"\x0c" * 20, "HmacSHA256", 0)
    with pytest.raises(InternalRequestSignatureError) as caught:
        verify_request(good, other_key, ["HmacSHA256"])
    assert caught.value.status == 403
    tampered = InternalRequestSignature(RFC_BODY + b"!", good.algorithm, good.signature)
    with pytest.raises(InternalRequestSignatureError):
        verify_request(tampered, RFC_KEY, ["HmacSHA256"])
    with pytest.raises(InternalRequestSignatureError) as caught:
        verify_request(None, RFC_KEY, ["HmacSHA256"])
    assert "missing required signature" in str(caught.value) and caught.value.status == 400
    with pytest.raises(InternalRequestSignatureError) as caught:
        verify_request(good, RFC_KEY, ["HmacSHA512"])
    assert caught.value.status == 400
    assert InternalRequestSignature.from_headers(RFC_BODY, {}) is None


def test_new_session_keys_are_random_and_sized_by_the_digest() -> None:
    a, b = new_session_key("HmacSHA256", 5), new_session_key("HmacSHA256", 5)
    assert len(a.key) == 32 and a.key != b.key and a.creation_timestamp == 5
    assert len(new_session_key("HmacSHA512", 0).key) == 64
    assert len(new_session_key("HmacSHA256", 0, size_bits=128).key) == 16
    assert "key=" not in repr(a)  # never logged
