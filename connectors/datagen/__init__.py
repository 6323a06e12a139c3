"""Datagen: a deterministic generator of realistic test records (users, orders, pageviews).

Config keys follow Confluent's kafka-connect-datagen (``kafka.topic``, ``quickstart``,
``iterations``, ``max.interval``) plus Ferry's ``seed``, ``rate`` and the aliases ``schema``
and ``max.records``. The same seed always gives the same records, however the work is
split across tasks, and a restarted task resumes at the record after its stored offset.
"""

from connectors.datagen.connector import DatagenConnector
from connectors.datagen.quickstarts import QUICKSTARTS, Quickstart
from connectors.datagen.task import DatagenTask

__all__ = ["QUICKSTARTS", "DatagenConnector", "DatagenTask", "Quickstart"]
