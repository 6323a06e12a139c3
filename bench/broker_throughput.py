"""Produce and consume throughput of a Ferry broker over the Kafka protocol, against Redis.

Run from the repository root:

    python3 bench/broker_throughput.py [--quick] [--repeats 3] [--partitions 1] [--json]

What it measures, for 100-byte and 1 KiB values (1,000,000 and 300,000 messages; ``--quick``
uses 1/20 of that and one repeat):

* produce: N messages to a fresh topic, timed from the first send to the last
  acknowledgement, with acks=1 and acks=all, by two clients:
  - confluent-kafka (Python, librdkafka): ``produce_batch`` of 1,024 messages, then
    ``flush()``; connection and metadata are set up before the clock starts;
  - kcat (C, librdkafka): ``kcat -P -l FILE``, one message per line of a prepared file,
    timed as a whole process (start-up included);
* consume: the same N messages from the log start, right after producing them:
  - confluent-kafka: ``assign()`` at the beginning, ``consume(num_messages=10000)`` until
    N messages, touching every value;
  - kcat: ``kcat -C -o beginning -e -c N``, its output (value plus newline) read from a
    pipe and counted;
* the comparison: the same N values to a Redis stream on redis-server with
  ``appendonly yes``, ``appendfsync everysec`` (Redis's default durable mode) by pipelined
  XADD, read back by XRANGE pages (see ``compare_redis.py`` for the client and why).

With ``--compare metrics`` the comparison is instead the same Ferry broker with its
``/metrics`` on (``ferry broker --metrics``) and scraped every ``--scrape-interval`` seconds
during the timed sections, against one with metrics off, in the same repeats; the ratio
column is then metrics-on throughput over metrics-off (1.00: no cost).

Both brokers run on this machine with fresh data directories on the same file system,
started by the script for each repeat; the Ferry broker keeps every default (no fsync
policy: the log is left to the page cache, as Kafka does) except that
``ferry.acks.all.fsync`` is off, so that acks=all is what it is in Kafka: on one broker
the same as acks=1, the leader being the whole ISR, both replying once the batch is in the
leader's log; they are listed separately because the issue's targets name them. What the
fsync of Ferry's default acks=all costs is measured by ``durability_cost.py``.

Each repeat runs every Ferry case, each followed by a Redis run, rotating the order
between repeats; every timed produce starts after ``os.sync()``. The table gives medians:
messages/s, MB/s of payload (values only, 10^6 bytes), and Ferry/Redis ratios, each against
the median of the Redis runs paired with that Ferry case. It also gives the CPU each side
used during the timed sections, in cores (from /proc): the server (``srv``), the client
side (``cli``: this process with librdkafka's threads, or kcat), and everything else
(``oth``: other processes, kernel writeback and softirq time, steal). ``oth`` tells whether
the machine was quiet: a Ferry/Redis pair during which it exceeded ``--max-other-cpu``
(0.5 core) is measured again, up to three times.
"""

from __future__ import annotations

import argparse
import base64
import dataclasses
import json
import logging
import os
import platform
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from contextlib import ExitStack
from pathlib import Path

import _kafka_clients as kafka
import compare_redis as redis
from _cpu_accounting import Timed, timed
from _servers import FerryBroker, RedisServer, py_spy, require_executable

log = logging.getLogger("bench.broker_throughput")

MB = 1_000_000
VALUE_POOL = 1024
FULL_MESSAGES = {100: 1_000_000, 1024: 300_000}
QUICK_DIVISOR = 20
# acks=all as Kafka answers it (page cache); bench/durability_cost.py measures the fsync.
KAFKA_SEMANTICS = {"ferry.acks.all.fsync": "false"}
MAX_ATTEMPTS = 3
MIN_ACCOUNTED_S = 0.5
TARGETS = (  # (value size, acks, metric, threshold, label) from the issue
    (100, None, "produce_msgs_per_s", 700_000, ">= 700,000 msg/s produce, 100 B"),
    (100, None, "consume_msgs_per_s", 1_000_000, ">= 1,000,000 msg/s consume, 100 B"),
    (1024, "all", "produce_MB_per_s", 300, ">= 300 MB/s produce, 1 KiB, acks=all"),
)


@dataclasses.dataclass(frozen=True)
class Case:
    """One measured combination; Redis cases have ``acks`` "-" (no such setting)."""

    system: str
    client: str
    acks: str

    @property
    def label(self) -> str:
        return f"{self.system}/{self.client}/acks={self.acks}"


