"""JsonConverter: Kafka's JSON converter, writing the same bytes Kafka writes.

With ``schemas.enable`` (the default) every key or value is an envelope
``{"schema":<schema>,"payload":<value>}``; without, just the value. See ``json_schema``
for the schema text, ``json_encode`` and ``json_decode`` for values. Also a
``HeaderConverter``: a header value is converted like a record value.
"""

from __future__ import annotations

import json
import re
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any, Generic, TypeVar

from connect.api.config import (
    AbstractConfig,
    CaseInsensitiveValidString,
    ConfigDef,
    ConfigType,
    Importance,
    Range,
    Width,
)
from connect.api.data import Schema, SchemaAndValue
from connect.api.errors import DataError
from connect.api.storage import RawHeaders
from connect.converters.base import (
    HeaderCapableConverter,
    converter_config_def,
    converter_type,
    with_converter_type,
)
from connect.converters.json_decode import (
    EXACT_JSON,
    FAST_JSON,
    NOT_PARSED,
    Decode,
    JsonDecoder,
    floats_from_decimals,
    needs_exact_numbers,
    parse_schemaless,
)
from connect.converters.json_encode import Encode, JsonEncoder
from connect.converters.json_schema import schema_from_json, schema_to_json

__all__ = ["JsonConverter", "JsonConverterConfig"]

SCHEMAS_ENABLE_CONFIG = "schemas.enable"
SCHEMAS_CACHE_SIZE_CONFIG = "schemas.cache.size"
DECIMAL_FORMAT_CONFIG = "decimal.format"
REPLACE_NULL_WITH_DEFAULT_CONFIG = "replace.null.with.default"

_ENVELOPE_REQUIRED = (
    'JsonConverter with schemas.enable requires "schema" and "payload" fields and may not '
    "contain additional fields. If you are trying to deserialize plain JSON data, set "
    "schemas.enable=false in your converter configuration."
)
_ENVELOPE_START = '{"schema":'
_PAYLOAD_KEY = ',"payload":'
# The envelope's tokens around the schema and the payload, with JSON's whitespace.
_HEAD = re.compile(r'[ \t\n\r]*\{[ \t\n\r]*"schema"[ \t\n\r]*:[ \t\n\r]*')
_MIDDLE = re.compile(r'[ \t\n\r]*,[ \t\n\r]*"payload"[ \t\n\r]*:[ \t\n\r]*')
_TAIL = re.compile(r"[ \t\n\r]*\}[ \t\n\r]*\Z")
# How often the writer of one schema is compiled again for other, equal schema objects.
_MAX_RECOMPILES = 4
_SCHEMALESS_HEAD = (_ENVELOPE_START + "null" + _PAYLOAD_KEY).encode("utf-8")


class JsonConverterConfig(AbstractConfig):
    """JsonConverter's keys, declared as Kafka's ``JsonConverterConfig`` declares them."""

    CONFIG_DEF = (
        converter_config_def()
        .define(
            SCHEMAS_ENABLE_CONFIG,
            ConfigType.BOOLEAN,
            default=True,
            importance=Importance.HIGH,
            documentation="Include schemas within each of the serialized values and keys.",
            group="Schemas",
            order_in_group=0,
            width=Width.MEDIUM,
            display_name="Enable Schemas",
        )
        .define(
            SCHEMAS_CACHE_SIZE_CONFIG,
            ConfigType.INT,
            default=1000,
            validator=Range.at_least(0),
            importance=Importance.HIGH,
            documentation="The maximum number of schemas that can be cached in this "
            "converter instance.",
            group="Schemas",
            order_in_group=1,
            width=Width.MEDIUM,
            display_name="Schema Cache Size",
        )
        .define(
            DECIMAL_FORMAT_CONFIG,
            ConfigType.STRING,
            default="BASE64",
            validator=CaseInsensitiveValidString.in_("BASE64", "NUMERIC"),
            importance=Importance.LOW,
            documentation="Controls which format this converter will serialize decimals in. "
            "This value is case insensitive and can be either 'BASE64' (default) or 'NUMERIC'",
            group="Serialization",
            order_in_group=0,
            width=Width.MEDIUM,
            display_name="Decimal Format",
        )
        .define(
            REPLACE_NULL_WITH_DEFAULT_CONFIG,
            ConfigType.BOOLEAN,
            default=True,
            importance=Importance.LOW,
            documentation="Whether to replace fields that have a default value and that are "
            "null to the default value. When set to true, the default value is used, "
            "otherwise null is used.",
            group="Serialization",
            order_in_group=1,
            width=Width.MEDIUM,
            display_name="Replace null with default",
        )
    )

    def __init__(self, props: Mapping[str, Any]) -> None:
        super().__init__(self.CONFIG_DEF, props)

    @property
    def schemas_enabled(self) -> bool:
        return bool(self.get_boolean(SCHEMAS_ENABLE_CONFIG))

    @property
    def schema_cache_size(self) -> int:
        return int(self.get_int(SCHEMAS_CACHE_SIZE_CONFIG) or 0)

    @property
    def decimal_numeric(self) -> bool:
        """Whether decimals are written as JSON numbers (``decimal.format=NUMERIC``)."""
        return str(self.get_string(DECIMAL_FORMAT_CONFIG)).upper() == "NUMERIC"

    @property
    def replace_null_with_default(self) -> bool:
        return bool(self.get_boolean(REPLACE_NULL_WITH_DEFAULT_CONFIG))


