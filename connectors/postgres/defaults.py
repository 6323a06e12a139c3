"""Column default values in the emitted schemas, as Debezium's
``PostgresDefaultValueConverter`` derives them from the column's default expression.

A literal (``'abc'::text``, ``42``, ``'2024-01-01'::date``) becomes the schema default; a
function or ``CURRENT_TIMESTAMP`` (``nextval(...)``, ``now()``) becomes the type's
placeholder (0, "", epoch), as in Debezium; ``NULL::type`` and types Debezium does not
handle (bytea, arrays, intervals, ...) get no default. The result is PostgreSQL text,
converted by the column's own converter.
"""

from __future__ import annotations

import re

__all__ = ["default_text"]

_LITERAL = re.compile(r"'([^']*(?:''[^']*)*)'")
_FUNCTION = re.compile(r"^[(]?[A-Za-z0-9_.]+\((?:.+(?:, ?.+)*)?\)")
_CURRENT = {"current_timestamp", "current_time", "current_date", "localtime",
            "localtimestamp"}

#: Per type name, the text standing for a generated (function) default.
_PLACEHOLDERS = {
    "bool": "false", "bpchar": "", "varchar": "", "text": "", "numeric": "0.0",
    "float4": "0.0", "float8": "0.0", "int2": "0", "int4": "0", "int8": "0",
    "json": "{}", "jsonb": "{}", "xml": "", "uuid": "00000000-0000-0000-0000-000000000000",
    "date": "1970-01-01", "time": "00:00:00", "timestamp": "1970-01-01 00:00:00",
    "timestamptz": "1970-01-01 00:00:00+00",
}
_TRIMMED = {"bool", "numeric", "float4", "float8", "int2", "int4", "int8", "uuid", "date",
            "time", "timestamp", "timestamptz"}


def default_text(type_name: str, expression: str | None, is_enum: bool = False) -> str | None:
    """The default as PostgreSQL text for a column of ``type_name``, or None."""
    if expression is None:
        return None
    placeholder = _PLACEHOLDERS.get(type_name)
    if placeholder is None and not is_enum:
        return None
    expr = expression.strip() if type_name in _TRIMMED else expression
    if not is_enum and (_FUNCTION.search(expr) or expr.lower() in _CURRENT):
        return placeholder
    if "'" not in expr:
        if expr.startswith("NULL::") or expr.upper() == "NULL":
            return None
        return expr.strip("()")
    found = _LITERAL.search(expr)
    return None if found is None else found.group(1).replace("''", "'")
