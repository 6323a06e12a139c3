"""``format("ferry")``: the PySpark data source over Ferry topics (any LogBackend URL
reachable from every Spark process, i.e. ``kafka://``)."""

from __future__ import annotations

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
)
from pyspark.sql.types import StructType

from connectors.spark.formats import Decoding, decoding_for
from connectors.spark.options import FerryOptionError, SinkOptions, SourceOptions
from connectors.spark.sink import FerryBatchWriter, FerryStreamWriter, check_sink_schema
from connectors.spark.source import FerryBatchReader, FerryStreamReader

__all__ = ["FerryDataSource"]


class FerryDataSource(DataSource):
    """Reads and writes Ferry topics with the options and schema of Spark's Kafka source.

    ``schema()`` runs on the driver before anything else, so bad read options (and a
    Schema Registry that cannot be reached) fail there, naming the option."""

    @classmethod
    def name(cls) -> str:
        return "ferry"

    def _decoding(self, *, streaming: bool) -> tuple[SourceOptions, Decoding]:
        opts = SourceOptions.parse(self.options, streaming=streaming)
        return opts, decoding_for(opts)

    def schema(self) -> StructType:
        # Spark does not say here whether the read is batch or streaming; the batch rules
        # are checked again by reader() and the streaming ones by streamReader().
        opts = SourceOptions.parse(self.options, streaming=_looks_streaming(self.options))
        return decoding_for(opts).spark_schema()

    def _checked_schema(self, decoding: Decoding, schema: StructType) -> StructType:
        expected = decoding.spark_schema()
        if schema != expected:
            raise FerryOptionError(
                "the ferry source has a fixed schema (Spark's Kafka source schema, with key/"
                "value typed by keyFormat/valueFormat); remove the user-given schema "
                f"{schema.simpleString()}")
        return expected

    def reader(self, schema: StructType) -> DataSourceReader:
        opts, decoding = self._decoding(streaming=False)
        return FerryBatchReader(opts, decoding, self._checked_schema(decoding, schema))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        opts, decoding = self._decoding(streaming=True)
        return FerryStreamReader(opts, decoding, self._checked_schema(decoding, schema))

    def _sink(self, schema: StructType, overwrite: bool):
        if overwrite:
            raise FerryOptionError("the ferry sink appends to topics; save mode overwrite is "
                                   "not supported (use append)")
        opts = SinkOptions.parse(self.options)
        check_sink_schema(schema, opts)
        encoding = None
        if opts.value_format != "raw" or opts.key_format != "raw":
            from connectors.spark.registry_formats import registry_encoding

            encoding = registry_encoding(opts, schema)
        return opts, encoding

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        return FerryBatchWriter(*self._sink(schema, overwrite))

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        return FerryStreamWriter(*self._sink(schema, overwrite))


def _looks_streaming(options) -> bool:
    # Without ending options a read may be either; batch rules are stricter only about
    # "latest" starts, which schema() lets through for streaming reads.
    return not any(k.lower().startswith("ending") for k in options) and str(
        options.get("startingOffsets", "")).lower() == "latest"
