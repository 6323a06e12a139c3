"""Confluent-compatible Schema Registry stored in the ``_schemas`` topic (later issue)."""
