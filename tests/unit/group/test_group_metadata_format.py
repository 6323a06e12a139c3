"""Kafka's GroupMetadataValue (versions 0-4) against bytes written out from its schema."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.group import OffsetsFormatError
from core.group.metadata_format import (
    GroupMetadataValue,
    MemberMetadata,
    decode_group_metadata_value,
    encode_group_metadata_value,
)
from core.group.offsets import replay_all
from core.group.offsets_format import encode_group_metadata_key


def s16(text: str) -> bytes:
    """An int16-length string, as the classic versions write it."""
    return len(text).to_bytes(2, "big") + text.encode()


def compact(text: str) -> bytes:
    """A compact string (version 4): unsigned varint of length + 1, then UTF-8."""
    return bytes([len(text) + 1]) + text.encode()


TIMESTAMP = bytes([0x00, 0x00, 0x01, 0x8B, 0xCF, 0xE5, 0x68, 0x00])  # 1700000000000

# Field by field from GroupMetadataValue.json, version 3 (what Kafka and Ferry write).
VALUE_V3 = b"".join([
    b"\x00\x03",                          # version 3
    s16("consumer"),                      # protocolType
    b"\x00\x00\x00\x05",                  # generation 5
    s16("range"),                         # protocol
    s16("m1"),                            # leader
    TIMESTAMP,                            # currentStateTimestamp
    b"\x00\x00\x00\x01",                  # one member
    s16("m1"),                            #   memberId
    s16("i1"),                            #   groupInstanceId
    s16("c1"),                            #   clientId
    s16("/127.0.0.1"),                    #   clientHost
    b"\x00\x00\x75\x30",                  #   rebalanceTimeout 30000
    b"\x00\x00\x27\x10",                  #   sessionTimeout 10000
    b"\x00\x00\x00\x03abc",               #   subscription
    b"\x00\x00\x00\x02xy",                #   assignment
])
MEMBER = MemberMetadata("m1", "i1", "c1", "/127.0.0.1", 30000, 10000, b"abc", b"xy")
VALUE = GroupMetadataValue("consumer", 5, "range", "m1", 1_700_000_000_000, (MEMBER,))


def test_version_3_matches_the_schema_byte_for_byte():
    assert encode_group_metadata_value(VALUE) == VALUE_V3
    assert decode_group_metadata_value(VALUE_V3) == VALUE


def test_version_0_has_no_timestamp_no_rebalance_timeout_and_no_instance_id():
    data = b"".join([
        b"\x00\x00", s16("consumer"), b"\x00\x00\x00\x05", s16("range"), s16("m1"),
        b"\x00\x00\x00\x01",
        s16("m1"), s16("c1"), s16("/127.0.0.1"), b"\x00\x00\x27\x10",
        b"\x00\x00\x00\x03abc", b"\x00\x00\x00\x02xy",
    ])
    # Kafka takes the session timeout as the rebalance timeout of a version-0 member.
    expected = GroupMetadataValue("consumer", 5, "range", "m1", -1, (MemberMetadata(
        "m1", None, "c1", "/127.0.0.1", 10000, 10000, b"abc", b"xy"),))
    assert decode_group_metadata_value(data) == expected
    assert encode_group_metadata_value(expected, version=0) == data


def test_versions_1_and_2_add_the_rebalance_timeout_then_the_state_timestamp():
    member_v1 = s16("m1") + s16("c1") + s16("/127.0.0.1") + b"\x00\x00\x75\x30" \
        + b"\x00\x00\x27\x10" + b"\x00\x00\x00\x03abc" + b"\x00\x00\x00\x02xy"
    head = s16("consumer") + b"\x00\x00\x00\x05" + s16("range") + s16("m1")
    v1 = b"\x00\x01" + head + b"\x00\x00\x00\x01" + member_v1
    v2 = b"\x00\x02" + head + TIMESTAMP + b"\x00\x00\x00\x01" + member_v1
    no_instance = MemberMetadata("m1", None, "c1", "/127.0.0.1", 30000, 10000, b"abc", b"xy")
    assert decode_group_metadata_value(v1) == GroupMetadataValue(
        "consumer", 5, "range", "m1", -1, (no_instance,))
    assert decode_group_metadata_value(v2) == GroupMetadataValue(
        "consumer", 5, "range", "m1", 1_700_000_000_000, (no_instance,))
    assert encode_group_metadata_value(decode_group_metadata_value(v2), version=2) == v2


def test_version_4_is_flexible_and_its_tagged_fields_are_skipped():
    data = b"".join([
        b"\x00\x04", compact("consumer"), b"\x00\x00\x00\x05", compact("range"),
        compact("m1"), TIMESTAMP,
        b"\x02",                                  # compact array: one member
        compact("m1"), compact("i1"), compact("c1"), compact("/127.0.0.1"),
        b"\x00\x00\x75\x30", b"\x00\x00\x27\x10",
        b"\x04abc", b"\x03xy",                    # compact bytes
        b"\x00",                                  # member: no tagged fields
        b"\x00",                                  # value: no tagged fields
    ])
    assert decode_group_metadata_value(data) == VALUE
    assert encode_group_metadata_value(VALUE, version=4) == data
    # A newer writer's unknown tagged field (tag 7, two bytes) is skipped.
    tagged = data[:-2] + b"\x01\x07\x02zz" + b"\x00"
    assert decode_group_metadata_value(tagged) == VALUE


def test_an_empty_group_has_null_protocol_and_leader():
    data = (b"\x00\x03" + s16("consumer") + b"\x00\x00\x00\x02" + b"\xff\xff" + b"\xff\xff"
            + TIMESTAMP + b"\x00\x00\x00\x00")
    value = GroupMetadataValue("consumer", 2, None, None, 1_700_000_000_000, ())
    assert decode_group_metadata_value(data) == value
    assert encode_group_metadata_value(value) == data


@pytest.mark.parametrize("data", [
    VALUE_V3[:-1],               # truncated assignment
    VALUE_V3[:10],               # truncated header
    b"\x00\x05" + VALUE_V3[2:],  # a version Kafka has not defined
    b"\x00\x04\x00",             # flexible with a null protocol type
])
def test_malformed_values_raise_a_format_error(data):
    with pytest.raises(OffsetsFormatError):
        decode_group_metadata_value(data)


def test_replay_keeps_the_last_metadata_and_honours_its_tombstone():
    key_a, key_b = encode_group_metadata_key("a"), encode_group_metadata_key("b")
    older = encode_group_metadata_value(GroupMetadataValue("consumer", 1, "range", "m1",
                                                           5, (MEMBER,)))
    records = [(key_a, older), (key_a, VALUE_V3), (key_b, VALUE_V3), (key_b, None),
               (key_a, b"\x00\x03garbage")]  # unreadable: skipped, the last good one stays
    offsets, groups = replay_all(records)
    assert offsets == {}
    assert groups == {"a": VALUE}


names = st.text(max_size=20)


@settings(max_examples=60)
@given(version=st.integers(0, 4), protocol=st.none() | names, leader=st.none() | names,
       generation=st.integers(-(2**31), 2**31 - 1),
       members=st.lists(st.tuples(names, st.none() | names, names, names,
                                  st.integers(0, 2**31 - 1), st.binary(max_size=30),
                                  st.binary(max_size=30)), max_size=3))
def test_every_version_round_trips_what_it_can_hold(version, protocol, leader, generation,
                                                    members):
    value = GroupMetadataValue("consumer", generation, protocol, leader,
                               1_700_000_000_000 if version >= 2 else -1,
                               tuple(MemberMetadata(m, i if version >= 3 else None, c, h,
                                                    t, t, sub, asg)
                                     for m, i, c, h, t, sub, asg in members))
    assert decode_group_metadata_value(encode_group_metadata_value(value, version)) == value
