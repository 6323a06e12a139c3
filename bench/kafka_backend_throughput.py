"""Throughput of the LogBackend interface over ``kafka://``: own requests vs librdkafka.

Run from the repository root (a script, not a test; it starts its own ``ferry broker``):

    python3 bench/kafka_backend_throughput.py [--records 1000000] [--repeats 3]

For 100-byte values, one partition, acks=all, it measures through the interface's shape
(``produce(topic, 1000 records) -> metadata per record``, ``fetch(positions) -> records``):

* produce, KafkaBackend: its own ProduceRequest per call (one C-encoded batch);
* produce, confluent-kafka ``produce()``: one Python call plus a delivery callback per
  record, ``flush()`` per call (what a librdkafka-based ``produce`` must do to return
  offsets), and the same with ``produce_batch()``;
* consume, KafkaBackend: ``fetch`` from offset 0 to the end, touching every record;
* consume, confluent-kafka: ``assign`` once at offset 0 and ``consume(10000)`` until the
  end, each message turned into a ``ConsumerRecord`` (the best case: a backend would also
  need a ``seek`` per call and could not report per-fetch watermarks).

Each repeat uses a fresh topic; medians are printed in records/s.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

import confluent_kafka as ck

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the repository root, for the broker fixture
sys.path.insert(0, str(ROOT / "tests"))

from broker_process import BrokerProcess  # noqa: E402

from core.backends import ConsumerRecord, ProducerRecord, RecordMetadata, TopicPartition  # noqa: E402
from core.backends.kafka import KafkaBackend  # noqa: E402

CALL = 1000


def produce_ferry(backend: KafkaBackend, topic: str, records: list[ProducerRecord]) -> float:
    start = time.perf_counter()
    for i in range(0, len(records), CALL):
        metas = backend.produce(topic, records[i:i + CALL])
        assert len(metas) == len(records[i:i + CALL])
    return time.perf_counter() - start


def produce_confluent(bootstrap: str, topic: str, records: list[ProducerRecord],
                      batch: bool) -> float:
    producer = ck.Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": "0",
                            "batch.size": "1000000", "enable.idempotence": "false",
                            "queue.buffering.max.messages": "1000000"})
    producer.list_topics(topic, timeout=10)
    start = time.perf_counter()
    for i in range(0, len(records), CALL):
        chunk = records[i:i + CALL]
        metas: list[RecordMetadata] = []

        def report(err: ck.KafkaError | None, msg: ck.Message,
                   metas: list[RecordMetadata] = metas) -> None:
            # Delivery reports of one partition arrive in produce order.
            if err is not None:
                raise RuntimeError(err)
            metas.append(RecordMetadata(msg.topic(), msg.partition(), msg.offset(),
                                        msg.timestamp()[1]))

        if batch:
            producer.produce_batch(topic, [{"value": r.value} for r in chunk], partition=0,
                                   on_delivery=report)
        else:
            for r in chunk:
                producer.produce(topic, r.value, r.key, 0, on_delivery=report)
        producer.flush(30)
        assert len(metas) == len(chunk)
    return time.perf_counter() - start


def consume_ferry(backend: KafkaBackend, topic: str, total: int) -> float:
    tp = TopicPartition(topic, 0)
    offset, seen, touched = 0, 0, 0
    start = time.perf_counter()
    while offset < total:
        result = backend.fetch({tp: offset})[tp]
        for r in result.records:
            touched += len(r.value)
        seen += len(result.records)
        offset = result.next_offset
    assert seen == total
    return time.perf_counter() - start


def consume_confluent(bootstrap: str, topic: str, total: int) -> float:
    consumer = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": str(uuid.uuid4()),
                            "enable.auto.commit": False, "fetch.max.bytes": "52428800",
                            "fetch.message.max.bytes": "1048576",
                            "queued.min.messages": "1000000"})
    consumer.assign([ck.TopicPartition(topic, 0, 0)])
    seen = 0
    new = tuple.__new__
    start = time.perf_counter()
    while seen < total:
        for m in consumer.consume(10000, 5):
            ts_type, ts = m.timestamp()
            record = new(ConsumerRecord, (m.topic(), m.partition(), m.offset(), ts, ts_type,
                                          m.key(), m.value(), m.headers() or ()))
            seen += 1 if record[6] is not None else 0
    elapsed = time.perf_counter() - start
    consumer.close()
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    value = os.urandom(100)
    records = [ProducerRecord(value=value)] * args.records
    results: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        broker = BrokerProcess(Path(tmp) / "data", {"num.partitions": "1"},
                                         Path(tmp) / "broker.log")
        broker.start()
        try:
            backend = KafkaBackend.from_url(f"kafka://{broker.bootstrap}")
            for repeat in range(args.repeats):
                cases = {
                    "produce ferry": lambda t: produce_ferry(backend, t, records),
                    "produce confluent produce()": lambda t: produce_confluent(
                        broker.bootstrap, t, records, batch=False),
                    "produce confluent produce_batch()": lambda t: produce_confluent(
                        broker.bootstrap, t, records, batch=True),
                }
                for name, run in cases.items():
                    topic = f"bench-{repeat}-{uuid.uuid4().hex[:8]}"
                    backend.create_topic(topic, 1)
                    os.sync()
                    results.setdefault(name, []).append(args.records / run(topic))
                    if name == "produce ferry":
                        results.setdefault("consume ferry", []).append(
                            args.records / consume_ferry(backend, topic, args.records))
                        results.setdefault("consume confluent", []).append(
                            args.records / consume_confluent(broker.bootstrap, topic,
                                                             args.records))
                    backend.delete_topic(topic)
            backend.close()
        finally:
            broker.stop()
    for name, rates in results.items():
        print(f"{name:36s} median {statistics.median(rates):>12,.0f} rec/s  "
              f"(runs: {', '.join(f'{r:,.0f}' for r in rates)})")


if __name__ == "__main__":
    main()
