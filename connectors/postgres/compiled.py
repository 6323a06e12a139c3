"""Functions generated per table for the connector's hot path: a row's values, and the
whole change record of a row (value, key, envelope, ``SourceRecord``).

A snapshot row or a streamed insert is one record built from one row of text values.
Through the general API that is a call per step (values, value struct, key struct,
envelope, record) and a loop over column descriptors; generated per table, it is one
expression with each column's position, converter and fallback bound in as variables,
and a snapshot batch is one list comprehension. The generated source holds only
positions and generated names, never a column's name or type, so no table can inject
code. The records are the ones ``EventFactory.change`` builds, field for field.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from connect.api import Schema, SourceRecord, Struct
from connectors.postgres.pgoutput import UNCHANGED_TOAST

__all__ = ["BatchMaker", "EventMaker", "compile_events", "compile_row"]

#: ``(emitted position in the source row, column type, fallback, converter)``
Emitted = tuple[int, Any, Any, Callable[[Any], Any]]
Unchanged = Callable[[int, Sequence[Any] | None], Any]

#: ``event(texts, op, source, offset, transaction=None, before=None)``: the record of a
#: row whose after image is ``texts`` (no old row: an unchanged TOASTed value is the
#: placeholder), keyed by the row's key columns.
EventMaker = Callable[..., SourceRecord]
#: ``batch(rows, op, source, offset)``: ``[event(row, op, source, offset) for row in rows]``
BatchMaker = Callable[[Sequence[Sequence[Any]], str, Struct, Mapping[str, Any]],
                      list[SourceRecord]]


def _value_items(emitted: Sequence[Emitted], env: dict[str, Any], row: str, old: str,
                 walrus: bool) -> list[str]:
    """One expression per emitted column: NULL is its fallback, an unchanged TOASTed
    value comes from ``old`` or is the placeholder, anything else is converted."""
    items = []
    for i, (pos, _ctype, fallback, convert) in enumerate(emitted):
        env[f"c{i}"], env[f"f{i}"] = convert, fallback
        first = f"(t{i} := {row}[{pos}])" if walrus else f"t{i}"
        items.append(f"(f{i} if {first} is None else c{i}(t{i}) if t{i} is not _toast "
                     f"else _unchanged({i}, {old}))")
    return items


def compile_row(emitted: Sequence[Emitted], unchanged: Unchanged
                ) -> Callable[[Sequence[Any], Sequence[Any] | None], list[Any]]:
    """``row(texts, old=None)``: the values of the value struct, in field order."""
    env: dict[str, Any] = {"_toast": UNCHANGED_TOAST, "_unchanged": unchanged}
    lines = ["def row(texts, old=None):"]
    lines += [f"    t{i} = texts[{pos}]" for i, (pos, *_rest) in enumerate(emitted)]
    lines.append("    return [" + ", ".join(_value_items(emitted, env, "texts", "old", False))
                 + "]")
    exec(compile("\n".join(lines), "<postgres row>", "exec"), env)
    return env["row"]  # type: ignore[no-any-return]


def compile_events(emitted: Sequence[Emitted], unchanged: Unchanged, *, topic: str,
                   value_schema: Schema, key_schema: Schema | None,
                   key_positions: Sequence[int], envelope_schema: Schema,
                   partition: Mapping[str, Any]) -> tuple[EventMaker, BatchMaker]:
    """The record makers of one table (see ``EventMaker`` and ``BatchMaker``)."""
    env: dict[str, Any] = {
        "_toast": UNCHANGED_TOAST, "_unchanged": unchanged,
        "REC": SourceRecord.maker(topic=topic, key_schema=key_schema,
                                  value_schema=envelope_schema, source_partition=partition),
        "SO": Struct.owning, "VS": value_schema, "KS": key_schema, "ES": envelope_schema,
        "time_ns": time.time_ns}
    values = "[" + ", ".join(_value_items(emitted, env, "texts", "None", True)) + "]"
    # Struct.owning: every list below is new and holds one value per field.
    key = ("SO(KS, [" + ", ".join(f"v[{p}]" for p in key_positions) + "])"
           if key_schema is not None else "None")
    # Debezium's ts_ms/ts_us/ts_ns: when the connector built the event.
    # REC is SourceRecord.maker's: the rest of the record is the table's. Keywords keep
    # the value first, whose expression assigns the ``v`` the key reads.
    record = ("REC(value=SO(ES, [before, "
              f"SO(VS, (v := {values})), source, transaction, op, "
              "(now := time_ns()) // 1000000, now // 1000, now]), "
              f"key={key}, source_offset=offset)")
    source = (
        "def event(texts, op, source, offset, transaction=None, before=None):\n"
        f"    return {record}\n"
        "def batch(rows, op, source, offset):\n"
        "    before = transaction = None\n"
        f"    return [{record} for texts in rows]\n")
    exec(compile(source, "<postgres events>", "exec"), env)
    return env["event"], env["batch"]
