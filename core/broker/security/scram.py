"""SASL/SCRAM-SHA-256 and SCRAM-SHA-512 on the server (RFC 5802, RFC 7677).

Pure: a ``ScramServer`` turns client messages into server messages and raises
``SaslAuthenticationError`` (wrong proof, unknown user) or ``SaslMalformedError``. Stored
credentials never hold the password: salt, iteration count, StoredKey = H(ClientKey) and
ServerKey, as Kafka's ``ScramCredential``. Channel binding is refused (``p=``), as Kafka
does; the ``tokenauth`` extension of delegation tokens is not served.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
from collections.abc import Callable
from dataclasses import dataclass

from core.broker.security.sasl_errors import SaslAuthenticationError, SaslMalformedError
from core.protocol.scram import SCRAM_HASHES, hmac_digest, salted_password, scram_keys

__all__ = [
    "MAX_ITERATIONS",
    "MECHANISMS",
    "MIN_ITERATIONS",
    "ScramCredential",
    "ScramServer",
    "credential_from_password",
    "credential_from_salted",
]

#: mechanism name -> (hashlib name, Kafka's ScramMechanism type number)
MECHANISMS = {"SCRAM-SHA-256": (SCRAM_HASHES["SCRAM-SHA-256"], 1),
              "SCRAM-SHA-512": (SCRAM_HASHES["SCRAM-SHA-512"], 2)}
MIN_ITERATIONS, MAX_ITERATIONS = 4096, 16384  # Kafka's ScramMechanism bounds
_MAX_MESSAGE = 8 * 1024


@dataclass(frozen=True)
class ScramCredential:
    """What the broker keeps per user and mechanism."""

    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int


def credential_from_salted(hash_name: str, salt: bytes, salted_password: bytes,
                           iterations: int) -> ScramCredential:
    """The stored form of a salted password (what AlterUserScramCredentials carries)."""
    keys = scram_keys(hash_name, salted_password)
    return ScramCredential(salt, keys.stored_key, keys.server_key, iterations)


def credential_from_password(mechanism: str, password: str, iterations: int = 4096,
                             salt: bytes | None = None) -> ScramCredential:
    hash_name = MECHANISMS[mechanism][0]
    salt = salt if salt is not None else os.urandom(32)
    salted = salted_password(hash_name, password, salt, iterations)
    return credential_from_salted(hash_name, salt, salted, iterations)


def _attributes(text: str, what: str) -> list[tuple[str, str]]:
    out = []
    for part in text.split(","):
        if len(part) < 2 or part[1] != "=" or not part[0].isalpha():
            raise SaslMalformedError(f"invalid SCRAM {what}: bad attribute {part[:20]!r}")
        out.append((part[0], part[2:]))
    return out


def _unescape_name(name: str) -> str:
    # RFC 5802 5.1: ',' and '=' travel as =2C and =3D; any other '=' is an error
    rest = name.replace("=2C", "").replace("=3D", "")
    if "=" in rest:
        raise SaslMalformedError("invalid SCRAM user name encoding")
    return name.replace("=2C", ",").replace("=3D", "=")


class ScramServer:
    """One SCRAM exchange: client-first -> server-first, client-final -> server-final."""

    def __init__(self, mechanism: str,
                 lookup: Callable[[str, str], ScramCredential | None],
                 nonce: Callable[[], str] | None = None) -> None:
        """``nonce`` makes the server's part of the nonce (random by default; a test
        passes RFC 7677's)."""
        self._make_nonce = nonce or (lambda: base64.b64encode(os.urandom(24)).decode("ascii"))
        self.mechanism = mechanism
        self._hash = MECHANISMS[mechanism][0]
        self._lookup = lookup
        self._step = 0
        self.user: str | None = None
        self.complete = False

    def evaluate(self, token: bytes) -> bytes:
        if len(token) > _MAX_MESSAGE:
            raise SaslMalformedError("SCRAM message too large")
        try:
            text = token.decode("utf-8")
        except UnicodeDecodeError:
            raise SaslMalformedError("SCRAM message is not UTF-8") from None
        if self._step == 0:
            return self._first(text)
        if self._step == 1:
            return self._final(text)
        raise SaslMalformedError("SCRAM exchange already complete")

    def _first(self, text: str) -> bytes:
        cbind, sep1, rest = text.partition(",")
        authzid, sep2, bare = rest.partition(",")
        if not (sep1 and sep2):
            raise SaslMalformedError("invalid SCRAM client-first message")
        if cbind not in ("n", "y"):
            raise SaslMalformedError("SCRAM channel binding is not supported")
        attrs = _attributes(bare, "client-first message")
        if len(attrs) < 2 or attrs[0][0] != "n" or attrs[1][0] != "r" or not attrs[1][1]:
            raise SaslMalformedError("invalid SCRAM client-first message: expected n=,r=")
        user = _unescape_name(attrs[0][1])
        if not user:
            raise SaslMalformedError("invalid SCRAM client-first message: empty user")
        if authzid and (not authzid.startswith("a=")
                        or _unescape_name(authzid[2:]) != user):
            raise SaslAuthenticationError(
                "Authentication failed: Client requested an authorization id that is "
                "different from username", user=user)
        self.user = user
        credential = self._lookup(user, self.mechanism)
        if credential is None:
            raise SaslAuthenticationError(
                "Authentication failed: Invalid user credentials", user=user)
        self._credential = credential
        self._gs2 = text[: len(cbind) + len(authzid) + 2]
        self._nonce = attrs[1][1] + self._make_nonce()
        salt = base64.b64encode(credential.salt).decode("ascii")
        self._server_first = f"r={self._nonce},s={salt},i={credential.iterations}"
        self._client_first_bare = bare
        self._step = 1
        return self._server_first.encode("utf-8")

    def _final(self, text: str) -> bytes:
        without_proof, sep, proof_text = text.rpartition(",p=")
        if not sep:
            raise SaslMalformedError("invalid SCRAM client-final message: no proof")
        attrs = dict(_attributes(without_proof, "client-final message"))
        expected_binding = base64.b64encode(self._gs2.encode("utf-8")).decode("ascii")
        if attrs.get("c") != expected_binding:
            raise SaslMalformedError("invalid SCRAM client-final message: channel binding")
        if attrs.get("r") != self._nonce:
            raise SaslMalformedError("invalid SCRAM client-final message: nonce mismatch")
        try:
            proof = base64.b64decode(proof_text, validate=True)
        except ValueError:
            raise SaslMalformedError("invalid SCRAM client proof encoding") from None
        auth_message = ",".join((self._client_first_bare, self._server_first,
                                 without_proof)).encode("utf-8")
        credential = self._credential
        signature = hmac_digest(self._hash, credential.stored_key, auth_message)
        if len(proof) != len(signature):
            raise SaslAuthenticationError(
                "Authentication failed: Invalid client final message", user=self.user)
        client_key = bytes(a ^ b for a, b in zip(proof, signature, strict=True))
        if not hmac.compare_digest(hashlib.new(self._hash, client_key).digest(),
                                   credential.stored_key):
            raise SaslAuthenticationError(
                "Authentication failed: Invalid user credentials", user=self.user)
        server_signature = hmac_digest(self._hash, credential.server_key, auth_message)
        self._step = 2
        self.complete = True
        return b"v=" + base64.b64encode(server_signature)
