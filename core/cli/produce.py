"""``ferry produce``: one record per line of stdin, like kafka-console-producer."""

from __future__ import annotations

import argparse
import os
import select
import sys
from collections.abc import Iterator, Sequence
from contextlib import closing

from core.backends import LogBackend, ProducerRecord
from core.backends.types import Header
from core.cli.errors import CliError
from core.cli.options import add_command, check_partition, open_log, parse_key_values

__all__ = ["read_line_batches", "register"]

#: Lines per produce call when input arrives faster than it can be produced; big enough to
#: amortise a call, small enough that a slow pipe still sees steady progress.
BATCH_LINES = 1000
_READ_SIZE = 64 * 1024


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``produce``."""
    parser = add_command(subparsers, "produce", "produce one record per line of stdin")
    parser.add_argument("topic", metavar="TOPIC")
    parser.add_argument("--key-separator", metavar="S",
                        help="split each line at the first S into key and value; a line "
                             "without S is an error")
    parser.add_argument("--header", action="append", metavar="KEY=VALUE",
                        help="a header added to every record (repeatable)")
    parser.add_argument("--partition", type=int, metavar="P",
                        help="produce to this partition (default: the key's partition, or "
                             "spread unkeyed records)")
    parser.add_argument("--acks", type=int, choices=(-1, 0, 1), default=-1,
                        help="acknowledgements to wait for (default: -1, all in-sync replicas)")
    parser.set_defaults(func=_produce)


def _produce(args: argparse.Namespace) -> int:
    separator = os.fsencode(args.key_separator) if args.key_separator is not None else None
    if separator == b"":
        raise CliError("--key-separator must not be empty")
    headers: list[Header] = [
        (key, os.fsencode(value))
        for key, value in parse_key_values(args.header, "--header").items()
    ]
    with closing(open_log(args)) as backend:
        check_partition(backend, args.topic, args.partition)
        _LineProducer(backend, args.topic, separator, headers, args.partition, args.acks).run(
            read_line_batches(sys.stdin.fileno())
        )
    return 0


class _LineProducer:
    """Turns batches of lines into produce calls, counting lines for error messages."""

    def __init__(self, backend: LogBackend, topic: str, separator: bytes | None,
                 headers: Sequence[Header], partition: int | None, acks: int) -> None:
        self._backend = backend
        self._topic = topic
        self._separator = separator
        self._headers = tuple(headers)
        self._partition = partition
        self._acks = acks
        self._line_number = 0

    def run(self, batches: Iterator[list[bytes]]) -> None:
        for lines in batches:
            self._produce_lines(lines)

    def _produce_lines(self, lines: list[bytes]) -> None:
        headers, partition, separator = self._headers, self._partition, self._separator
        if separator is None:
            records = [ProducerRecord(None, line, headers, None, partition) for line in lines]
            self._line_number += len(lines)
            self._send(records)
            return
        records = []
        for line in lines:
            self._line_number += 1
            key, found, value = line.partition(separator)
            if not found:
                # Like kafka-console-producer: the records read so far are kept, then fail.
                self._send(records)
                raise CliError(
                    f"line {self._line_number}: no key separator {separator!r} in "
                    f"{_preview(line)}; every line must be KEY{separator.decode(errors='replace')}"
                    "VALUE"
                )
            records.append(ProducerRecord(key, value, headers, None, partition))
        self._send(records)

    def _send(self, records: list[ProducerRecord]) -> None:
        if records:
            self._backend.produce(self._topic, records, acks=self._acks)


def read_line_batches(fd: int, max_lines: int = BATCH_LINES) -> Iterator[list[bytes]]:
    """Yield lines read from ``fd`` (bytes, trailing ``\\n`` removed) in batches.

    A batch is yielded once it has ``max_lines`` lines or when no more input is immediately
    available, so a pipe of a million lines goes in large batches while a person typing sees
    each line produced at once. A last line without a newline is yielded at end of input.
    """
    lines: list[bytes] = []
    partial: list[bytes] = []  # pieces of a line whose newline has not arrived yet
    while True:
        chunk = os.read(fd, _READ_SIZE)
        if not chunk:
            if partial:
                lines.append(b"".join(partial))
            if lines:
                yield lines
            return
        if b"\n" in chunk:
            if partial:
                partial.append(chunk)
                chunk = b"".join(partial)
                partial = []
            pieces = chunk.split(b"\n")
            rest = pieces.pop()
            lines.extend(pieces)
            if rest:
                partial.append(rest)
        else:
            partial.append(chunk)
        if lines and (len(lines) >= max_lines or not _input_ready(fd)):
            yield lines
            lines = []


def _input_ready(fd: int) -> bool:
    """Whether ``fd`` has data (or end of input) to read without blocking."""
    try:
        readable, _, _ = select.select([fd], [], [], 0)
    except (OSError, ValueError):
        return False  # not selectable (e.g. a Windows console): produce what we have
    return bool(readable)


def _preview(line: bytes, limit: int = 40) -> str:
    text = line[:limit].decode(errors="replace")
    return repr(text + ("..." if len(line) > limit else ""))