@dataclasses.dataclass
class Samples:
    produce: list[Timed] = dataclasses.field(default_factory=list)
    consume: list[Timed] = dataclasses.field(default_factory=list)


def make_values(size: int) -> list[bytes]:
    """Distinct printable values without newlines (kcat reads one message per line)."""
    return [base64.b64encode(os.urandom(size))[:size] for _ in range(VALUE_POOL)]


def write_lines(path: Path, values: list[bytes], messages: int) -> None:
    with open(path, "wb") as out:
        for start in range(0, messages, len(values)):
            chunk = values[:min(len(values), messages - start)]
            out.write(b"\n".join(chunk) + b"\n")


class Scraper:
    """Scrapes a broker's ``/metrics`` every ``interval`` seconds on a thread while in a
    ``with`` block, as Prometheus would (it checks that each answer is a real scrape)."""

    def __init__(self, broker: FerryBroker, interval: float) -> None:
        self._url = f"http://127.0.0.1:{broker.metrics_port}/metrics"
        self._interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="scraper", daemon=True)
        self.scrapes = 0

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            with urllib.request.urlopen(self._url, timeout=30) as response:
                if b"kafka_server_brokertopicmetrics_bytesin_total" not in response.read():
                    raise kafka.BenchmarkError(f"{self._url} returned no broker metrics")
            self.scrapes += 1

    def __enter__(self) -> Scraper:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(60)
        log.info("scraped %s %d times", self._url, self.scrapes)


class Runner:
    """Runs one value size: its repeats, servers, and cases; collects samples."""

    def __init__(self, args: argparse.Namespace, work: Path, size: int, messages: int) -> None:
        self.args = args
        self.work = work
        self.size = size
        self.messages = messages
        self.values = make_values(size)
        self.lines = work / f"values-{size}.txt"
        self.samples: dict[Case, Samples] = {}
        self.paired_redis: dict[Case, Samples] = {}  # Ferry case -> the Redis runs after it
        self.commands: dict[str, str] = {}
        self.retaken = 0  # Ferry/Redis pairs measured again because of outside load
        self.ferry = [Case("ferry", client, acks)
                      for acks in args.acks for client in args.clients]
        self.redis_case = Case("redis", redis.CLIENT_VERSION.split()[0], "-")
        self.metrics_cases = {case: Case("ferry+metrics", case.client, case.acks)
                              for case in self.ferry}

    def run(self) -> None:
        if "kcat" in self.args.clients:
            write_lines(self.lines, self.values, self.messages)
        try:
            for repeat in range(self.args.repeats):
                self.run_repeat(repeat)
        finally:
            self.lines.unlink(missing_ok=True)

    def run_repeat(self, repeat: int) -> None:
        shift = repeat % len(self.ferry)
        order = self.ferry[shift:] + self.ferry[:shift]
        tag = f"{self.size}-{repeat}"
        with ExitStack() as stack:
            broker = stack.enter_context(FerryBroker(
                self.work / f"ferry-{tag}",
                {**KAFKA_SEMANTICS, **(self.args.broker_config or {})}))
            self.commands["ferry broker"] = broker.command_line()
            server = None
            observed = None
            if self.args.compare == "metrics":
                observed = stack.enter_context(FerryBroker(
                    self.work / f"ferry-metrics-{tag}",
                    {**KAFKA_SEMANTICS, **(self.args.broker_config or {})}, metrics=True))
                self.commands["ferry broker (metrics on)"] = observed.command_line()
            if self.args.compare == "redis":
                server = stack.enter_context(RedisServer(self.work / f"redis-{tag}",
                                                         self.args.redis_appendfsync))
                self.commands["redis-server"] = server.command_line()
            for index, case in enumerate(order):
                for attempt in range(1, MAX_ATTEMPTS + 1):
                    run_tag = f"{tag}-{index}-{attempt}"
                    profile = (self.args.py_spy / f"broker-{run_tag}.txt"
                               if self.args.py_spy else None)
                    # Metrics on and off take turns going first, so neither always runs
                    # on a machine the other has just warmed (or loaded).
                    on_first = observed is not None and (repeat + index) % 2 == 1
                    if on_first:
                        other = self.run_observed(observed, case, run_tag)
                    with py_spy(broker.pid, profile):
                        ferry = self.run_ferry(broker, case, run_tag)
                    if server is not None:
                        other = self.run_redis(server, run_tag)
                    elif observed is not None and not on_first:
                        other = self.run_observed(observed, case, run_tag)
                    elif observed is None:
                        other = None
                    timings = [*ferry, *(other or ())]
                    # /proc/stat counts in 10 ms ticks: too coarse for shorter windows.
                    busiest = max((t.other_cpu for t in timings
                                   if t.window_s >= MIN_ACCOUNTED_S), default=0.0)
                    if busiest <= self.args.max_other_cpu or attempt == MAX_ATTEMPTS:
                        break
                    # Another process took CPU from this pair: measure both sides again.
                    self.retaken += 1
                    log.warning("%s: other processes used %.0f%% of a core; retaking the "
                                "pair (attempt %d of %d)", case.label, busiest * 100,
                                attempt + 1, MAX_ATTEMPTS)
                self.record(case, *ferry)
                if other:
                    if observed is not None:
                        self.record(self.metrics_cases[case], *other)
                        continue
                    self.record(self.redis_case, *other)
                    paired = self.paired_redis.setdefault(case, Samples())
                    paired.produce.append(other[0])
                    paired.consume.append(other[1])
        # Both servers have stopped: their data goes, so repeats never share a page cache.
        shutil.rmtree(broker.data_dir, ignore_errors=True)
        for done in (server, observed):
            if done is not None:
                shutil.rmtree(done.data_dir, ignore_errors=True)

    def record(self, case: Case, produce: Timed, consume: Timed) -> None:
        samples = self.samples.setdefault(case, Samples())
        samples.produce.append(produce)
        samples.consume.append(consume)
        log.info("%5d B %-34s produce %9.0f msg/s  consume %9.0f msg/s", self.size,
                 case.label, self.messages / produce.seconds, self.messages / consume.seconds)

    def run_ferry(self, broker: FerryBroker, case: Case, tag: str) -> tuple[Timed, Timed]:
        topic = f"bench-{tag}"
        partitions = self.args.partitions
        kafka.create_topic(broker.address, topic, partitions)
        os.sync()
        if case.client == "kcat":
            argv = kafka.kcat_produce_argv(self.args.kcat, broker.address, topic, partitions,
                                           self.lines, case.acks, self.messages)
            self.commands[f"kcat produce acks={case.acks}"] = shlex.join(argv)
            produce = timed(broker.pid, lambda: kafka.kcat_produce(argv))
        else:
            produce = timed(broker.pid, lambda: kafka.confluent_produce(
                broker.address, topic, partitions, self.values, self.messages, case.acks))
        stored = kafka.end_offsets(broker.address, topic, partitions)
        if stored != self.messages:
            raise kafka.BenchmarkError(f"{topic} holds {stored} messages after producing "
                                       f"{self.messages} with {case.label}")
        if case.client == "kcat":
            argv = kafka.kcat_consume_argv(self.args.kcat, broker.address, topic,
                                           self.messages)
            self.commands["kcat consume"] = shlex.join(argv)
            consume = timed(broker.pid, lambda: kafka.kcat_consume(argv, self.messages,
                                                                   self.size))
        else:
            consume = timed(broker.pid, lambda: kafka.confluent_consume(
                broker.address, topic, partitions, self.messages, self.size))
        kafka.delete_topic(broker.address, topic)
        return produce, consume

    def run_observed(self, broker: FerryBroker, case: Case, tag: str) -> tuple[Timed, Timed]:
        """``run_ferry`` on the broker with metrics on, scraped meanwhile."""
        with Scraper(broker, self.args.scrape_interval):
            return self.run_ferry(broker, case, tag + "-m")

    def run_redis(self, server: RedisServer, tag: str) -> tuple[Timed, Timed]:
        key = f"bench-{tag}"
        os.sync()
        produce = timed(server.pid, lambda: redis.redis_produce(server.port, key, self.values,
                                                                self.messages))
        stored = redis.stream_length(server.port, key)
        if stored != self.messages:
            raise kafka.BenchmarkError(f"stream {key} holds {stored} entries, expected "
                                       f"{self.messages}")
        consume = timed(server.pid, lambda: redis.redis_consume(server.port, key,
                                                                self.messages, self.size))
        redis.delete_stream(server.port, key)  # keeps redis-server's memory flat
        return produce, consume

    def results(self) -> list[dict[str, object]]:
        rows: list[dict[str, object]] = []
        for case, samples in self.samples.items():
            row: dict[str, object] = {
                "value_bytes": self.size, "messages": self.messages,
                "partitions": self.args.partitions if case.system == "ferry" else 1,
                **dataclasses.asdict(case), "runs": len(samples.produce)}
            for phase, timings in (("produce", samples.produce), ("consume", samples.consume)):
                seconds = statistics.median(t.seconds for t in timings)
                row[f"{phase}_msgs_per_s"] = self.messages / seconds
                row[f"{phase}_MB_per_s"] = self.messages * self.size / seconds / MB
                row[f"{phase}_server_cpu"] = statistics.median(t.server_cpu for t in timings)
                row[f"{phase}_client_cpu"] = statistics.median(t.client_cpu for t in timings)
                row[f"{phase}_other_cpu"] = statistics.median(t.other_cpu for t in timings)
                paired = self.paired_redis.get(case)
                if paired is not None:
                    redis_s = statistics.median(t.seconds for t in getattr(paired, phase))
                    row[f"{phase}_vs_redis"] = redis_s / seconds
                off = next((c for c, on in self.metrics_cases.items() if on == case), None)
                if off is not None and off in self.samples:  # metrics on over metrics off
                    off_s = statistics.median(t.seconds for t in getattr(self.samples[off],
                                                                         phase))
                    row[f"{phase}_vs_off"] = off_s / seconds
            rows.append(row)
        return rows


