"""Records/s through the Connect framework, per task, on the ``embedded:`` backend.

Run from the repository root (a script, not a test):

    python3 bench/connect_throughput.py [--quickstart pageviews|orders] [--records 200000]
                                        [--repeats 3] [--dir DIR] [--default-gc]

Two pipelines, each one task, run by a real ``StandaloneHerder`` and ``Worker``:

* **source**: ``datagen`` → three SMTs → JsonConverter (``schemas.enable=true``) → the
  topic. Timed from the first record in the topic until it holds every record.
* **sink**: that topic → JsonConverter → three SMTs → a no-op sink task that only counts
  records. Timed from the task's first ``put`` until it has been given every record.

Start-up (creating the connector, starting the task, a sink's group join) is timed
apart and printed on its own. The records are datagen's ``pageviews`` (a flat struct:
two strings and an int64) or ``orders`` (five fields, a float64 and a nested struct).
The three SMTs are ``InsertField$Value`` (a static field), ``ReplaceField$Value``
(a rename and an exclusion) and ``MaskField$Value``, on each pipeline.

The reference measured in the same run is the raw log: producing the same record bytes
with ``backend.produce`` in calls of 1,000 (what the source pipeline writes), and
fetching them back (what the sink pipeline reads). The process uses the gc thresholds
that ``ferry connect`` and ``ferry up`` set (``connect.runtime.process_tuning``) unless
``--default-gc`` is given.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from _noop_sink import CLASS as NOOP_SINK  # noqa: E402
from _noop_sink import COUNTS, FIRST, wait_until  # noqa: E402

from connect.runtime.plugins import Plugins  # noqa: E402
from connect.runtime.process_tuning import tune_gc_for_record_streams  # noqa: E402
from connect.runtime.standalone_herder import StandaloneHerder  # noqa: E402
from connect.runtime.worker import Worker  # noqa: E402
from connect.runtime.worker_config import WorkerConfig  # noqa: E402
from core.backends import OffsetSpec, ProducerRecord, TopicPartition, open_backend  # noqa: E402


def smts(stage: str, renames: str, exclude: str, mask: str) -> dict[str, str]:
    """The three SMTs: insert a static field named ``stage``, rename and drop fields, mask
    one."""
    return {
        "transforms": "insert,rename,mask",
        "transforms.insert.type": "org.apache.kafka.connect.transforms.InsertField$Value",
        "transforms.insert.static.field": stage,
        "transforms.insert.static.value": "bench",
        "transforms.rename.type": "org.apache.kafka.connect.transforms.ReplaceField$Value",
        "transforms.rename.renames": renames,
        "transforms.rename.exclude": exclude,
        "transforms.mask.type": "org.apache.kafka.connect.transforms.MaskField$Value",
        "transforms.mask.fields": mask,
    }


#: Per quickstart, the (source, sink) chains: the same three SMTs on its own fields.
SMT_FIELDS = {
    "orders": (smts("source", "orderunits:units,itemid:item", "ordertime", "item"),
               smts("sink", "units:quantity", "source", "orderid")),
    "pageviews": (smts("source", "pageid:page", "viewtime", "userid"),
                  smts("sink", "page:url", "source", "userid")),
}
JSON = {
    "key.converter": "org.apache.kafka.connect.json.JsonConverter",
    "value.converter": "org.apache.kafka.connect.json.JsonConverter",
    "value.converter.schemas.enable": "true",
    "key.converter.schemas.enable": "true",
}

def _end_offset(backend, topic: str) -> int:
    if topic not in backend.list_topics():
        return 0
    tp = TopicPartition(topic, 0)
    return backend.list_offsets([tp], OffsetSpec.LATEST)[tp]


def run_source(herder: StandaloneHerder, backend, topic: str, records: int,
               quickstart: str) -> tuple[float, float]:
    """(seconds from the first record in the topic to the last, seconds from creating
    the connector to its first record)."""
    name = f"src-{uuid.uuid4().hex[:6]}"
    config = {"connector.class": "datagen", "tasks.max": "1", "kafka.topic": topic,
              "quickstart": quickstart, "max.records": str(records), "seed": "7",
              "topic.creation.default.partitions": "1",
              "topic.creation.default.replication.factor": "1", **JSON,
              **SMT_FIELDS[quickstart][0]}
    created = time.perf_counter()
    herder.put_connector_config(name, config, allow_replace=False)
    wait_until(lambda: _end_offset(backend, topic) > 0, 60, "the first source record")
    first = time.perf_counter()
    wait_until(lambda: _end_offset(backend, topic) >= records, 600, "the source records")
    done = time.perf_counter()
    herder.delete_connector(name)
    return done - first, first - created


def run_sink(herder: StandaloneHerder, topic: str, records: int,
             quickstart: str) -> tuple[float, float]:
    """(seconds from the task's first put to the last record, seconds from creating the
    connector to the first put: starting the task and joining its consumer group)."""
    name = f"sink-{uuid.uuid4().hex[:6]}"
    config = {"connector.class": NOOP_SINK, "tasks.max": "1", "topics": topic,
              "consumer.override.auto.offset.reset": "earliest", **JSON,
              **SMT_FIELDS[quickstart][1]}
    created = time.perf_counter()
    herder.put_connector_config(name, config, allow_replace=False)
    wait_until(lambda: COUNTS.get(name, 0) >= records, 600, "the sink records")
    done = time.perf_counter()
    herder.delete_connector(name)
    return done - FIRST[name], FIRST[name] - created


def raw_reference(backend, source_topic: str, records: int) -> tuple[float, float]:
    """Produce the source topic's record bytes again into a new topic, 1,000 per call,
    then fetch them back: the log's own cost for what each pipeline moves."""
    tp = TopicPartition(source_topic, 0)
    payload: list[ProducerRecord] = []
    position = 0
    while position < records:
        for r in backend.fetch({tp: position})[tp].records:
            payload.append(ProducerRecord(r.key, r.value))
            position = r.offset + 1
    topic = f"raw-{uuid.uuid4().hex[:6]}"
    backend.create_topic(topic, partitions=1)
    start = time.perf_counter()
    for i in range(0, len(payload), 1000):
        backend.produce(topic, payload[i:i + 1000])
    produce_s = time.perf_counter() - start
    start = time.perf_counter()
    position, tp = 0, TopicPartition(topic, 0)
    while position < records:
        for r in backend.fetch({tp: position})[tp].records:
            position = r.offset + 1
    return produce_s, time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=300_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--dir", help="data directory parent (default: a temporary one)")
    parser.add_argument("--quickstart", default="orders", choices=sorted(SMT_FIELDS),
                        help="the datagen records (default: orders)")
    parser.add_argument("--default-gc", action="store_true",
                        help="keep CPython's default gc thresholds instead of the ones the "
                             "ferry commands that run workers set")
    args = parser.parse_args(argv)
    if not args.default_gc:
        tune_gc_for_record_streams()

    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        backend = open_backend(f"embedded:{tmp}/data")
        worker_config = WorkerConfig.from_props({"offset.flush.interval.ms": "1000"})
        herder = StandaloneHerder(Worker(backend, worker_config, Plugins()), "bench:8083")
        herder.start()
        rows: dict[str, list[float]] = {"source": [], "sink": [], "raw produce": [],
                                        "raw fetch": []}
        startup: dict[str, list[float]] = {"source": [], "sink": []}
        try:
            for _ in range(args.repeats):
                topic = f"{args.quickstart}-{uuid.uuid4().hex[:6]}"
                # The first record of a source and the first put of a sink are timed
                # apart: starting a task (and a sink's group join) is not throughput.
                steady, start = run_source(herder, backend, topic, args.records,
                                           args.quickstart)
                rows["source"].append((args.records - 1) / steady)
                startup["source"].append(start)
                steady, start = run_sink(herder, topic, args.records, args.quickstart)
                rows["sink"].append(args.records / steady)
                startup["sink"].append(start)
                produce_s, fetch_s = raw_reference(backend, topic, args.records)
                rows["raw produce"].append(args.records / produce_s)
                rows["raw fetch"].append(args.records / fetch_s)
        finally:
            herder.stop()
            backend.close()
    medians = {k: statistics.median(v) for k, v in rows.items()}
    print(f"{args.records:,} {args.quickstart} records, 1 task, JsonConverter with schemas "
          f"and 3 SMTs, median of {args.repeats}")
    for key, value in medians.items():
        print(f"  {key:12s} {value:12,.0f} rec/s   runs: "
              + ", ".join(f"{v:,.0f}" for v in rows[key]))
    print(f"  source / raw produce: {medians['source'] / medians['raw produce']:.1%}")
    print(f"  sink / raw fetch:     {medians['sink'] / medians['raw fetch']:.1%}")
    for key, values in startup.items():
        print(f"  {key} start-up (create to first record): "
              f"{statistics.median(values) * 1000:,.0f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
