"""``ferry connect standalone`` running the Postgres CDC source, for the end-to-end tests:
start, SIGKILL, stop, and read the topics and stored offsets back from its embedded log
(or, given ``log``, the worker runs on that log instead, e.g. a ``kafka://`` broker)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from connect_process import ConnectProcess

from core.backends import OffsetSpec, TopicPartition, open_backend

DEADLINE_S = 40.0


class CdcWorker(ConnectProcess):
    def __init__(self, tmp: Path, connectors: list[dict[str, Any]],
                 worker_props: str = "", log: str | None = None) -> None:
        super().__init__(
            tmp,
            "key.converter=org.apache.kafka.connect.json.JsonConverter\n"
            "value.converter=org.apache.kafka.connect.json.JsonConverter\n"
            "offset.flush.interval.ms=200\noffset.storage.partitions=1\n" + worker_props,
            {f"connector{i}": c for i, c in enumerate(connectors)},
            log=log, timeout=DEADLINE_S, tail=6000)

    def offset(self, name: str) -> dict[str, Any] | None:
        found = self.get(f"/connectors/{name}/offsets")
        offsets = (found or {}).get("offsets") or []
        return offsets[0]["offset"] if offsets else None


def read_topic(data: Path, topic: str) -> list[tuple[Any, Any]]:
    """Every record of partition 0 as (key, value) JSON (None for null)."""
    with open_backend(f"embedded:{data}") as log:
        tp = TopicPartition(topic, 0)
        end = log.list_offsets([tp], OffsetSpec.LATEST).get(tp, 0)
        out: list[tuple[Any, Any]] = []
        while len(out) < end:
            records = log.fetch({tp: len(out)}, max_wait_ms=100)[tp].records
            if not records:
                break
            out += [(None if r.key is None else json.loads(r.key),
                     None if r.value is None else json.loads(r.value)) for r in records]
    return out


def stored_offset(data: Path, connector: str, partition: dict[str, Any]
                  ) -> dict[str, Any] | None:
    key = json.dumps([connector, partition], separators=(",", ":")).encode()
    found = None
    with open_backend(f"embedded:{data}") as log:
        tp = TopicPartition("connect-offsets", 0)
        end = log.list_offsets([tp], OffsetSpec.LATEST)[tp]
        at = 0
        while at < end:
            records = log.fetch({tp: at}, max_wait_ms=100)[tp].records
            for r in records:
                if r.key == key:
                    found = None if r.value is None else json.loads(r.value)
            at = records[-1].offset + 1 if records else end
    return found
