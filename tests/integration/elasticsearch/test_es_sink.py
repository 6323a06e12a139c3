"""The Elasticsearch sink through the real Connect worker (``Harness``: a standalone
herder over a real ``Worker`` on an ``embedded:`` log) into osmem-server, read back
through the server's HTTP API: index naming, mappings from Connect schemas, key and
offset ids, external versioning, tombstones, upserts, the DLQ and header styles."""

from __future__ import annotations

import json
from typing import Any

import pytest
from es_support import Http, envelope, row, sink
from rt_test_connectors import committed, read_topic, wait_for

from core.backends import ProducerRecord

pytestmark = pytest.mark.integration

def produce(h: Any, topic: str, rows: list[tuple[str | None, bytes | None]],
            headers: list[list[tuple[str, bytes]]] | None = None) -> None:
    h.backend.produce(topic, [
        ProducerRecord(None if k is None else k.encode(), v, headers[i] if headers else [])
        for i, (k, v) in enumerate(rows)])


def test_index_name_mapping_and_key_ids(harness, es_url) -> None:
    h, http = harness, Http(es_url)
    h.backend.create_topic("_Orders.EU", 1)
    produce(h, "_Orders.EU", [(f"k{i}", envelope(row(i))) for i in range(5)])
    h.create("es", sink(es_url, "_Orders.EU"))
    index = "orders.eu"  # lower-cased, the leading '_' dropped (Confluent's naming)
    wait_for(lambda: len(http.docs(index)) == 5, "five documents",
             detail=lambda: h.herder.connector_status("es").to_json())
    docs = http.docs(index)
    assert set(docs) == {f"k{i}" for i in range(5)}
    assert docs["k3"] == {"id": 3, "small": 1, "qty": 2, "total": 3, "price": 1.5,
                          "weight": 2.25, "paid": True, "name": "order 3", "blob": "AAE=",
                          "at": 1700000000000, "day": "2023-11-14", "amount": 123.45,
                          "tags": ["a", "b"], "address": {"city": "Oslo"}}
    props = http.mapping(index)["properties"]
    assert {k: v.get("type") for k, v in props.items()} == {
        "id": "integer", "small": "byte", "qty": "short", "total": "long", "price": "float",
        "weight": "double", "paid": "boolean", "name": "text", "blob": "binary",
        "at": "date", "day": "date", "amount": "double", "tags": "text", "address": None}
    assert props["name"]["fields"]["keyword"] == {"type": "keyword", "ignore_above": 256}
    assert props["address"]["properties"]["city"]["type"] == "text"
    # External versions are the offsets.
    assert http.versions(index) == {f"k{i}": i for i in range(5)}
    wait_for(lambda: committed(h.backend, "connect-es", "_Orders.EU") == 5, "commit at 5")


def test_key_ignore_ids_are_topic_partition_offset(harness, es_url) -> None:
    h, http = harness, Http(es_url)
    h.backend.create_topic("clicks", 1)
    produce(h, "clicks", [(None, envelope(row(i))) for i in range(3)])
    h.create("es", sink(es_url, "clicks", **{"key.ignore": "true", "schema.ignore": "true"}))
    wait_for(lambda: len(http.docs("clicks")) == 3, "three documents")
    assert set(http.docs("clicks")) == {"clicks+0+0", "clicks+0+1", "clicks+0+2"}
    # schema.ignore: the server mapped dynamically (no byte/short/binary from the schema).
    assert http.mapping("clicks")["properties"]["small"]["type"] != "byte"


def test_external_versions_ignore_replays_and_out_of_order_records(harness, es_url) -> None:
    """Versions from a header: a record carrying an older version than the indexed one
    (out of order) changes nothing and fails nothing; replaying the topic from the start
    under a second connector leaves the newest values."""
    h, http = harness, Http(es_url)
    h.backend.create_topic("prices", 1)
    rows = [("a", 10, "new-a"), ("a", 5, "old-a"), ("b", 7, "b7"), ("b", 9, "b9")]
    produce(h, "prices", [(k, envelope(row(1, name=n))) for k, _, n in rows],
            headers=[[("v", str(v).encode())] for _, v, _ in rows])
    h.create("es", sink(es_url, "prices", **{"external.version.header": "v"}))
    wait_for(lambda: committed(h.backend, "connect-es", "prices") == 4, "commit at 4")
    assert {k: d["name"] for k, d in http.docs("prices").items()} == {"a": "new-a",
                                                                      "b": "b9"}
    assert http.versions("prices") == {"a": 10, "b": 9}
    h.create("replay", sink(es_url, "prices", **{"external.version.header": "v"}))
    wait_for(lambda: committed(h.backend, "connect-replay", "prices") == 4, "replay done")
    assert h.task_state("replay") == "RUNNING"
    assert {k: d["name"] for k, d in http.docs("prices").items()} == {"a": "new-a",
                                                                      "b": "b9"}


