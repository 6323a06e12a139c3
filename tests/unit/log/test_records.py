"""RecordBatch v2 codec: layout, CRC, in-place patching, compression, corruption."""

from __future__ import annotations

import struct

import crc32c
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.log.errors import CorruptRecordError, InvalidRecordError
from core.log.records import (
    COMPRESSION_CODES,
    HEADER_SIZE,
    Record,
    TimestampType,
    decode_batch,
    decode_batch_as,
    encode_batch,
    iter_batches,
    parse_header,
    set_base_offset,
    set_log_append_time,
    validate_batch,
)

headers_st = st.lists(st.tuples(st.text(max_size=8), st.one_of(st.none(), st.binary(max_size=8))),
                      max_size=3)
record_st = st.tuples(
    st.one_of(st.none(), st.binary(max_size=20)),
    st.one_of(st.none(), st.binary(max_size=200)),
    headers_st,
    st.integers(min_value=0, max_value=2**41),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(record_st, min_size=1, max_size=30), st.integers(0, 2**40),
       st.sampled_from(sorted(COMPRESSION_CODES.values())))
def test_round_trip(records, base_offset, compression):
    buf = encode_batch(records, base_offset=base_offset, compression=compression)
    header, decoded = decode_batch(buf)
    assert header.base_offset == base_offset
    assert header.records_count == len(records)
    assert header.last_offset == base_offset + len(records) - 1
    assert header.compression == compression
    assert header.max_timestamp == max(r[3] for r in records)
    assert [(r.key, r.value, [tuple(h) for h in r.headers], r.timestamp) for r in decoded] == [
        (k, v, [tuple(h) for h in hs], ts) for k, v, hs, ts in records
    ]
    assert [r.offset for r in decoded] == list(range(base_offset, base_offset + len(records)))


def test_header_layout_matches_kafka():
    buf = encode_batch([(b"k", b"v", [], 1000), (None, b"w", [], 1005)], base_offset=7)
    base, length, _epoch, magic, crc = struct.unpack_from(">qiiBI", buf, 0)
    assert (base, magic) == (7, 2)
    assert length == len(buf) - 12
    # CRC-32C covers attributes to the end; baseOffset/length/epoch are outside it.
    assert crc == crc32c.crc32c(bytes(buf[21:]))
    attributes, last_delta, first_ts, max_ts, pid, epoch2, seq, count = struct.unpack_from(
        ">hiqqqhii", buf, 21)
    assert (attributes, last_delta, first_ts, max_ts) == (0, 1, 1000, 1005)
    assert (pid, epoch2, seq, count) == (-1, -1, -1, 2)
    assert HEADER_SIZE == 61


def test_base_offset_patch_keeps_crc_valid():
    buf = encode_batch([(b"k", b"v", [], 1)])
    set_base_offset(buf, 123456)
    header = validate_batch(buf)
    assert header.base_offset == 123456
    assert decode_batch(buf)[1][0].offset == 123456


def test_log_append_time_rewrites_timestamps_and_crc():
    buf = encode_batch([(b"k", b"v", [], 1), (b"k2", b"v2", [], 2)])
    set_log_append_time(buf, 99999)
    header, records = decode_batch(buf)
    assert header.timestamp_type == TimestampType.LOG_APPEND_TIME
    assert [r.timestamp for r in records] == [99999, 99999]
    assert all(r.timestamp_type == TimestampType.LOG_APPEND_TIME for r in records)


def test_flipped_byte_fails_crc():
    buf = encode_batch([(b"key", b"value" * 10, [("h", b"x")], 5)])
    for position in (21, 30, 61, len(buf) - 1):
        bad = bytearray(buf)
        bad[position] ^= 0x40
        with pytest.raises(CorruptRecordError):
            validate_batch(bad)


def test_truncated_and_bad_magic_are_invalid():
    buf = encode_batch([(b"key", b"value", [], 5)])
    with pytest.raises(InvalidRecordError):
        parse_header(buf[:40])
    with pytest.raises(InvalidRecordError):
        validate_batch(buf[:-1])
    bad = bytearray(buf)
    bad[16] = 1
    with pytest.raises(InvalidRecordError):
        parse_header(bad)


def test_iter_batches_skips_trailing_partial_batch():
    a = encode_batch([(b"a", b"1", [], 1)], base_offset=0)
    b = encode_batch([(b"b", b"2", [], 2)], base_offset=1)
    data = bytes(a + b + b[:20])
    assert [h.base_offset for _, h in iter_batches(data)] == [0, 1]


def test_decode_batch_as_skips_below_min_offset():
    class Row(tuple):
        pass

    buf = encode_batch([(None, b"%d" % i, [], i) for i in range(5)], base_offset=10)
    _, rows = decode_batch_as(buf, 0, Row, "t", 3, 12)
    assert [r[2] for r in rows] == [12, 13, 14]
    assert rows[0][:2] == ("t", 3)
    assert rows[0][6] == b"2"


def test_offset_deltas_preserve_sparse_offsets():
    buf = encode_batch([(b"a", b"1", [], 1), (b"b", b"2", [], 2)], base_offset=100,
                       offset_deltas=[0, 5])
    header, records = decode_batch(buf)
    assert [r.offset for r in records] == [100, 105]
    assert header.last_offset == 105


def test_record_defaults():
    assert Record(1, 2, None, None).headers == ()
