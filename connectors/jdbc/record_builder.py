"""Result rows -> ``SourceRecord``s, the source's hot path (see the JDBC benchmark).

Per query, a function is generated that turns a fetched batch of rows into records with
a few calls per batch and none per row besides the columns' conversions: the struct
values (one expression per field, calling a conversion only where the column needs one,
and the row itself when no column needs one), the ``incrementing`` offsets read inline,
then ``Struct.from_rows`` and ``SourceRecord.many``. A loop over the columns per row, or
a Python call per row (a record's keyword constructor), costs more than the rest of a
row's handling.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from itertools import repeat
from typing import Any

from connect.api import Schema, SourceRecord, Struct
from connectors.jdbc.offsets import INCREMENTING
from connectors.jdbc.types import identity

__all__ = ["BatchBuilder", "batch_builder"]

#: ``build(rows, offsets)``: one record per row; ``offsets`` (one per row) is given when
#: the builder does not compute them itself.
BatchBuilder = Callable[[Sequence[Any], Sequence[Mapping[str, Any] | None] | None],
                        list[SourceRecord]]


def batch_builder(*, topic: str, schema: Schema, partition: Mapping[str, Any],
                  width: int, indexes: Sequence[int], converts: Sequence[Callable[[Any], Any]],
                  inc_index: int = -1, inc_needs_int: bool = True,
                  inline_offsets: bool = True) -> BatchBuilder:
    """The batch builder of one query: ``width`` columns per row, the struct's fields
    taken from ``indexes`` through ``converts``; with ``inline_offsets`` the offset is
    ``{"incrementing": row[inc_index]}`` (none if ``inc_index`` < 0), otherwise the
    caller passes one offset per row."""
    if list(indexes) == list(range(width)) and all(c is identity for c in converts):
        values = "rows"  # Struct.from_rows copies each row into a list of its own
    else:
        parts = [f"row[{j}]" if convert is identity else f"c[{n}](row[{j}])"
                 for n, (j, convert) in enumerate(zip(indexes, converts, strict=True))]
        values = f"[({', '.join(parts)},) for row in rows]"
    if not inline_offsets:
        offsets = "offsets"
    elif inc_index < 0:
        offsets = "repeat(None, len(rows))"
    else:
        read = f"int(row[{inc_index}])" if inc_needs_int else f"row[{inc_index}]"
        offsets = f"[{{{INCREMENTING!r}: {read}}} for row in rows]"
    code = (f"lambda rows, offsets=None: many(from_rows(schema, {values}), {offsets}, "
            f"topic=topic, value_schema=schema, source_partition=partition)")
    # The code holds only integer indexes and a constant key: nothing from the database
    # or the config reaches it.
    scope = {"many": SourceRecord.many, "from_rows": Struct.from_rows, "repeat": repeat,
             "topic": topic, "schema": schema, "partition": partition, "c": list(converts)}
    return eval(code, scope)  # type: ignore[no-any-return]
