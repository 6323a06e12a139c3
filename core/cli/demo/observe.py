"""What the demo shows while it runs: counts read from every part of the stack, and the
few lines that print them.

Each count comes from the system itself, not from the demo's bookkeeping: end offsets of
the topics from the brokers, object keys from S3, ``_count`` from the search server, rows
of the reporting table from PostgreSQL, committed micro-batches from the pipeline's
checkpoint.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from core.cli.demo import topology

__all__ = ["TOPICS", "Observer", "Snapshot", "render"]

TOPICS = ("shop.public.customers", "shop.public.products", "shop.public.orders",
          topology.STATE_TOPIC, topology.TOTALS_TOPIC)
REPORT_TABLE = "order_totals_report"
INDEX = topology.STATE_TOPIC


@dataclass
class Snapshot:
    changes: Counter[tuple[str, str]] = field(default_factory=Counter)
    events: dict[str, int] = field(default_factory=dict)
    s3_objects: int = 0
    index_docs: int = 0
    report_rows: int = 0
    micro_batches: int = 0
    connectors: dict[str, str] = field(default_factory=dict)


class Observer:
    """Reads a ``Snapshot`` from a running ``DemoStack``; every read is best effort (a part
    still starting counts 0)."""

    def __init__(self, stack: Any) -> None:
        from core.backends import open_backend

        self.stack = stack
        self.backend = open_backend(stack.log_url)
        self.s3 = stack.s3_client()

    def close(self) -> None:
        self.backend.close()

    def snapshot(self, changes: Counter[tuple[str, str]]) -> Snapshot:
        return Snapshot(changes=changes, events=self.events(), s3_objects=len(self.s3_keys()),
                        index_docs=self.index_count(), report_rows=self.report_rows(),
                        micro_batches=self.stack.micro_batches(),
                        connectors=self.connector_states())

    def events(self) -> dict[str, int]:
        from core.backends import TopicPartition
        from core.backends.errors import BackendError
        from core.backends.types import OffsetSpec

        out = {}
        for topic in TOPICS:
            try:
                parts = [TopicPartition(topic, p)
                         for p in range(self.backend.partition_count(topic))]
                out[topic] = sum(self.backend.list_offsets(parts, OffsetSpec.LATEST).values())
            except BackendError:
                out[topic] = 0
        return out

    def s3_keys(self, prefix: str = "raw/") -> list[str]:
        from core.cli.demo.stack import BUCKET

        keys: list[str] = []
        try:
            for page in self.s3.get_paginator("list_objects_v2").paginate(
                    Bucket=BUCKET, Prefix=prefix):
                keys += [item["Key"] for item in page.get("Contents", [])]
        except Exception:  # S3 not answering counts as nothing there yet
            return []
        return sorted(keys)

    def index_count(self) -> int:
        import requests

        try:
            answer = requests.get(f"{self.stack.search_url}/{INDEX}/_count", timeout=5)
            return int(answer.json().get("count", 0)) if answer.status_code == 200 else 0
        except (requests.RequestException, ValueError):
            return 0

    def report_rows(self) -> int:
        import psycopg

        try:
            with psycopg.connect(self.stack.pg_dsn, connect_timeout=5) as conn:
                return conn.execute(f"SELECT count(*) FROM {REPORT_TABLE}").fetchone()[0]
        except psycopg.Error:
            return 0

    def connector_states(self) -> dict[str, str]:
        import requests

        if not self.stack.worker_urls:
            return {}
        try:
            answer = requests.get(f"{self.stack.worker_urls[0]}/connectors?expand=status",
                                  timeout=5)
            body = answer.json() if answer.status_code == 200 else {}
        except (requests.RequestException, ValueError):
            return {}
        states = {}
        for name, info in body.items():
            status = info.get("status", {})
            tasks = [t.get("state", "?") for t in status.get("tasks", [])]
            states[name] = status.get("connector", {}).get("state", "?") + (
                "" if all(t == "RUNNING" for t in tasks) else f" (tasks {','.join(tasks)})")
        return states


def render(snap: Snapshot, elapsed: float) -> str:
    """A short block: one line per part of the stack."""
    ops = {"c": "+", "u": "~", "d": "-", "r": "snapshot "}
    by_table: dict[str, list[str]] = {}
    for (table, op), n in sorted(snap.changes.items()):
        by_table.setdefault(table, []).append(f"{ops.get(op, op)}{n}")
    total = sum(snap.changes.values())
    tables = "  ".join(f"{t} {' '.join(v)}" for t, v in by_table.items())
    events = "  ".join(f"{t} {n}" for t, n in snap.events.items())
    connectors = "  ".join(f"{n} {s}" for n, s in sorted(snap.connectors.items()))
    return (f"--- {elapsed:6.0f} s ---\n"
            f"  postgres   {total} rows changed: {tables}\n"
            f"  topics     {events}\n"
            f"  spark      {snap.micro_batches} micro-batches\n"
            f"  s3         {snap.s3_objects} Parquet objects of raw changes\n"
            f"  index      {snap.index_docs} order documents ({INDEX})\n"
            f"  reporting  {snap.report_rows} rows in {REPORT_TABLE}\n"
            f"  connectors {connectors or '-'}\n")
