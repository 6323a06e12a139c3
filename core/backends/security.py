"""Kafka's client security settings for Ferry's components outside ``core``.

The implementation is ``core.protocol.client_security`` (shared with the broker's replica
fetcher); ``core.backends`` is the door to it for Connect, the Spark source and the CLI.
"""

from core.protocol.client_security import (
    SECURITY_CONFIG_KEYS,
    ClientSecurity,
    ClientSecurityError,
    security_settings,
)

__all__ = ["SECURITY_CONFIG_KEYS", "ClientSecurity", "ClientSecurityError",
           "security_settings"]
