"""Registration-free ``format("ferry")``: on its first data-source lookup Spark imports
every top-level module named ``pyspark_*`` and registers its ``DefaultSource``."""

from connectors.spark import FerryDataSource as DefaultSource

__all__ = ["DefaultSource"]
