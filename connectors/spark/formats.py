"""How the ``key`` and ``value`` columns are decoded on read: raw bytes (Spark's Kafka
source), or typed columns through the Schema Registry (``avro``, ``json-schema``), or
plain JSON (``json``) with a schema from the registry or from ``valueSchema``.

A ``Decoding`` is built on the driver (where the registry is asked for the reader schema,
so a registry that is down fails the query at planning time), pickled to the executors,
and applied to each fetched batch's columns.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pyarrow as pa

from connectors.spark.arrow import kafka_spark_schema
from connectors.spark.options import SourceOptions

__all__ = ["ColumnDecoder", "Decoding", "decoding_for"]


@dataclass
class ColumnDecoder:
    """Decodes one binary column into a typed one of ``spark_type`` (a Spark DataType)."""

    spark_type: object

    def decode(self, column: pa.Array, arrow_type: pa.DataType) -> pa.Array:
        raise NotImplementedError


@dataclass
class Decoding:
    """The read schema and the per-batch transform for one query."""

    include_headers: bool
    key: ColumnDecoder | None = None
    value: ColumnDecoder | None = None
    _types: dict[str, pa.DataType] = field(default_factory=dict, repr=False)

    def spark_schema(self):  # -> StructType
        from pyspark.sql.types import StructField, StructType

        base = kafka_spark_schema(self.include_headers)
        fields = []
        for f in base.fields:
            decoder = {"key": self.key, "value": self.value}.get(f.name)
            if decoder is None:
                fields.append(f)
            else:
                fields.append(StructField(f.name, decoder.spark_type))
        return StructType(fields)

    @property
    def transform(self):
        if self.key is None and self.value is None:
            return None
        return self._apply

    def _apply(self, columns: dict[str, pa.Array]) -> dict[str, pa.Array]:
        if not self._types:
            from pyspark.sql.pandas.types import to_arrow_schema

            schema = to_arrow_schema(self.spark_schema(), timezone="UTC")
            self._types = {f.name: f.type for f in schema}
        for name, decoder in (("key", self.key), ("value", self.value)):
            if decoder is not None:
                columns[name] = decoder.decode(columns[name], self._types[name])
        return columns


def decoding_for(opts: SourceOptions) -> Decoding:
    """The decoding the options ask for; asks the registry (driver side) when needed."""
    decoding = Decoding(include_headers=opts.include_headers)
    for role in ("key", "value"):
        fmt = getattr(opts, f"{role}_format")
        if fmt == "raw":
            continue
        from connectors.spark.registry_formats import registry_decoder

        setattr(decoding, role, registry_decoder(opts, role, fmt))
    return decoding
