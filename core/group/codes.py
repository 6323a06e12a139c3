"""Kafka's numeric error codes, as the group coordinator answers with them.

One table serves the coordinator and the wire: ``core.protocol.errors`` (a leaf package)
holds Kafka's numbering. Members are ``int`` subclasses, so a driver can put them on the
wire or compare them with plain integers unchanged.
"""

from __future__ import annotations

from core.protocol.errors import ErrorCode

__all__ = ["ErrorCode"]