def check_targets(rows: list[dict[str, object]]) -> list[dict[str, object]]:
    """The best Ferry figure for each of the issue's targets, and whether it is met."""
    verdicts: list[dict[str, object]] = []
    for size, acks, metric, threshold, label in TARGETS:
        candidates = [r for r in rows if r["system"] == "ferry" and r["value_bytes"] == size
                      and (acks is None or r["acks"] == acks)]
        if not candidates:
            continue
        best = max(candidates, key=lambda r: float(r[metric]))  # type: ignore[arg-type]
        value = float(best[metric])  # type: ignore[arg-type]
        verdicts.append({"target": label, "measured": value, "met": value >= threshold,
                         "of_target": value / threshold, "by": f"{best['client']} "
                         f"acks={best['acks']}", "messages": best["messages"]})
    return verdicts


def print_report(rows: list[dict[str, object]], verdicts: list[dict[str, object]],
                 commands: dict[str, str], environment: dict[str, str]) -> None:
    """The result table; srv, cli and oth are the CPU used by the server, the client side
    and everything else, as shares of one core during the timed section."""
    versus = "/off" if any(r["system"] == "ferry+metrics" for r in rows) else "/redis"
    phase_head = f"{'msg/s':>10} {'MB/s':>6} {'srv':>4} {'cli':>4} {'oth':>4} {versus:>6}"
    print(f"{'':50} |{'produce':^39} |{'consume':^39}")
    print(f"{'value':>5} {'system':<13} {'client':<15} {'acks':<4} {'messages':>9}"
          f" |{phase_head} |{phase_head}")
    for r in rows:
        cells = ""
        for phase in ("produce", "consume"):
            key = next((phase + k for k in ("_vs_redis", "_vs_off") if phase + k in r), "")
            ratio = f"{r[key]:>6.2f}" if key else f"{'-':>6}"
            cells += (f" |{r[phase + '_msgs_per_s']:>10,.0f} {r[phase + '_MB_per_s']:>6,.1f}"
                      f" {r[phase + '_server_cpu']:>4.0%} {r[phase + '_client_cpu']:>4.0%}"
                      f" {r[phase + '_other_cpu']:>4.0%} {ratio}")
        print(f"{r['value_bytes']:>5} {r['system']:<13} {r['client']:<15} {r['acks']:<4} "
              f"{r['messages']:>9,}{cells}")
    print("\ntargets (best Ferry client):")
    for v in verdicts:
        print(f"  {v['target']:<40} {v['measured']:>12,.1f}  {v['of_target']:>5.0%} of target "
              f"({'met' if v['met'] else 'NOT met'}; {v['by']}, {v['messages']:,} messages)")
    print("\ncommands (last repeat):")
    for name, command in commands.items():
        print(f"  {name}: {command}")
    print("\nenvironment:")
    for name, value in environment.items():
        print(f"  {name}: {value}")


