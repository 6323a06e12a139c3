"""``keyFormat``/``valueFormat`` through the Schema Registry: ``avro`` and ``json-schema``
(Confluent wire format: magic byte, schema id, payload) and ``json`` (JSON text, framed or
not, typed by the subject's JSON Schema).

Read: the driver fetches the reader schema (``<topic>-value`` or ``-key``, the latest or
``valueSchemaVersion``) and turns it into a Spark type; executors decode each record with
its writer schema (cached by id) resolved against the reader schema, as Confluent's
deserializers do. ``mode`` FAILFAST fails the task on a record that does not decode;
PERMISSIVE makes the column null and logs it.

Write: the column (a struct, or any value the schema fits) is encoded with the subject's
latest schema and framed with its id.
"""

from __future__ import annotations

import io
import json
import logging
import threading
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from connectors.spark.formats import ColumnDecoder
from connectors.spark.options import FerryOptionError, SinkOptions, SourceOptions

__all__ = ["registry_decoder", "registry_encoding", "spark_type_of"]

log = logging.getLogger(__name__)

_clients: dict[Any, Any] = {}
_parsed: dict[tuple[Any, int], Any] = {}
_lock = threading.Lock()


def _client(options: Any):
    """The cached client of one ``RegistryClientOptions`` (URLs, credentials, TLS)."""
    with _lock:
        if options not in _clients:
            _clients[options] = options.client(timeout_s=10)
        return _clients[options]


def _subject_topic(opts: SourceOptions | SinkOptions, role: str) -> str:
    if isinstance(opts, SinkOptions):
        if not opts.topic:
            raise FerryOptionError(f"{role}Format needs the 'topic' option (the subject is "
                                   f"<topic>-{role})")
        return opts.topic
    topics = opts.subscribe or list(opts.assign or {})
    if len(topics) != 1:
        raise FerryOptionError(
            f"{role}Format {getattr(opts, role + '_format')} reads one topic (its subject "
            f"<topic>-{role} gives the schema); subscribe or assign exactly one topic")
    return topics[0]


def _registered(opts: SourceOptions | SinkOptions, role: str):
    from schema_registry.serde.errors import RegistryClientError, RegistryUnavailableError

    subject = f"{_subject_topic(opts, role)}-{role}"
    version = getattr(opts, f"{role}_schema_version")
    client = _client(opts.registry)
    try:
        if version == "latest":
            return client.get_latest_version(subject)
        return client.get_version(subject, int(version))
    except ValueError:
        raise FerryOptionError(
            f"option '{role}SchemaVersion' must be a version number or latest") from None
    except RegistryUnavailableError as exc:
        raise FerryOptionError(
            f"option 'schema.registry.url': the Schema Registry at {opts.registry_url} "
            f"cannot be reached ({exc})") from None
    except RegistryClientError as exc:
        raise FerryOptionError(
            f"option 'schema.registry.url': no schema for subject {subject!r} version "
            f"{version} at {opts.registry_url} ({exc})") from None


# ---------------------------------------------------------------------- types


def spark_type_of(schema: Any, fmt: str):
    """The Spark type of an Avro schema (parsed JSON) or a JSON Schema."""
    return _avro_type(schema) if fmt == "avro" else _json_schema_type(schema)


def _avro_type(s: Any):
    from pyspark.sql import types as t

    if isinstance(s, list):
        branches = [b for b in s if b != "null"]
        if len(branches) != 1:
            raise FerryOptionError(f"the Avro union {json.dumps(s)} has several non-null "
                                   "branches; only [null, T] unions map to Spark columns")
        return _avro_type(branches[0])
    if isinstance(s, str):
        s = {"type": s}
    kind, logical = s["type"], s.get("logicalType")
    if isinstance(kind, (dict, list)):
        return _avro_type(kind)
    if logical in ("timestamp-millis", "timestamp-micros"):
        return t.TimestampType()
    if logical == "date":
        return t.DateType()
    if logical == "decimal":
        return t.DecimalType(int(s["precision"]), int(s.get("scale", 0)))
    simple = {"boolean": t.BooleanType, "int": t.IntegerType, "long": t.LongType,
              "float": t.FloatType, "double": t.DoubleType, "bytes": t.BinaryType,
              "string": t.StringType, "enum": t.StringType, "fixed": t.BinaryType}
    if kind in simple:
        return simple[kind]()
    if kind == "record":
        return t.StructType([t.StructField(f["name"], _avro_type(f["type"]))
                             for f in s["fields"]])
    if kind == "array":
        return t.ArrayType(_avro_type(s["items"]))
    if kind == "map":
        return t.MapType(t.StringType(), _avro_type(s["values"]))
    raise FerryOptionError(f"the Avro type {kind!r} has no Spark column type here "
                           "(named type references are not supported)")


