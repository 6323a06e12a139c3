"""``ferry groups``: list consumer groups and describe one (like kafka-consumer-groups)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from contextlib import closing
from dataclasses import dataclass

from core.backends import GroupDescription, LogBackend, OffsetSpec, TopicPartition
from core.backends.consumer_protocol import decode_assignment
from core.backends.errors import BackendError
from core.cli.errors import CliError
from core.cli.options import add_command, open_log

__all__ = ["PartitionLag", "describe_lag", "format_table", "register"]

_CONSUMER_PROTOCOL = "consumer"


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``groups`` and its subcommands."""
    groups = add_command(subparsers, "groups", "list and describe consumer groups")
    commands = groups.add_subparsers(dest="groups_command", metavar="COMMAND", required=True)
    listing = add_command(commands, "list", "list group ids")
    listing.set_defaults(func=_list)
    describe = add_command(commands, "describe", "state, members, offsets and lag of a group")
    describe.add_argument("group", metavar="G")
    describe.set_defaults(func=_describe)


@dataclass(frozen=True, slots=True)
class PartitionLag:
    """One row of ``groups describe``: where the group is in a partition, and who reads it."""

    topic_partition: TopicPartition
    committed: int | None
    log_end_offset: int | None
    member_id: str = ""
    host: str = ""
    client_id: str = ""

    @property
    def lag(self) -> int | None:
        if self.committed is None or self.log_end_offset is None:
            return None
        return max(0, self.log_end_offset - self.committed)


def _list(args: argparse.Namespace) -> int:
    with closing(open_log(args)) as backend:
        groups = backend.list_groups()
    sys.stdout.write("".join(f"{group_id}\n" for group_id, _protocol in groups))
    return 0


def _describe(args: argparse.Namespace) -> int:
    with closing(open_log(args)) as backend:
        group = backend.describe_group(args.group)
        rows = describe_lag(backend, group)
    if group.state == "Dead" and not rows:
        raise CliError(f"consumer group {args.group!r} does not exist")
    out = [
        f"Group:      {group.group_id}\n",
        f"State:      {group.state}\n",
        f"Protocol:   {_protocol(group)}\n",
        f"Generation: {group.generation_id}\n",
        f"Members:    {len(group.members)}\n",
    ]
    if group.members:
        out.append("\n")
        out.append(format_table(
            ("MEMBER-ID", "CLIENT-ID", "HOST", "ASSIGNMENT"),
            [(m.member_id, m.client_id or "-", m.client_host or "-",
              _assignment_text(group, m.assignment)) for m in group.members],
        ))
    out.append("\n")
    out.append(format_table(
        ("GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG",
         "CONSUMER-ID", "HOST", "CLIENT-ID"),
        [(group.group_id, row.topic_partition.topic, str(row.topic_partition.partition),
          _or_dash(row.committed), _or_dash(row.log_end_offset), _or_dash(row.lag),
          row.member_id or "-", row.host or "-", row.client_id or "-") for row in rows],
    ))
    sys.stdout.write("".join(out))
    return 0


def describe_lag(backend: LogBackend, group: GroupDescription) -> list[PartitionLag]:
    """Rows for every partition the group has committed or is assigned, sorted.

    The log end offset comes from ``list_offsets(LATEST)``; a partition whose topic was
    deleted since the commit shows no end offset and no lag rather than failing.
    """
    owners: dict[TopicPartition, tuple[str, str, str]] = {}
    if group.protocol_type == _CONSUMER_PROTOCOL:
        for member in group.members:
            for tp in _assigned(member.assignment):
                owners[tp] = (member.member_id, member.client_host, member.client_id)
    committed = {tp: meta.offset for tp, meta in backend.fetch_offsets(group.group_id).items()}
    partitions = sorted(set(committed) | set(owners))
    ends: dict[TopicPartition, int] = {}
    for topic in sorted({tp.topic for tp in partitions}):
        wanted = [tp for tp in partitions if tp.topic == topic]
        try:
            ends.update(backend.list_offsets(wanted, int(OffsetSpec.LATEST)))
        except BackendError:
            continue  # the topic is gone; its rows show "-"
    return [
        PartitionLag(tp, committed.get(tp), ends.get(tp), *owners.get(tp, ("", "", "")))
        for tp in partitions
    ]


def format_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Left-aligned columns two spaces apart, as Kafka's admin tools print them."""
    widths = [len(h) for h in header]
    for row in rows:
        widths = [max(w, len(cell)) for w, cell in zip(widths, row, strict=True)]
    lines = [
        "  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip()
        for line in [header, *rows]
    ]
    return "".join(f"{line}\n" for line in lines)


def _assigned(assignment: bytes) -> list[TopicPartition]:
    try:
        decoded = decode_assignment(assignment)
    except (BackendError, UnicodeDecodeError):
        return []  # not Kafka's consumer layout; show the member without partitions
    return [TopicPartition(t, p) for t, ps in sorted(decoded.partitions.items()) for p in ps]


def _assignment_text(group: GroupDescription, assignment: bytes) -> str:
    if group.protocol_type != _CONSUMER_PROTOCOL:
        return f"{len(assignment)} bytes"
    parts = _assigned(assignment)
    return ",".join(f"{tp.topic}-{tp.partition}" for tp in parts) or "-"


def _protocol(group: GroupDescription) -> str:
    if not group.protocol_type:
        return "-"
    return f"{group.protocol_type} ({group.protocol_name or 'none'})"


def _or_dash(value: int | None) -> str:
    return "-" if value is None else str(value)
