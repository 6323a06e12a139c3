"""A cluster node's metadata service on asyncio: the metadata quorum on the controller
listener, Raft messages to the other voters, requests to the active controller, and this
node's broker lease (register, then heartbeat every ``broker.heartbeat.interval.ms``).

The protocol logic is in MetadataQuorum (sans-IO); this module only moves its messages,
drives its clock, and waits for records to commit before answering a request.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
import random
import secrets
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from core.cluster.config import ClusterConfig
from core.cluster.controller import ControllerError, ErrorCode
from core.cluster.image import MetadataImage
from core.cluster.quorum import MetadataQuorum, Outcome
from core.cluster.raft import FileRaftStorage, Message
from core.cluster.records import BrokerEndpoint
from core.cluster.wire import (
    WireError,
    message_from_json,
    message_to_json,
    read_frame,
    write_frame,
)

#: ``(op, args, detail) -> operation on the controller, or None when op is not one``; the
#: operation may put per-item results into ``detail`` for the reply
ExtraOperations = Callable[[str, dict[str, Any], dict[str, Any]], Callable[[Any], Any] | None]

__all__ = ["BrokerLease", "ClusterService", "image_to_json", "request"]

log = logging.getLogger(__name__)

_TICK_S = 0.01
_QUEUE_LIMIT = 1000  # Raft messages waiting for one peer; more are dropped (Raft resends)
_CONNECT_TIMEOUT_S = 1.0


def _now_ms() -> int:
    return int(time.monotonic() * 1000)


def image_to_json(image: MetadataImage, controller_id: int | None) -> dict[str, Any]:
    """The committed metadata as the ``describe`` request answers it."""
    return {
        "offset": image.offset,
        "controller_id": controller_id,
        "brokers": {str(b): {"epoch": s.broker_epoch, "fenced": s.fenced,
                             "endpoints": [[e.name, e.host, e.port]
                                           for e in s.registration.endpoints]}
                    for b, s in sorted(image.brokers.items())},
        "topics": {name: {"topic_id": t.topic_id, "configs": t.configs, "partitions": [
            {"replicas": list(p.replicas), "isr": list(p.isr), "leader": p.leader,
             "leader_epoch": p.leader_epoch, "partition_epoch": p.partition_epoch}
            for p in t.partitions]} for name, t in sorted(image.topics.items())},
    }


async def request(host: str, port: int, op: str, args: dict[str, Any],
                  timeout_s: float = 5.0) -> dict[str, Any]:
    """Send one request to the node at host:port and return its reply (``error_code`` 0
    on success). Raises OSError/TimeoutError if it cannot be reached."""
    async with asyncio.timeout(timeout_s):
        reader, writer = await asyncio.open_connection(host, port)
        try:
            write_frame(writer, {"kind": "request", "id": 1, "op": op, "args": args})
            await writer.drain()
            return await read_frame(reader)
        finally:
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()


class _Peer:
    """The one-way stream of Raft messages to another voter, reconnected on failure."""

    def __init__(self, node_id: int, host: str, port: int) -> None:
        self.node_id, self.host, self.port = node_id, host, port
        self.queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue(_QUEUE_LIMIT)
        self.task: asyncio.Task[None] | None = None

    def send(self, frame: dict[str, Any]) -> None:
        with contextlib.suppress(asyncio.QueueFull):
            self.queue.put_nowait(frame)

    async def run(self) -> None:
        while True:
            try:
                async with asyncio.timeout(_CONNECT_TIMEOUT_S):
                    _, writer = await asyncio.open_connection(self.host, self.port)
            except (OSError, TimeoutError):
                await asyncio.sleep(0.1)
                continue
            try:
                while True:
                    write_frame(writer, await self.queue.get())
                    await writer.drain()
            except OSError as exc:
                log.debug("connection to voter %d lost: %s", self.node_id, exc)
            finally:
                writer.close()


class ClusterService:
    """``start``, then ``stop``. ``image`` is the committed metadata; ``lease.epoch`` is
    this node's broker epoch once the controller committed its registration."""

    def __init__(self, config: ClusterConfig, *, seed: int | None = None,
                 operations: ExtraOperations | None = None) -> None:
        if not config.voters:
            raise ValueError("a node without controller.quorum.voters observes the quorum: "
                             "run MetadataObserver")
        self.config = config
        #: operations beyond the topic and broker ones (the security metadata's, given by
        #: the node's wiring: their rules live above this sans-IO package)
        self._operations = operations
        self._rng = random.Random(seed)
        self._storage = FileRaftStorage(Path(config.log_dir) / "__cluster_metadata-0")
        self.quorum = MetadataQuorum(
            config.node_id, [v.node_id for v in config.voters], self._storage,
            now_ms=_now_ms(), rng=self._rng,
            election_timeout_ms=config.controller_quorum_election_timeout_ms,
            session_timeout_ms=config.broker_session_timeout_ms,
            default_replication_factor=config.default_replication_factor,
            unclean_leader_election=config.unclean_leader_election_enable)
        self._peers = {v.node_id: _Peer(v.node_id, v.host, v.port) for v in config.voters
                       if v.node_id != config.node_id}
        self._voters = {v.node_id: v for v in config.voters}
        self._server: asyncio.base_events.Server | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self.lease = BrokerLease(config)

    @property
    def image(self) -> MetadataImage:
        return self.quorum.image

    @property
    def applied(self) -> int:
        """The log index of the last committed entry applied to ``image``."""
        return self.quorum.applied

    @property
    def port(self) -> int:
        assert self._server is not None
        return self._server.sockets[0].getsockname()[1]

    async def start(self) -> None:
        listener = self.config.listener(self.config.controller_listener_names[0])
        try:
            self._server = await asyncio.start_server(self._serve, listener.host,
                                                      listener.port)
        except OSError:
            self._storage.close()  # a port in use: let another attempt take the log
            raise
        for peer in self._peers.values():
            peer.task = asyncio.create_task(peer.run(), name=f"ferry-raft-peer-{peer.node_id}")
            self._tasks.append(peer.task)
        self._tasks.append(asyncio.create_task(self._tick_loop(), name="ferry-raft-tick"))
        if self.config.is_broker:
            self._tasks.append(asyncio.create_task(
                self.lease.run(self.submit, lambda: self.image.offset), name="ferry-lease"))
        log.info("node %d: metadata quorum on %s:%d with voters %s", self.config.node_id,
                 listener.host, self.port, sorted(self._voters))

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()
        self._storage.close()

    # -- moving messages ------------------------------------------------------------------

    def _send(self, out: list[tuple[int, Message]]) -> None:
        for dst, message in out:
            peer = self._peers.get(dst)
            if peer is not None:
                peer.send({"kind": "raft", "msg": message_to_json(message)})

    async def _tick_loop(self) -> None:
        while True:
            try:
                self._send(self.quorum.tick(_now_ms()))
            except Exception:  # the clock must keep going past one failure
                log.exception("metadata quorum tick failed")
            await asyncio.sleep(_TICK_S)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
                     ) -> None:
        try:
            while True:
                frame = await read_frame(reader)
                if frame.get("kind") == "raft":
                    message = message_from_json(frame.get("msg", {}))
                    self._send(self.quorum.receive(message, _now_ms()))
                elif frame.get("kind") == "request":
                    reply = await self._handle(str(frame.get("op")), frame.get("args") or {})
                    write_frame(writer, {"kind": "reply", "id": frame.get("id"), **reply})
                    await writer.drain()
                else:
                    raise WireError(f"unknown frame kind {frame.get('kind')!r}")
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        except WireError as exc:
            log.warning("closing controller connection: %s", exc)
        except asyncio.CancelledError:
            # Shutdown: Python 3.11's start_server callback calls task.exception() on its
            # connection tasks, which raises for a cancelled one and logs it as an error.
            return
        finally:
            writer.close()

    # -- requests -------------------------------------------------------------------------

    async def _handle(self, op: str, args: dict[str, Any]) -> dict[str, Any]:
        if op == "describe":
            return {"error_code": 0, "result": image_to_json(self.image,
                                                             self.quorum.raft.leader_id)}
        if op == "fetch_log":
            return self._fetch_log(args)
        detail: dict[str, Any] = {}  # a security operation's per-item results
        try:
            operation = ((self._operations and self._operations(op, args, detail))
                         or _operation(op, args, _now_ms()))
            index, term, out = self.quorum.submit(operation, _now_ms())
        except ControllerError as exc:
            return {"error_code": exc.code, "error_message": str(exc),
                    "leader_id": self.quorum.raft.leader_id, "leader": self._leader_address()}
        except (KeyError, TypeError, ValueError) as exc:
            return {"error_code": ErrorCode.INVALID_REQUEST, "error_message": f"bad {op}: {exc}"}
        self._send(out)
        deadline = time.monotonic() + 5.0
        while time.monotonic() < deadline:
            outcome = self.quorum.outcome(index, term)
            if outcome == Outcome.COMMITTED:
                return {"error_code": 0, "result": {"index": index, **detail}}
            if outcome == Outcome.LOST:
                break
            await asyncio.sleep(0.005)
        return {"error_code": ErrorCode.NOT_CONTROLLER, "error_message":
                "the change was not committed; ask the new controller",
                "leader_id": self.quorum.raft.leader_id, "leader": self._leader_address()}

    def _fetch_log(self, args: dict[str, Any]) -> dict[str, Any]:
        """Committed entries from ``from`` on, for broker-only nodes (observers): any voter
        may answer, since committed prefixes agree on every voter."""
        try:
            start, limit = max(1, int(args["from"])), max(1, min(int(args.get("max", 500)),
                                                                 5000))
        except (KeyError, TypeError, ValueError) as exc:
            return {"error_code": ErrorCode.INVALID_REQUEST,
                    "error_message": f"bad fetch_log: {exc}"}
        entries = self.quorum.raft.committed(start)[:limit]
        return {"error_code": 0, "leader": self._leader_address(), "result": {
            "from": start,
            "entries": [[e.term, base64.b64encode(e.data).decode()] for e in entries]}}

    def _leader_address(self) -> list[Any] | None:
        leader = self.quorum.raft.leader_id
        voter = self._voters.get(leader) if leader is not None else None
        return [voter.host, voter.port] if voter is not None else None

    async def submit(self, op: str, args: dict[str, Any], timeout_s: float = 10.0
                     ) -> dict[str, Any]:
        """Send ``op`` to the active controller, wherever it is, retrying while there is
        none or it moves; returns the last reply."""
        deadline = time.monotonic() + timeout_s
        reply: dict[str, Any] = {"error_code": ErrorCode.NOT_CONTROLLER}
        while time.monotonic() < deadline:
            leader = self.quorum.raft.leader_id
            if leader == self.config.node_id or leader is None:
                reply = await self._handle(op, args)
            else:
                voter = self._voters[leader]
                try:  # a paused controller accepts and never answers: bound the wait
                    remaining = max(0.05, deadline - time.monotonic())
                    reply = await request(voter.host, voter.port, op, args,
                                          timeout_s=min(remaining, 1.0))
                except (OSError, TimeoutError, WireError, asyncio.IncompleteReadError):
                    reply = {"error_code": ErrorCode.NOT_CONTROLLER}
            if reply.get("error_code") != ErrorCode.NOT_CONTROLLER:
                return reply
            await asyncio.sleep(0.05)
        return reply


