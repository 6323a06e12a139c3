"""``ferry pipeline``: list the PySpark pipelines of ``pipelines/`` and run one.

::

    ferry pipeline list
    ferry pipeline run NAME [--log URL] [--master URL] [--checkpoint DIR]
                            [--conf spark.KEY=VALUE ...] [the pipeline's options]

``run`` is a thin wrapper around a SparkSession: ``--master`` defaults to ``local[*]``
(``spark://HOST:PORT`` runs on a standalone cluster), every ``--conf spark.*`` goes to the
session. The same jobs run under ``spark-submit pipelines/NAME.py``.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import sys

from core.cli.errors import CliError
from core.cli.options import add_command

__all__ = ["register"]

_CAUSE = re.compile(r"(?:FerryOptionError|DataLossError|ValueError): (.+)")


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``pipeline list`` and ``pipeline run``."""
    parser = add_command(subparsers, "pipeline", "list and run the PySpark pipelines")
    commands = parser.add_subparsers(dest="pipeline_command", metavar="COMMAND", required=True)
    listing = commands.add_parser("list", help="the pipelines and what they do")
    listing.set_defaults(func=_list)
    run = commands.add_parser(
        "run", help="run a pipeline on a SparkSession (local[*] unless --master)",
        description="run NAME; options after NAME: --log URL, --master URL, --checkpoint DIR, "
                    "--conf spark.KEY=VALUE, then the pipeline's own (see "
                    "`ferry pipeline run NAME --help`)")
    run.add_argument("name", metavar="NAME")
    run.add_argument("rest", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    run.set_defaults(func=_run)


def _list(args: argparse.Namespace) -> int:
    from pipelines import available

    pipelines = available()
    width = max((len(p.name) for p in pipelines), default=0)
    for p in pipelines:
        sys.stdout.write(f"{p.name:<{width}}  {p.description}\n")
    return 0


def _run(args: argparse.Namespace) -> int:
    from pipelines import find

    pipeline = find(args.name)
    if pipeline is None:
        raise CliError(f"unknown pipeline {args.name!r}; `ferry pipeline list` shows them")
    parser = argparse.ArgumentParser(prog=f"ferry pipeline run {pipeline.name}",
                                     description=pipeline.description, allow_abbrev=False)
    parser.add_argument("--log", default=args.log_url, metavar="URL",
                        help="the Ferry log every Spark process reaches: kafka://HOST:PORT")
    parser.add_argument("--master", default="local[*]", help="Spark master URL")
    parser.add_argument("--checkpoint", metavar="DIR",
                        help="where a streaming pipeline keeps offsets and state")
    parser.add_argument("--conf", action="append", default=[], metavar="spark.KEY=VALUE",
                        help="a Spark setting, as spark-submit's --conf")
    pipeline.module.add_arguments(parser)
    options = parser.parse_args(args.rest)
    confs = {}
    for item in options.conf:
        key, sep, value = item.partition("=")
        if not sep or not key.startswith("spark."):
            raise CliError(f"--conf {item!r}: expected spark.KEY=VALUE")
        confs[key] = value
    spark = _session(pipeline.name, options.master, confs)
    try:
        from connectors.spark import register

        register(spark)
        return int(pipeline.module.main(spark, options) or 0)
    except Exception as exc:
        if type(exc).__module__.startswith(("pyspark", "py4j")):
            raise CliError(f"pipeline {pipeline.name} failed: {_one_line(exc)}") from None
        raise
    finally:
        spark.stop()


def _session(name: str, master: str, confs: dict[str, str]):
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        raise CliError("pipelines need PySpark: pip install 'ferryman[spark]'") from None
    if not (os.environ.get("JAVA_HOME") or shutil.which("java")):
        raise CliError("PySpark needs a Java 17 runtime and none was found: install one "
                       "(Debian: apt-get install openjdk-17-jre-headless) or set JAVA_HOME")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.master(master).appName(f"ferry-pipeline-{name}")
    for key, value in confs.items():
        builder = builder.config(key, value)
    try:
        spark = builder.getOrCreate()
    except Exception as exc:  # the JVM did not start or the master cannot be reached
        raise CliError(f"cannot start Spark (master {master}): {_one_line(exc)}") from None
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def _one_line(exc: BaseException) -> str:
    text = str(exc)
    causes = _CAUSE.findall(text)
    if causes:
        return causes[-1].strip()
    return text.strip().splitlines()[0] if text.strip() else type(exc).__name__