def tool_version(argv: list[str]) -> str:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"unknown ({exc})"
    lines = [line for line in (done.stdout + done.stderr).splitlines() if "ersion" in line]
    return (lines[0] if lines else (done.stdout + done.stderr).strip()[:120]).strip()


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help=f"1/{QUICK_DIVISOR} of the messages and one repeat: a smoke run")
    parser.add_argument("--records-100", type=int, help="messages with 100 B values (0: skip)")
    parser.add_argument("--records-1k", type=int, help="messages with 1 KiB values (0: skip)")
    parser.add_argument("--repeats", type=int,
                        help="alternating rounds per value size (default 3, --quick 1)")
    parser.add_argument("--partitions", type=int, default=1, help="partitions per topic")
    parser.add_argument("--clients", default="confluent-kafka,kcat",
                        help="comma-separated Ferry clients: confluent-kafka, kcat")
    parser.add_argument("--acks", default="1,all", help="comma-separated: 1, all")
    parser.add_argument("--compare", choices=("redis", "metrics", "none"), default="redis",
                        help="pair each Ferry run with Redis, or with a Ferry broker whose "
                             "/metrics is on and scraped (the ratio column)")
    parser.add_argument("--scrape-interval", type=float, default=1.0, metavar="S",
                        help="with --compare metrics: seconds between scrapes (default 1)")
    parser.add_argument("--redis-appendfsync", choices=("everysec", "always", "no"),
                        default="everysec")
    parser.add_argument("--max-other-cpu", type=float, default=0.5, metavar="CORES",
                        help="retake a Ferry/Redis pair (up to 3 tries) when other processes "
                             "used more than this much CPU during it (default 0.5 core)")
    parser.add_argument("--broker-config", type=Path,
                        help="extra Ferry broker properties (key=value lines)")
    parser.add_argument("--py-spy", type=Path, metavar="DIR",
                        help="record the broker with py-spy (collapsed stacks) into DIR")
    parser.add_argument("--dir", type=Path, help="work directory (default: a temp dir in CWD)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args(argv)
    divisor = QUICK_DIVISOR if args.quick else 1
    if args.records_100 is None:
        args.records_100 = FULL_MESSAGES[100] // divisor
    if args.records_1k is None:
        args.records_1k = FULL_MESSAGES[1024] // divisor
    if args.repeats is None:
        args.repeats = 1 if args.quick else 3
    args.clients = [c for c in args.clients.split(",") if c]
    args.acks = [a for a in args.acks.split(",") if a]
    if not set(args.clients) <= {"confluent-kafka", "kcat"} or not args.clients:
        parser.error("--clients takes confluent-kafka and/or kcat")
    if not set(args.acks) <= {"1", "all"} or not args.acks:
        parser.error("--acks takes 1 and/or all")
    if args.broker_config is not None:
        args.broker_config = dict(
            line.split("=", 1) for line in args.broker_config.read_text().splitlines()
            if "=" in line and not line.lstrip().startswith("#"))
    return args


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    args = parse_args(argv)
    args.kcat = require_executable("kcat", "apt-get install kcat") if "kcat" in args.clients else ""
    if args.compare == "redis":
        require_executable("redis-server", "apt-get install redis-server")
    if args.py_spy is not None:
        args.py_spy.mkdir(parents=True, exist_ok=True)
    base = args.dir or Path.cwd()
    base.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="ferry-broker-bench-", dir=base))
    rows: list[dict[str, object]] = []
    commands: dict[str, str] = {}
    retaken = 0
    started = time.monotonic()
    try:
        for size, messages in ((100, args.records_100), (1024, args.records_1k)):
            if messages > 0:
                runner = Runner(args, work, size, messages)
                runner.run()
                rows += runner.results()
                commands.update(runner.commands)
                retaken += runner.retaken
    finally:
        shutil.rmtree(work, ignore_errors=True)
    log.info("finished in %.0f s", time.monotonic() - started)
    commands["confluent-kafka producer"] = json.dumps(
        kafka.producer_config("HOST:PORT", "<acks>", max(args.records_100, args.records_1k)))
    commands["confluent-kafka consumer"] = json.dumps(kafka.consumer_config("HOST:PORT"))
    environment = {
        "python": platform.python_version(), "cpus": str(os.cpu_count()),
        "kafka client": kafka.CLIENT_VERSION, "redis client": redis.CLIENT_VERSION,
        "kcat": tool_version(["kcat", "-V"]) if args.kcat else "-",
        "redis-server": tool_version(["redis-server", "--version"])
        if args.compare == "redis" else "-",
        "argv": shlex.join(sys.argv),
        "pairs retaken because of outside load": str(retaken),
    }
    verdicts = check_targets(rows)
    if args.json:
        print(json.dumps({"results": rows, "targets": verdicts, "commands": commands,
                          "environment": environment}, indent=2))
    else:
        print_report(rows, verdicts, commands, environment)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
