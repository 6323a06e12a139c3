"""The ``kafka://HOST:PORT[,HOST:PORT...]`` backend: the LogBackend interface over Kafka's wire
protocol, for a Ferry broker cluster and an Apache Kafka cluster alike.

Modules: ``config`` (URL and client settings), ``connection`` (one socket, pooled per
broker), ``client`` (metadata, leader and coordinator routing, bounded retries),
``produce``, ``fetch``, ``offsets`` (ListOffsets), ``groups`` (membership), ``group_admin``
(group offsets and listing), ``admin`` (topics and configs), ``backend`` (``KafkaBackend``).
"""

from core.backends.kafka.backend import KafkaBackend
from core.backends.kafka.config import CLIENT_CONFIGS, ClientConfig

__all__ = ["CLIENT_CONFIGS", "ClientConfig", "KafkaBackend"]
