"""The principal a request is made by, as Kafka names it (``User:alice``).

A connection starts as ``User:ANONYMOUS``; authentication (TLS client certificates, SASL)
replaces it, and the authorizer and quotas read it from each ``RequestContext``.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ANONYMOUS", "KafkaPrincipal"]


@dataclass(frozen=True)
class KafkaPrincipal:
    """A principal type and name; ``str()`` gives Kafka's ``Type:name`` form."""

    principal_type: str
    name: str

    def __str__(self) -> str:
        return f"{self.principal_type}:{self.name}"

    @classmethod
    def parse(cls, text: str) -> KafkaPrincipal:
        """``User:alice`` -> KafkaPrincipal("User", "alice"); a missing type is an error."""
        kind, sep, name = text.partition(":")
        if not sep or not kind or not name:
            raise ValueError(f"principal {text!r} is not of the form Type:name, e.g. User:alice")
        return cls(kind, name)


ANONYMOUS = KafkaPrincipal("User", "ANONYMOUS")
