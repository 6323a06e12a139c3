"""The registry's errors, each carrying Confluent's HTTP status and ``error_code``.

Messages follow Confluent's ``Errors.java`` formats, so clients that match on them keep
working. The REST layer turns every ``RegistryError`` into ``{"error_code", "message"}``::

    RegistryError(status, error_code, message)
    ├── 403  ForbiddenError 40301 (a permission of ``registry_authfile`` is missing)
    ├── 404  SubjectNotFoundError 40401 · VersionNotFoundError 40402 · SchemaNotFoundError 40403
    │        SubjectSoftDeletedError 40404 · SubjectNotSoftDeletedError 40405
    │        VersionSoftDeletedError 40406 · VersionNotSoftDeletedError 40407
    │        SubjectConfigNotFoundError 40408 · SubjectModeNotFoundError 40409
    ├── 409  IncompatibleSchemaError 409
    ├── 422  InvalidSchemaError 42201 · InvalidVersionError 42202
    │        InvalidCompatibilityLevelError 42203 · InvalidModeError 42204
    │        OperationNotPermittedError 42205 · ReferenceExistsError 42206
    │        IdDoesNotMatchError 42207 · InvalidSubjectError 42208
    │        SchemaTooLargeError 42209 · InvalidRuleSetError 42210 · InvalidConfigError 422
    └── 5xx  StoreError 50001 · StoreTimeoutError 50002 · ForwardingError 50003
             UnknownLeaderError 50004 · NotReadyError (503, 50001)
"""

from __future__ import annotations

__all__ = [
    "ForbiddenError",
    "ForwardingError",
    "IdDoesNotMatchError",
    "IncompatibleSchemaError",
    "InvalidCompatibilityLevelError",
    "InvalidConfigError",
    "InvalidModeError",
    "InvalidRuleSetError",
    "InvalidSchemaError",
    "InvalidSubjectError",
    "InvalidVersionError",
    "NotReadyError",
    "OperationNotPermittedError",
    "ReferenceExistsError",
    "RegistryConfigError",
    "RegistryError",
    "SchemaNotFoundError",
    "SchemaTooLargeError",
    "StoreError",
    "StoreTimeoutError",
    "SubjectConfigNotFoundError",
    "SubjectModeNotFoundError",
    "SubjectNotFoundError",
    "SubjectNotSoftDeletedError",
    "SubjectSoftDeletedError",
    "UnknownLeaderError",
    "VersionNotFoundError",
    "VersionNotSoftDeletedError",
    "VersionSoftDeletedError",
]


class RegistryConfigError(Exception):
    """A registry setting is invalid, or the ``_schemas`` topic is unusable (wrong partition
    count or cleanup policy); the message names the setting or the topic."""


class RegistryError(Exception):
    """An error answered to a REST client: HTTP ``status``, Confluent ``error_code``."""

    status = 500
    error_code = 50001

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


# ---------------------------------------------------------------------------------- 403


class ForbiddenError(RegistryError):
    status, error_code = 403, 40301

    def __init__(self, message: str = "Forbidden") -> None:
        super().__init__(message)


# ---------------------------------------------------------------------------------- 404


class SubjectNotFoundError(RegistryError):
    status, error_code = 404, 40401

    def __init__(self, subject: str) -> None:
        super().__init__(f"Subject '{subject}' not found.")


class VersionNotFoundError(RegistryError):
    status, error_code = 404, 40402

    def __init__(self, version: int | str) -> None:
        super().__init__(f"Version {version} not found.")


class SchemaNotFoundError(RegistryError):
    status, error_code = 404, 40403

    def __init__(self, schema_id: int | None = None) -> None:
        super().__init__("Schema not found" if schema_id is None
                         else f"Schema {schema_id} not found")


class SubjectSoftDeletedError(RegistryError):
    status, error_code = 404, 40404

    def __init__(self, subject: str) -> None:
        super().__init__(f"Subject '{subject}' was soft deleted.Set permanent=true to delete "
                         "permanently")


class SubjectNotSoftDeletedError(RegistryError):
    status, error_code = 404, 40405

    def __init__(self, subject: str) -> None:
        super().__init__(f"Subject '{subject}' was not deleted first before being permanently "
                         "deleted")


