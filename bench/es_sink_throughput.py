"""Documents/s of the Elasticsearch sink into osmem-server, next to the limits measured in
the same run.

Run from the repository root (a script, not a test):

    python3 bench/es_sink_throughput.py [--records 20000] [--repeats 3] [--tasks 1]

The records: 1 KiB JSON values with a schema (JsonConverter ``schemas.enable=true``; a
struct of an int64, a double, a boolean, a timestamp and strings padded to 1 KiB), keyed
``k<i>``, in one partition of an ``embedded:`` topic. Three measurements, each into a
fresh clone of one osmem-server (an in-memory OpenSearch-compatible server on a free
127.0.0.1 port):

* **connector**: the ``elasticsearch`` sink (defaults: ``batch.size`` 2000, 5 requests
  in flight, external versions) run by a real ``StandaloneHerder`` and ``Worker``, timed
  from the task's first ``put`` until every offset is committed (so every document is
  indexed);
* **helpers.bulk**: the ``elasticsearch`` client's own ``helpers.bulk`` of the same
  documents (same ids, versions and chunk size), from already decoded dicts: the limit
  of the server and client on this machine;
* **no-op sink**: the same topic through the same converter into a sink that only
  counts: the limit of the framework.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from _noop_sink import CLASS as NOOP_SINK  # noqa: E402
from _noop_sink import COUNTS, FIRST, wait_until  # noqa: E402
from elasticsearch import helpers  # noqa: E402
from osmem_server import OsmemServer  # noqa: E402

from connect.api import SinkRecord  # noqa: E402
from connect.converters.json import JsonConverter  # noqa: E402
from connect.runtime.plugins import Plugins  # noqa: E402
from connect.runtime.process_tuning import tune_gc_for_record_streams  # noqa: E402
from connect.runtime.standalone_herder import StandaloneHerder  # noqa: E402
from connect.runtime.worker import Worker  # noqa: E402
from connect.runtime.worker_config import WorkerConfig  # noqa: E402
from connectors.elasticsearch.client import EsClient  # noqa: E402
from connectors.elasticsearch.config import EsSinkConfig  # noqa: E402
from connectors.elasticsearch.connector import ElasticsearchSinkConnector  # noqa: E402
from connectors.elasticsearch.mapping import mapping_for  # noqa: E402
from connectors.elasticsearch.task import ElasticsearchSinkTask  # noqa: E402
from core.backends import ProducerRecord, TopicPartition, open_backend  # noqa: E402

SCHEMA = {"type": "struct", "name": "doc", "optional": False, "fields": [
    {"field": "id", "type": "int64"}, {"field": "score", "type": "double"},
    {"field": "active", "type": "boolean"},
    {"field": "at", "type": "int64", "name": "org.apache.kafka.connect.data.Timestamp"},
    {"field": "title", "type": "string"}, {"field": "body", "type": "string"}]}
CONVERTERS = {"key.converter": "org.apache.kafka.connect.storage.StringConverter",
              "value.converter": "org.apache.kafka.connect.json.JsonConverter",
              "value.converter.schemas.enable": "true"}


def payload(i: int) -> dict:
    doc = {"id": i, "score": i / 7, "active": i % 2 == 0, "at": 1700000000000 + i,
           "title": f"document number {i}", "body": ""}
    pad = 1024 - len(json.dumps(doc))
    doc["body"] = ("lorem ipsum dolor sit amet " * 40)[:max(0, pad)]
    return doc


class TimedTask(ElasticsearchSinkTask):
    def start(self, props: Mapping[str, str]) -> None:
        self._bench_name = props["name"]
        super().start(props)

    def put(self, records: Sequence[SinkRecord]) -> None:
        if records:
            FIRST.setdefault(self._bench_name, time.perf_counter())
        super().put(records)


class TimedConnector(ElasticsearchSinkConnector):
    def task_class(self) -> type:
        return TimedTask


def run_connector(herder, backend, topic: str, url: str, n: int,
                  extra: Mapping[str, str]) -> float:
    name = f"es-{uuid.uuid4().hex[:6]}"
    herder.put_connector_config(name, {"connector.class": "bench_es:TimedConnector",
                                       "topics": topic, "connection.url": url,
                                       **CONVERTERS, **extra}, allow_replace=False)
    tp = TopicPartition(topic, 0)

    def done() -> bool:
        got = backend.fetch_offsets(f"connect-{name}", [tp]).get(tp)
        return got is not None and got.offset >= n
    wait_until(done, 600, "the connector's commits", poll_s=0.005)
    elapsed = time.perf_counter() - FIRST[name]
    herder.delete_connector(name)
    return n / elapsed


def run_noop(herder, topic: str, n: int) -> float:
    name = f"noop-{uuid.uuid4().hex[:6]}"
    herder.put_connector_config(name, {"connector.class": NOOP_SINK,
                                       "topics": topic, **CONVERTERS}, allow_replace=False)
    wait_until(lambda: COUNTS.get(name, 0) >= n, 600, "the no-op sink", poll_s=0.005)
    elapsed = time.perf_counter() - FIRST[name]
    herder.delete_connector(name)
    return n / elapsed


def run_helpers_bulk(url: str, index: str, docs: list[dict]) -> float:
    client = EsClient(EsSinkConfig.from_props({"connection.url": url,
                                               "read.timeout.ms": "60000"}))
    client.connect()  # the header style osmem-server accepts
    client.es.indices.create(index=index, mappings=_mapping())  # the connector's mapping
    actions = [{"_index": index, "_id": f"k{i}", "_version": i, "_version_type": "external",
                "_source": d} for i, d in enumerate(docs)]
    start = time.perf_counter()
    ok, errors = helpers.bulk(client.es, actions, chunk_size=2000, raise_on_error=False)
    elapsed = time.perf_counter() - start
    client.close()
    if ok != len(docs) or errors:
        raise SystemExit(f"helpers.bulk indexed {ok} of {len(docs)}: {errors[:1]}")
    return len(docs) / elapsed


def _mapping() -> dict:
    converter = JsonConverter()  # parses the schema as the connector's converter does
    converter.configure({"schemas.enable": "true"}, False)
    envelope = json.dumps({"schema": SCHEMA, "payload": payload(0)}).encode()
    return mapping_for(converter.to_connect_data("t", envelope).schema)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--config", action="append", default=[], metavar="KEY=VALUE",
                        help="a connector config (repeatable), e.g. max.in.flight.requests=2")
    args = parser.parse_args(argv)
    extra = dict(item.split("=", 1) for item in args.config)
    tune_gc_for_record_streams()
    sys.modules["bench_es"] = sys.modules[__name__]
    n = args.records
    docs = [payload(i) for i in range(n)]
    rows: dict[str, list[float]] = {"connector": [], "helpers.bulk": [], "no-op sink": []}
    with tempfile.TemporaryDirectory() as tmp, OsmemServer.start(japanese=False) as server:
        backend = open_backend(f"embedded:{tmp}/data")
        herder = StandaloneHerder(Worker(backend, WorkerConfig.from_props(
            {"offset.flush.interval.ms": "50"}), Plugins()), "bench:8083")
        herder.start()
        try:
            for _ in range(args.repeats):
                topic = f"docs-{uuid.uuid4().hex[:6]}"
                backend.create_topic(topic, 1)
                for i in range(0, n, 1000):
                    backend.produce(topic, [ProducerRecord(
                        f"k{j}".encode(),
                        json.dumps({"schema": SCHEMA, "payload": docs[j]}).encode())
                        for j in range(i, min(n, i + 1000))])
                with server.clone() as clone:
                    rows["connector"].append(run_connector(herder, backend, topic,
                                                           clone.url, n, extra))
                with server.clone() as clone:
                    rows["helpers.bulk"].append(run_helpers_bulk(clone.url, topic, docs))
                rows["no-op sink"].append(run_noop(herder, topic, n))
        finally:
            herder.stop()
            backend.close()
    med = {k: statistics.median(v) for k, v in rows.items()}
    print(f"{n:,} documents of 1 KiB (JSON with schema), 1 task, osmem-server "
          f"{server.version}, median of {args.repeats}, connector configs {extra or 'default'}")
    for key, value in med.items():
        print(f"  {key:13s} {value:10,.0f} docs/s   runs: "
              + ", ".join(f"{v:,.0f}" for v in rows[key]))
    print(f"  connector / helpers.bulk: {med['connector'] / med['helpers.bulk']:.0%} "
          "(target >= 50%)")
    print(f"  connector / no-op sink:   {med['connector'] / med['no-op sink']:.0%}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
