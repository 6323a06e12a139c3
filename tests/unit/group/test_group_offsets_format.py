"""Kafka's __consumer_offsets key and value schemas: fixed vectors and round trips."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.group import CommittedOffset, OffsetsFormatError
from core.group.offsets import replay
from core.group.offsets_format import (
    GroupMetadataKey,
    OffsetCommitKey,
    OffsetCommitValue,
    UnknownKey,
    decode_key,
    decode_offset_commit_value,
    encode_group_metadata_key,
    encode_offset_commit_key,
    encode_offset_commit_value,
)

# Vectors written out field by field from the schemas (int16 version first; strings are an
# int16 length then UTF-8; integers big-endian).
KEY_G_T_1 = bytes([
    0x00, 0x01,                    # version 1
    0x00, 0x01, ord("g"),          # group "g"
    0x00, 0x02, ord("t"), ord("1"),  # topic "t1"
    0x00, 0x00, 0x00, 0x07,        # partition 7
])
VALUE_V3 = bytes([
    0x00, 0x03,                                      # version 3
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00,  # offset 256
    0x00, 0x00, 0x00, 0x05,                          # leader epoch 5
    0x00, 0x02, ord("m"), ord("d"),                  # metadata "md"
    0x00, 0x00, 0x01, 0x8B, 0xCF, 0xE5, 0x68, 0x00,  # commit timestamp 1700000000000
])


def test_offset_commit_key_matches_the_schema_byte_for_byte():
    assert encode_offset_commit_key("g", "t1", 7) == KEY_G_T_1
    assert decode_key(KEY_G_T_1) == OffsetCommitKey("g", "t1", 7)


def test_offset_commit_value_v3_matches_the_schema_byte_for_byte():
    value = OffsetCommitValue(256, 5, "md", 1_700_000_000_000)
    assert encode_offset_commit_value(value) == VALUE_V3
    assert decode_offset_commit_value(VALUE_V3) == value


def test_strings_are_utf8_with_a_byte_length():
    # "é" is two UTF-8 bytes (0xC3 0xA9): the prefix counts bytes, not characters.
    assert encode_group_metadata_key("é") == bytes([0x00, 0x02, 0x00, 0x02, 0xC3, 0xA9])


def test_older_value_versions_decode():
    v0 = bytes([0x00, 0x00,
                0, 0, 0, 0, 0, 0, 0, 42,        # offset 42
                0x00, 0x00,                     # metadata ""
                0, 0, 0, 0, 0, 0, 0x03, 0xE8])  # timestamp 1000
    assert decode_offset_commit_value(v0) == OffsetCommitValue(42, -1, "", 1000, None)
    v1 = bytes([0x00, 0x01,
                0, 0, 0, 0, 0, 0, 0, 42,
                0x00, 0x01, ord("x"),
                0, 0, 0, 0, 0, 0, 0x03, 0xE8,   # commit timestamp 1000
                0, 0, 0, 0, 0, 0, 0x07, 0xD0])  # expire timestamp 2000
    assert decode_offset_commit_value(v1) == OffsetCommitValue(42, -1, "x", 1000, 2000)
    v1_no_expiry = v1[:-8] + struct.pack(">q", -1)
    assert decode_offset_commit_value(v1_no_expiry).expire_timestamp is None
    v2 = v0[:1] + b"\x02" + v0[2:]
    assert decode_offset_commit_value(v2) == OffsetCommitValue(42, -1, "", 1000, None)


def test_key_versions_tell_record_types_apart():
    assert decode_key(b"\x00\x00" + KEY_G_T_1[2:]) == OffsetCommitKey("g", "t1", 7)
    assert decode_key(bytes([0x00, 0x02, 0x00, 0x01, ord("g")])) == GroupMetadataKey("g")
    # Newer coordinators' record types are reported, not rejected, so loading skips them.
    assert decode_key(bytes([0x00, 0x05, 0xFF])) == UnknownKey(5)


@pytest.mark.parametrize("data", [
    b"", b"\x00", KEY_G_T_1[:-1], bytes([0x00, 0x01, 0x00, 0x05, ord("g")]),
    bytes([0xFF, 0xFF]),  # version -1
    bytes([0x00, 0x01, 0xFF, 0xFF]) + KEY_G_T_1[5:],  # null group
])
def test_malformed_keys_raise(data):
    with pytest.raises(OffsetsFormatError):
        decode_key(data)


@pytest.mark.parametrize("data", [VALUE_V3[:-1], b"\x00\x04" + VALUE_V3[2:], b"\x00"])
def test_malformed_or_unknown_values_raise(data):
    with pytest.raises(OffsetsFormatError):
        decode_offset_commit_value(data)


def test_a_string_too_long_for_its_prefix_is_refused():
    with pytest.raises(OffsetsFormatError):
        encode_offset_commit_key("g" * 40_000, "t", 0)


names = st.text(max_size=60)
int32 = st.integers(-(2**31), 2**31 - 1)
int64 = st.integers(-(2**63), 2**63 - 1)


@settings(max_examples=150)
@given(names, names, int32)
def test_keys_round_trip(group, topic, partition):
    assert decode_key(encode_offset_commit_key(group, topic, partition)) == \
        OffsetCommitKey(group, topic, partition)
    assert decode_key(encode_group_metadata_key(group)) == GroupMetadataKey(group)


@settings(max_examples=150)
@given(int64, int32, st.text(max_size=200), int64)
def test_values_round_trip(offset, epoch, metadata, timestamp):
    value = OffsetCommitValue(offset, epoch, metadata, timestamp)
    assert decode_offset_commit_value(encode_offset_commit_value(value)) == value


def test_replay_keeps_the_last_value_and_honours_tombstones_and_skips_the_rest():
    def commit(group, partition, offset):
        return (encode_offset_commit_key(group, "t", partition),
                encode_offset_commit_value(OffsetCommitValue(offset, 1, "", 10)))

    records = [
        commit("a", 0, 1),
        commit("a", 1, 5),
        (encode_group_metadata_key("a"), b"\x00\x03anything"),  # group metadata: skipped
        commit("a", 0, 2),
        (encode_offset_commit_key("a", "t", 1), None),  # tombstone
        (b"\x00", b"garbage"),  # undecodable: skipped
        (encode_offset_commit_key("b", "t", 0), b"\x00\x09"),  # unknown value version
        commit("c", 3, 7),
        (encode_offset_commit_key("c", "t", 3), None),
    ]
    assert replay(records) == {"a": {("t", 0): CommittedOffset(2, 1, "", 10)}}
