"""``ferry topics``: create, list, describe, alter and delete topics (like kafka-topics)."""

from __future__ import annotations

import argparse
import sys
import time
from contextlib import closing
from dataclasses import dataclass

from core.backends import TopicDescription
from core.backends.errors import TopicExistsError
from core.cli.errors import CliError
from core.cli.options import add_command, open_log, parse_key_values

__all__ = ["Rate", "format_description", "measure_rates", "register"]


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``topics`` and its subcommands."""
    topics = add_command(subparsers, "topics", "create, list, describe, alter and delete topics")
    commands = topics.add_subparsers(dest="topics_command", metavar="COMMAND", required=True)

    create = add_command(commands, "create", "create a topic")
    create.add_argument("name", metavar="NAME")
    create.add_argument("--partitions", type=int, metavar="N",
                        help="number of partitions (default: the log's num.partitions)")
    create.add_argument("--replication-factor", type=int, metavar="R",
                        help="copies of each partition (default: the log's "
                             "default.replication.factor)")
    create.add_argument("--config", action="append", metavar="KEY=VALUE",
                        help="a topic config override, e.g. retention.ms=86400000 (repeatable)")
    create.add_argument("--if-not-exists", action="store_true",
                        help="succeed without changes if the topic already exists")
    create.set_defaults(func=_create)

    listing = add_command(commands, "list", "list topic names")
    listing.add_argument("--exclude-internal", action="store_true",
                         help="leave out internal topics such as __consumer_offsets")
    listing.set_defaults(func=_list)

    describe = add_command(commands, "describe", "show partitions, offsets and configs")
    describe.add_argument("names", nargs="*", metavar="NAME",
                          help="topics to describe (default: every non-internal topic)")
    describe.add_argument("--interval", default="1", metavar="SECONDS",
                          help="measure message and byte rates over this many seconds "
                               "(default 1; 0 shows sizes and offsets only)")
    describe.set_defaults(func=_describe)

    alter = add_command(commands, "alter", "set or remove per-topic config overrides")
    alter.add_argument("name", metavar="NAME")
    alter.add_argument("--config", action="append", metavar="KEY=VALUE",
                       help="set a config override (repeatable)")
    alter.add_argument("--delete-config", action="append", metavar="KEY",
                       help="remove an override so the default applies again (repeatable)")
    alter.set_defaults(func=_alter)

    delete = add_command(commands, "delete", "delete a topic and its data")
    delete.add_argument("name", metavar="NAME")
    delete.set_defaults(func=_delete)


def _create(args: argparse.Namespace) -> int:
    configs = parse_key_values(args.config, "--config")
    with closing(open_log(args, create=True)) as backend:
        try:
            backend.create_topic(
                args.name,
                args.partitions,
                configs,
                replication_factor=args.replication_factor,
            )
        except TopicExistsError:
            if args.if_not_exists:
                return 0
            raise
    sys.stdout.write(f"Created topic {args.name}.\n")
    return 0


def _list(args: argparse.Namespace) -> int:
    with closing(open_log(args)) as backend:
        names = backend.list_topics(include_internal=not args.exclude_internal)
    sys.stdout.write("".join(f"{name}\n" for name in names))
    return 0


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value <= 3600:
        raise CliError(f"--interval {text!r} is not a number of seconds from 0 to 3600")
    return value


def _describe(args: argparse.Namespace) -> int:
    interval = _seconds(args.interval)
    with closing(open_log(args)) as backend:
        names = args.names or backend.list_topics()
        descriptions = [backend.describe_topic(name) for name in names]
        rates: dict[str, list[Rate]] = {}
        if interval > 0 and descriptions:
            started = time.monotonic()
            time.sleep(interval)
            later = [backend.describe_topic(d.name) for d in descriptions]
            elapsed = time.monotonic() - started
            rates = {d.name: measure_rates(d, after, elapsed)
                     for d, after in zip(descriptions, later, strict=True)}
    sys.stdout.write("".join(format_description(d, rates.get(d.name)) for d in descriptions))
    return 0


def _alter(args: argparse.Namespace) -> int:
    set_configs = parse_key_values(args.config, "--config")
    delete_configs = [key.strip() for key in args.delete_config or ()]
    if not set_configs and not delete_configs:
        raise CliError("topics alter needs at least one --config KEY=VALUE or --delete-config KEY")
    both = sorted(set(set_configs) & set(delete_configs))
    if both:
        raise CliError(f"config {both[0]!r} is both set and deleted; choose one")
    with closing(open_log(args)) as backend:
        backend.alter_topic_configs(args.name, set_configs, delete_configs)
    sys.stdout.write(f"Updated configs of topic {args.name}.\n")
    return 0


def _delete(args: argparse.Namespace) -> int:
    with closing(open_log(args)) as backend:
        backend.delete_topic(args.name)
    sys.stdout.write(f"Deleted topic {args.name}.\n")
    return 0


@dataclass(frozen=True)
class Rate:
    """One partition's appends per second over a sampling interval."""

    messages_per_sec: float
    bytes_per_sec: float | None


