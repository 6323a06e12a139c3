"""The DEK Registry's topic records and their replay."""

from __future__ import annotations

import pytest

from schema_registry.dek.records import decode_key_record, encode_key_record
from schema_registry.dek.state import Dek, DekDeletion, DekState, Kek, KekDeletion
from schema_registry.records import MalformedRecordError

KEK = Kek("k1", "local-kms", "mykey", {"a": "1"}, "doc", False, False, 1700000000000)
DEK = Dek("k1", "orders-value", "AES256_GCM", 2, "AAAA", False, 1700000000001)


def test_keks_and_deks_are_written_with_confluents_field_names():
    key, value = encode_key_record(KEK)
    assert key == b'{"tenant":"default","name":"k1","type":"KEK"}'
    assert value == (b'{"name":"k1","kmsType":"local-kms","kmsKeyId":"mykey","kmsProps":'
                     b'{"a":"1"},"doc":"doc","shared":false,"deleted":false,"type":"KEK",'
                     b'"ts":1700000000000}')
    key, value = encode_key_record(DEK)
    assert key == (b'{"tenant":"default","kekName":"k1","subject":"orders-value",'
                   b'"algorithm":"AES256_GCM","version":2,"type":"DEK"}')
    assert b'"encryptedKeyMaterial":"AAAA","deleted":false,"type":"DEK"' in value


@pytest.mark.parametrize("record", [KEK, DEK, KekDeletion("k1"),
                                    DekDeletion("k1", "orders-value", "AES256_GCM", 2)])
def test_records_decode_back(record):
    assert decode_key_record(*encode_key_record(record)) == record


def test_other_tenants_are_skipped_and_garbage_is_malformed():
    assert decode_key_record(b'{"tenant":"t2","name":"k","type":"KEK"}', None) is None
    with pytest.raises(MalformedRecordError):
        decode_key_record(b"not json", None)
    with pytest.raises(MalformedRecordError):
        decode_key_record(b'{"tenant":"default","type":"DEK","kekName":"k"}', None)


def test_replay_replaces_and_removes_keys():
    state = DekState()
    for record in (KEK, DEK, Dek("k1", "orders-value", "AES256_GCM", 1, "B"),
                   DekDeletion("k1", "orders-value", "AES256_GCM", 2)):
        state.apply(record)
    assert [d.version for d in state.deks("k1", "orders-value")] == [1]
    state.apply(KekDeletion("k1"))
    assert state.kek("k1") is None and state.summary() == "0 KEKs, 1 DEKs"
