"""Why a SASL exchange failed, as the exceptions the mechanisms raise.

The connection answers both with SASL_AUTHENTICATION_FAILED (58) and closes, as Kafka's
``SaslServerAuthenticator`` does for a refused credential and for any other
``SaslException`` of the mechanism (a message that does not parse). Messages name the
user at most, never a password.
"""

from __future__ import annotations

__all__ = ["SaslAuthenticationError", "SaslMalformedError"]


class SaslAuthenticationError(Exception):
    """The client's credentials were refused. ``user`` is who it claimed to be, if known."""

    def __init__(self, message: str, *, user: str | None = None) -> None:
        super().__init__(message)
        self.user = user


class SaslMalformedError(SaslAuthenticationError):
    """The client's SASL message does not follow the mechanism's syntax."""
