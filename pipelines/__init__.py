"""Runnable PySpark jobs on Ferry topics, each a module of this package with:

* ``DESCRIPTION``: one line for ``ferry pipeline list``;
* ``add_arguments(parser)``: the job's own options;
* ``main(spark, args) -> int``: the job, given a SparkSession and parsed options
  (``args.log`` and ``args.checkpoint`` are always there).

Run one with ``ferry pipeline run NAME --log kafka://HOST:PORT [--master URL] ...`` or with
``spark-submit pipelines/NAME.py --log kafka://HOST:PORT ...`` (the same code either way).
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from types import ModuleType

__all__ = ["Pipeline", "add_common_arguments", "available", "find", "submit_main"]


@dataclass(frozen=True)
class Pipeline:
    name: str
    description: str
    module: ModuleType


def available() -> list[Pipeline]:
    """Every pipeline module of this package, by name."""
    out = []
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        if info.name.startswith("_") or info.name == "cli":
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        if hasattr(module, "main") and hasattr(module, "DESCRIPTION"):
            out.append(Pipeline(info.name, module.DESCRIPTION, module))
    return out


def find(name: str) -> Pipeline | None:
    wanted = name.replace("-", "_")
    return next((p for p in available() if p.name == wanted), None)


def add_common_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--log", required=True, metavar="URL",
                        help="the Ferry log every Spark process reaches: kafka://HOST:PORT")
    parser.add_argument("--checkpoint", metavar="DIR",
                        help="where a streaming pipeline keeps its offsets and state")


def submit_main(module: ModuleType, argv: Sequence[str] | None = None) -> int:
    """``spark-submit pipelines/NAME.py ...``: parse the job's options, use the session
    spark-submit configured, run, stop the session."""
    from pyspark.sql import SparkSession

    parser = argparse.ArgumentParser(prog=module.__name__, description=module.DESCRIPTION)
    add_common_arguments(parser)
    module.add_arguments(parser)
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    spark = SparkSession.builder.appName(f"ferry-{module.__name__}").getOrCreate()
    try:
        from connectors.spark import register

        register(spark)
        return module.main(spark, args)
    finally:
        spark.stop()
