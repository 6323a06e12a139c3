"""The Connect data model: schemas, structs, logical types and value validation.

Converters translate between bytes and these objects; connectors and transformations
read and build them. Everything here is pure: no I/O, no threads, no runtime.
"""

from connect.api.data.builder import SchemaBuilder
from connect.api.data.logical import Date, Decimal, Time, Timestamp
from connect.api.data.schema import Field, Schema, SchemaAndValue, Type
from connect.api.data.struct import Struct, validate_value

__all__ = [
    "Date",
    "Decimal",
    "Field",
    "Schema",
    "SchemaAndValue",
    "SchemaBuilder",
    "Struct",
    "Time",
    "Timestamp",
    "Type",
    "validate_value",
]
