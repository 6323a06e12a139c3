"""Confluent's Schema Registry REST API over a ``SchemaRegistry`` (Flask)."""

from schema_registry.rest.app import RestContext, create_app

__all__ = ["RestContext", "create_app"]
