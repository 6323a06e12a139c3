"""Where the broker keeps its ACLs and client quotas: one small interface, one file store.

Both belong to the cluster metadata. A single node keeps them in its data directory
(``acls.json``, ``client-quotas.json``, each replaced atomically before a change is
answered); a cluster node reads them from the committed metadata log
(``core.broker.security.metadata_store``), where the controller changes them. A store that
cannot be read stops the broker with a message naming the file: starting with no ACLs
would open every topic.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from core.broker.meta import write_atomically
from core.broker.security.acl import AclBinding

__all__ = ["ACL_FILE", "QUOTA_FILE", "AclStore", "FileSecurityStore", "QuotaEntity",
           "QuotaStore", "SecurityStoreError"]

ACL_FILE = "acls.json"
QUOTA_FILE = "client-quotas.json"
_VERSION = 1

#: A client-quota entity: sorted (entity type, name) pairs, name None for the default
#: (``<default>`` in kafka-configs), e.g. (("client-id", None), ("user", "alice")).
QuotaEntity = tuple[tuple[str, str | None], ...]


class SecurityStoreError(Exception):
    """The stored ACLs or quotas cannot be read or written."""


class AclStore(Protocol):
    def load_acls(self) -> list[AclBinding]: ...

    def save_acls(self, acls: Sequence[AclBinding]) -> None: ...

    def acls_version(self) -> int | None:
        """Changes whenever the ACLs change other than by ``save_acls`` (the cluster
        metadata), so readers know to reload; None while not loaded yet. Cheap: asked
        on every authorization."""
        ...


class QuotaStore(Protocol):
    def load_quotas(self) -> dict[QuotaEntity, dict[str, float]]: ...

    def save_quotas(self, quotas: dict[QuotaEntity, dict[str, float]]) -> None: ...

    def quotas_version(self) -> int | None:
        """As ``AclStore.acls_version``, for the quotas."""
        ...


class FileSecurityStore:
    """Both stores as JSON files in a broker's data directory."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = Path(data_dir)

    def _read(self, name: str) -> list[dict] | None:
        path = self.data_dir / name
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            raise SecurityStoreError(f"cannot read {path}: {exc}; restore it from a backup "
                                     "or remove it to start without its entries") from None
        if not isinstance(data, dict) or data.get("version") != _VERSION \
                or not isinstance(data.get("entries"), list):
            raise SecurityStoreError(f"{path} is not a version {_VERSION} Ferry store")
        return data["entries"]

    def _write(self, name: str, entries: list[dict]) -> None:
        text = json.dumps({"version": _VERSION, "entries": entries}, indent=1, sort_keys=True)
        try:
            write_atomically(self.data_dir / name, text + "\n", mode=0o600)
        except OSError as exc:
            raise SecurityStoreError(f"cannot write {self.data_dir / name}: {exc}") from exc

    def acls_version(self) -> int:
        return 0  # only save_acls changes the file

    def quotas_version(self) -> int:
        return 0

    def load_acls(self) -> list[AclBinding]:
        entries = self._read(ACL_FILE) or []
        try:
            return [AclBinding.from_json(e) for e in entries]
        except (KeyError, TypeError, ValueError) as exc:
            raise SecurityStoreError(
                f"{self.data_dir / ACL_FILE} holds an entry that is not an ACL: {exc}") from None

    def save_acls(self, acls: Sequence[AclBinding]) -> None:
        self._write(ACL_FILE, [a.to_json() for a in acls])

    def load_quotas(self) -> dict[QuotaEntity, dict[str, float]]:
        entries = self._read(QUOTA_FILE) or []
        result: dict[QuotaEntity, dict[str, float]] = {}
        try:
            for e in entries:
                entity = tuple(sorted((str(t), None if n is None else str(n))
                                      for t, n in e["entity"]))
                result[entity] = {str(k): float(v) for k, v in e["quotas"].items()}
        except (KeyError, TypeError, ValueError) as exc:
            raise SecurityStoreError(
                f"{self.data_dir / QUOTA_FILE} holds an entry that is not a quota: {exc}"
            ) from None
        return result

    def save_quotas(self, quotas: dict[QuotaEntity, dict[str, float]]) -> None:
        self._write(QUOTA_FILE, [{"entity": [list(p) for p in entity], "quotas": values}
                                 for entity, values in quotas.items()])