def _json_schema_type(s: Any):
    from pyspark.sql import types as t

    kind = s.get("type") if isinstance(s, dict) else None
    if isinstance(kind, list):
        kinds = [k for k in kind if k != "null"]
        kind = kinds[0] if len(kinds) == 1 else None
    if kind == "object" or (kind is None and "properties" in s):
        return t.StructType([t.StructField(name, _json_schema_type(sub))
                             for name, sub in s.get("properties", {}).items()])
    if kind == "array":
        return t.ArrayType(_json_schema_type(s.get("items", {"type": "string"})))
    simple = {"string": t.StringType, "integer": t.LongType, "number": t.DoubleType,
              "boolean": t.BooleanType}
    if kind in simple:
        return simple[kind]()
    raise FerryOptionError(f"the JSON Schema {json.dumps(s)[:200]} has no single Spark type "
                           "(give each property one type, optionally with null)")


# ---------------------------------------------------------------------- read


@dataclass
class RegistryDecoder(ColumnDecoder):
    fmt: str
    registry: Any  # RegistryClientOptions, pickled to the executors with the decoder
    reader_schema: Any
    failfast: bool

    def decode(self, column: pa.Array, arrow_type: pa.DataType) -> pa.Array:
        values = column.to_pylist()
        out = []
        for data in values:
            if data is None:
                out.append(None)
                continue
            try:
                out.append(self._one(data))
            except Exception as exc:
                if self.failfast:
                    raise ValueError(f"a record does not decode as {self.fmt} ({exc}); "
                                     "set mode=PERMISSIVE to read it as null") from exc
                log.warning("record not decodable as %s, read as null: %s", self.fmt, exc)
                out.append(None)
        return pa.array(out, arrow_type)

    def _one(self, data: bytes) -> Any:
        from schema_registry.serde.wire import unframe

        if self.fmt == "json" and data[:1] != b"\x00":
            return json.loads(data)
        schema_id, payload = unframe(data)
        if self.fmt != "avro":
            return json.loads(bytes(payload))
        import fastavro

        writer = _writer_schema(self.registry, schema_id)
        return fastavro.schemaless_reader(io.BytesIO(payload), writer,
                                          _parsed_reader(self.reader_schema))


def _writer_schema(registry: Any, schema_id: int):
    import fastavro

    key = (registry, schema_id)
    with _lock:
        parsed = _parsed.get(key)
    if parsed is None:
        text = _client(registry).get_schema(schema_id).schema
        parsed = fastavro.parse_schema(json.loads(text))
        with _lock:
            _parsed[key] = parsed
    return parsed


_readers: dict[str, Any] = {}


def _parsed_reader(schema: Any):
    import fastavro

    key = json.dumps(schema, sort_keys=True)
    if key not in _readers:
        _readers[key] = fastavro.parse_schema(schema)
    return _readers[key]


def registry_decoder(opts: SourceOptions, role: str, fmt: str) -> RegistryDecoder:
    registered = _registered(opts, role)
    expected = "AVRO" if fmt == "avro" else "JSON"
    if registered.schema.schema_type != expected:
        raise FerryOptionError(
            f"option '{role}Format' is {fmt} but subject {registered.subject!r} holds a "
            f"{registered.schema.schema_type} schema")
    schema = json.loads(registered.schema.schema)
    return RegistryDecoder(spark_type_of(schema, fmt), fmt, opts.registry, schema,
                           opts.mode == "FAILFAST")


# ---------------------------------------------------------------------- write


@dataclass
class RegistryEncoding:
    """Encodes the key and/or value column of each batch for the sink."""

    registry_url: str
    key: tuple[str, int, Any] | None = None  # (format, schema id, schema)
    value: tuple[str, int, Any] | None = None

    def encode(self, batch: pa.RecordBatch, keys: list, values: list) -> tuple[list, list]:
        names = batch.schema.names
        if self.key is not None:
            keys = self._encode(batch.column(names.index("key")).to_pylist(), *self.key)
        if self.value is not None:
            values = self._encode(batch.column(names.index("value")).to_pylist(), *self.value)
        return keys, values

    def _encode(self, items: list, fmt: str, schema_id: int, schema: Any) -> list:
        from schema_registry.serde.wire import frame

        out = []
        if fmt == "avro":
            import fastavro

            parsed = _parsed_reader(schema)
            for item in items:
                if item is None:
                    out.append(None)
                    continue
                buf = io.BytesIO()
                fastavro.schemaless_writer(buf, parsed, item)
                out.append(frame(schema_id, buf.getvalue()))
            return out
        for item in items:
            if item is None:
                out.append(None)
                continue
            text = json.dumps(item, default=str, separators=(",", ":")).encode()
            out.append(frame(schema_id, text) if fmt == "json-schema" else text)
        return out


def registry_encoding(opts: SinkOptions, schema) -> RegistryEncoding:
    encoding = RegistryEncoding(opts.registry_url)
    for role in ("key", "value"):
        fmt = getattr(opts, f"{role}_format")
        if fmt == "raw":
            continue
        if role not in schema.names:
            raise FerryOptionError(f"{role}Format {fmt} needs a {role!r} column")
        registered = _registered(opts, role)
        setattr(encoding, role, (fmt, registered.schema_id, json.loads(registered.schema.schema)))
    return encoding