class BrokerLease:
    """This node's broker registration and its lease: register (fenced), then heartbeat
    every ``broker.heartbeat.interval.ms`` with the metadata offset applied so far (the
    controller unfences the broker once it reaches its registration), registering again
    when the controller answers that the epoch is stale."""

    def __init__(self, config: ClusterConfig) -> None:
        self.config = config
        self.epoch: int | None = None
        #: time.monotonic() of the controller's last accepted register or heartbeat (None
        #: before the first): the broker's /health tells a lost controller from it.
        self.last_contact: float | None = None
        self._incarnation = secrets.token_hex(8)

    async def run(self, submit: Any, metadata_offset: Any) -> None:
        interval = self.config.broker_heartbeat_interval_ms / 1000
        endpoints = [[e.name, e.host, e.port] for e in self.config.advertised_listeners]
        node_id = self.config.node_id
        while True:
            try:
                if self.epoch is None:
                    reply = await submit("register", {
                        "broker_id": node_id, "incarnation": self._incarnation,
                        "endpoints": endpoints}, timeout_s=interval * 2)
                    if reply.get("error_code") == 0:
                        self.epoch = reply["result"]["index"]
                        self.last_contact = time.monotonic()
                        log.info("node %d: registered as broker with epoch %d", node_id,
                                 self.epoch)
                        continue  # heartbeat at once: that unfences it
                else:
                    reply = await submit("heartbeat", {
                        "broker_id": node_id, "broker_epoch": self.epoch,
                        "metadata_offset": metadata_offset()}, timeout_s=interval * 2)
                    if reply.get("error_code") == 0:
                        self.last_contact = time.monotonic()
                    elif reply.get("error_code") in (ErrorCode.STALE_BROKER_EPOCH,
                                                     ErrorCode.BROKER_ID_NOT_REGISTERED):
                        log.warning("node %d: %s; registering again", node_id,
                                    reply.get("error_message"))
                        self.epoch = None
                        continue
            except Exception:
                log.exception("broker lease renewal failed")
            await asyncio.sleep(interval)