K = TypeVar("K")
V = TypeVar("V")


class _LruCache(Generic[K, V]):
    """A bounded map that forgets the least recently used entry (Kafka's LRUCache);
    used from one thread, like the converter that owns it."""

    __slots__ = ("_entries", "_size")

    def __init__(self, size: int) -> None:
        self._size = size
        self._entries: OrderedDict[K, V] = OrderedDict()

    def get_or_create(self, key: K, create: Callable[[], V]) -> V:
        entries = self._entries
        try:
            value = entries[key]
        except KeyError:
            value = create()
            if self._size > 0:
                entries[key] = value
                if len(entries) > self._size:
                    entries.popitem(last=False)
            return value
        entries.move_to_end(key)
        return value

    def put(self, key: K, value: V) -> None:
        """Replace (or add) the entry of ``key``, keyed by the given key object."""
        if self._size > 0:
            self._entries.pop(key, None)
            self._entries[key] = value
            if len(self._entries) > self._size:
                self._entries.popitem(last=False)


class _Written:
    """What writing values of one schema needs: the schema object the encoder was
    compiled for, its JSON text, the envelope's bytes before the payload, and its
    value encoder."""

    __slots__ = ("encode", "envelope_head", "recompiles", "schema", "schema_text")

    def __init__(self, schema: Schema, schema_text: str, encode: Encode) -> None:
        self.schema = schema
        self.recompiles = 0  # how often compiled again for another, equal schema object
        self.schema_text = schema_text
        # The schema part is the same for every value: encoded once, the envelope is
        # one bytes concatenation per value instead of building and encoding ~kB of text.
        try:
            self.envelope_head = (_ENVELOPE_START + schema_text + _PAYLOAD_KEY).encode()
        except UnicodeEncodeError as exc:
            raise DataError(
                f"Cannot write a string with a lone surrogate as UTF-8: {exc}"
            ) from None
        self.encode = encode


class _Read:
    """What reading values of one JSON schema needs: the Connect schema, its decoder,
    and which parser its payloads need."""

    __slots__ = ("decode", "parser", "schema")

    def __init__(self, schema: Schema | None, decode: Decode | None) -> None:
        self.schema = schema
        self.decode = decode
        self.parser = EXACT_JSON if needs_exact_numbers(schema) else FAST_JSON


