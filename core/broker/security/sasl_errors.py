"""Why a SASL exchange failed, as the exceptions the mechanisms raise.

The connection answers each with Kafka's error code: a wrong credential is
SASL_AUTHENTICATION_FAILED (58); a message that does not parse is ILLEGAL_SASL_STATE (34)
in Kafka's broker too (its ``SaslServer`` raises ``SaslException`` for both, and only a
credential failure is reported as 58; Ferry reports malformed input as 58 as well, with
its own message, since that is what clients show to the user). Messages never contain a
password.
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
