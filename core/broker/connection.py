"""One client connection: frames in, requests handled one at a time in order, responses out.

The socket reads straight into a ``FrameReader`` (asyncio's ``BufferedProtocol``); complete
frames queue up and a single task per connection decodes, dispatches and answers them in
arrival order, as Kafka requires. A long-polling Fetch or a pending JoinGroup therefore
holds up only its own connection. Reading pauses while too much is queued or the peer does
not read its responses, so a client that pipelines without limit meets TCP backpressure.

Anything that makes a request unanswerable (a frame over socket.request.max.bytes, an
unknown API, an unsupported version, a body that does not decode, a handler that fails)
closes this connection only, after one log line naming the client and the reason.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import sys
from collections import deque
from collections.abc import Callable, Mapping, Sequence

from core.broker.registry import lookup
from core.broker.state import BrokerState, CloseConnection, RequestContext
from core.protocol.codec import Buffer, SupportedApi, decode_request, encode_response
from core.protocol.errors import ProtocolError
from core.protocol.framing import FrameReader

__all__ = ["BrokerConnection"]

log = logging.getLogger(__name__)

_MAX_QUEUED_FRAMES = 64
_MAX_QUEUED_BYTES = 32 * 1024 * 1024
_WRITE_HIGH_WATER = 4 * 1024 * 1024
# Python 3.12 writes a list of buffers with one sendmsg(); 3.11 joins them into a copy,
# so there large buffers (stored record batches) are written one by one instead.
_SCATTER_WRITES = sys.version_info >= (3, 12)
_COALESCE_BELOW = 64 * 1024
_ids = itertools.count(1)


class BrokerConnection(asyncio.BufferedProtocol):
    """The protocol object of one accepted connection; ``on_close`` runs when it ends."""

    def __init__(self, state: BrokerState, supported: Mapping[int, SupportedApi],
                 on_close: Callable[[BrokerConnection], None]) -> None:
        self._state = state
        self._supported = supported
        self._on_close = on_close
        self._reader = FrameReader(state.config.socket_request_max_bytes)
        self._frames: deque[bytes | bytearray] = deque()
        self._queued_bytes = 0
        self._frame_ready = asyncio.Event()
        self._can_write = asyncio.Event()
        self._can_write.set()
        self._reading_paused = False
        self._transport: asyncio.Transport | None = None
        self._task: asyncio.Task[None] | None = None
        self._closed = False
        self.peer = "?"
        self.connection_id = f"conn-{next(_ids)}"

    # ------------------------------------------------------------------ asyncio callbacks

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport
        transport.set_write_buffer_limits(high=_WRITE_HIGH_WATER)
        peer = transport.get_extra_info("peername")
        self.peer = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else str(peer)
        self._task = asyncio.get_running_loop().create_task(
            self._serve(), name=f"ferry-{self.connection_id}-{self.peer}")
        log.debug("%s: connection from %s", self.connection_id, self.peer)

    def get_buffer(self, sizehint: int) -> memoryview:
        return self._reader.get_buffer()

    def buffer_updated(self, nbytes: int) -> None:
        try:
            frames = self._reader.buffer_updated(nbytes)
        except ProtocolError as exc:
            self.close(f"{exc}")
            return
        for frame in frames:
            self._frames.append(frame)
            self._queued_bytes += len(frame)
        if frames:
            self._frame_ready.set()
            if (len(self._frames) >= _MAX_QUEUED_FRAMES
                    or self._queued_bytes >= _MAX_QUEUED_BYTES) and self._transport:
                self._transport.pause_reading()
                self._reading_paused = True

    def eof_received(self) -> bool:
        return False  # the transport closes itself; nothing can be answered after EOF

    def connection_lost(self, exc: Exception | None) -> None:
        self._closed = True
        self._can_write.set()
        if self._task is not None and not self._task.done():
            self._task.cancel()
        self._on_close(self)
        log.debug("%s: connection from %s closed", self.connection_id, self.peer)

    def pause_writing(self) -> None:
        self._can_write.clear()

    def resume_writing(self) -> None:
        self._can_write.set()

    # ------------------------------------------------------------------ processing

    def close(self, reason: str | None = None) -> None:
        """Close the connection; ``reason`` is logged (one line) when given."""
        if reason:
            log.warning("closing connection from %s: %s", self.peer, reason)
        self._closed = True
        if self._transport is not None:
            self._transport.abort()

    async def wait_closed(self) -> None:
        """Until the connection's task has ended (after ``close``)."""
        if self._task is not None:
            await asyncio.gather(self._task, return_exceptions=True)

    async def _serve(self) -> None:
        while not self._closed:
            if not self._frames:
                self._frame_ready.clear()
                await self._frame_ready.wait()
                continue
            frame = self._frames.popleft()
            self._queued_bytes -= len(frame)
            if self._reading_paused and len(self._frames) < _MAX_QUEUED_FRAMES // 2 \
                    and self._queued_bytes < _MAX_QUEUED_BYTES // 2 and self._transport:
                self._transport.resume_reading()
                self._reading_paused = False
            await self._handle(frame)
            if not self._can_write.is_set():
                await self._can_write.wait()

    async def _handle(self, frame: bytes | bytearray) -> None:
        try:
            decoded = decode_request(frame, self._supported)
        except ProtocolError as exc:
            self.close(str(exc))
            return
        header = decoded.header
        spec = lookup(header.api_key)
        assert spec is not None  # decode_request only returns served APIs
        ctx = RequestContext(header.api_key, header.api_version, header.correlation_id,
                             header.client_id or "", self.peer, self.connection_id,
                             decoded.body)
        try:
            response = await spec.handler(self._state, ctx)
            if response is None or self._closed:
                return
            chunks = encode_response(response, request_class=spec.request_class,
                                     api_version=header.api_version,
                                     correlation_id=header.correlation_id)
        except CloseConnection as exc:
            self.close(f"{spec.name} v{header.api_version}: {exc}")
            return
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("%s v%d from %s (client id %r) failed; closing its connection",
                          spec.name, header.api_version, self.peer, header.client_id)
            self.close()
            return
        self._write(chunks)

    def _write(self, chunks: Sequence[Buffer]) -> None:
        transport = self._transport
        if transport is None or self._closed:
            return
        if _SCATTER_WRITES or len(chunks) == 1:
            transport.writelines(chunks)
            return
        small: list[Buffer] = []
        for chunk in chunks:
            if memoryview(chunk).nbytes < _COALESCE_BELOW:
                small.append(chunk)
                continue
            if small:
                transport.write(b"".join(small))
                small = []
            transport.write(chunk)  # sent from this buffer; only an unsent tail is copied
        if small:
            transport.write(b"".join(small))