class JsonConverter(HeaderCapableConverter):
    """Kafka's ``org.apache.kafka.connect.json.JsonConverter``; see the module docstring.

    Keys: ``schemas.enable`` (default true), ``schemas.cache.size`` (1000: schemas whose
    JSON is kept, in each direction), ``decimal.format`` (BASE64 or NUMERIC),
    ``replace.null.with.default`` (true), and ``converter.type``. One instance per task,
    used from the task's thread only (the caches are not locked).
    """

    def __init__(self) -> None:
        self.configure({}, is_key=False)

    def config(self) -> ConfigDef:
        return JsonConverterConfig.CONFIG_DEF

    def configure(self, configs: Mapping[str, Any], is_key: bool | None = None) -> None:
        config = JsonConverterConfig(with_converter_type(configs, converter_type(configs, is_key)))
        self._schemas_enabled = config.schemas_enabled
        self._encoder = JsonEncoder(
            decimal_numeric=config.decimal_numeric,
            replace_null_with_default=config.replace_null_with_default,
        )
        self._decoder = JsonDecoder(replace_null_with_default=config.replace_null_with_default)
        self._written: _LruCache[Schema, _Written] = _LruCache(config.schema_cache_size)
        self._read: _LruCache[str, _Read] = _LruCache(config.schema_cache_size)
        # The schema used last, in each direction: a task usually converts long runs of
        # records of one schema, and this skips even the cache lookup.
        self._last_schema: Schema | None = None
        self._last_written: _Written | None = None
        self._last_read_text = "null"
        self._last_read = _Read(None, None)

    # -- Connect data to bytes ----------------------------------------------------------

    def from_connect_data(
        self, topic: str, schema: Schema | None, value: Any, headers: RawHeaders | None = None
    ) -> bytes | None:
        if schema is None:
            if value is None:
                return None
            payload = self._encoder.encode_schemaless(value)
            head = _SCHEMALESS_HEAD
        else:
            written = self._written_for(schema)
            payload, head = written.encode(value), written.envelope_head
        try:
            if self._schemas_enabled:
                return b"".join((head, payload.encode("utf-8"), b"}"))
            return payload.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise DataError(
                f"Cannot write a string with a lone surrogate as UTF-8: {exc}"
            ) from None

    def as_json_schema(self, schema: Schema | None) -> str | None:
        """The JSON text of ``schema`` as the envelope carries it (None for None)."""
        return None if schema is None else self._written_for(schema).schema_text

    def _written_for(self, schema: Schema) -> _Written:
        if schema is self._last_schema and self._last_written is not None:
            return self._last_written
        written = self._written.get_or_create(schema, lambda: self._compile_writer(schema))
        if written.schema is not schema and written.recompiles < _MAX_RECOMPILES:
            # An equal schema object seen before (a connector rebuilt its schema): the
            # encoder recognises structs of its own schema object by identity, so one
            # compiled for this object saves a schema comparison per struct. Bounded, for
            # code that makes a new equal schema per record: its structs then take the
            # encoders' comparison (remembered for a few schema objects at a time).
            recompiles = written.recompiles + 1
            written = self._compile_writer(schema)
            written.recompiles = recompiles
            self._written.put(schema, written)
        self._last_schema, self._last_written = schema, written
        return written

    def _compile_writer(self, schema: Schema) -> _Written:
        encode = self._encoder.compile(schema)
        return _Written(schema, schema_to_json(schema, self._encoder.default_to_json), encode)

    # -- bytes to Connect data ----------------------------------------------------------

    def to_connect_data(
        self, topic: str, value: bytes | None, headers: RawHeaders | None = None
    ) -> SchemaAndValue:
        if value is None:
            return SchemaAndValue.NULL
        if not self._schemas_enabled:
            node = parse_schemaless(value)
            if node is not NOT_PARSED:
                return SchemaAndValue(None, node)
        text = _text(value)
        if not self._schemas_enabled:
            if not text.strip():
                return SchemaAndValue.NULL  # Jackson reads no content as a missing node
            return SchemaAndValue(None, _parse(FAST_JSON, text))
        fast = self._read_envelope(text)
        if fast is not None:
            return fast
        return self._read_document(text)

    def as_connect_schema(self, json_schema: Any) -> Schema | None:
        """The Connect schema of a parsed JSON schema (None for None)."""
        return self._read_entry(json_schema).schema

    def _read_envelope(self, text: str) -> SchemaAndValue | None:
        # An envelope {"schema":S,"payload":P}, as Kafka writes it or with JSON whitespace
        # between the tokens (as Python's json.dumps writes it): read S by comparing it
        # with the schema text seen last (a complete JSON value, so a prefix match is a
        # match), else by parsing it, and P with the parser the schema needs. Anything
        # else (another key order, more keys, bad JSON) takes the general path.
        head = _HEAD.match(text)
        if head is None:
            return None
        start = head.end()
        try:
            if text.startswith(self._last_read_text, start):
                read, end = self._last_read, start + len(self._last_read_text)
            else:
                node, end = EXACT_JSON.raw_decode(text, start)
                schema_text = text[start:end]
                read = self._read.get_or_create(schema_text, lambda: self._read_entry(node))
                self._last_read_text, self._last_read = schema_text, read
            middle = _MIDDLE.match(text, end)
            if middle is None:
                return None
            payload, end = read.parser.raw_decode(text, middle.end())
        except ValueError:
            return None
        if _TAIL.match(text, end) is None:
            return None
        if read.decode is None:
            return SchemaAndValue(None, payload)
        return SchemaAndValue(read.schema, read.decode(payload))

    def _read_document(self, text: str) -> SchemaAndValue:
        envelope = _parse(EXACT_JSON, text)
        if not (type(envelope) is dict and envelope.keys() == {"schema", "payload"}):
            raise DataError(_ENVELOPE_REQUIRED)
        schema_node, payload = envelope["schema"], envelope["payload"]
        key = json.dumps(schema_node, sort_keys=True, separators=(",", ":"), default=str)
        read = self._read.get_or_create(key, lambda: self._read_entry(schema_node))
        if read.decode is None:
            return SchemaAndValue(None, floats_from_decimals(payload))
        return SchemaAndValue(read.schema, read.decode(payload))

    def _read_entry(self, schema_node: Any) -> _Read:
        schema = schema_from_json(schema_node, self._decoder.default_from_json)
        return _Read(schema, None if schema is None else self._decoder.compile(schema))


def _text(value: bytes | bytearray | memoryview) -> str:
    try:
        return value.decode("utf-8") if isinstance(value, bytes) else bytes(value).decode()
    except UnicodeDecodeError:
        pass
    # Jackson also reads UTF-16 and UTF-32, recognised from the first bytes.
    data = bytes(value)
    try:
        return data.decode(json.detect_encoding(data), "surrogatepass")
    except UnicodeDecodeError as exc:
        raise DataError(
            f"Converting byte[] to Kafka Connect data failed due to serialization error: {exc}"
        ) from None


def _parse(parser: json.JSONDecoder, text: str) -> Any:
    try:
        return parser.decode(text)
    except ValueError as exc:  # json.JSONDecodeError, or a rejected NaN literal
        raise DataError(
            f"Converting byte[] to Kafka Connect data failed due to serialization error: {exc}"
        ) from None