def test_tombstones_delete_and_null_values_fail_by_default(harness, es_url) -> None:
    h, http = harness, Http(es_url)
    h.backend.create_topic("users", 1)
    produce(h, "users", [("u1", envelope(row(1))), ("u2", envelope(row(2))),
                         ("u1", None), ("u3", envelope(row(3)))])
    h.create("es", sink(es_url, "users", **{"behavior.on.null.values": "delete"}))
    wait_for(lambda: committed(h.backend, "connect-es", "users") == 4, "commit at 4")
    assert set(http.docs("users")) == {"u2", "u3"}
    # A replay of the delete (version 2) after a re-index at version 4 changes nothing.
    produce(h, "users", [("u1", envelope(row(1, name="back")))])
    wait_for(lambda: "u1" in http.docs("users"), "u1 indexed again")

    h.backend.create_topic("strict", 1)
    produce(h, "strict", [("x", envelope(row(1))), ("x", None)])
    h.create("strict", sink(es_url, "strict", **{"errors.task.restart.enable": "false"}))
    h.wait_task("strict", "FAILED")
    trace = h.herder.task_status("strict", 0).trace or ""
    assert "behavior.on.null.values=FAIL" in trace
    assert (committed(h.backend, "connect-strict", "strict") or 0) <= 1


def test_upsert_merges_partial_documents(harness, es_url) -> None:
    h, http = harness, Http(es_url)
    h.backend.create_topic("profiles", 1)
    h.backend.produce("profiles", [
        ProducerRecord(b"p1", json.dumps({"name": "Ann", "city": "Oslo"}).encode()),
        ProducerRecord(b"p1", json.dumps({"city": "Bergen"}).encode()),
        ProducerRecord(b"p2", json.dumps({"name": "Bo"}).encode())])
    h.create("es", sink(es_url, "profiles", **{
        "write.method": "upsert", "schema.ignore": "true",
        "value.converter.schemas.enable": "false"}))
    wait_for(lambda: committed(h.backend, "connect-es", "profiles") == 3, "commit at 3")
    assert http.docs("profiles") == {"p1": {"name": "Ann", "city": "Bergen"},
                                     "p2": {"name": "Bo"}}


def test_malformed_documents_go_to_the_dlq_naming_the_field_and_types(harness, es_url) -> None:
    """An index whose field ``qty`` is an integer gets a record with a string there: the
    server refuses it (mapper_parsing_exception), the record goes to the DLQ with a
    message naming the field and both types, and the others are indexed and committed."""
    h, http = harness, Http(es_url)
    assert http.call("PUT", "/stock", {"mappings": {"properties": {
        "qty": {"type": "integer"}}}})[0] == 200
    h.backend.create_topic("stock", 1)
    values = [{"qty": 1}, {"qty": "many"}, {"qty": 3}]
    h.backend.produce("stock", [ProducerRecord(f"s{i}".encode(), json.dumps(v).encode())
                                for i, v in enumerate(values)])
    h.create("es", sink(es_url, "stock", **{
        "value.converter.schemas.enable": "false", "schema.ignore": "true",
        "behavior.on.malformed.documents": "warn", "errors.tolerance": "all",
        "errors.deadletterqueue.topic.name": "dlq",
        "errors.deadletterqueue.topic.replication.factor": "1",
        "errors.deadletterqueue.context.headers.enable": "true"}))
    wait_for(lambda: committed(h.backend, "connect-es", "stock") == 3, "commit at 3")
    assert set(http.docs("stock")) == {"s0", "s2"}
    (dead,) = read_topic(h.backend, "dlq")
    assert dead.key == b"s1"
    message = dict(dead.headers)["__connect.errors.exception.message"].decode()
    assert "mapper_parsing_exception" in message
    assert "field 'qty' is 'integer' in index 'stock' but the record has 'string'" in message
    assert h.task_state("es") == "RUNNING"


