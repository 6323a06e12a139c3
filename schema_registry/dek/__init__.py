"""The DEK Registry: key encryption keys (KEKs) and data encryption keys (DEKs) for the
client-side field-level encryption of Confluent's serializers, kept in their own compacted
topic (``_dek_registry_keys``, as Confluent's DEK Registry keeps them)."""

from schema_registry.dek.registry import DekRegistry
from schema_registry.dek.state import Dek, DekState, Kek
from schema_registry.dek.store import DEK_TOPIC, DekStore

__all__ = ["DEK_TOPIC", "Dek", "DekRegistry", "DekState", "DekStore", "Kek"]
