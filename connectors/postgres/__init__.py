"""Postgres CDC source: Debezium-compatible change data capture on pgoutput."""

from connectors.postgres.connector import PostgresConnector
from connectors.postgres.task import PostgresSourceTask

__all__ = ["PostgresConnector", "PostgresSourceTask"]
