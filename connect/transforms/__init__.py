"""Kafka Connect's built-in single message transformations (SMTs) and predicates.

The sixteen SMTs of Apache Kafka, with Kafka's config keys, defaults and error messages,
one module each; ``$Key``/``$Value`` variants are the classes ``<Name>Key`` and
``<Name>Value`` (``InsertFieldValue`` is Kafka's ``InsertField$Value``). Predicates are in
``predicates``. ``aliases`` resolves the names a connector config may use for them, and
``chain`` builds a connector's transformation chain from its ``transforms`` and
``predicates`` keys, and ``chain_config`` declares those keys for config validation.
Everything here builds on ``connect.api`` alone.

Shared machinery: ``base`` (config hooks, key/value sides), ``requirements`` (shape
checks), ``schema_util``, ``field_path`` (KIP-821 nested fields), ``validators``,
``java_regex`` and ``java_date_format`` (Java's regex and SimpleDateFormat semantics),
``cast_values`` (Java's numeric conversions).
"""

from connect.transforms.aliases import (
    PREDICATES,
    TRANSFORMATIONS,
    resolve_predicate,
    resolve_transform,
)
from connect.transforms.cast import Cast, CastKey, CastValue
from connect.transforms.chain import (
    PredicatedTransformation,
    TransformationChain,
    build_transformation_chain,
)
from connect.transforms.chain_config import chain_config_def
from connect.transforms.drop_headers import DropHeaders
from connect.transforms.extract_field import ExtractField, ExtractFieldKey, ExtractFieldValue
from connect.transforms.filter import Filter
from connect.transforms.flatten import Flatten, FlattenKey, FlattenValue
from connect.transforms.header_from import HeaderFrom, HeaderFromKey, HeaderFromValue
from connect.transforms.hoist_field import HoistField, HoistFieldKey, HoistFieldValue
from connect.transforms.insert_field import InsertField, InsertFieldKey, InsertFieldValue
from connect.transforms.insert_header import InsertHeader
from connect.transforms.mask_field import MaskField, MaskFieldKey, MaskFieldValue
from connect.transforms.predicates import HasHeaderKey, RecordIsTombstone, TopicNameMatches
from connect.transforms.regex_router import RegexRouter
from connect.transforms.replace_field import ReplaceField, ReplaceFieldKey, ReplaceFieldValue
from connect.transforms.set_schema_metadata import (
    SetSchemaMetadata,
    SetSchemaMetadataKey,
    SetSchemaMetadataValue,
)
from connect.transforms.timestamp_converter import (
    TimestampConverter,
    TimestampConverterKey,
    TimestampConverterValue,
)
from connect.transforms.timestamp_router import TimestampRouter
from connect.transforms.value_to_key import ValueToKey

__all__ = [
    "PREDICATES",
    "TRANSFORMATIONS",
    "Cast",
    "CastKey",
    "CastValue",
    "DropHeaders",
    "ExtractField",
    "ExtractFieldKey",
    "ExtractFieldValue",
    "Filter",
    "Flatten",
    "FlattenKey",
    "FlattenValue",
    "HasHeaderKey",
    "HeaderFrom",
    "HeaderFromKey",
    "HeaderFromValue",
    "HoistField",
    "HoistFieldKey",
    "HoistFieldValue",
    "InsertField",
    "InsertFieldKey",
    "InsertFieldValue",
    "InsertHeader",
    "MaskField",
    "MaskFieldKey",
    "MaskFieldValue",
    "PredicatedTransformation",
    "RecordIsTombstone",
    "RegexRouter",
    "ReplaceField",
    "ReplaceFieldKey",
    "ReplaceFieldValue",
    "SetSchemaMetadata",
    "SetSchemaMetadataKey",
    "SetSchemaMetadataValue",
    "TimestampConverter",
    "TimestampConverterKey",
    "TimestampConverterValue",
    "TimestampRouter",
    "TopicNameMatches",
    "TransformationChain",
    "ValueToKey",
    "build_transformation_chain",
    "chain_config_def",
    "resolve_predicate",
    "resolve_transform",
]
