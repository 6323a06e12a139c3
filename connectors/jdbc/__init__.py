"""JDBC-style connectors on SQLAlchemy: tables of any SQL database into topics, and
topics into tables, with the config names of Confluent's kafka-connect-jdbc."""

from connectors.jdbc.sink_connector import JdbcSinkConnector
from connectors.jdbc.sink_task import JdbcSinkTask
from connectors.jdbc.source_connector import JdbcSourceConnector
from connectors.jdbc.source_task import JdbcSourceTask

__all__ = ["JdbcSinkConnector", "JdbcSinkTask", "JdbcSourceConnector", "JdbcSourceTask"]
