"""Kafka's security protocols (``security.protocol``, a listener's protocol): which of them
run TLS and which authenticate with SASL. Brokers' listeners and clients read the same
names, so both take them from here."""

from __future__ import annotations

__all__ = ["SECURITY_PROTOCOLS", "SecurityProtocolTraits"]

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")


class SecurityProtocolTraits:
    """What a ``protocol`` attribute (one of ``SECURITY_PROTOCOLS``) asks of a connection;
    mixed into a broker's ``ListenerSpec`` and a client's ``ClientSecurity``."""

    protocol: str

    @property
    def uses_tls(self) -> bool:
        return self.protocol in ("SSL", "SASL_SSL")

    @property
    def uses_sasl(self) -> bool:
        return self.protocol in ("SASL_PLAINTEXT", "SASL_SSL")
