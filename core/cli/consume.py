"""``ferry consume``: print a topic's records to stdout, like kafka-console-consumer."""

from __future__ import annotations

import argparse
import logging
import os
import select
import sys
import time
from contextlib import closing
from typing import BinaryIO

from core.backends import ConsumerRecord, OffsetSpec, TopicPartition
from core.backends.consumer import Consumer
from core.cli.errors import CliError
from core.cli.formatter import MessageFormatter
from core.cli.options import add_command, check_partition, open_log
from core.cli.shutdown import ShutdownSignals

__all__ = ["parse_offset", "register"]

log = logging.getLogger(__name__)

#: Longest single wait in poll(), so a Ctrl-C or SIGTERM is noticed within this time.
_POLL_SLICE_MS = 250
#: Kafka's max.poll.records default.
_MAX_POLL_RECORDS = 500


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``consume``."""
    parser = add_command(subparsers, "consume", "print a topic's records to stdout")
    parser.add_argument("topic", metavar="TOPIC")
    parser.add_argument("--from-beginning", action="store_true",
                        help="start at the earliest offset when there is no committed offset "
                             "(default: only records produced from now on)")
    parser.add_argument("--group", metavar="G",
                        help="consume as a member of consumer group G and commit its offsets")
    parser.add_argument("--partition", type=int, metavar="P",
                        help="consume only partition P (not with --group)")
    parser.add_argument("--offset", metavar="O",
                        help="with --partition: start at offset O, 'earliest' or 'latest'")
    parser.add_argument("--max-messages", type=int, metavar="N",
                        help="exit after printing N records")
    parser.add_argument("--timeout-ms", type=int, metavar="T",
                        help="exit after T ms without a new record")
    for field in ("key", "offset", "partition", "timestamp", "headers"):
        parser.add_argument(f"--print-{field}", action="store_true",
                            help=f"print each record's {field}")
    parser.add_argument("--key-separator", default="\t", metavar="S",
                        help="printed between key and value (default: a tab)")
    parser.set_defaults(func=_consume)


def parse_offset(text: str) -> int:
    """``--offset`` as a start position: a non-negative number, ``earliest`` or ``latest``."""
    word = text.strip().lower()
    if word == "earliest":
        return int(OffsetSpec.EARLIEST)
    if word == "latest":
        return int(OffsetSpec.LATEST)
    try:
        offset = int(word)
    except ValueError:
        offset = -1
    if offset < 0:
        raise CliError(
            f"--offset {text!r} is not valid: use a non-negative offset, 'earliest' or 'latest'"
        )
    return offset


def _check_options(args: argparse.Namespace) -> None:
    if args.offset is not None and args.partition is None:
        raise CliError("--offset needs --partition: an offset refers to one partition")
    if args.offset is not None and args.from_beginning:
        raise CliError("--offset and --from-beginning cannot be used together")
    if args.group is not None and args.partition is not None:
        raise CliError("--partition cannot be used with --group: the group assigns partitions")
    if args.max_messages is not None and args.max_messages < 1:
        raise CliError(f"--max-messages must be at least 1, not {args.max_messages}")
    if args.timeout_ms is not None and args.timeout_ms < 0:
        raise CliError(f"--timeout-ms must not be negative, not {args.timeout_ms}")


def _consume(args: argparse.Namespace) -> int:
    _check_options(args)
    start_offset = parse_offset(args.offset) if args.offset is not None else None
    formatter = MessageFormatter(
        print_timestamp=args.print_timestamp,
        print_partition=args.print_partition,
        print_offset=args.print_offset,
        print_headers=args.print_headers,
        print_key=args.print_key,
        key_separator=os.fsencode(args.key_separator),
    )
    with closing(open_log(args)) as backend, ShutdownSignals() as shutdown:
        # Fail fast and clearly on a missing topic or partition instead of waiting forever.
        check_partition(backend, args.topic, args.partition)
        consumer = Consumer(
            backend,
            [args.topic],
            group_id=args.group,
            auto_offset_reset="earliest" if args.from_beginning else "latest",
            partitions=None if args.partition is None else [args.partition],
            start_offsets=None if start_offset is None else {
                TopicPartition(args.topic, args.partition): start_offset
            },
            # Take no more than is left to print, so the rewind after the last poll (see
            # _rewind) rarely has anything to do.
            max_poll_records=min(_MAX_POLL_RECORDS, args.max_messages or _MAX_POLL_RECORDS),
            client_id="ferry-console-consumer",
        )
        printer = _Printer(formatter, args.max_messages)
        try:
            _run_loop(consumer, printer, shutdown, args.timeout_ms)
        finally:
            try:
                consumer.close()
            finally:
                sys.stderr.write(f"Processed a total of {printer.count} messages\n")
                sys.stderr.flush()
        if shutdown.requested:
            log.debug("stopped by %s", shutdown.signal_name)
    if printer.pipe_closed:
        _silence_stdout()
    return 0


class _Printer:
    """Writes formatted records to stdout, honouring --max-messages and a closed pipe."""

    def __init__(self, formatter: MessageFormatter, max_messages: int | None) -> None:
        self._formatter = formatter
        self._max = max_messages
        self._out = sys.stdout.buffer
        self.count = 0
        self.pipe_closed = False

    @property
    def done(self) -> bool:
        return self.pipe_closed or (self._max is not None and self.count >= self._max)

    def check_reader(self) -> None:
        """Notice a reader that went away while there is nothing to write: in follow mode
        `ferry consume T | head -1` would otherwise wait for the next record to find out."""
        if _reader_gone(self._out):
            self.pipe_closed = True

    def write(self, records: list[ConsumerRecord]) -> list[ConsumerRecord]:
        """Print what --max-messages still allows; return the records left unprinted."""
        rest: list[ConsumerRecord] = []
        if self._max is not None and len(records) > self._max - self.count:
            records, rest = records[: self._max - self.count], records[self._max - self.count :]
        try:
            self._out.write(self._formatter.format_all(records))
            self._out.flush()
        except BrokenPipeError:
            # The reader went away (`| head -3`): stop quietly, as `cat` would.
            self.pipe_closed = True
            return []
        self.count += len(records)
        return rest


def _run_loop(consumer: Consumer, printer: _Printer, shutdown: ShutdownSignals,
              timeout_ms: int | None) -> None:
    """Poll until --max-messages, --timeout-ms idle time, a closed pipe or a signal."""
    idle_s = None if timeout_ms is None else timeout_ms / 1000
    idle_deadline = None if idle_s is None else time.monotonic() + idle_s
    while True:
        wait_ms = _POLL_SLICE_MS
        if idle_deadline is not None:
            wait_ms = max(0, min(wait_ms, int((idle_deadline - time.monotonic()) * 1000)))
        records = consumer.poll(wait_ms)
        if records:
            unprinted = printer.write(records)
            _rewind(consumer, unprinted)
            if idle_s is not None:
                idle_deadline = time.monotonic() + idle_s
        else:
            printer.check_reader()
        if printer.done or shutdown.requested:
            return
        if not records and idle_deadline is not None and time.monotonic() >= idle_deadline:
            return


def _rewind(consumer: Consumer, unprinted: list[ConsumerRecord]) -> None:
    """Move positions back to the first unprinted record of each partition, so a group's
    commit at close covers exactly the printed records and the next run prints the rest."""
    first: dict[TopicPartition, int] = {}
    for record in unprinted:
        tp = TopicPartition(record.topic, record.partition)
        first[tp] = min(first.get(tp, record.offset), record.offset)
    for tp, offset in first.items():
        consumer.seek(tp, offset)


def _reader_gone(out: BinaryIO) -> bool:
    """Whether ``out`` is a pipe or socket whose reading end was closed (POLLERR/POLLHUP)."""
    if not hasattr(select, "poll"):
        return False  # Windows: find out at the next write instead
    try:
        poller = select.poll()
        poller.register(out.fileno(), 0)  # error and hang-up events are always reported
        events = poller.poll(0)
    except (OSError, ValueError):
        return False
    return any(mask & (select.POLLERR | select.POLLHUP) for _fd, mask in events)


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush of a closed pipe does not
    print 'Exception ignored ... BrokenPipeError' on exit."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass
