"""Kafka's default partitioner: murmur2 must agree with the Java client bit for bit."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.backends.partitioner import StickyPartitioner, murmur2, partition_for_key


def reference_murmur2(data: bytes) -> int:
    """A transcription of the algorithm as Kafka's Utils.murmur2 specifies it."""
    m, r = 0x5BD1E995, 24
    length = len(data)
    h = (0x9747B28C ^ length) & 0xFFFFFFFF
    for i in range(length // 4):
        k = int.from_bytes(data[4 * i : 4 * i + 4], "little")
        k = (k * m) & 0xFFFFFFFF
        k ^= k >> r
        k = (k * m) & 0xFFFFFFFF
        h = ((h * m) & 0xFFFFFFFF) ^ k
    tail = length & ~3
    rest = length % 4
    if rest == 3:
        h ^= data[tail + 2] << 16
    if rest >= 2:
        h ^= data[tail + 1] << 8
    if rest >= 1:
        h ^= data[tail]
        h = (h * m) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * m) & 0xFFFFFFFF
    h ^= h >> 15
    return h - (1 << 32) if h >= 1 << 31 else h


# Expected values are those asserted by Kafka's own UtilsTest.testMurmur2.
KAFKA_VECTORS = {
    b"21": -973932308,
    b"foobar": -790332482,
    b"a-little-bit-long-string": -985981536,
    b"a-little-bit-longer-string": -1486304829,
    b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
    b"abc": 479470107,
}


@pytest.mark.parametrize(("key", "expected"), sorted(KAFKA_VECTORS.items()))
def test_murmur2_matches_kafka(key, expected):
    assert murmur2(key) == expected
    assert reference_murmur2(key) == expected


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=64), st.integers(1, 1000))
def test_partition_for_key_matches_java_formula(key, partitions):
    assert partition_for_key(key, partitions) == (reference_murmur2(key) & 0x7FFFFFFF) % partitions


def test_sticky_partitioner_moves_on_each_call():
    sticky = StickyPartitioner()
    picks = [sticky.next_partition("t", 3) for _ in range(6)]
    assert picks == [0, 1, 2, 0, 1, 2]
    assert sticky.next_partition("other", 3) == 0
