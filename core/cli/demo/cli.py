"""``ferry demo``: the whole pipeline on this machine, as local processes.

::

    ferry demo [--brokers N] [--workers N] [--rate R] [--duration S]
    ferry demo --check [--duration S] [--settle S]

Without ``--check`` it runs until Ctrl-C (or ``--duration``), printing what flows every few
seconds. With ``--check`` it makes changes for ``--duration`` seconds, then waits up to
``--settle`` seconds for every destination to hold them and prints a pass/fail line per
destination (and one for the topics' replicas); the exit code is 1 on any mismatch.
Ctrl-C or SIGTERM stops every process it started.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import random
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path

from core.cli.errors import CliError
from core.cli.options import add_command

__all__ = ["missing_prerequisites", "register"]

VIEW_INTERVAL_S = 3.0


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = add_command(subparsers, "demo",
                         "run the whole platform locally: Postgres CDC -> topics -> S3, "
                         "Spark -> search index and reporting table")
    parser.add_argument("--check", action="store_true",
                        help="run for --duration seconds, then verify every change reached "
                             "S3, the index and the reporting table; exit 1 on a mismatch")
    parser.add_argument("--duration", type=float, default=None, metavar="S",
                        help="seconds of load (default: until Ctrl-C; 30 with --check)")
    parser.add_argument("--settle", type=float, default=150.0, metavar="S",
                        help="with --check: how long to wait for the destinations to catch "
                             "up (default 150)")
    parser.add_argument("--brokers", type=int, default=3, metavar="N",
                        help="broker nodes (default 3, a cluster as in the compose stack: "
                             "topics at replication factor min(3, N)); 1 runs a single "
                             "node")
    parser.add_argument("--workers", type=int, default=2, metavar="N",
                        help="Connect workers in distributed mode (default 2)")
    parser.add_argument("--rate", type=float, default=10.0, metavar="R",
                        help="database changes per second (default 10)")
    parser.add_argument("--seed", type=int, default=1, help="the load generator's seed")
    parser.add_argument("--workdir", metavar="DIR",
                        help="keep logs and data here (default: a temporary directory, "
                             "removed at the end)")
    parser.add_argument("--connectors", metavar="DIR",
                        help="the connector files (default: docker/connectors)")
    parser.set_defaults(func=_run)


def missing_prerequisites() -> list[str]:
    """One line per missing prerequisite, naming it and how to install it."""
    from core.cli.demo.processes import PostgresUnavailable, server_bindir

    missing = []
    if not (os.environ.get("JAVA_HOME") or shutil.which("java")):
        missing.append("java: Spark needs a Java 17 runtime (Debian: apt-get install "
                       "openjdk-17-jre-headless, or set JAVA_HOME)")
    try:
        server_bindir()
    except PostgresUnavailable:
        missing.append("PostgreSQL server binaries (initdb, postgres): Debian: apt-get "
                       "install postgresql")
    if not shutil.which("moto_server") and importlib.util.find_spec("moto") is None:
        missing.append("moto_server (the S3 API): pip install 'moto[server]' (in "
                       "'ferryman[demo]')")
    try:
        from osmem_server import resolve_binary

        resolve_binary(None)
    except Exception:
        missing.append("osmem-server (the search server): pip install osmem-server (in "
                       "'ferryman[demo]')")
    for module, extra in (("pyspark", "spark"), ("psycopg", "postgres"), ("boto3", "s3"),
                          ("pyarrow", "s3"), ("sqlalchemy", "jdbc"),
                          ("elasticsearch", "elasticsearch")):
        if importlib.util.find_spec(module) is None:
            missing.append(f"{module}: pip install 'ferryman[demo]' (or [{extra}])")
    return missing


def _run(args: argparse.Namespace) -> int:
    for flag, value, low in (("--brokers", args.brokers, 1), ("--workers", args.workers, 1)):
        if value < low:
            raise CliError(f"{flag} must be at least {low}, not {value}")
    if args.rate <= 0:
        raise CliError(f"--rate must be positive, not {args.rate}")
    missing = missing_prerequisites()
    if missing:
        for line in missing:
            sys.stderr.write(f"ferry demo: missing {line}\n")
        return 1
    from core.cli.demo import connectors

    directory = Path(args.connectors) if args.connectors else connectors.default_dir()
    try:
        files = connectors.load(directory)
    except (FileNotFoundError, ValueError) as exc:
        raise CliError(str(exc)) from None
    duration = args.duration if args.duration is not None else (30.0 if args.check else None)
    keep = args.workdir is not None
    workdir = Path(args.workdir) if keep else Path(tempfile.mkdtemp(prefix="ferry-demo-"))
    workdir.mkdir(parents=True, exist_ok=True)
    # SIGTERM stops the demo as Ctrl-C does: through the same finally blocks.
    previous = signal.signal(signal.SIGTERM, _interrupt)
    previous_int = signal.getsignal(signal.SIGINT)
    try:
        return _demo(args, files, workdir, duration)
    except KeyboardInterrupt:
        _say("stopped")
        return 130
    finally:
        signal.signal(signal.SIGTERM, previous)
        signal.signal(signal.SIGINT, previous_int)
        if not keep:
            shutil.rmtree(workdir, ignore_errors=True)


def _interrupt(_signum: int, _frame: object) -> None:
    raise KeyboardInterrupt


def _say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def _demo(args: argparse.Namespace, files: list, workdir: Path, duration: float | None
          ) -> int:
    from core.cli.demo import connectors, shop, verify
    from core.cli.demo.observe import Observer, render
    from core.cli.demo.processes import PASSWORD
    from core.cli.demo.stack import DemoStack

    _say(f"ferry demo: starting (logs in {workdir})")
    stack = DemoStack(workdir, brokers=args.brokers, workers=args.workers,
                      say=lambda line: _say("  " + line))
    load = observer = None
    try:
        try:
            stack.start()
        except RuntimeError as exc:
            raise CliError(f"demo: {str(exc).splitlines()[0]} (logs in {workdir})") from None
        import psycopg

        rng = random.Random(args.seed)
        with psycopg.connect(stack.pg_dsn, autocommit=True) as conn:
            seeded = shop.seed(conn, rng)
        _say(f"  shop        seeded {len(seeded.customers)} customers, "
             f"{len(seeded.products)} products, {len(seeded.orders)} orders")
        local = [connectors.localize(c, stack.addresses(), PASSWORD) for c in files]
        observer = Observer(stack)
        connectors.post(stack.worker_urls[0], local[0])
        _say(f"  connector   {local[0]['name']} (Postgres CDC) posted; waiting for its "
             "snapshot")
        _wait_snapshot(observer, seeded, stack)
        stack.create_pipeline_topics()
        for connector in local[1:]:
            connectors.post(stack.worker_urls[0], connector)
            _say(f"  connector   {connector['name']} posted")
        stack.start_pipeline()
        load = shop.LoadGenerator(stack.pg_dsn, seeded, rate=args.rate, seed=args.seed)
        load.start()
        _say(f"  load        {args.rate:g} changes/s: orders placed, paid, shipped, "
             "cancelled" + (f" for {duration:g} s" if duration else "; Ctrl-C stops"))
        started = time.monotonic()
        next_view = started
        while duration is None or time.monotonic() - started < duration:
            _watch(stack, load)
            if time.monotonic() >= next_view:
                _say(render(observer.snapshot(_all_changes(seeded, load)),
                            time.monotonic() - started))
                next_view += VIEW_INTERVAL_S
            time.sleep(0.2)
        load.stop()
        if load.error is not None:
            raise CliError(f"demo: the load generator failed: {load.error}")
        if not args.check:
            return 0
        _say(f"ferry demo --check: {len(load.changes)} changes made; waiting up to "
             f"{args.settle:g} s for S3, the index and the reporting table")
        expected = verify.expected_changes(seeded, load.changes)
        deadline = time.monotonic() + args.settle
        while True:
            _watch(stack, None)
            results = verify.check_all(observer, expected)
            if all(r.ok for r in results) or time.monotonic() > deadline:
                break
            time.sleep(3.0)
        _say(render(observer.snapshot(_all_changes(seeded, load)),
                    time.monotonic() - started))
        for r in results:
            _say(f"{'PASS' if r.ok else 'FAIL'}  {r.name:<9}  {r.detail}")
        ok = all(r.ok for r in results)
        _say("ferry demo --check: " + ("passed" if ok else "FAILED"))
        return 0 if ok else 1
    except KeyboardInterrupt:
        _say("ferry demo: stopping every process it started")
        raise
    finally:
        # A second Ctrl-C must not cut the clean-up short (it is bounded: each process
        # gets SIGTERM, then its group SIGKILL).
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        if load is not None:
            load.stop()
        if observer is not None:
            observer.close()
        stack.close()


def _all_changes(seeded, load):
    from collections import Counter

    counts: Counter = Counter({("customers", "r"): len(seeded.customers),
                               ("products", "r"): len(seeded.products),
                               ("orders", "r"): len(seeded.orders)})
    if load is not None:
        counts.update(load.counts())
    return counts


def _watch(stack, load) -> None:
    failed = stack.failed()
    if failed is not None:
        raise CliError(f"demo: {failed.name} exited ({failed.proc.returncode}); its log "
                       f"{failed.log_path} ends with: "
                       f"{failed.output(400).strip().splitlines()[-1:] or ['nothing']}")
    if load is not None and load.error is not None:
        raise CliError(f"demo: the load generator failed: {load.error}")


def _wait_snapshot(observer, seeded, stack, timeout: float = 120.0) -> None:
    want = {"shop.public.customers": len(seeded.customers),
            "shop.public.products": len(seeded.products),
            "shop.public.orders": len(seeded.orders)}
    deadline = time.monotonic() + timeout
    while True:
        _watch(stack, None)
        events = observer.events()
        if all(events.get(t, 0) >= n for t, n in want.items()):
            return
        if time.monotonic() > deadline:
            raise CliError(f"demo: the CDC snapshot did not reach the topics in "
                           f"{timeout:.0f} s ({events}); see {stack.workdir}/connect1.log")
        time.sleep(0.5)
