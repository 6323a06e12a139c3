"""``ferry demo --check``: every change made in PostgreSQL reached each destination.

* **S3 (raw changes)**: the Parquet objects of the CDC topics hold exactly one event per
  change: a snapshot read (``r``) of every seeded row and one ``c``/``u`` per insert and
  update the load generator made, by table and primary key, no more and no fewer.
* **The index (pipeline output)**: one document per order, equal to the order's latest
  state in the table (customer, product, quantity, status and amount).
* **The reporting table (an aggregate)**: orders and their sum per customer per minute,
  equal to the same aggregate computed by PostgreSQL over the ``orders`` table.
* **Replicas**: every topic (the CDC topics, the pipeline's, Connect's and the registry's
  internal ones, ``__consumer_offsets``) has as many replicas as the compose stack gives
  it (3, or the number of brokers when fewer), all of them in sync.
"""

from __future__ import annotations

import decimal
import io
from collections import Counter
from dataclasses import dataclass
from typing import Any

from core.cli.demo.observe import INDEX, REPORT_TABLE, Observer

__all__ = ["Result", "check_all", "expected_changes"]


@dataclass
class Result:
    name: str
    ok: bool
    detail: str


def expected_changes(seeded: Any, changes: list[tuple[str, str, int]]) -> Counter:
    """(table, op, id) of every event the CDC topics should carry."""
    expected: Counter = Counter()
    for table, ids in (("customers", seeded.customers), ("products", seeded.products),
                       ("orders", seeded.orders)):
        expected.update((table, "r", i) for i in ids)
    expected.update(changes)
    return expected


def s3_changes(observer: Observer) -> Counter:
    import pyarrow.parquet as pq

    from core.cli.demo.stack import BUCKET

    found: Counter = Counter()
    for key in observer.s3_keys():
        if not key.endswith(".parquet"):
            continue
        table_name = key.split("/")[1].rsplit(".", 1)[-1]  # raw/shop.public.orders/...
        body = observer.s3.get_object(Bucket=BUCKET, Key=key)["Body"].read()
        for row in pq.read_table(io.BytesIO(body)).to_pylist():
            image = row.get("after") or row.get("before") or {}
            found[(table_name, row.get("op"), image.get("id"))] += 1
    return found


def _diff(expected: Counter, actual: Counter, limit: int = 5) -> str:
    missing = expected - actual
    extra = actual - expected
    parts = []
    if missing:
        parts.append(f"{sum(missing.values())} missing, e.g. {sorted(missing)[:limit]}")
    if extra:
        parts.append(f"{sum(extra.values())} unexpected, e.g. {sorted(extra)[:limit]}")
    return "; ".join(parts)


def check_s3(observer: Observer, expected: Counter) -> Result:
    actual = s3_changes(observer)
    if actual == expected:
        return Result("s3", True, f"{sum(actual.values())} change events in "
                      f"{len(observer.s3_keys())} Parquet objects, one per change")
    return Result("s3", False, _diff(expected, actual))


#: The order columns compared between the table and the index.
_COLUMNS = ("customer_id", "product_id", "quantity", "status", "amount")


def _orders(conn) -> dict[str, tuple]:
    rows = conn.execute(f"SELECT id, {', '.join(_COLUMNS)} FROM orders").fetchall()
    return {str(i): tuple(rest) for i, *rest in rows}


def _document(source: dict[str, Any]) -> tuple:
    values = [source.get(c) for c in _COLUMNS]
    amount = values[-1]
    values[-1] = None if amount is None else decimal.Decimal(str(amount))
    return tuple(values)


def check_index(observer: Observer, conn) -> Result:
    import requests

    expected = _orders(conn)
    try:
        answer = requests.get(f"{observer.stack.search_url}/{INDEX}/_search",
                              params={"size": 10000}, timeout=30)
        hits = answer.json()["hits"]["hits"] if answer.status_code == 200 else []
    except (requests.RequestException, ValueError, KeyError):
        hits = []
    actual = {h["_id"]: _document(h["_source"]) for h in hits}
    if actual == expected:
        return Result("index", True, f"{len(actual)} documents, each equal to its order's "
                      "current row")
    wrong = sorted(k for k in expected if k in actual and actual[k] != expected[k])
    return Result("index", False, f"{len(actual)} documents for {len(expected)} orders; "
                  f"missing {sorted(set(expected) - set(actual), key=int)[:5]}, "
                  f"stale {wrong[:5]}, unexpected {sorted(set(actual) - set(expected))[:5]}")


def _report_expected(conn) -> dict[tuple[int, str], tuple[int, decimal.Decimal]]:
    rows = conn.execute(
        "SELECT customer_id, to_char(date_trunc('minute', created_at AT TIME ZONE 'UTC'), "
        "'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'), count(*), sum(amount) FROM orders "
        "GROUP BY 1, 2").fetchall()
    return {(c, w): (n, total) for c, w, n, total in rows}


def check_report(conn) -> Result:
    import psycopg

    expected = _report_expected(conn)
    try:
        rows = conn.execute(f"SELECT customer_id, window_start, orders, total "
                            f"FROM {REPORT_TABLE}").fetchall()
    except psycopg.Error as exc:
        conn.rollback()
        return Result("reporting", False, f"{REPORT_TABLE}: {str(exc).strip()}")
    actual = {(c, w): (n, decimal.Decimal(str(round(t, 2))).quantize(decimal.Decimal("0.01")))
              for c, w, n, t in rows}
    if actual == expected:
        return Result("reporting", True, f"{len(actual)} rows (customer, minute): order "
                      "counts and totals equal the table's")
    wrong = sorted(k for k in expected if k in actual and actual[k] != expected[k])
    return Result("reporting", False, f"{len(actual)} rows for {len(expected)} windows; "
                  f"missing {sorted(set(expected) - set(actual))[:3]}, wrong {wrong[:3]}")


def check_replicas(observer: Observer) -> Result:
    from core.backends.errors import BackendError

    want = min(3, len(observer.stack.nodes))
    backend = observer.backend
    wrong: list[str] = []
    try:
        topics = backend.list_topics(include_internal=True)
        for topic in topics:
            for p in backend.describe_topic(topic).partitions:
                if len(p.replicas) != want or set(p.isr) != set(p.replicas):
                    wrong.append(f"{topic}-{p.partition} replicas {list(p.replicas)} "
                                 f"ISR {list(p.isr)}")
    except BackendError as exc:
        return Result("replicas", False, f"describing the topics failed: {exc}")
    if wrong:
        return Result("replicas", False, f"{len(wrong)} partitions without {want} in-sync "
                      f"replicas: {'; '.join(wrong[:3])}")
    return Result("replicas", True, f"{len(topics)} topics, every partition on {want} "
                  f"broker{'s' if want > 1 else ''}, all in sync")


def check_all(observer: Observer, expected: Counter) -> list[Result]:
    import psycopg

    with psycopg.connect(observer.stack.pg_dsn, autocommit=True) as conn:
        return [check_s3(observer, expected), check_index(observer, conn),
                check_report(conn), check_replicas(observer)]
