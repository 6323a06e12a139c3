"""A ``SinkRecord`` turned into one bulk action (Confluent's ``DataConverter``): the
document, its metadata line and its size, serialised once so batches are sized in bytes
without encoding twice."""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import json
import time
from dataclasses import dataclass
from typing import Any

from connect.api import DataError, Schema, SinkRecord, Struct, Type
from connectors.elasticsearch.config import BEHAVIOR_ON_NULL_VALUES, EsSinkConfig
from connectors.elasticsearch.naming import (
    document_id,
    external_version,
    resource_name,
    uses_external_version,
)

__all__ = ["BulkAction", "to_action"]

_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode


@dataclass(slots=True)
class BulkAction:
    """One item of a bulk request, already serialised (``lines`` ends with a newline)."""

    op: str  # index, create, update or delete
    index: str
    id: str | None
    external: bool  # sent with version_type=external
    lines: bytes
    record: SinkRecord

    @property
    def size(self) -> int:
        return len(self.lines)


def to_action(config: EsSinkConfig, record: SinkRecord) -> BulkAction | None:
    """The action for ``record``, or None when it is to be skipped (a null value with
    ``behavior.on.null.values=IGNORE``, or DELETE with a null key). Raises ``DataError``
    for a record that cannot become a document."""
    index = resource_name(config, record.topic)
    if record.value is None:
        return _delete(config, record, index)
    doc_id = document_id(config, record)
    source = to_document(record.value, record.value_schema, config.compact_map_entries)
    if not isinstance(source, dict):
        raise DataError(f"The value of {record.topic}-{record.kafka_partition}@"
                        f"{record.kafka_offset} is a {type(record.value).__name__}; only "
                        "structs and maps become documents")
    meta: dict[str, Any] = {"_index": index}
    if doc_id is not None:
        meta["_id"] = doc_id
    if config.is_data_stream:
        source["@timestamp"] = _timestamp(config, record, source)
        op = "create"
        body = source
    elif config.upsert:
        op = "update"
        meta["retry_on_conflict"] = min(config.max_in_flight, 5)
        body = {"doc": source, "doc_as_upsert": True}
    else:
        op = "index"
        body = source
    external = doc_id is not None and uses_external_version(config, record.topic)
    if external:
        meta["version"] = external_version(config, record)
        meta["version_type"] = "external"
    lines = _dumps({op: meta}).encode() + b"\n" + _dumps(body).encode() + b"\n"
    return BulkAction(op, index, doc_id, external, lines, record)


def _delete(config: EsSinkConfig, record: SinkRecord, index: str) -> BulkAction | None:
    if config.null_values == "ignore":
        return None
    if config.null_values == "fail":
        raise DataError(f"Sink record with key {record.key!r} and null value at "
                        f"{record.topic}-{record.kafka_partition}@{record.kafka_offset} "
                        f"encountered with {BEHAVIOR_ON_NULL_VALUES}=FAIL; set it to IGNORE "
                        "or DELETE")
    if record.key is None and not config.ignore_key(record.topic):
        return None  # nothing to delete: Confluent ignores null-key tombstones too
    doc_id = document_id(config, record)
    if doc_id is None:
        return None
    meta: dict[str, Any] = {"_index": index, "_id": doc_id}
    external = uses_external_version(config, record.topic)
    if external:
        meta["version"] = external_version(config, record)
        meta["version_type"] = "external"
    return BulkAction("delete", index, doc_id, external,
                      _dumps({"delete": meta}).encode() + b"\n", record)


def _timestamp(config: EsSinkConfig, record: SinkRecord, source: dict[str, Any]) -> Any:
    for field in config.timestamp_fields:
        if source.get(field) is not None:
            return source[field]
    if record.timestamp is not None:
        return record.timestamp
    return int(time.time() * 1000)


def to_document(value: Any, schema: Schema | None, compact_maps: bool) -> Any:
    """A Connect value as JSON-ready data: structs → objects, Timestamp → epoch millis,
    Date → ``YYYY-MM-DD``, Time → millis of the day, Decimal → float, bytes → base64, maps
    with string keys → objects (``compact.map.entries``) or ``[{key, value}]``."""
    if value is None:
        return None
    if isinstance(value, Struct):
        return {f.name: to_document(value.get(f.name), f.schema, compact_maps)
                for f in value.schema.fields}
    if isinstance(value, dict):
        ks = schema.key_schema if schema is not None and schema.type is Type.MAP else None
        vs = schema.value_schema if schema is not None and schema.type is Type.MAP else None
        if compact_maps and all(isinstance(k, str) for k in value):
            return {k: to_document(v, vs, compact_maps) for k, v in value.items()}
        return [{"key": to_document(k, ks, compact_maps),
                 "value": to_document(v, vs, compact_maps)} for k, v in value.items()]
    if isinstance(value, list | tuple):
        es = schema.value_schema if schema is not None and schema.type is Type.ARRAY else None
        return [to_document(v, es, compact_maps) for v in value]
    if isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            return None  # JSON has no NaN/Infinity; Elasticsearch would reject the document
        return value
    if isinstance(value, decimal.Decimal):
        return float(value)
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=dt.UTC)
        return int(value.timestamp() * 1000)
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, dt.time):
        return ((value.hour * 60 + value.minute) * 60 + value.second) * 1000 \
            + value.microsecond // 1000
    if isinstance(value, bytes | bytearray | memoryview):
        return base64.b64encode(bytes(value)).decode("ascii")
    raise DataError(f"Cannot write a {type(value).__name__} into a document")
