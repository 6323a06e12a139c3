"""Kafka's framing: every request and response is an int32 size followed by that many bytes.

``FrameReader`` splits a byte stream into frames without doing any I/O itself: the owner
asks it where the next received bytes should go (``get_buffer``) and tells it how many
arrived (``buffer_updated``), which is exactly asyncio's ``BufferedProtocol`` contract, so
the socket reads straight into its buffers. Small frames share one fixed buffer and are
copied out; a frame too large for it gets a buffer of its own that the socket fills
directly and that is handed out without a copy. The size prefix is checked against the
limit before any of the body is accepted.

A large frame's buffer grows with the bytes that actually arrive (in steps of at most
``MAX_GROWTH_STEP``), never to the announced size up front: a peer that announces 100 MiB
and sends four bytes costs a few KiB, not 100 MiB. An owner that bounds memory across
connections (the broker's ``queued.max.request.bytes``) creates the reader with
``managed_growth=True`` and grants each step itself (``growth_wanted`` / ``grow``).
"""

from __future__ import annotations

import struct

from core.protocol.errors import FrameTooLargeError, MalformedRequestError

__all__ = ["MAX_GROWTH_STEP", "SIZE_PREFIX", "FrameReader", "frame_size", "size_prefix"]

#: Bytes of the size prefix before every frame.
SIZE_PREFIX = 4
#: The smallest request: api key, version, correlation id and a client id length.
MIN_REQUEST_SIZE = 10
_INT32 = struct.Struct(">i")
# Per connection: small requests are read here; a larger one gets a buffer of its own.
_SHARED_BUFFER = 64 * 1024
#: A large frame's buffer grows by its current size (doubling, so a frame of n bytes costs
#: O(log n) reallocations), at least ``_MIN_GROWTH_STEP`` and at most this at a time.
MAX_GROWTH_STEP = 4 * 1024 * 1024
_MIN_GROWTH_STEP = 256 * 1024


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

    With ``managed_growth`` the owner must, after every ``buffer_updated``, either call
    ``grow(growth_wanted)`` when ``growth_wanted`` is non-zero or stop reading until it
    can: ``get_buffer`` would otherwise have no room to offer. Without it the reader grows
    by itself.

    The buffer returned by ``get_buffer`` may still be referenced (exported) while
    ``buffer_updated`` runs, so buffers are never resized there: the shared buffer is only
    compacted in place, and a large frame's buffer is extended in ``get_buffer``.
    """

    def __init__(self, limit: int, *, shared_buffer: int = _SHARED_BUFFER,
                 managed_growth: bool = False) -> None:
        self._limit = limit
        self._managed = managed_growth
        self._buf = bytearray(shared_buffer)
        self._start = 0  # first unconsumed byte of _buf
        self._end = 0  # one past the last received byte of _buf
        self._large: bytearray | None = None  # the body so far of a frame that did not fit _buf
        self._large_size = 0  # the announced size of that frame
        self._large_filled = 0
        self._large_capacity = 0  # what _large may grow to (granted), <= _large_size

    @property
    def pending_bytes(self) -> int:
        """Bytes received that are not part of a returned frame yet."""
        return self._end - self._start + self._large_filled

    @property
    def large_capacity(self) -> int:
        """Bytes allocated or granted for the incomplete large frame (0 if there is none)."""
        return self._large_capacity if self._large is not None else 0

    @property
    def growth_wanted(self) -> int:
        """Bytes the incomplete large frame's buffer must grow by before more can be read
        (0 while it has room, or when no large frame is in progress)."""
        if self._large is None or self._large_filled < self._large_capacity:
            return 0
        capacity = self._large_capacity
        step = min(MAX_GROWTH_STEP, max(_MIN_GROWTH_STEP, capacity))
        return min(step, self._large_size - capacity)

    @property
    def large_missing(self) -> int:
        """Bytes of the incomplete large frame that have not arrived yet (0 if none)."""
        return self._large_size - self._large_filled if self._large is not None else 0

    def grow(self, nbytes: int) -> None:
        """Let the large frame's buffer grow by ``nbytes`` (at most ``growth_wanted``)."""
        if self._large is None or not 0 < nbytes <= self._large_size - self._large_capacity:
            raise ValueError(f"cannot grow the frame buffer by {nbytes} bytes")
        self._large_capacity += nbytes

    @property
    def limit(self) -> int:
        """The largest frame accepted; a larger size prefix is a ProtocolError."""
        return self._limit

    @limit.setter
    def limit(self, value: int) -> None:
        self._limit = value

    def get_buffer(self) -> memoryview:
        """Where the next received bytes go (never empty, unless a managed reader's owner
        did not grant ``growth_wanted``)."""
        if self._large is not None:
            if not self._managed and self.growth_wanted:
                self.grow(self.growth_wanted)
            missing = self._large_capacity - len(self._large)
            if missing > 0:
                try:
                    self._large.extend(bytes(missing))
                except BufferError:  # the owner still holds a view of it: copy instead
                    grown = bytearray(self._large_capacity)
                    grown[: len(self._large)] = self._large
                    self._large = grown
            return memoryview(self._large)[self._large_filled :]
        if self._end == len(self._buf):
            self._compact()
        return memoryview(self._buf)[self._end :]

    def buffer_updated(self, nbytes: int) -> list[bytes | bytearray]:
        """Account for ``nbytes`` written into the last buffer; return completed frames."""
        if self._large is not None:
            self._large_filled += nbytes
            if self._large_filled < self._large_size:
                return []
            frame = self._large
            self._large = None
            self._large_size = self._large_filled = self._large_capacity = 0
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
                # Too large for the shared buffer: give it its own, filled by the socket,
                # holding only what has arrived so far.
                self._large = bytearray(memoryview(buf)[body:end])
                self._large_size = size
                self._large_filled = self._large_capacity = end - body
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
