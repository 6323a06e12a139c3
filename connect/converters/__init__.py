"""Connect's built-in converters, compatible with Kafka's byte for byte.

One module per converter family, each Kafka's class of the same name:

* ``json``: ``JsonConverter`` (``json_schema``, ``json_encode`` and ``json_decode`` hold
  its schema and value conversions, ``java_number`` Java's number text)
* ``string``: ``StringConverter``
* ``bytearray``: ``ByteArrayConverter``
* ``numeric``: ``ShortConverter``, ``IntegerConverter``, ``LongConverter``,
  ``FloatConverter``, ``DoubleConverter``; ``boolean``: ``BooleanConverter``
* ``header``: ``SimpleHeaderConverter``, Kafka's default header converter (``values``
  and ``values_parser`` hold Kafka's ``Values`` text forms)
* ``aliases``: ``resolve_converter``, from entry-point names, Kafka class names and
  class paths to classes

Converters are plugins: they import ``connect.api`` only. Each is registered under the
``ferry.converters`` entry-point group.
"""

from connect.converters.aliases import (
    BUILTIN_CONVERTERS,
    ENTRY_POINT_GROUP,
    KAFKA_CLASS_NAMES,
    resolve_converter,
)
from connect.converters.boolean import BooleanConverter
from connect.converters.bytearray import ByteArrayConverter
from connect.converters.header import SimpleHeaderConverter
from connect.converters.json import JsonConverter, JsonConverterConfig
from connect.converters.numeric import (
    DoubleConverter,
    FloatConverter,
    IntegerConverter,
    LongConverter,
    ShortConverter,
)
from connect.converters.string import StringConverter, StringConverterConfig

__all__ = [
    "BUILTIN_CONVERTERS",
    "ENTRY_POINT_GROUP",
    "KAFKA_CLASS_NAMES",
    "BooleanConverter",
    "ByteArrayConverter",
    "DoubleConverter",
    "FloatConverter",
    "IntegerConverter",
    "JsonConverter",
    "JsonConverterConfig",
    "LongConverter",
    "ShortConverter",
    "SimpleHeaderConverter",
    "StringConverter",
    "StringConverterConfig",
    "resolve_converter",
]
