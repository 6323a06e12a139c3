"""Signed internal requests (KIP-507): session keys and Kafka's signature headers.

The leader generates a random key (``new_session_key``) and distributes it through the
config topic; every worker signs the body of its internal requests (task configs sent to
the leader) with it, and the leader checks the signature before acting. The headers are
Kafka's, so Ferry and Kafka workers understand each other::

    X-Connect-Authorization                 base64 of HMAC(session key, request body)
    X-Connect-Request-Signature-Algorithm   the Java Mac name, e.g. HmacSHA256

Pure functions, no I/O; safe from any thread.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from connect.runtime.distributed.config_store import SessionKey
from connect.runtime.distributed.errors import InternalRequestSignatureError

__all__ = [
    "ALGORITHM_HEADER",
    "SIGNATURE_HEADER",
    "InternalRequestSignature",
    "new_session_key",
    "sign",
    "signature_headers",
    "verify_request",
]

SIGNATURE_HEADER = "X-Connect-Authorization"
ALGORITHM_HEADER = "X-Connect-Request-Signature-Algorithm"

#: Java Mac names and their digests.
_DIGESTS = {"HmacSHA1": hashlib.sha1, "HmacSHA256": hashlib.sha256,
            "HmacSHA384": hashlib.sha384, "HmacSHA512": hashlib.sha512}


def _digest(algorithm: str) -> Callable[..., Any]:
    try:
        return _DIGESTS[algorithm]
    except KeyError:
        raise InternalRequestSignatureError(
            f"Unsupported signature algorithm {algorithm!r}; use one of "
            f"{', '.join(_DIGESTS)}", status=400) from None


def new_session_key(algorithm: str, now_ms: int, size_bits: int | None = None) -> SessionKey:
    """A fresh random key for ``algorithm``; ``size_bits`` defaults to the digest size
    (256 bits for HmacSHA256, as Java's KeyGenerator gives)."""
    size = size_bits if size_bits else _digest(algorithm)().digest_size * 8
    return SessionKey(secrets.token_bytes(max(1, size // 8)), algorithm, now_ms)


def sign(key: SessionKey, algorithm: str, body: bytes) -> str:
    """The base64 HMAC of ``body`` under ``key`` with ``algorithm``."""
    mac = hmac.new(key.key, body, _digest(algorithm)).digest()
    return base64.b64encode(mac).decode("ascii")


def signature_headers(key: SessionKey, algorithm: str, body: bytes) -> dict[str, str]:
    """The two headers of a signed internal request."""
    return {SIGNATURE_HEADER: sign(key, algorithm, body), ALGORITHM_HEADER: algorithm}


@dataclass(frozen=True)
class InternalRequestSignature:
    """The signature an internal request arrived with (Kafka's InternalRequestSignature)."""

    body: bytes
    algorithm: str
    signature: str

    @classmethod
    def from_headers(cls, body: bytes, headers: Mapping[str, str]
                     ) -> InternalRequestSignature | None:
        """None when the request carries no signature headers."""
        signature, algorithm = headers.get(SIGNATURE_HEADER), headers.get(ALGORITHM_HEADER)
        if signature is None or algorithm is None:
            return None
        return cls(body, algorithm, signature)

    def verify(self, key: SessionKey | None, accepted: Sequence[str]) -> None:
        """Raise ``InternalRequestSignatureError`` unless the signature is ``key``'s HMAC
        of the body (compared in constant time)."""
        if self.algorithm not in accepted:
            raise InternalRequestSignatureError(
                f"This worker does not support the '{self.algorithm}' key signing algorithm "
                f"used by other workers. This worker is currently configured to use: "
                f"{', '.join(accepted)}. Check that all workers' configuration files permit "
                "the same set of signature algorithms, and correct any misconfigured worker "
                "and restart it.", status=400)
        if key is None:
            raise InternalRequestSignatureError(
                "Internal request could not be verified: this worker has not read a session "
                "key from the config topic yet; retry shortly.")
        try:
            given = base64.b64decode(self.signature, validate=True)
        except (binascii.Error, ValueError):
            given = b""
        expected = hmac.new(key.key, self.body, _digest(self.algorithm)).digest()
        if not hmac.compare_digest(given, expected):
            raise InternalRequestSignatureError("Internal request contained invalid signature.")


def verify_request(signature: InternalRequestSignature | None, key: SessionKey | None,
                   accepted: Sequence[str]) -> None:
    """Kafka's check of an internal request: it must be signed, with an accepted
    algorithm, by the current session key. Raises ``InternalRequestSignatureError``."""
    if signature is None:
        raise InternalRequestSignatureError("Internal request missing required signature",
                                            status=400)
    signature.verify(key, accepted)
