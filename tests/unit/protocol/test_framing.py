"""FrameReader: size-prefixed frames out of arbitrarily split input, limits checked first."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.protocol.errors import FrameTooLargeError, MalformedRequestError, ProtocolError
from core.protocol.framing import FrameReader, frame_size, size_prefix


def framed(payload: bytes) -> bytes:
    return size_prefix(len(payload)) + payload


def feed(reader: FrameReader, data: bytes, cuts: list[int]) -> list[bytes]:
    """Deliver ``data`` in pieces ending at ``cuts``, never more than get_buffer allows."""
    frames: list[bytes] = []
    pos = 0
    for end in [*sorted(set(cuts)), len(data)]:
        while pos < end:
            buf = reader.get_buffer()
            n = min(len(buf), end - pos)
            buf[:n] = data[pos : pos + n]
            pos += n
            frames.extend(bytes(f) for f in reader.buffer_updated(n))
    return frames


payloads = st.lists(st.binary(min_size=10, max_size=3000), max_size=12)


@given(payloads, st.lists(st.integers(min_value=0, max_value=40000), max_size=30))
def test_frames_come_out_whole_and_in_order_however_the_input_is_split(
        items: list[bytes], cuts: list[int]) -> None:
    data = b"".join(framed(p) for p in items)
    reader = FrameReader(1 << 20, shared_buffer=1024)  # small: forces the large-frame path
    assert feed(reader, data, [c for c in cuts if c < len(data)]) == items
    assert reader.pending_bytes == 0


def test_a_large_frame_is_read_into_its_own_buffer_and_handed_over_without_copy() -> None:
    payload = bytes(range(256)) * 400
    reader = FrameReader(1 << 20, shared_buffer=4096)
    data = framed(payload) + framed(b"0123456789")
    frames: list[bytes | bytearray] = []
    pos = 0
    while pos < len(data):
        buf = reader.get_buffer()
        n = min(len(buf), len(data) - pos)
        buf[:n] = data[pos : pos + n]
        pos += n
        frames.extend(reader.buffer_updated(n))
    assert [bytes(f) for f in frames] == [payload, b"0123456789"]
    assert type(frames[0]) is bytearray and type(frames[1]) is bytes


def test_the_limit_is_checked_on_the_size_prefix_before_the_body_arrives() -> None:
    reader = FrameReader(1000)
    buf = reader.get_buffer()
    buf[:4] = struct.pack(">i", 1001)
    with pytest.raises(FrameTooLargeError) as info:
        reader.buffer_updated(4)
    assert (info.value.size, info.value.limit) == (1001, 1000)
    assert frame_size(struct.pack(">i", 1000), 1000) == 1000


@pytest.mark.parametrize("size", [-1, -(2**31), 0, 9])
def test_negative_and_too_small_sizes_are_malformed(size: int) -> None:
    with pytest.raises(MalformedRequestError):
        frame_size(struct.pack(">i", size), 1 << 20)


@given(st.binary(max_size=5000), st.lists(st.integers(min_value=1, max_value=600), max_size=20))
def test_random_streams_give_frames_or_a_protocol_error(data: bytes, sizes: list[int]) -> None:
    reader = FrameReader(2048, shared_buffer=512)
    pos = 0
    for size in [*sizes, len(data)]:
        while pos < len(data) and size > 0:
            buf = reader.get_buffer()
            n = min(len(buf), len(data) - pos, size)
            buf[:n] = data[pos : pos + n]
            pos += n
            size -= n
            try:
                frames = reader.buffer_updated(n)
            except ProtocolError:
                return
            assert all(10 <= len(f) <= 2048 for f in frames)


def test_a_large_frame_costs_what_has_arrived_not_what_was_announced() -> None:
    reader = FrameReader(200 * 1024 * 1024)
    buf = reader.get_buffer()
    buf[:8] = struct.pack(">i", 100 * 1024 * 1024) + b"abcd"
    assert reader.buffer_updated(8) == []
    room = reader.get_buffer()  # one growth step, not 100 MiB
    assert 0 < len(room) <= 256 * 1024 and reader.large_capacity <= 256 * 1024 + 4


def test_a_managed_reader_grows_only_when_its_owner_grants_it() -> None:
    payload = bytes(range(256)) * 4096  # 1 MiB
    data = framed(payload)
    reader = FrameReader(1 << 24, shared_buffer=1024, managed_growth=True)
    granted = []
    pos = 0
    frames: list[bytes | bytearray] = []
    while pos < len(data):
        buf = reader.get_buffer()
        assert len(buf) > 0
        n = min(len(buf), len(data) - pos)
        buf[:n] = data[pos : pos + n]
        pos += n
        frames.extend(reader.buffer_updated(n))
        if reader.growth_wanted:
            assert reader.growth_wanted <= 4 * 1024 * 1024
            granted.append(reader.growth_wanted)
            reader.grow(reader.growth_wanted)
    assert [bytes(f) for f in frames] == [payload]
    assert sum(granted) + 1020 == len(payload)  # the first bytes came with the prefix
    with pytest.raises(ValueError):
        reader.grow(1)  # no frame in progress
