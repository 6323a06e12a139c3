"""``DekStore``: the DEK Registry's compacted topic, read and written like ``_schemas``."""

from __future__ import annotations

from typing import Any

from core.backends import LogBackend
from schema_registry.dek.records import decode_key_record, encode_key_record
from schema_registry.dek.state import DekState
from schema_registry.store import SchemaStore

__all__ = ["DEK_TOPIC", "DekStore"]

#: Confluent's default ``dek.registry.topic``.
DEK_TOPIC = "_dek_registry_keys"


class DekStore(SchemaStore):
    """A ``SchemaStore`` over the DEK Registry's topic: one reader thread applies every
    record to a ``DekState``; ``write`` returns once the records have been read back. The
    topic is created compacted with one partition, as Confluent creates it."""

    _encode = staticmethod(encode_key_record)
    _decode = staticmethod(decode_key_record)
    _what, _topic_setting = "DEK registry topic", "dek.registry.topic"

    def __init__(self, backend: LogBackend, state: DekState, *, topic: str = DEK_TOPIC,
                 **kwargs: Any) -> None:
        super().__init__(backend, state, topic=topic, **kwargs)  # type: ignore[arg-type]

    def _summary(self) -> str:
        return self.state.summary()  # type: ignore[attr-defined, no-any-return]
