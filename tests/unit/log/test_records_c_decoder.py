"""The C record decoder agrees with aiokafka's, and fails safely on malformed input."""

from __future__ import annotations

import gc
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.backends.types import ConsumerRecord
from core.log.errors import CorruptRecordError
from core.log.records import (
    COMPRESSION_CODES,
    HAVE_C_DECODER,
    HEADER_SIZE,
    decode_batch_as,
    encode_batch,
    set_log_append_time,
)

pytestmark = pytest.mark.skipif(not HAVE_C_DECODER, reason="C extension not built")

headers_st = st.lists(
    st.tuples(st.text(max_size=6), st.one_of(st.none(), st.binary(max_size=6))), max_size=3)
record_st = st.tuples(
    st.one_of(st.none(), st.binary(max_size=16)),
    st.one_of(st.none(), st.binary(max_size=300)),
    headers_st,
    st.integers(min_value=0, max_value=2**42),
)


@settings(max_examples=200, deadline=None)
@given(records=st.lists(record_st, min_size=1, max_size=25),
       base_offset=st.integers(0, 2**40),
       compression=st.sampled_from(sorted(COMPRESSION_CODES.values())),
       skip=st.integers(0, 30),
       log_append_time=st.booleans())
def test_c_decoder_matches_aiokafka(records, base_offset, compression, skip, log_append_time):
    buf = encode_batch(records, base_offset=base_offset, compression=compression)
    if log_append_time:
        set_log_append_time(buf, 1_234_567)
    min_offset = base_offset + skip
    _, fast = decode_batch_as(buf, 0, ConsumerRecord, "t", 3, min_offset)
    _, slow = decode_batch_as(buf, 0, ConsumerRecord, "t", 3, min_offset, use_c=False)
    assert fast == slow
    assert all(type(r) is ConsumerRecord for r in fast)
    expected = [
        (base_offset + i, k, v, tuple(tuple(h) for h in hs))
        for i, (k, v, hs, _) in enumerate(records) if base_offset + i >= min_offset
    ]
    assert [(r.offset, r.key, r.value, r.headers) for r in fast] == expected


def test_records_with_atomic_contents_are_untracked():
    buf = encode_batch([(b"k", b"v", [("h", b"x")], 1), (None, None, [], 2)])
    _, records = decode_batch_as(buf, 0, ConsumerRecord, "t", 0)
    assert not any(gc.is_tracked(r) for r in records)
    assert records[0].headers == (("h", b"x"),)
    assert records[0].value == b"v" and records[1].key is None


@settings(max_examples=300, deadline=None)
@given(noise=st.binary(min_size=1, max_size=200), position=st.integers(0, 10_000))
def test_malformed_records_raise_instead_of_crashing(noise, position):
    good = encode_batch([(b"key-%d" % i, os.urandom(20), [("h", b"v")], i) for i in range(5)])
    cut = HEADER_SIZE + position % (len(good) - HEADER_SIZE)
    damaged = bytearray(good[:cut]) + noise
    # Keep the header consistent with the new length so only the records array is bad;
    # validate=False because the CRC would catch it before the decoder ever ran.
    damaged[8:12] = (len(damaged) - 12).to_bytes(4, "big")
    try:
        _, records = decode_batch_as(damaged, 0, ConsumerRecord, "t", 0, validate=False)
    except CorruptRecordError:
        return
    assert len(records) == 5  # the noise happened to form valid records of the same count


def test_record_count_mismatch_is_corrupt():
    buf = encode_batch([(b"a", b"1", [], 1), (b"b", b"2", [], 2)])
    buf[57:61] = (3).to_bytes(4, "big")  # recordsCount says 3, two are stored
    with pytest.raises(CorruptRecordError):
        decode_batch_as(buf, 0, ConsumerRecord, "t", 0, validate=False)


@settings(max_examples=200, deadline=None)
@given(records=st.lists(record_st, min_size=1, max_size=25),
       base_offset=st.integers(0, 2**40),
       producer=st.sampled_from([(-1, -1, -1), (7, 2, 100)]),
       default_ts=st.integers(0, 2**41))
def test_c_encoder_writes_the_bytes_aiokafka_writes(records, base_offset, producer,
                                                     default_ts):
    records = [(k, v, [tuple(h) for h in hs], ts if i % 3 else None)
               for i, (k, v, hs, ts) in enumerate(records)]
    pid, epoch, seq = producer
    kwargs = dict(base_offset=base_offset, producer_id=pid, producer_epoch=epoch,
                  base_sequence=seq, default_timestamp=default_ts)
    assert encode_batch(records, **kwargs) == encode_batch(records, use_c=False, **kwargs)


def test_c_encoder_falls_back_for_other_value_types():
    records = [(None, memoryview(b"view"), [], 1), [b"k", bytearray(b"ba"), [], 2]]
    batch = encode_batch(records)
    _, decoded = decode_batch_as(batch, 0, ConsumerRecord, "t", 0)
    assert [(r.key, r.value) for r in decoded] == [(None, b"view"), (b"k", b"ba")]
    with pytest.raises(TypeError):
        encode_batch([(None, "not bytes", [], 1)])
