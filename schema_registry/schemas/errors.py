"""Errors of the schema model.

    SchemaError                      the schema text is not a valid schema (REST 422, 42201)
    └── UnresolvedReferenceError     a reference names a subject/version that cannot be found
"""

from __future__ import annotations


class SchemaError(Exception):
    """The schema is invalid; the message names the problem and where it is."""


class UnresolvedReferenceError(SchemaError):
    """A schema reference could not be resolved to a registered schema."""
