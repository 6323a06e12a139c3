"""SASL/PLAIN on the server (RFC 4616): ``authzid NUL authcid NUL passwd`` in one message.

Users come from the listener's JAAS text (``user_NAME="password"`` options of
``listener.name.<l>.plain.sasl.jaas.config``, as Kafka's ``PlainServerCallbackHandler``
reads them) and/or a credentials file named by ``sasl.plain.users.file`` (Ferry's: one
``NAME=password`` line per user, re-read when it changes, so users can be added without a
restart). Passwords are compared in constant time.
"""

from __future__ import annotations

import hmac
import os
from collections.abc import Callable, Mapping
from pathlib import Path

from core.broker.security.sasl_errors import SaslAuthenticationError, SaslMalformedError
from core.protocol.jaas import parse_jaas_options

__all__ = ["PlainServer", "PlainUsers", "parse_jaas_options", "parse_plain_message"]

_MAX_MESSAGE = 64 * 1024


def parse_plain_message(token: bytes) -> tuple[str, str, str]:
    """(authzid, user, password) of a PLAIN message; SaslMalformedError if it is not one."""
    if len(token) > _MAX_MESSAGE:
        raise SaslMalformedError("PLAIN message too large")
    parts = token.split(b"\0")
    if len(parts) != 3:
        raise SaslMalformedError("invalid PLAIN message: expected authzid\\0user\\0password")
    try:
        authzid, user, password = (p.decode("utf-8") for p in parts)
    except UnicodeDecodeError:
        raise SaslMalformedError("invalid PLAIN message: not UTF-8") from None
    if not user:
        raise SaslMalformedError("invalid PLAIN message: empty user name")
    return authzid, user, password


class PlainUsers:
    """The PLAIN user table of one listener: JAAS users, then the credentials file."""

    def __init__(self, jaas_users: Mapping[str, str], users_file: str = "") -> None:
        self._jaas = dict(jaas_users)
        self._file = Path(users_file) if users_file else None
        self._file_users: dict[str, str] = {}
        self._file_stamp: tuple[int, int] | None = None

    @classmethod
    def from_jaas(cls, jaas_text: str, users_file: str = "") -> PlainUsers:
        options = parse_jaas_options(jaas_text) if jaas_text else {}
        users = {k[len("user_"):]: v for k, v in options.items() if k.startswith("user_")}
        return cls(users, users_file)

    def password(self, user: str) -> str | None:
        if user in self._jaas:
            return self._jaas[user]
        return self._from_file().get(user)

    def _from_file(self) -> dict[str, str]:
        if self._file is None:
            return {}
        try:
            st = os.stat(self._file)
        except OSError:
            return self._file_users  # a file being replaced: keep the last good table
        stamp = (st.st_mtime_ns, st.st_size)
        if stamp != self._file_stamp:
            from core.broker.config import parse_properties

            try:
                self._file_users = parse_properties(self._file.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError):
                return self._file_users
            self._file_stamp = stamp
        return self._file_users

    def __bool__(self) -> bool:
        return bool(self._jaas) or self._file is not None


class PlainServer:
    """One PLAIN exchange: a single client message, then success or failure."""

    mechanism = "PLAIN"

    def __init__(self, lookup: Callable[[str], str | None]) -> None:
        self._lookup = lookup
        self.user: str | None = None
        self.complete = False

    def evaluate(self, token: bytes) -> bytes:
        if self.complete:
            raise SaslMalformedError("PLAIN exchange already complete")
        authzid, user, password = parse_plain_message(token)
        if authzid and authzid != user:
            raise SaslAuthenticationError(
                "Authentication failed: Client requested an authorization id that is "
                "different from username")
        expected = self._lookup(user)
        # compare_digest on equal-length inputs also when the user is unknown
        good = expected is not None and hmac.compare_digest(
            expected.encode("utf-8"), password.encode("utf-8"))
        if not good:
            raise SaslAuthenticationError(
                "Authentication failed: Invalid username or password", user=user)
        self.user = user
        self.complete = True
        return b""
