"""Where SCRAM credentials live: one small interface, one file-backed engine.

``ScramCredentialStore`` is the seam: today credentials are a JSON file in the broker's
data directory (written atomically, read once at start); when the cluster metadata log
carries them (the replication work), an engine over it implements the same four methods.
Only salts, iteration counts and derived keys are kept, never a password.
"""

from __future__ import annotations

import base64
import json
import threading
from pathlib import Path
from typing import Protocol

from core.broker.meta import write_atomically
from core.broker.security.scram import ScramCredential

__all__ = ["FileScramStore", "ScramCredentialStore"]

FILE_NAME = "scram-credentials.json"


class ScramCredentialStore(Protocol):
    """Per user, per mechanism. Called from the event loop and from request threads."""

    def get(self, user: str, mechanism: str) -> ScramCredential | None: ...

    def mechanisms(self, user: str) -> dict[str, int]:
        """mechanism -> iterations of the user's credentials (empty: unknown user)."""
        ...

    def users(self) -> list[str]: ...

    def alter(self, upserts: list[tuple[str, str, ScramCredential]],
              deletions: list[tuple[str, str]]) -> None:
        """Apply all changes together (one durable write)."""
        ...


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


class FileScramStore:
    """Credentials in ``<data dir>/scram-credentials.json`` (mode 0600)."""

    def __init__(self, data_dir: Path) -> None:
        self._path = Path(data_dir) / FILE_NAME
        self._lock = threading.Lock()
        self._users: dict[str, dict[str, ScramCredential]] = {}
        if self._path.exists():
            data = json.loads(self._path.read_text(encoding="utf-8"))
            for user, creds in data.get("users", {}).items():
                self._users[user] = {
                    mech: ScramCredential(base64.b64decode(c["salt"]),
                                          base64.b64decode(c["stored_key"]),
                                          base64.b64decode(c["server_key"]),
                                          int(c["iterations"]))
                    for mech, c in creds.items()}

    def get(self, user: str, mechanism: str) -> ScramCredential | None:
        return self._users.get(user, {}).get(mechanism)

    def mechanisms(self, user: str) -> dict[str, int]:
        return {m: c.iterations for m, c in self._users.get(user, {}).items()}

    def users(self) -> list[str]:
        return sorted(self._users)

    def alter(self, upserts: list[tuple[str, str, ScramCredential]],
              deletions: list[tuple[str, str]]) -> None:
        with self._lock:
            users = {u: dict(c) for u, c in self._users.items()}
            for user, mechanism in deletions:
                users.get(user, {}).pop(mechanism, None)
                if user in users and not users[user]:
                    del users[user]
            for user, mechanism, credential in upserts:
                users.setdefault(user, {})[mechanism] = credential
            text = json.dumps({"users": {
                u: {m: {"salt": _b64(c.salt), "stored_key": _b64(c.stored_key),
                        "server_key": _b64(c.server_key), "iterations": c.iterations}
                    for m, c in creds.items()} for u, creds in users.items()}}, indent=1)
            write_atomically(self._path, text, mode=0o600)
            self._users = users
