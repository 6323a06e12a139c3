"""PySpark data source for Ferry topics: ``format("ferry")`` (batch and streaming, read and
write) and ``format("ferry-cdc")`` (Debezium change events as rows with an ``op`` column).

::

    from connectors.spark import register
    register(spark)
    df = spark.read.format("ferry").option("log", "kafka://127.0.0.1:9092") \\
        .option("subscribe", "orders").load()

With Ferry installed, ``format("ferry")`` also works without ``register``: Spark imports
the top-level ``pyspark_ferry`` module and registers its ``DefaultSource``.
Needs the ``ferryman[spark]`` extra (pyspark, pyarrow) and a Java 17 runtime.
"""

from __future__ import annotations

try:
    import pyspark  # noqa: F401
except ImportError as exc:  # one clear line instead of a chain of import errors
    raise ImportError(
        "connectors.spark needs PySpark: pip install 'ferryman[spark]' (and a Java 17 "
        "runtime)") from exc

from connectors.spark.cdc import FerryCdcDataSource
from connectors.spark.datasource import FerryDataSource
from connectors.spark.options import FerryOptionError

__all__ = ["FerryCdcDataSource", "FerryDataSource", "FerryOptionError", "register"]


def register(spark) -> None:
    """Register ``format("ferry")`` and ``format("ferry-cdc")`` on a SparkSession."""
    spark.dataSource.register(FerryDataSource)
    spark.dataSource.register(FerryCdcDataSource)
