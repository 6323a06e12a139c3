"""Consumer embedded protocol bytes and the range assignor."""

from __future__ import annotations

import struct

import pytest

from core.backends.consumer_protocol import (
    Assignment,
    Subscription,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
    range_assign,
)
from core.backends.errors import GroupError


def test_subscription_v0_bytes():
    data = encode_subscription(Subscription(("ab",), None))
    assert data == struct.pack(">hih2si", 0, 1, 2, b"ab", -1)
    assert decode_subscription(data) == Subscription(("ab",), None)


def test_subscription_v1_owned_partitions_decode():
    data = (struct.pack(">hih", 1, 1, 1) + b"t" + struct.pack(">i", 2) + b"ud"
            + struct.pack(">ih", 1, 1) + b"t" + struct.pack(">iii", 2, 0, 3))
    sub = decode_subscription(data)
    assert sub.topics == ("t",)
    assert sub.user_data == b"ud"
    assert sub.owned_partitions == (("t", 0), ("t", 3))


def test_assignment_round_trip_and_empty():
    a = Assignment({"x": [0, 2], "y": [1]}, b"u")
    assert decode_assignment(encode_assignment(a)) == a
    assert decode_assignment(b"") == Assignment()


def test_truncated_data_is_a_group_error():
    with pytest.raises(GroupError):
        decode_subscription(encode_subscription(Subscription(("topic",)))[:-6])


def test_range_assignor_matches_kafka():
    subs = {"c1": Subscription(("t0", "t1")), "c0": Subscription(("t0", "t1"))}
    result = range_assign(subs, {"t0": 3, "t1": 3})
    # Kafka's documented example: C0 [t0p0, t0p1, t1p0, t1p1], C1 [t0p2, t1p2].
    assert result["c0"].partitions == {"t0": [0, 1], "t1": [0, 1]}
    assert result["c1"].partitions == {"t0": [2], "t1": [2]}


def test_range_assignor_more_members_than_partitions_and_unknown_topics():
    subs = {f"m{i}": Subscription(("t", "missing")) for i in range(3)}
    result = range_assign(subs, {"t": 2})
    assert [result[m].partitions for m in ("m0", "m1", "m2")] == [{"t": [0]}, {"t": [1]}, {}]
