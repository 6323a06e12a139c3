"""Names and properties of Confluent's Connect <-> Avro mapping (``AvroData``), and its
options.

The property and parameter names are Confluent's, so schemas written by Ferry's
``AvroConverter`` and by Confluent's are the same schemas, and each reads the other's.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "ANYTHING_SCHEMA",
    "AvroDataConfig",
    "scrub_name",
]

NAMESPACE = "io.confluent.connect.avro"
DEFAULT_SCHEMA_NAME = "ConnectDefault"
DEFAULT_SCHEMA_FULL_NAME = f"{NAMESPACE}.{DEFAULT_SCHEMA_NAME}"
MAP_ENTRY_TYPE_NAME = "MapEntry"
KEY_FIELD = "key"
VALUE_FIELD = "value"

CONNECT_NAME_PROP = "connect.name"
CONNECT_DOC_PROP = "connect.doc"
CONNECT_VERSION_PROP = "connect.version"
CONNECT_DEFAULT_VALUE_PROP = "connect.default"
CONNECT_PARAMETERS_PROP = "connect.parameters"
CONNECT_INTERNAL_TYPE_NAME = "connect.internal.type"
CONNECT_TYPE_PROP = "connect.type"
CONNECT_TYPE_INT8 = "int8"
CONNECT_TYPE_INT16 = "int16"
AVRO_RECORD_DOC_PROP = f"{NAMESPACE}.record.doc"
AVRO_ENUM_DOC_PREFIX_PROP = f"{NAMESPACE}.enum.doc."
AVRO_FIELD_DOC_PREFIX_PROP = f"{NAMESPACE}.field.doc."
# Marks a Connect default that came from an Avro field default (not from connect.default).
AVRO_FIELD_DEFAULT_FLAG_PROP = f"{NAMESPACE}.field.default"
AVRO_ENUM_DEFAULT_PREFIX_PROP = f"{NAMESPACE}.enum.default."
AVRO_TYPE_UNION = f"{NAMESPACE}.Union"
AVRO_TYPE_ENUM = f"{NAMESPACE}.Enum"
AVRO_TYPE_ANYTHING = f"{NAMESPACE}.Anything"
# Parameters and properties starting with this are copied between the two worlds as is.
AVRO_PROP = "avro"
LOGICAL_TYPE_PROP = "logicalType"
LOGICAL_DECIMAL = "decimal"
LOGICAL_DATE = "date"
LOGICAL_TIME_MILLIS = "time-millis"
LOGICAL_TIMESTAMP_MILLIS = "timestamp-millis"
DECIMAL_SCALE_PROP = "scale"
DECIMAL_PRECISION_PROP = "precision"
CONNECT_DECIMAL_PRECISION_PROP = "connect.decimal.precision"
CONNECT_DECIMAL_PRECISION_DEFAULT = 64
CONNECT_FIXED_SIZE_PROP = "connect.fixed.size"

PRIMITIVES = frozenset(("null", "boolean", "int", "long", "float", "double", "bytes", "string"))
NAMED_TYPES = frozenset(("record", "error", "enum", "fixed"))


#: The Avro schema of schemaless Connect values (a record holding one of the possible
#: types), as Confluent defines it.
ANYTHING_SCHEMA: dict[str, object] = {
    "type": "record",
    "name": "Anything",
    "namespace": NAMESPACE,
    "fields": [
        {"name": "boolean", "type": ["null", "boolean"], "default": None},
        {"name": "bytes", "type": ["null", "bytes"], "default": None},
        {"name": "double", "type": ["null", "double"], "default": None},
        {"name": "float", "type": ["null", "float"], "default": None},
        {"name": "int", "type": ["null", "int"], "default": None},
        {"name": "long", "type": ["null", "long"], "default": None},
        {"name": "string", "type": ["null", "string"], "default": None},
        {"name": "array", "type": ["null", {"type": "array", "items": AVRO_TYPE_ANYTHING}],
         "default": None},
        {"name": "map", "type": ["null", {"type": "array", "items": {
            "type": "record", "name": MAP_ENTRY_TYPE_NAME, "namespace": NAMESPACE,
            "fields": [{"name": KEY_FIELD, "type": AVRO_TYPE_ANYTHING},
                       {"name": VALUE_FIELD, "type": AVRO_TYPE_ANYTHING}]}}],
         "default": None},
    ],
}


@dataclass(frozen=True, slots=True)
class AvroDataConfig:
    """Options of the mapping, named as Confluent's ``AvroDataConfig`` keys.

    ``connect_meta_data`` (``connect.meta.data``, true): write and read the ``connect.*``
    properties. ``enhanced_avro_schema_support`` (false): keep Avro enums as enums and use
    full names for union members. ``scrub_invalid_names`` (false): replace characters
    Avro names may not hold. ``allow_optional_map_keys`` (false): an optional string key
    still makes an Avro map. ``flatten_singleton_union`` (true): a one-member union reads
    as that member. ``ignore_default_for_nullables`` (false): an unset optional field is
    written as null, not as its default. ``schemas_cache_size`` (``schemas.cache.config``,
    1000): converted schemas kept in each direction.
    """

    connect_meta_data: bool = True
    enhanced_avro_schema_support: bool = False
    scrub_invalid_names: bool = False
    allow_optional_map_keys: bool = False
    flatten_singleton_union: bool = True
    ignore_default_for_nullables: bool = False
    schemas_cache_size: int = 1000


def _is_name_char(ch: str) -> bool:
    return ("a" <= ch <= "z") or ("A" <= ch <= "Z") or ("0" <= ch <= "9") or ch == "_"


def scrub_name(name: str) -> str:
    """``name`` made a valid Avro name as Confluent scrubs it: URL-encoded (UTF-8, as
    Java's URLEncoder), an ``x`` put before a leading digit, then every remaining
    character other than letters, digits and ``_`` replaced by ``_``."""
    if not name or (all(_is_name_char(ch) for ch in name) and not "0" <= name[0] <= "9"):
        return name
    encoded = []
    for ch in name:
        if _is_name_char(ch) or ch in ".-*":
            encoded.append(ch)
        elif ch == " ":
            encoded.append("+")
        else:
            encoded.extend(f"%{b:02X}" for b in ch.encode("utf-8", "surrogatepass"))
    text = "".join(encoded)
    if "0" <= text[0] <= "9":
        text = "x" + text
    return "".join(ch if _is_name_char(ch) else "_" for ch in text)
