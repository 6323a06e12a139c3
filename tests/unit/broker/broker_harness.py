"""An in-process broker: ``core.broker.server.serve`` on an event loop in a thread, port 0.

Handler tests talk real Kafka frames to it over a socket (``kafka_wire.WireClient``)
without starting a process; the helpers below build Produce and Fetch requests.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kafka.protocol.consumer import FetchRequest
from kafka.protocol.producer import ProduceRequest
from kafka_wire import TIMEOUT_S, WireClient

from core.broker.config import BrokerConfig
from core.broker.server import BrokerServer, Listener, open_storage, serve
from core.log.records import encode_batch

__all__ = [
    "InProcessBroker",
    "WireClient",
    "fetch_request",
    "fill",
    "produce",
    "produce_request",
    "records",
]

_PT = ProduceRequest.TopicProduceData
_FT = FetchRequest.FetchTopic


class InProcessBroker:
    """A broker serving ``tmp_path/data``; ``close()`` stops it and closes the storage."""

    def __init__(self, tmp_path: Path, settings: Mapping[str, object] | None = None, *,
                 observability: Any = None) -> None:
        self.config = BrokerConfig.parse(
            {"group.initial.rebalance.delay.ms": "0", "offsets.topic.num.partitions": "1",
             **(settings or {})})
        self.data_dir = tmp_path / "data"
        self.manager, self.coordinator = open_storage(self.config, self.data_dir,
                                                      {"command": "test"})
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self._thread.start()
        self._stop = asyncio.Event()
        listening = threading.Event()
        self.server: BrokerServer | None = None

        def ready(server: BrokerServer) -> None:
            self.server = server
            listening.set()

        async def run() -> None:
            await serve(self.config, self.manager, self.coordinator,
                        listen=Listener("127.0.0.1", 0), advertised=None, stop=self._stop,
                        on_listening=ready, observability=observability)

        self._serving = asyncio.run_coroutine_threadsafe(run(), self.loop)
        if not listening.wait(TIMEOUT_S):
            raise RuntimeError(f"broker did not start: {self._serving.exception(0)}")
        assert self.server is not None
        self.port = self.server.port

    @property
    def state(self) -> Any:
        assert self.server is not None
        return self.server.state

    def client(self) -> WireClient:
        return WireClient(self.port)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self._stop.set)
        try:
            self._serving.result(TIMEOUT_S)
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(TIMEOUT_S)
            self.loop.close()
            self.coordinator.close()
            self.manager.close()


def records(n: int = 3, start: int = 0, key: bytes | None = b"k") -> list[tuple]:
    """``n`` (key, value, headers, timestamp) tuples for ``encode_batch``."""
    return [(key, b"value-%d" % i, [("h", b"%d" % i)], 1_700_000_000_000 + i)
            for i in range(start, start + n)]


def produce_request(topic: str, partition: int, data: bytes | None, acks: int = -1) -> Any:
    return ProduceRequest(transactional_id=None, acks=acks, timeout_ms=1000, topic_data=[
        _PT(name=topic, partition_data=[_PT.PartitionProduceData(index=partition,
                                                                 records=data)])])


def produce(client: WireClient, topic: str, partition: int, data: bytes | None,
            acks: int = -1, version: int = 9) -> Any:
    response = client.call(produce_request(topic, partition, data, acks), version)
    return response.responses[0].partition_responses[0]


def fetch_request(parts: list[tuple[str, int, int, int]], *, max_wait_ms: int = 0,
                  min_bytes: int = 0, max_bytes: int = 50 << 20, session_id: int = 0,
                  session_epoch: int = -1) -> Any:
    topics: dict[str, list] = {}
    for topic, partition, offset, limit in parts:
        topics.setdefault(topic, []).append(_FT.FetchPartition(
            partition=partition, current_leader_epoch=-1, fetch_offset=offset,
            log_start_offset=-1, partition_max_bytes=limit))
    return FetchRequest(replica_id=-1, max_wait_ms=max_wait_ms, min_bytes=min_bytes,
                        max_bytes=max_bytes, isolation_level=0, session_id=session_id,
                        session_epoch=session_epoch,
                        topics=[_FT(topic=t, partitions=ps) for t, ps in topics.items()],
                        forgotten_topics_data=[], rack_id="")


def fill(client: WireClient, topic: str, partition: int, batches: int, per_batch: int) -> list:
    """Produce ``batches`` batches of ``per_batch`` records; their Produce responses."""
    return [produce(client, topic, partition, bytes(encode_batch(records(per_batch, i))))
            for i in range(batches)]