class VersionSoftDeletedError(RegistryError):
    status, error_code = 404, 40406

    def __init__(self, subject: str, version: int) -> None:
        super().__init__(f"Subject '{subject}' Version {version} was soft deleted.Set "
                         "permanent=true to delete permanently")


class VersionNotSoftDeletedError(RegistryError):
    status, error_code = 404, 40407

    def __init__(self, subject: str, version: int) -> None:
        super().__init__(f"Subject '{subject}' Version {version} was not deleted first before "
                         "being permanently deleted")


class SubjectConfigNotFoundError(RegistryError):
    status, error_code = 404, 40408

    def __init__(self, subject: str) -> None:
        super().__init__(f"Subject '{subject}' does not have subject-level compatibility "
                         "configured")


class SubjectModeNotFoundError(RegistryError):
    status, error_code = 404, 40409

    def __init__(self, subject: str) -> None:
        super().__init__(f"Subject '{subject}' does not have subject-level mode configured")


# ---------------------------------------------------------------------------------- 409


class IncompatibleSchemaError(RegistryError):
    """The schema fails the subject's compatibility level; ``messages`` lists each problem."""

    status, error_code = 409, 409

    def __init__(self, subject: str, messages: list[str]) -> None:
        super().__init__(f'Schema being registered is incompatible with an earlier schema for '
                         f'subject "{subject}", details: [{", ".join(messages)}]')
        self.messages = messages


# ---------------------------------------------------------------------------------- 422


class InvalidSchemaError(RegistryError):
    status, error_code = 422, 42201


class InvalidVersionError(RegistryError):
    status, error_code = 422, 42202

    def __init__(self, version: object) -> None:
        super().__init__(f"The specified version '{version}' is not a valid version id. "
                         'Allowed values are between [1, 2^31-1] and the string "latest"')


class InvalidCompatibilityLevelError(RegistryError):
    status, error_code = 422, 42203

    def __init__(self) -> None:
        super().__init__("Invalid compatibility level. Valid values are none, backward, "
                         "forward, full, backward_transitive, forward_transitive, and "
                         "full_transitive")


class InvalidModeError(RegistryError):
    status, error_code = 422, 42204

    def __init__(self) -> None:
        super().__init__("Invalid mode. Valid values are READWRITE, READONLY, IMPORT and "
                         "FORWARD.")


class OperationNotPermittedError(RegistryError):
    status, error_code = 422, 42205


class ReferenceExistsError(RegistryError):
    status, error_code = 422, 42206

    def __init__(self, what: str) -> None:
        super().__init__(f"One or more references exist to the schema {what}.")


class IdDoesNotMatchError(RegistryError):
    status, error_code = 422, 42207


class InvalidSubjectError(RegistryError):
    status, error_code = 422, 42208

    def __init__(self, subject: str) -> None:
        super().__init__(f"The specified subject '{subject}' is not a valid.")


class InvalidConfigError(RegistryError):
    """A config field of the wrong type (what Confluent's JSON mapping refuses with 422)."""

    status, error_code = 422, 422


class SchemaTooLargeError(RegistryError):
    """The schema's record would exceed the ``_schemas`` topic's ``max.message.bytes``."""

    status, error_code = 422, 42209


class InvalidRuleSetError(RegistryError):
    """A ``ruleSet`` (or a config's default/override rule set) that Confluent's
    ``RuleSet.validate`` refuses: a duplicate or malformed rule name, a missing type, a
    mode the rule's list does not allow."""

    status, error_code = 422, 42210


# ---------------------------------------------------------------------------------- 5xx


class StoreError(RegistryError):
    """The ``_schemas`` topic could not be read or written."""

    status, error_code = 500, 50001


class StoreTimeoutError(RegistryError):
    """A write was not confirmed (read back) within the store timeout."""

    status, error_code = 500, 50002


class ForwardingError(RegistryError):
    """A follower could not forward a write to the leader."""

    status, error_code = 500, 50003


class UnknownLeaderError(RegistryError):
    """No instance is currently the leader, so writes cannot be made."""

    status, error_code = 500, 50004


class NotReadyError(RegistryError):
    """The instance is still loading the ``_schemas`` topic (or cannot reach the log)."""

    status, error_code = 503, 50001
