"""The DEK Registry's errors, with the status, ``error_code`` and message of Confluent's
``DekRegistryErrors``::

    RegistryError
    ├── 404  KeyNotFoundError 40470 · KeyNotSoftDeletedError 40471 · KeySoftDeletedError 40472
    ├── 409  KeyExistsError 40971
    └── 422  InvalidKeyError 42271 · KeyReferenceExistsError 42272
"""

from __future__ import annotations

from schema_registry.errors import RegistryError

__all__ = ["InvalidKeyError", "KeyExistsError", "KeyNotFoundError", "KeyNotSoftDeletedError",
           "KeyReferenceExistsError", "KeySoftDeletedError"]


class KeyNotFoundError(RegistryError):
    status, error_code = 404, 40470

    def __init__(self, name: str) -> None:
        super().__init__(f"Key '{name}' not found")


class KeyNotSoftDeletedError(RegistryError):
    status, error_code = 404, 40471

    def __init__(self, name: str) -> None:
        super().__init__(f"Key '{name}' was not deleted first before being permanently deleted")


class KeySoftDeletedError(RegistryError):
    status, error_code = 404, 40472

    def __init__(self, name: str) -> None:
        super().__init__(f"Key '{name}' must be undeleted first")


class KeyExistsError(RegistryError):
    status, error_code = 409, 40971

    def __init__(self, name: str) -> None:
        super().__init__(f"Key '{name}' already exists; use a different value")


class InvalidKeyError(RegistryError):
    """A missing or invalid field; ``detail`` says more where Confluent's text would not."""

    status, error_code = 422, 42271

    def __init__(self, field: str, detail: str = "") -> None:
        super().__init__(f"Invalid or missing value for field '{field}' of key"
                         + (f": {detail}" if detail else ""))


class KeyReferenceExistsError(RegistryError):
    status, error_code = 422, 42272

    def __init__(self, name: str) -> None:
        super().__init__(f"One or more references exist to the key '{name}'")