def measure_rates(before: TopicDescription, after: TopicDescription,
                  elapsed_s: float) -> list[Rate]:
    """Per-partition rates from two descriptions ``elapsed_s`` apart. Messages come from
    the high watermark's advance; bytes from the size's, where both samples have one (a
    shrinking size, after retention or compaction, counts as no bytes in)."""
    earlier = {p.partition: p for p in before.partitions}
    out = []
    for p in after.partitions:
        old = earlier.get(p.partition)
        if old is None or elapsed_s <= 0:
            out.append(Rate(0.0, None))
            continue
        messages = max(0, p.high_watermark - old.high_watermark) / elapsed_s
        grown = (None if p.size_bytes is None or old.size_bytes is None
                 else max(0, p.size_bytes - old.size_bytes) / elapsed_s)
        out.append(Rate(messages, grown))
    return out


def format_description(topic: TopicDescription, rates: list[Rate] | None = None) -> str:
    """kafka-topics --describe's layout: a topic line, then one indented line per partition,
    with the log start offset, high watermark and size on disk added, and the rates when
    they were measured."""
    replication = len(topic.partitions[0].replicas) if topic.partitions else 0
    configs = ",".join(f"{key}={value}" for key, value in sorted(topic.overrides.items()))
    sizes = [p.size_bytes for p in topic.partitions]
    total = "-" if None in sizes else str(sum(s or 0 for s in sizes))
    header = (f"Topic: {topic.name}\tTopicId: {topic.topic_id or '-'}\t"
              f"PartitionCount: {len(topic.partitions)}\tReplicationFactor: {replication}\t"
              f"Size: {total}")
    if rates is not None:
        header += f"\tMessagesPerSec: {_rate(sum(r.messages_per_sec for r in rates))}"
        byte_rates = [r.bytes_per_sec for r in rates]
        header += ("\tBytesPerSec: -" if None in byte_rates
                   else f"\tBytesPerSec: {_rate(sum(b or 0.0 for b in byte_rates))}")
    lines = [f"{header}\tConfigs: {configs}\n"]
    for index, info in enumerate(topic.partitions):
        line = (f"\tTopic: {topic.name}\tPartition: {info.partition}\tLeader: {info.leader}\t"
                f"Replicas: {_ids(info.replicas)}\tIsr: {_ids(info.isr)}\t"
                f"LogStartOffset: {info.log_start_offset}\tHighWatermark: {info.high_watermark}"
                f"\tSize: {'-' if info.size_bytes is None else info.size_bytes}")
        if rates is not None and index < len(rates):
            rate = rates[index]
            line += (f"\tMessagesPerSec: {_rate(rate.messages_per_sec)}\tBytesPerSec: "
                     f"{'-' if rate.bytes_per_sec is None else _rate(rate.bytes_per_sec)}")
        lines.append(line + "\n")
    return "".join(lines)


def _rate(value: float) -> str:
    return f"{value:.1f}"


def _ids(broker_ids: tuple[int, ...]) -> str:
    return ",".join(str(i) for i in broker_ids)
