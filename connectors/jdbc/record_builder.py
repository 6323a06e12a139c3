"""Result rows -> ``SourceRecord``s, the source's hot path (see the JDBC benchmark).

Per query, a function is generated that turns a fetched batch of rows into records in
one list comprehension: each struct value is one expression per field, calling a
conversion only where the column needs one, and the row itself when no column needs
one; the ``incrementing`` offset is read inline. A loop over the columns per row, or a
function call per row, costs more than the rest of a row's handling besides the record
constructor itself.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
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
        values = "row"  # Struct.from_values copies it into a list of its own
    else:
        parts = [f"row[{j}]" if convert is identity else f"c[{n}](row[{j}])"
                 for n, (j, convert) in enumerate(zip(indexes, converts, strict=True))]
        values = f"[{', '.join(parts)}]"
    if not inline_offsets:
        offset, source = "offset", "zip(rows, offsets)"
        target = "row, offset"
    else:
        source, target = "rows", "row"
        if inc_index < 0:
            offset = "None"
        else:
            read = f"int(row[{inc_index}])" if inc_needs_int else f"row[{inc_index}]"
            offset = f"{{{INCREMENTING!r}: {read}}}"
    code = (f"lambda rows, offsets=None: [record(topic=topic, value_schema=schema, "
            f"value=from_values(schema, {values}, validate=False), "
            f"source_partition=partition, source_offset={offset}) "
            f"for {target} in {source}]")
    # The code holds only integer indexes and a constant key: nothing from the database
    # or the config reaches it.
    scope = {"record": SourceRecord, "from_values": Struct.from_values, "topic": topic,
             "schema": schema, "partition": partition, "c": list(converts)}
    return eval(code, scope)  # type: ignore[no-any-return]
