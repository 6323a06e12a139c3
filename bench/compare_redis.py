"""Redis Streams workload drivers for the broker benchmark's comparison runs.

The client is hiredis-py (the C RESP parser and command packer that redis-py uses when
installed with ``redis[hiredis]``) over one plain TCP socket, because it was the fastest
Python client measured on the benchmark machine for 1,000,000 x 100 B XADDs against
redis-server 7.0 (AOF, everysec):

* redis-py ``Pipeline`` of 10,000 XADDs: ~137 k/s;
* redis-py ``Connection`` with hiredis-packed commands, one ``read_response()`` a reply:
  ~240 k/s;
* ``redis-benchmark -c 1 -P 1000`` (C): ~340 k/s;
* hiredis-py directly, 10,000-command pipelines with two in flight: ~540 k/s.

Produce is XADD with an auto-generated id, one field ``v`` holding the value; consume is
XRANGE with COUNT 10,000 from the start, each page starting after the last id seen.
"""

from __future__ import annotations

import logging
import socket
import time
from collections.abc import Sequence
from importlib.metadata import version

import hiredis

log = logging.getLogger(__name__)

PIPELINE = 10_000
PAGE = 10_000
RECV_BYTES = 1 << 20
IO_TIMEOUT_S = 60.0

CLIENT_VERSION = f"hiredis-py {version('hiredis')}"


class RedisProtocolError(RuntimeError):
    """Redis answered with an error reply, or the connection broke."""


class RespConnection:
    """One RESP connection: commands packed by hiredis, replies parsed by hiredis.

    Not thread-safe. ``send`` may be called several times before ``replies``; Redis
    answers in order, so pipelined replies are read back in the order sent.
    """

    def __init__(self, port: int) -> None:
        self._sock = socket.create_connection(("127.0.0.1", port), timeout=IO_TIMEOUT_S)
        self._sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._reader = hiredis.Reader()

    def close(self) -> None:
        self._sock.close()

    def send(self, packed: bytes) -> None:
        self._sock.sendall(packed)

    def _next_reply(self) -> object:
        while (reply := self._reader.gets()) is False:
            data = self._sock.recv(RECV_BYTES)
            if not data:
                raise RedisProtocolError("redis-server closed the connection")
            self._reader.feed(data)
        if isinstance(reply, hiredis.ReplyError):
            raise RedisProtocolError(str(reply))
        return reply

    def skip_replies(self, count: int) -> None:
        """Read and drop ``count`` replies, raising on the first error reply."""
        for _ in range(count):
            self._next_reply()

    def call(self, *args: bytes | str | int) -> object:
        self.send(hiredis.pack_command(args))
        return self._next_reply()


def stream_length(port: int, key: str) -> int:
    conn = RespConnection(port)
    try:
        return int(conn.call("XLEN", key))  # type: ignore[arg-type]
    finally:
        conn.close()


def delete_stream(port: int, key: str) -> None:
    conn = RespConnection(port)
    try:
        conn.call("DEL", key)
    finally:
        conn.close()


def redis_produce(port: int, key: str, values: Sequence[bytes], messages: int) -> float:
    """Seconds to XADD ``messages`` values (cycling ``values``) and read every reply.

    Commands are packed inside the timed section, as a client would, and sent in pipelines
    of 10,000 with two in flight: the next pipeline is packed and sent before the previous
    one's replies are read, so Redis does not wait for Python between pipelines.
    """
    conn = RespConnection(port)
    pack = hiredis.pack_command
    name = key.encode()
    pool = len(values)
    try:
        start = time.perf_counter()
        sent = in_flight = 0
        while sent < messages:
            count = min(PIPELINE, messages - sent)
            conn.send(b"".join([pack((b"XADD", name, b"*", b"v", values[i % pool]))
                                for i in range(sent, sent + count)]))
            conn.skip_replies(in_flight)
            in_flight = count
            sent += count
        conn.skip_replies(in_flight)
        return time.perf_counter() - start
    finally:
        conn.close()


def redis_consume(port: int, key: str, messages: int, value_size: int) -> float:
    """Seconds to read the stream from its first entry with XRANGE pages of 10,000.

    Every entry's value is touched (its length summed) and the totals checked.
    """
    conn = RespConnection(port)
    try:
        start = time.perf_counter()
        count = payload = 0
        after = b"-"
        while count < messages:
            page = conn.call("XRANGE", key, after, "+", "COUNT", PAGE)
            if not page:
                break
            assert isinstance(page, list)
            payload += sum([len(fields[1]) for _, fields in page])
            count += len(page)
            after = b"(" + page[-1][0]
        elapsed = time.perf_counter() - start
    finally:
        conn.close()
    if count != messages or payload != messages * value_size:
        raise RedisProtocolError(f"read {count} entries / {payload} B from {key}, expected "
                                 f"{messages} / {messages * value_size} B")
    return elapsed
