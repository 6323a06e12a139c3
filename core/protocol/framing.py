"""Kafka's framing: every request and response is an int32 size followed by that many bytes.

``FrameReader`` splits a byte stream into frames without doing any I/O itself: the owner
asks it where the next received bytes should go (``get_buffer``) and tells it how many
arrived (``buffer_updated``), which is exactly asyncio's ``BufferedProtocol`` contract, so
the socket reads straight into its buffers. Small frames share one fixed buffer and are
copied out; a frame too large for it gets a buffer of its own that the socket fills
directly and that is handed out without a copy. The size prefix is checked against the
limit before any of the body is accepted.
"""

from __future__ import annotations

import struct

from core.protocol.errors import FrameTooLargeError, MalformedRequestError

__all__ = ["SIZE_PREFIX", "FrameReader", "frame_size", "size_prefix"]

#: Bytes of the size prefix before every frame.
SIZE_PREFIX = 4
#: The smallest request: api key, version, correlation id and a client id length.
MIN_REQUEST_SIZE = 10
_INT32 = struct.Struct(">i")
# Per connection: small requests are read here; a larger one gets a buffer of its own.
_SHARED_BUFFER = 64 * 1024


def frame_size(prefix: bytes | bytearray | memoryview, limit: int) -> int:
    """The size announced by a 4-byte prefix, checked against ``limit`` (bytes).

    Raises ``FrameTooLargeError`` above the limit and ``MalformedRequestError`` for a size
    too small to hold a request header (negative sizes included).
    """
    (size,) = _INT32.unpack_from(prefix, 0)
    if size > limit:
        raise FrameTooLargeError(size, limit)
    if size < MIN_REQUEST_SIZE:
        raise MalformedRequestError(
            f"frame size {size} is too small for a request header ({MIN_REQUEST_SIZE} bytes)"
        )
    return size


def size_prefix(size: int) -> bytes:
    """The 4-byte prefix of a frame of ``size`` bytes."""
    return _INT32.pack(size)


class FrameReader:
    """Incremental frame splitter for one connection (not thread-safe; one owner).

    Usage: ``buf = reader.get_buffer()``, receive up to ``len(buf)`` bytes into it, then
    ``frames = reader.buffer_updated(n)``. Frames are ``bytes`` (small, copied out of the
    shared buffer) or a ``bytearray`` (large, owned by the caller from then on). After a
    ``ProtocolError`` the stream is unusable: the caller closes the connection.

    The buffer returned by ``get_buffer`` may still be referenced (exported) while
    ``buffer_updated`` runs, so the shared buffer is never resized, only compacted in place.
    """

    def __init__(self, limit: int, *, shared_buffer: int = _SHARED_BUFFER) -> None:
        self._limit = limit
        self._buf = bytearray(shared_buffer)
        self._start = 0  # first unconsumed byte of _buf
        self._end = 0  # one past the last received byte of _buf
        self._large: bytearray | None = None  # the body of a frame that did not fit _buf
        self._large_filled = 0

    @property
    def pending_bytes(self) -> int:
        """Bytes received that are not part of a returned frame yet."""
        return self._end - self._start + self._large_filled

    def get_buffer(self) -> memoryview:
        """Where the next received bytes go (never empty)."""
        if self._large is not None:
            return memoryview(self._large)[self._large_filled :]
        if self._end == len(self._buf):
            self._compact()
        return memoryview(self._buf)[self._end :]

    def buffer_updated(self, nbytes: int) -> list[bytes | bytearray]:
        """Account for ``nbytes`` written into the last buffer; return completed frames."""
        if self._large is not None:
            self._large_filled += nbytes
            if self._large_filled < len(self._large):
                return []
            frame = self._large
            self._large, self._large_filled = None, 0
            return [frame]
        self._end += nbytes
        return self._split()

    def _split(self) -> list[bytes | bytearray]:
        frames: list[bytes | bytearray] = []
        buf, start, end = self._buf, self._start, self._end
        while end - start >= SIZE_PREFIX:
            size = frame_size(buf[start : start + SIZE_PREFIX], self._limit)
            body = start + SIZE_PREFIX
            if end - body >= size:
                frames.append(bytes(memoryview(buf)[body : body + size]))
                start = body + size
                continue
            if SIZE_PREFIX + size > len(buf):
                # Too large for the shared buffer: give it its own, filled by the socket.
                large = bytearray(size)
                have = end - body
                large[:have] = buf[body:end]
                self._large, self._large_filled = large, have
                start = end = 0
            break
        if start == end:
            start = end = 0
        self._start, self._end = start, end
        return frames

    def _compact(self) -> None:
        """Move the unconsumed bytes to the front (a same-size slice assignment, which is
        allowed while the buffer is exported)."""
        start, end = self._start, self._end
        if start == 0:  # cannot happen: a partial frame this large goes to its own buffer
            raise MalformedRequestError("frame reader buffer overflow")
        self._buf[0 : end - start] = self._buf[start:end]
        self._start, self._end = 0, end - start