def _operation(op: str, args: dict[str, Any], now: int) -> Any:
    if op == "register":
        endpoints = tuple(BrokerEndpoint(str(n), str(h), int(p)) for n, h, p in args["endpoints"])
        return lambda c: c.register_broker(int(args["broker_id"]), str(args["incarnation"]),
                                           endpoints, args.get("rack"), now)
    if op == "heartbeat":
        # Kafka's rule: a broker is caught up once it has applied the metadata log up to
        # its own registration record, whose index is its broker epoch.
        epoch = int(args["broker_epoch"])
        caught_up = int(args.get("metadata_offset", 0)) >= epoch
        return lambda c: c.heartbeat(int(args["broker_id"]), epoch, caught_up, now)
    if op == "create_topic":
        rf = args.get("replication_factor")
        return lambda c: c.create_topic(str(args["name"]), int(args["partitions"]),
                                        None if rf is None else int(rf),
                                        {str(k): str(v) for k, v in
                                         (args.get("configs") or {}).items()})
    if op == "add_partitions":
        given = args.get("assignments")
        return lambda c: c.add_partitions(
            str(args["name"]), int(args["total"]),
            None if given is None else [[int(b) for b in a] for a in given])
    if op == "delete_topic":
        return lambda c: c.delete_topic(str(args["name"]))
    if op == "alter_partition":
        return lambda c: c.alter_partition(
            int(args["broker_id"]), int(args["broker_epoch"]), str(args["topic"]),
            int(args["partition"]), int(args["leader_epoch"]), int(args["partition_epoch"]),
            tuple(int(b) for b in args["isr"]))
    raise ValueError(f"unknown operation {op!r}")