@pytest.mark.parametrize("dlq", [False, True], ids=["no-dlq", "dlq"])
def test_malformed_documents_fail_the_task_by_default(harness, es_url, dlq) -> None:
    """``behavior.on.malformed.documents=FAIL``: the task fails naming the field, the
    types and the key to change; with a DLQ the record is reported there first (as
    Confluent does). Nothing past the refused record is committed."""
    h, http = harness, Http(es_url)
    http.call("PUT", "/stock", {"mappings": {"properties": {"qty": {"type": "integer"}}}})
    h.backend.create_topic("stock", 1)
    h.backend.produce("stock", [ProducerRecord(f"s{i}".encode(), json.dumps(v).encode())
                                for i, v in enumerate([{"qty": 1}, {"qty": "x"}, {"qty": 2}])])
    extra = {"errors.tolerance": "all", "errors.deadletterqueue.topic.name": "dlq",
             "errors.deadletterqueue.topic.replication.factor": "1"} if dlq else {}
    h.create("es", sink(es_url, "stock", **{
        "value.converter.schemas.enable": "false", "schema.ignore": "true",
        "errors.task.restart.enable": "false", "batch.size": "1", **extra}))
    h.wait_task("es", "FAILED")
    trace = h.herder.task_status("es", 0).trace or ""
    assert "field 'qty' is 'integer'" in trace and "behavior.on.malformed.documents" in trace
    assert (committed(h.backend, "connect-es", "stock") or 0) <= 1
    if dlq:
        assert [r.key for r in read_topic(h.backend, "dlq")] == [b"s1"]


def test_header_styles(harness, es_url, proxy) -> None:
    """Against osmem-server (OpenSearch) the connector sends plain JSON media types;
    against a server answering as Elasticsearch 8 (the proxy poses as one and refuses
    other media types, as Elasticsearch does) it sends compatible-with=8; forced
    ``compatible`` against osmem-server fails with the server's 406, named."""
    h, http = harness, Http(es_url)
    h.backend.create_topic("t", 1)
    produce(h, "t", [("a", envelope(row(1)))])
    h.create("plain", sink(proxy.url, "t"))
    wait_for(lambda: "a" in http.docs("t"), "indexed with plain headers")
    sent = [r for r in proxy.requests if r[1] != "/"]
    assert sent and all("vnd.elasticsearch" not in a + c for _, _, a, c in sent)

    proxy.requests.clear()
    proxy.pose_as(8)
    h.backend.create_topic("t8", 1)
    produce(h, "t8", [("b", envelope(row(2)))])
    h.create("compat", sink(proxy.url, "t8"))
    wait_for(lambda: "b" in http.docs("t8"), "indexed with compatible-with=8 headers")
    bulk = [r for r in proxy.requests if r[1].startswith("/_bulk")]
    assert bulk and all("compatible-with=8" in c for _, _, _, c in bulk)

    h.create("forced", sink(es_url, "t", **{"elastic.compatibility.mode": "compatible",
                                            "errors.task.restart.enable": "false"}))
    h.wait_task("forced", "FAILED")
    assert "not supported" in (h.herder.task_status("forced", 0).trace or "")


def test_topic_renaming_transforms_commit_the_original_partitions(harness, es_url) -> None:
    """RegexRouter renames the topic (Confluent needs ``flush.synchronously`` for that):
    the documents go to the new name's index and the offsets are committed for the
    partition the records were consumed from."""
    h, http = harness, Http(es_url)
    h.backend.create_topic("db.orders", 1)
    produce(h, "db.orders", [(f"o{i}", envelope(row(i))) for i in range(4)])
    h.create("es", sink(es_url, "db.orders", **{
        "transforms": "route",
        "transforms.route.type": "org.apache.kafka.connect.transforms.RegexRouter",
        "transforms.route.regex": "db\\.(.*)", "transforms.route.replacement": "search-$1"}))
    wait_for(lambda: committed(h.backend, "connect-es", "db.orders") == 4, "commit at 4")
    assert set(http.docs("search-orders")) == {f"o{i}" for i in range(4)}
    assert not http.exists("db.orders")


def test_drop_invalid_message_skips_records_that_cannot_be_documents(
        harness, es_url) -> None:
    h, http = harness, Http(es_url)
    h.backend.create_topic("mixed", 1)
    produce(h, "mixed", [("a", envelope(row(1))), (None, envelope(row(2))),
                         ("c", envelope(row(3)))])
    h.create("es", sink(es_url, "mixed", **{"drop.invalid.message": "true"}))
    wait_for(lambda: committed(h.backend, "connect-es", "mixed") == 3, "commit at 3")
    assert set(http.docs("mixed")) == {"a", "c"}

    h.create("strict", sink(es_url, "mixed", **{"errors.task.restart.enable": "false"}))
    h.wait_task("strict", "FAILED")
    trace = h.herder.task_status("strict", 0).trace or ""
    assert "can not be null" in trace and "drop.invalid.message" in trace
    assert (committed(h.backend, "connect-strict", "mixed") or 0) <= 1
