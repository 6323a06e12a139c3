"""SCRAM's keys (RFC 5802, RFC 7677), as both ends of a Kafka SASL/SCRAM login derive them:
the broker (stored credentials, checking a proof) and Ferry's clients (making one).

SaltedPassword = PBKDF2(password, salt, iterations); ClientKey = HMAC(SaltedPassword,
"Client Key"); StoredKey = H(ClientKey); ServerKey = HMAC(SaltedPassword, "Server Key").
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass

__all__ = ["SCRAM_HASHES", "ScramKeys", "hmac_digest", "salted_password", "scram_keys"]

#: SASL mechanism name -> hashlib name
SCRAM_HASHES = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}


@dataclass(frozen=True)
class ScramKeys:
    client_key: bytes
    stored_key: bytes
    server_key: bytes


def hmac_digest(hash_name: str, key: bytes, data: bytes) -> bytes:
    return hmac.new(key, data, hash_name).digest()


def salted_password(hash_name: str, password: str, salt: bytes, iterations: int) -> bytes:
    return hashlib.pbkdf2_hmac(hash_name, password.encode("utf-8"), salt, iterations)


def scram_keys(hash_name: str, salted: bytes) -> ScramKeys:
    client_key = hmac_digest(hash_name, salted, b"Client Key")
    return ScramKeys(client_key, hashlib.new(hash_name, client_key).digest(),
                     hmac_digest(hash_name, salted, b"Server Key"))
