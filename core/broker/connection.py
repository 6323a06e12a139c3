"""One client connection: frames in, requests handled one at a time in order, responses out.

The socket reads straight into a ``FrameReader`` (asyncio's ``BufferedProtocol``); complete
frames queue up and a single task per connection decodes, dispatches and answers them in
arrival order, as Kafka requires. A long-polling Fetch or a pending JoinGroup therefore
holds up only its own connection. Reading pauses while too much is queued or the peer does
not read its responses, so a client that pipelines without limit meets TCP backpressure.

Anything that makes a request unanswerable (a frame over socket.request.max.bytes, an
unknown API, an unsupported version, a body that does not decode, a handler that fails)
closes this connection only, after one log line naming the client and the reason.

Cheap attacks stay cheap for the broker too:

* a large request's buffer grows as its bytes arrive, each step taken from the broker-wide
  ``RequestMemoryPool`` (``queued.max.request.bytes``); when it is spent, this connection
  stops reading until bytes come back;
* a connection over ``ConnectionQuotas`` is closed by the ``Acceptor`` before it gets here;
* work proportional to a large request (decoding it, encoding its answer, and serving the
  read-only Metadata and ListOffsets) runs on a worker thread, so the event loop keeps
  serving every other client meanwhile (Python switches threads every few milliseconds);
* repeated warnings go through a ``RateLimitedLog``.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import sys
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable, Mapping, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import Any, TypeVar, cast

from core.broker.connection_quotas import ConnectionQuotas
from core.broker.log_limit import RateLimitedLog
from core.broker.registry import lookup
from core.broker.request_memory import RequestMemoryPool
from core.broker.security.authenticator import ConnectionAuth, ListenerSecurity
from core.broker.security.throttling import BusyTimed, Throttle, throttle
from core.broker.state import BrokerState, CloseConnection, RequestContext
from core.protocol.codec import Buffer, SupportedApi, decode_request, encode_response
from core.protocol.errors import ProtocolError
from core.protocol.framing import FrameReader, size_prefix
from core.telemetry import bind_context, unbind_context

__all__ = ["BrokerConnection", "ConnectionLimits", "close_worker_loops"]

log = logging.getLogger(__name__)
T = TypeVar("T")

_MAX_QUEUED_FRAMES = 64
_MAX_QUEUED_BYTES = 32 * 1024 * 1024
_WRITE_HIGH_WATER = 4 * 1024 * 1024
# Python 3.12 writes a list of buffers with one sendmsg(); 3.11 joins them into a copy,
# so there large buffers (stored record batches) are written one by one instead.
_SCATTER_WRITES = sys.version_info >= (3, 12)
_COALESCE_BELOW = 64 * 1024
# Frames this large are decoded, and answered, on the worker thread. Below it (the common
# case) the hop to a thread would cost more than the work.
_WORKER_FRAME_BYTES = 64 * 1024
# APIs whose handlers only read the log manager (safe from any thread) and whose work grows
# with the request or the cluster: served on the worker thread, on its own event loop.
_PRODUCE, _METADATA, _LIST_OFFSETS = 0, 3, 2
_WORKER_HANDLED = frozenset({_METADATA, _LIST_OFFSETS})
# APIs whose answer stays small however large the request: a large Produce is answered
# with a few bytes per partition, quicker to encode on the loop than to hand to a thread.
_SMALL_ANSWERS = frozenset({_PRODUCE})
_ids = itertools.count(1)
_worker = threading.local()


@dataclass
class ConnectionLimits:
    """What the server shares with every connection to bound what they cost together."""

    memory: RequestMemoryPool
    quotas: ConnectionQuotas
    worker: Executor
    warnings: RateLimitedLog


class BrokerConnection(asyncio.BufferedProtocol):
    """The protocol object of one accepted connection; ``on_close`` runs when it ends."""

    def __init__(self, state: BrokerState, supported: Mapping[int, SupportedApi],
                 on_close: Callable[[BrokerConnection], None],
                 limits: ConnectionLimits, address: str,
                 listener: ListenerSecurity | None = None) -> None:
        """``address`` is the peer's, as admitted by ``limits.quotas`` (released when the
        connection is lost); ``listener`` is the one it came through (None: PLAINTEXT)."""
        self._listener = listener
        self.auth: ConnectionAuth | None = None
        self._state = state
        self._supported = supported
        self._on_close = on_close
        self._limits = limits
        self._memory = limits.memory
        self._reader = FrameReader(state.config.socket_request_max_bytes,
                                   managed_growth=True)
        # (frame, bytes of it charged to the memory pool)
        self._frames: deque[tuple[bytes | bytearray, int]] = deque()
        self._queued_bytes = 0
        self._incomplete_charged = 0  # pool bytes of the request still arriving
        self._complete_charged = 0  # pool bytes of queued requests and the one in hand
        self._frame_ready = asyncio.Event()
        self._can_write = asyncio.Event()
        self._can_write.set()
        self._paused_for: set[str] = set()  # "queue" and/or "memory"
        self._transport: asyncio.Transport | None = None
        self._task: asyncio.Task[None] | None = None
        self._closed = False
        self._address: str | None = address  # counted by the quotas until released
        self._handling = False
        self._throttle_s = 0.0  # a quota's throttle, muting the connection after the answer
        #: time.monotonic() of the last bytes read or answer written
        self.last_active = time.monotonic()
        self.peer = "?"
        self.connection_id = f"conn-{next(_ids)}"

    # ------------------------------------------------------------------ asyncio callbacks

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # a stream transport, though uvloop's do not subclass asyncio.Transport
        transport = cast(asyncio.Transport, transport)
        self._transport = transport
        transport.set_write_buffer_limits(high=_WRITE_HIGH_WATER)
        peer = transport.get_extra_info("peername")
        self.peer = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else str(peer)
        if self._listener is not None:
            self.auth = ConnectionAuth(self._listener, self.peer, self._limits.warnings)
            if not self.auth.authenticated:  # Kafka's sasl.server.max.receive.size
                self._reader.limit = min(self._reader.limit,
                                         self._listener.max_receive_before_auth)
            if self._listener.tls is not None:
                from core.broker.security.tls import peer_principal

                principal = peer_principal(transport, self._listener.tls)
                if principal is None:  # no mapping rule matched its certificate
                    self._listener.counts.failed += 1
                    self.close(f"listener {self._listener.name}: no principal for the "
                               "client certificate")
                else:
                    self.auth.principal = principal
        self._task = asyncio.get_running_loop().create_task(
            self._serve(), name=f"ferry-{self.connection_id}-{self.peer}")
        log.debug("%s: connection from %s", self.connection_id, self.peer)

    def get_buffer(self, sizehint: int) -> memoryview:
        return self._reader.get_buffer()

    def buffer_updated(self, nbytes: int) -> None:
        self.last_active = time.monotonic()
        try:
            frames = self._reader.buffer_updated(nbytes)
        except ProtocolError as exc:
            self.close(f"{exc}")
            return
        for frame in frames:
            charge = 0
            if isinstance(frame, bytearray):  # a large frame: charged while it arrived
                charge = len(frame)
                self._memory.completed(self, charge)
                self._incomplete_charged -= charge
                self._complete_charged += charge
            self._frames.append((frame, charge))
            self._queued_bytes += len(frame)
        capacity = self._reader.large_capacity
        if capacity > self._incomplete_charged:  # bytes that arrived with the size prefix
            self._memory.charge(capacity - self._incomplete_charged)
            self._incomplete_charged = capacity
        self._take_memory()
        if frames:
            self._frame_ready.set()
            if len(self._frames) >= _MAX_QUEUED_FRAMES or self._queued_bytes >= _MAX_QUEUED_BYTES:
                self._pause("queue")

    def _take_memory(self) -> None:
        """Grant the incomplete request's next buffer step from the pool, or stop reading
        until the pool calls back."""
        wanted = self._reader.growth_wanted
        if not wanted or self._closed:
            return
        if self._memory.acquire(self, wanted, self._take_memory,
                                missing=self._reader.large_missing):
            self._reader.grow(wanted)
            self._incomplete_charged += wanted
            self._resume("memory")
        else:
            self._pause("memory")

    def _pause(self, reason: str) -> None:
        if not self._paused_for and self._transport is not None and not self._closed:
            self._transport.pause_reading()
        self._paused_for.add(reason)

    def _resume(self, reason: str) -> None:
        if reason not in self._paused_for:
            return
        self._paused_for.discard(reason)
        if not self._paused_for and self._transport is not None and not self._closed:
            self._transport.resume_reading()

    def eof_received(self) -> bool:
        return False  # the transport closes itself; nothing can be answered after EOF

    def connection_lost(self, exc: Exception | None) -> None:
        self._closed = True
        self._can_write.set()
        if self._task is not None and not self._task.done():
            self._task.cancel()
        self._memory.forget(self)
        self._memory.release(complete=self._complete_charged,
                             incomplete=self._incomplete_charged)
        self._complete_charged = self._incomplete_charged = 0
        self._frames.clear()
        if self._address is not None:
            self._limits.quotas.release(self._address)
            self._address = None
        self._on_close(self)
        log.debug("%s: connection from %s closed", self.connection_id, self.peer)

    def pause_writing(self) -> None:
        self._can_write.clear()

    def resume_writing(self) -> None:
        self._can_write.set()

    # ------------------------------------------------------------------ processing

    def close(self, reason: str | None = None) -> None:
        """Close the connection; ``reason`` is logged (one line, rate-limited) when given."""
        if reason:
            self._limits.warnings.warning(
                "closing", "closing connection from %s: %s", self.peer, reason)
        self._closed = True
        if self._transport is not None:
            self._transport.abort()

    def idle_for(self, now: float) -> float:
        """Seconds without bytes in either direction while no request is being served (a
        long-polling Fetch is not idle) and none is waiting for request memory (the broker
        keeps it waiting, not the client)."""
        if self._handling or self._closed or "memory" in self._paused_for:
            self.last_active = now
            return 0.0
        return now - self.last_active

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
            frame, charge = self._frames.popleft()
            self._queued_bytes -= len(frame)
            if len(self._frames) < _MAX_QUEUED_FRAMES // 2 \
                    and self._queued_bytes < _MAX_QUEUED_BYTES // 2:
                self._resume("queue")
            self._handling = True
            try:
                await self._handle(frame)
                if self._throttle_s > 0 and not self._closed:
                    muted, self._throttle_s = self._throttle_s, 0.0
                    await self._mute(muted)
            finally:
                self._handling = False
                self.last_active = time.monotonic()
                del frame
                if charge and not self._closed:  # else connection_lost gave it all back
                    self._complete_charged -= charge
                    self._memory.release(complete=charge)
            if not self._can_write.is_set():
                await self._can_write.wait()

    async def _off_loop(self, fn: Callable[[], T]) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._limits.worker, fn)

    async def _handle(self, frame: bytes | bytearray) -> None:
        auth = self.auth
        if auth is not None and auth.raw_tokens:  # SASL tokens after a v0 handshake
            await self._raw_token(auth, bytes(frame))
            return
        large = len(frame) >= _WORKER_FRAME_BYTES
        try:
            if large:
                decoded = await self._off_loop(lambda: decode_request(frame, self._supported))
            else:
                decoded = decode_request(frame, self._supported)
        except ProtocolError as exc:
            self.close(str(exc))
            return
        header = decoded.header
        spec = lookup(header.api_key)
        assert spec is not None  # decode_request only returns served APIs
        if auth is not None:
            refusal = auth.refusal(header.api_key)
            if refusal is not None:
                self.close(f"{spec.name} v{header.api_version}: {refusal}")
                return
            ctx = RequestContext(header.api_key, header.api_version, header.correlation_id,
                                 header.client_id or "", self.peer, self.connection_id,
                                 decoded.body, auth.principal, auth.listener.name, auth)
        else:
            ctx = RequestContext(header.api_key, header.api_version, header.correlation_id,
                                 header.client_id or "", self.peer, self.connection_id,
                                 decoded.body)
        quotas = self._state.quotas
        handling_from = time.perf_counter()
        throttled: list[Throttle] = []
        busy: BusyTimed | None = None  # the handler's time on the event loop

        def within_quotas(response: Any) -> Any:
            # Client quotas (KIP-219): the throttle time goes into the answer.
            if quotas is None:
                return response
            handling_s = busy.busy_s if busy is not None \
                else time.perf_counter() - handling_from  # on the worker: all busy
            response, held = throttle(quotas, ctx, len(frame), response, handling_s)
            if held is not None:
                throttled.append(held)
            return response

        def encode(response: Any) -> list[Buffer]:
            return encode_response(within_quotas(response), request_class=spec.request_class,
                                   api_version=header.api_version,
                                   correlation_id=header.correlation_id)

        metrics = self._state.metrics
        if metrics is not None:
            metrics.in_flight += 1
            started = time.perf_counter()
        failed = False  # a handler raised: the connection is closed unanswered
        # What every line logged while handling says about the request (JSON logs' fields).
        bound = bind_context({"api_key": spec.name, "api_version": header.api_version,
                              "correlation_id": header.correlation_id,
                              "client_id": header.client_id, "peer": self.peer})
        try:
            if header.api_key in _WORKER_HANDLED and (large or _whole_cluster(ctx)):
                chunks: list[Buffer] | None = await self._off_loop(
                    lambda: _serve_on_worker(spec.handler(self._state, ctx), encode))
            else:
                if quotas is not None and quotas.active:
                    busy = BusyTimed(spec.handler(self._state, ctx))
                    response = await busy
                else:  # no quota to measure against: no timing wrapper either
                    response = await spec.handler(self._state, ctx)
                if response is None:
                    within_quotas(None)  # an acks=0 Produce counts too
                if response is None or self._closed:
                    return
                if large and header.api_key not in _SMALL_ANSWERS:
                    chunks = await self._off_loop(lambda: encode(response))
                else:
                    chunks = encode(response)
            if chunks is None or self._closed:
                return
        except CloseConnection as exc:
            failed = True
            self.close(f"{spec.name} v{header.api_version}: {exc}")
            return
        except asyncio.CancelledError:
            raise
        except Exception:
            failed = True
            log.exception("%s v%d from %s (client id %r) failed; closing its connection",
                          spec.name, header.api_version, self.peer, header.client_id)
            self.close()
            return
        finally:
            unbind_context(bound)
            if throttled and not throttled[0].delay_answer:
                self._throttle_s = throttled[0].seconds  # muted once answered
            if metrics is not None:
                metrics.in_flight -= 1
                metrics.request_done(header.api_key, header.api_version,
                                     time.perf_counter() - started, failed)
        if throttled and throttled[0].delay_answer:
            await self._mute(throttled[0].seconds)
        self._write(chunks)
        if auth is not None and auth.close_after_response:
            self._close_after_write()
        elif auth is not None and auth.authenticated:
            self._reader.limit = self._state.config.socket_request_max_bytes

    async def _raw_token(self, auth: ConnectionAuth, token: bytes) -> None:
        """A SASL token sent without Kafka framing (after SaslHandshake v0): answered
        the same way, or the connection is closed after the failure delay."""
        step = auth.authenticate(token)
        if step.failed:
            await asyncio.sleep(auth.failure_delay_s)
            self.close()
            return
        self._write([size_prefix(len(step.token)) + step.token])
        if auth.authenticated:
            self._reader.limit = self._state.config.socket_request_max_bytes

    def _close_after_write(self) -> None:
        """Close once the answer just written has been sent (an authentication error)."""
        self._closed = True
        if self._transport is not None:
            self._transport.close()

    async def _mute(self, seconds: float) -> None:
        """Read nothing from this connection for ``seconds`` (a quota's throttle)."""
        self._pause("throttle")
        try:
            await asyncio.sleep(seconds)
        finally:
            self._resume("throttle")

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


def _whole_cluster(ctx: RequestContext) -> bool:
    """A Metadata request for every topic: its answer grows with the cluster."""
    return ctx.api_key == _METADATA and not ctx.request.topics


def _serve_on_worker(handling: Awaitable[Any], encode: Callable[[Any], list[Buffer]]
                     ) -> list[Buffer] | None:
    """Run a handler and encode its answer on the worker thread's own event loop."""
    loop = getattr(_worker, "loop", None)
    if loop is None:
        loop = _worker.loop = asyncio.new_event_loop()
    response = loop.run_until_complete(handling)
    return None if response is None else encode(response)


def close_worker_loops() -> None:
    """Close the calling worker thread's event loop (run on each worker at shutdown)."""
    loop = getattr(_worker, "loop", None)
    if loop is not None:
        loop.close()
        _worker.loop = None
