"""Connect's plugin API: what connectors, tasks, converters and transformations use.

This package is the compatibility promise to plugin authors: ``__all__`` below is
pinned by a test, and nothing here imports the Connect runtime, ``core`` or any other
Ferry package. Subpackages, one concept each (as Kafka's ``connect/api``):

* ``connect.api.connector``, ``source``, ``sink``: connectors, tasks and their contexts
* ``connect.api.record``, ``header``, ``coordinates``: records and where they live
* ``connect.api.data``: schemas, structs, logical types, value validation
* ``connect.api.config``: declared configuration and masked passwords
* ``connect.api.storage``: converters and the source offset reader
* ``connect.api.transforms``: transformations and predicates
* ``connect.api.config_provider``: ``${provider:path:key}`` lookups
* ``connect.api.errors``: the error tree
"""

from connect.api.config import (
    NO_DEFAULT,
    AbstractConfig,
    CaseInsensitiveValidString,
    CompositeValidator,
    Config,
    ConfigDef,
    ConfigKey,
    ConfigType,
    ConfigValue,
    Importance,
    LambdaValidator,
    NonEmptyString,
    NonNullValidator,
    Password,
    Range,
    Recommender,
    Validator,
    ValidList,
    ValidString,
    Width,
)
from connect.api.config_provider import ConfigData, ConfigProvider
from connect.api.connector import Connector, ConnectorContext, Task
from connect.api.coordinates import OffsetAndMetadata, RecordMetadata, TimestampType, TopicPartition
from connect.api.data import (
    Date,
    Decimal,
    Field,
    Schema,
    SchemaAndValue,
    SchemaBuilder,
    Struct,
    Time,
    Timestamp,
    Type,
    validate_value,
)
from connect.api.errors import (
    AlreadyExistsError,
    ConfigError,
    ConnectError,
    DataError,
    IllegalWorkerStateError,
    NotFoundError,
    RetriableError,
    SchemaBuilderError,
)
from connect.api.header import Header, Headers
from connect.api.record import ConnectRecord, SinkRecord, SourceRecord
from connect.api.sink import ErrantRecordReporter, SinkConnector, SinkTask, SinkTaskContext
from connect.api.source import (
    ConnectorTransactionBoundaries,
    ExactlyOnceSupport,
    SourceConnector,
    SourceTask,
    SourceTaskContext,
    TransactionContext,
)
from connect.api.storage import Converter, ConverterType, HeaderConverter, OffsetStorageReader
from connect.api.transforms import Predicate, Transformation
from connect.api.version import Versioned

__all__ = [
    "NO_DEFAULT",
    "AbstractConfig",
    "AlreadyExistsError",
    "CaseInsensitiveValidString",
    "CompositeValidator",
    "Config",
    "ConfigData",
    "ConfigDef",
    "ConfigError",
    "ConfigKey",
    "ConfigProvider",
    "ConfigType",
    "ConfigValue",
    "ConnectError",
    "ConnectRecord",
    "Connector",
    "ConnectorContext",
    "ConnectorTransactionBoundaries",
    "Converter",
    "ConverterType",
    "DataError",
    "Date",
    "Decimal",
    "ErrantRecordReporter",
    "ExactlyOnceSupport",
    "Field",
    "Header",
    "HeaderConverter",
    "Headers",
    "IllegalWorkerStateError",
    "Importance",
    "LambdaValidator",
    "NonEmptyString",
    "NonNullValidator",
    "NotFoundError",
    "OffsetAndMetadata",
    "OffsetStorageReader",
    "Password",
    "Predicate",
    "Range",
    "Recommender",
    "RecordMetadata",
    "RetriableError",
    "Schema",
    "SchemaAndValue",
    "SchemaBuilder",
    "SchemaBuilderError",
    "SinkConnector",
    "SinkRecord",
    "SinkTask",
    "SinkTaskContext",
    "SourceConnector",
    "SourceRecord",
    "SourceTask",
    "SourceTaskContext",
    "Struct",
    "Task",
    "Time",
    "Timestamp",
    "TimestampType",
    "TopicPartition",
    "TransactionContext",
    "Transformation",
    "Type",
    "ValidList",
    "ValidString",
    "Validator",
    "Versioned",
    "Width",
    "validate_value",
]
