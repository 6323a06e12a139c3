"""Kafka's JAAS configuration text (``sasl.jaas.config``), read by brokers and clients.

``org.apache.kafka.common.security.plain.PlainLoginModule required username="alice"
password="secret";`` names a login module, a flag and ``key="value"`` options; the
options are what Kafka's PLAIN and SCRAM modules read (``username``, ``password`` and, on
a broker, ``user_NAME``).
"""

from __future__ import annotations

import re

__all__ = ["parse_jaas_options"]

_OPTION = re.compile(r'([A-Za-z0-9_.\-]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s;"]+))')


def parse_jaas_options(text: str) -> dict[str, str]:
    """The ``key="value"`` options of one JAAS login module entry."""
    head, _, rest = text.strip().partition(" ")
    return {m.group(1): (m.group(2) if m.group(2) is not None else m.group(3) or "")
            .replace('\\"', '"') for m in _OPTION.finditer(rest or head)}
