"""The C decoder of pgoutput TupleData (``_pgoutput_speedups.decode_tuple``) reads what
the Python one reads, and refuses truncated or malformed blocks with PgOutputError."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from connectors.postgres import pgoutput as pg

try:
    from connectors.postgres._pgoutput_speedups import decode_tuple
except ImportError:  # asserted below: tests/run builds it
    decode_tuple = None

needs_c = pytest.mark.skipif(decode_tuple is None, reason="the C decoder is not built")
UNCHANGED = pg.UNCHANGED_TOAST


def _c(buf: bytes, at: int = 0) -> tuple[list[object], int]:
    assert decode_tuple is not None
    return decode_tuple(UNCHANGED, pg.PgOutputError, buf, at)


def _encode(values: list[object]) -> bytes:
    out = struct.pack(">h", len(values))
    for v in values:
        if v is None:
            out += b"n"
        elif v is UNCHANGED:
            out += b"u"
        elif isinstance(v, bytes):
            out += b"b" + struct.pack(">i", len(v)) + v
        else:
            data = str(v).encode()
            out += b"t" + struct.pack(">i", len(data)) + data
    return out


def test_the_c_decoder_is_what_pgoutput_uses_here() -> None:
    assert decode_tuple is not None, (
        "connectors.postgres._pgoutput_speedups is not built: reinstall with gcc and the "
        "Python headers (pip install -e .)")
    assert pg._tuple.func is decode_tuple  # type: ignore[attr-defined]


column = st.one_of(st.none(), st.just(UNCHANGED), st.binary(max_size=40),
                   st.text(max_size=40))


@needs_c
@settings(max_examples=400)
@given(st.lists(column, max_size=30), st.binary(max_size=8), st.binary(max_size=8))
def test_random_tuples_decode_alike(values, before, after) -> None:
    buf = before + _encode(values) + after
    got = _c(buf, len(before))
    assert got == pg._py_tuple(buf, len(before))
    assert got == (values, len(buf) - len(after))


@needs_c
def test_a_whole_insert_message_decodes_alike_through_decode() -> None:
    message = b"I" + struct.pack(">I", 16385) + b"N" + _encode(["1", "Anne é", None, UNCHANGED,
                                                              b"\x00\xff"])
    assert pg.decode(message) == pg.Insert(16385, ["1", "Anne é", None, UNCHANGED,
                                                   b"\x00\xff"])


@needs_c
def test_truncated_and_malformed_blocks_are_refused() -> None:
    whole = _encode(["abc", None, b"xyz"])
    for cut in range(len(whole)):
        with pytest.raises(pg.PgOutputError):
            _c(whole[:cut])
    with pytest.raises(pg.PgOutputError, match="unknown tuple column kind 'x'"):
        _c(struct.pack(">h", 1) + b"x")
    with pytest.raises(pg.PgOutputError, match="negative column count"):
        _c(struct.pack(">h", -1))
    with pytest.raises(pg.PgOutputError, match="past the message's end"):
        _c(struct.pack(">h", 1) + b"t" + struct.pack(">i", -1))
    with pytest.raises(pg.PgOutputError):
        _c(whole, -1)
    with pytest.raises(pg.PgOutputError):
        _c(whole, len(whole) + 5)


@needs_c
def test_invalid_utf8_raises_as_the_python_decoder_does() -> None:
    buf = struct.pack(">h", 1) + b"t" + struct.pack(">i", 2) + b"\xc3\x28"
    with pytest.raises(UnicodeDecodeError):
        pg._py_tuple(buf, 0)
    with pytest.raises(UnicodeDecodeError):
        _c(buf)
