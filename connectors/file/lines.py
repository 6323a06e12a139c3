"""Splitting a growing byte stream into lines the way Kafka's FileStreamSourceTask does."""

from __future__ import annotations

import re

__all__ = ["LineSplitter"]

# Alternation order matters: at a "\r\n" the two-byte terminator wins over a lone "\r".
_EOL = re.compile(rb"\r\n|\r|\n")


class LineSplitter:
    """Buffers bytes and hands out complete lines with the bytes each one used up.

    A line ends at ``\\n``, ``\\r\\n`` or a lone ``\\r`` (Kafka's ``extractLine``); the
    terminator is not part of the line. A ``\\r`` that is the last buffered byte is not a
    line end yet, since the next byte may be its ``\\n``. Bytes after the last terminator
    stay buffered until more data completes the line, so a partially written last line is
    never emitted. The terminators are ASCII, which never occurs inside a multi-byte UTF-8
    sequence, so splitting bytes before decoding is safe.

    Not thread-safe: owned by one task.
    """

    __slots__ = ("_buffer", "_start")

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._start = 0  # first byte not yet returned in a line

    def feed(self, data: bytes) -> None:
        """Append bytes read from the stream."""
        if self._start:
            # Drop consumed bytes before growing, so the buffer holds at most one
            # partial line plus the new data.
            del self._buffer[: self._start]
            self._start = 0
        self._buffer += data

    def next_line(self) -> tuple[bytes, int] | None:
        """The next complete line and the number of bytes it consumed (terminator
        included), or None when the buffered bytes hold no complete line."""
        match = _EOL.search(self._buffer, self._start)
        if match is None:
            return None
        if match.group() == b"\r" and match.end() == len(self._buffer):
            return None
        line = bytes(self._buffer[self._start : match.start()])
        consumed = match.end() - self._start
        self._start = match.end()
        return line, consumed

    def take_rest(self) -> bytes:
        """Remove and return the buffered bytes that are not a complete line (used when
        the stream has ended and the line can never be completed)."""
        rest = bytes(self._buffer[self._start :])
        self._buffer.clear()
        self._start = 0
        return rest

    @property
    def pending(self) -> int:
        """How many buffered bytes are not yet part of a returned line."""
        return len(self._buffer) - self._start
